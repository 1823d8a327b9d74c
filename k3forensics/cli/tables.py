"""Print a polars frame as a rich table, CSV or JSON (log text stays inert)."""

from __future__ import annotations

import sys

import polars as pl
from rich.table import Table

from k3forensics.cli.common import console, safe


def print_frame(frame: pl.DataFrame, fmt: str, max_rows: int = 200) -> None:
    if fmt == "csv":
        sys.stdout.write(frame.write_csv())
        return
    if fmt == "json":
        sys.stdout.write(frame.write_json() + "\n")
        return
    table = Table(show_lines=False)
    for column in frame.columns:
        table.add_column(safe(column))
    for row in frame.head(max_rows).iter_rows():
        table.add_row(*[safe("" if v is None else v) for v in row])
    out = console()
    out.print(table)
    if frame.height > max_rows:
        out.print(safe(f"… {frame.height - max_rows} more rows (use --format csv for all)"))

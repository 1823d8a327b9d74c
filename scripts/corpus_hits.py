"""Developer aid: show which signatures hit each line of a log file or folder of logs.

    python scripts/corpus_hits.py PATH [PATH ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from k3forensics.library.loader import load_library
from k3forensics.library.match import match_events
from k3forensics.library.model import Role
from k3forensics.sources.base import ParseContext, lines_frame
from k3forensics.sources.logs import parse_log


def show(path: Path) -> None:
    lib = load_library()
    lib.raise_problems()
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    events = parse_log(lines_frame([x.rstrip("\r") for x in lines], file=path.name), ParseContext(path.name)).events
    events = events.with_row_index("seq").with_columns(
        pl.col("seq").cast(pl.Int64), pl.lit("node0").alias("node"), pl.col("ts").alias("ts_order"))
    hits = match_events(events, lib, roles=(Role.PRIMARY, Role.SECONDARY, Role.CONTEXT))
    print(f"== {path}")
    for row in hits.join(events.select("seq", "line_no", "line"), on="seq").sort("seq").iter_rows(named=True):
        sig = lib.signatures[row["signature"]]
        print(f"  {row['line_no']:>5} {sig.role.value:<9} {sig.category:<26} {sig.id:<40} {row['line'][:110]}")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        for p in sorted(Path(arg).rglob("*")) if Path(arg).is_dir() else [Path(arg)]:
            if p.is_file():
                show(p)

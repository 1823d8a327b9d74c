"""`k3forensics` commands: ingest, query, export, triage (signatures: cli/signatures.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from k3forensics import __version__
from k3forensics.cli.common import (
    EXIT_FAILURE_FOUND,
    EXIT_OK,
    console,
    library_from,
    reports_errors,
    safe,
    signature_options,
)
from k3forensics.cli.render_triage import render_triage
from k3forensics.cli.report import report
from k3forensics.cli.signatures import signatures
from k3forensics.cli.tables import print_frame
from k3forensics.timeline.ingest import IngestSummary, Progress, ingest
from k3forensics.timeline.schema import TIMELINE_TABLES
from k3forensics.timeline.store import open_timeline
from k3forensics.triage.contract import to_contract
from k3forensics.triage.run import triage as run_triage


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="k3forensics")
def cli() -> None:
    """Offline forensic triage of crashed LLM inference servers (vLLM, NCCL, CUDA, Xid)."""


def _default_db(bundle: Path) -> Path:
    stem = bundle.name
    for suffix in (".tar.gz", ".tgz", ".zip", ".tar", ".gz"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return Path(f"{stem or 'bundle'}.duckdb")


@cli.command("ingest")
@click.argument("bundle", type=click.Path(path_type=Path))
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), help="Timeline database to write "
              "(default: BUNDLE-NAME.duckdb in the current folder).")
@signature_options
@reports_errors
def ingest_cmd(bundle: Path, db: Path | None, signature_dirs: tuple[Path, ...]) -> None:
    """Read a bundle (folder, .tar.gz, .tgz, .zip, .gz or one file) into a DuckDB timeline."""
    library = library_from(signature_dirs)
    db = db or _default_db(bundle)
    with _file_progress("ingest") as step:
        summary = ingest(bundle, db, library, progress=step)
    _print_summary(summary)


@contextmanager
def _file_progress(label: str) -> Iterator[Progress | None]:
    """A progress bar on standard error, file by file, when it is a terminal (else nothing)."""
    err = console(stderr=True)
    if not err.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    with Bar(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
             TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task("", total=None)

        def step(file: str, done: int, total: int) -> None:
            bar.update(task, total=total, completed=done, description=file[-60:])

        yield step


def _print_summary(summary: IngestSummary) -> None:
    out = console()
    files = summary.files
    lines = summary.line_count
    unparsed = summary.unparsed_count
    share = f"{unparsed / lines:.1%}" if lines else "0%"
    out.print(safe(f"timeline: {summary.db}"))
    out.print(safe(f"files: {files.height}  lines: {lines:,}  unparsed: {unparsed:,} ({share})  "
                   f"nodes: {summary.nodes.height}"))
    by_type = files.group_by("detected_type").agg(
        __import__("polars").len().alias("files"), __import__("polars").col("line_count").sum().alias("lines")
    ).sort("lines", descending=True)
    out.print(safe("by type: " + ", ".join(f"{t} {n} file(s)/{ln:,} lines" for t, n, ln in by_type.iter_rows())))
    first = files.get_column("first_ts").min() if files.height else None
    last = files.get_column("last_ts").max() if files.height else None
    if first is not None:
        out.print(safe(f"time span: {first.isoformat()} → {last.isoformat()}"))
    for warning in summary.warnings[:20]:
        console(stderr=True).print(safe(f"warning: {warning}"))
    if len(summary.warnings) > 20:
        console(stderr=True).print(safe(f"warning: … and {len(summary.warnings) - 20} more (table `warnings`)"))


@cli.command("query")
@click.argument("db", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("sql")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@reports_errors
def query_cmd(db: Path, sql: str, fmt: str) -> None:
    """Run SQL against a timeline database (read-only)."""
    import duckdb

    from k3forensics.errors import DatabaseError
    from k3forensics.timeline.store import read_frame

    con = open_timeline(db)
    try:
        frame = read_frame(con, sql)
    except duckdb.Error as exc:
        raise DatabaseError(f"query failed: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    print_frame(frame, fmt)


@cli.command("export")
@click.argument("db", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--parquet", "parquet_dir", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="Folder to write one Parquet file per table into.")
@reports_errors
def export_cmd(db: Path, parquet_dir: Path) -> None:
    """Export every table of a timeline database to Parquet."""
    con = open_timeline(db)
    parquet_dir.mkdir(parents=True, exist_ok=True)
    try:
        present = {r[0] for r in con.sql("SELECT table_name FROM information_schema.tables").fetchall()}
        # Only the timeline's own tables, by their known names: a table name in a database
        # from someone else never becomes part of a statement or a path.
        for table in (t for t in TIMELINE_TABLES if t in present):
            target = (parquet_dir / f"{table}.parquet").resolve()
            quoted = str(target).replace("'", "''")
            con.execute(f"COPY \"{table}\" TO '{quoted}' (FORMAT parquet)")
            console().print(safe(f"{table} → {target}"))
    finally:
        con.close()


@cli.command("triage")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--skew", type=float, default=2.0, show_default=True,
              help="Seconds within which hits on different nodes count as one moment (clock-skew tolerance).")
@signature_options
@reports_errors
def triage_cmd(path: Path, fmt: str, skew: float, signature_dirs: tuple[Path, ...]) -> None:
    """Name the first real failure of a bundle (or timeline DB), its cascade, the OOM class and the next step.

    Exit code 0: nothing failed; 1: a failure was found; 2: usage or input error.
    """
    library = library_from(signature_dirs)
    with _file_progress("triage") as step:
        result = run_triage(path, library, tie_s=skew, progress=step)
    if fmt == "json":
        sys.stdout.write(json.dumps(to_contract(result), indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        render_triage(result, console())
    sys.exit(EXIT_FAILURE_FOUND if result.failed else EXIT_OK)


cli.add_command(signatures)
cli.add_command(report)

# Metrics pull and run comparison (issue 5).
from k3forensics.cli.compare import diff_cmd, repro_cmd  # noqa: E402
from k3forensics.cli.pull import pull_cmd  # noqa: E402

cli.add_command(pull_cmd)
cli.add_command(diff_cmd)
cli.add_command(repro_cmd)

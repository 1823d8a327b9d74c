"""Write and open timeline databases (DuckDB files)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from k3forensics.errors import DatabaseError, Location
from k3forensics.timeline.schema import DDL, EVENT_COLUMNS, SCHEMA_VERSION

if TYPE_CHECKING:  # duckdb is imported where a database is opened: `triage BUNDLE` never needs it
    import duckdb

WRITER_MEMORY = "512MB"
SAMPLE_COLUMNS = ["node", "file", "line_no", "metric", "labels", "ts", "value"]
FACT_COLUMNS = ["node", "file", "line_no", "key", "value"]


def write_timeline(db: Path, *, events: pl.DataFrame, samples: pl.DataFrame, facts: pl.DataFrame,
                   files: pl.DataFrame, nodes: pl.DataFrame, warnings: pl.DataFrame,
                   meta: dict[str, str]) -> None:
    """Write a fresh database next to `db`, then move it into place (no half-written file)."""
    with TimelineWriter(db) as writer:
        writer.add_events(events)
        writer.finish(samples=samples, facts=facts, files=files, nodes=nodes, warnings=warnings, meta=meta)


class TimelineWriter:
    """A timeline database written in steps: events chunk by chunk, then the small tables.

    Written to `DB.tmp` and moved into place by `finish`; leaving the `with` block without
    `finish` (an error) removes the half-written file.
    """

    def __init__(self, db: Path):
        self.db = db
        self.tmp = db.with_name(db.name + ".tmp")
        for stale in (self.tmp, Path(str(self.tmp) + ".wal")):
            stale.unlink(missing_ok=True)
        import duckdb

        # DuckDB caches the pages it writes up to its memory limit (most of RAM by default): a
        # bounded cache keeps ingest's memory flat whatever the bundle's size.
        self.con = duckdb.connect(str(self.tmp), config={"memory_limit": WRITER_MEMORY})
        self.done = False
        for statement in DDL:
            self.con.execute(statement)

    def __enter__(self) -> TimelineWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.con.close()
        if self.done:
            os.replace(self.tmp, self.db)
        else:
            for stale in (self.tmp, Path(str(self.tmp) + ".wal")):
                stale.unlink(missing_ok=True)

    def add_events(self, events: pl.DataFrame) -> None:
        _insert(self.con, "events", events.select(EVENT_COLUMNS))

    def finish(self, *, samples: pl.DataFrame, facts: pl.DataFrame, files: pl.DataFrame, nodes: pl.DataFrame,
               warnings: pl.DataFrame, meta: dict[str, str]) -> None:
        self.con.executemany("INSERT INTO meta VALUES (?, ?)",
                             [("schema_version", str(SCHEMA_VERSION)), *sorted(meta.items())])
        _insert(self.con, "samples", samples.select(SAMPLE_COLUMNS))
        _insert(self.con, "facts", facts.select(FACT_COLUMNS))
        _insert(self.con, "files", files)
        _insert(self.con, "nodes", nodes)
        _insert(self.con, "warnings", warnings)
        self.con.execute("CHECKPOINT")
        self.done = True


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    if frame.height == 0:
        return
    arrow = frame.to_arrow()  # noqa: F841 - read by name from the SQL below
    columns = ", ".join(f'"{c}"' for c in frame.columns)
    con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM arrow")


def open_timeline(db: Path, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """Open a database written by `ingest`; a wrong file or version is a clear error."""
    import duckdb

    if not db.is_file():
        raise DatabaseError("no such timeline database", Location(str(db)), "run `k3forensics ingest BUNDLE --db FILE`")
    try:
        con = duckdb.connect(str(db), read_only=read_only)
    except duckdb.Error as exc:
        raise DatabaseError(f"not a DuckDB database ({str(exc).splitlines()[0]})", Location(str(db))) from None
    try:
        rows = con.sql("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        row = rows[0] if rows else None
    except duckdb.Error:
        con.close()
        raise DatabaseError("not a k3forensics timeline (no meta table)", Location(str(db))) from None
    if row is None or int(row[0]) != SCHEMA_VERSION:
        con.close()
        found = row[0] if row else "none"
        raise DatabaseError(f"timeline schema version {found}, this k3forensics reads {SCHEMA_VERSION}",
                            Location(str(db)), "ingest the bundle again with this version")
    return con


def read_frame(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> pl.DataFrame:
    relation = con.sql(sql, params=params) if params else con.sql(sql)
    if relation is None:  # a statement without a result (e.g. SET)
        return pl.DataFrame()
    return relation.pl()


def is_timeline_db(path: Path) -> bool:
    """A DuckDB file (its header carries the magic `DUCK` at byte 8)."""
    if not path.is_file():
        return False
    with path.open("rb") as handle:
        head = handle.read(12)
    return head[8:12] == b"DUCK"

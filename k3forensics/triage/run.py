"""Triage a bundle or a timeline database: the result object behind `k3forensics triage`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from k3forensics.library.loader import Library, load_library
from k3forensics.library.model import Role
from k3forensics.timeline.digest import DIGEST_BYTES, FINDINGS, Digest, digested, digestible, fact_lines
from k3forensics.timeline.ingest import ChunkObserver, Progress, Timeline, build_timeline, observed
from k3forensics.timeline.store import is_timeline_db, open_timeline, read_frame
from k3forensics.triage import first_failure, oom
from k3forensics.triage.environment import fingerprint
from k3forensics.triage.hits import all_hits
from k3forensics.triage.next_step import NextStep, decide
from k3forensics.triage.verdict import acceptance

DB_BATCH_ROWS = 200_000


@dataclass
class TriageResult:
    bundle: str
    timeline: Timeline
    hits: pl.DataFrame
    first: dict[str, Any] | None
    cascade: list[dict[str, Any]]
    later: list[dict[str, Any]]
    oom: oom.OomVerdict
    next_step: NextStep
    environment: dict[str, Any]
    verdict: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.first is not None


def load_timeline(db: Path, library: Library | None = None, digest: bool | None = False, *,
                  on_chunk: ChunkObserver | None = None, digest_roles: tuple[Role, ...] = FINDINGS) -> Timeline:
    """The timeline of an ingested database; with `digest` (and a library), only the lines a
    triage can use, read in batches (None: for databases of at least `DIGEST_BYTES`), each
    batch shown to `on_chunk` first (as `build_timeline` does)."""
    con = open_timeline(db)
    try:
        tables = {t: read_frame(con, f"SELECT * FROM {t}") for t in ("samples", "facts", "files", "nodes")}
        if digest is None:
            digest = db.stat().st_size >= DIGEST_BYTES
        if digest and library is not None and digestible(library, digest_roles):
            events = _digest_events(con, Digest(library, fact_lines(tables["facts"]), digest_roles), on_chunk)
        else:
            digest = False
            events = read_frame(con, "SELECT * FROM events ORDER BY seq")
        warnings = [r[0] for r in con.sql("SELECT message FROM warnings").fetchall()]
        year_rows = con.sql("SELECT value FROM meta WHERE key = 'reference_year'").fetchall()
        year_row = year_rows[0] if year_rows else None
    finally:
        con.close()
    events = _utc(events)
    return Timeline(events, tables["samples"], tables["facts"], tables["files"], tables["nodes"], warnings,
                    int(year_row[0]) if year_row else 0, digest=digest)


def _digest_events(con: Any, keeper: Digest, on_chunk: ChunkObserver | None) -> pl.DataFrame:
    # A table scan keeps insertion order (DuckDB's default), which is `seq` order: the writer
    # inserts chunk after chunk. Sorting instead would hold the whole table.
    reader = con.sql("SELECT * FROM events").to_arrow_reader(DB_BATCH_ROWS)
    batches = (_utc(pl.from_arrow(batch)) for batch in reader)  # type: ignore[arg-type]
    events = digested(keeper, observed(batches, on_chunk), batch_rows=DB_BATCH_ROWS)
    return events if events is not None else read_frame(con, "SELECT * FROM events LIMIT 0")


def _utc(events: pl.DataFrame) -> pl.DataFrame:
    return events.with_columns(pl.col(c).dt.convert_time_zone("UTC") for c in ("ts", "ts_order") if c in events.columns)


def triage(path: Path, library: Library | None = None, tie_s: float = 2.0,
           digest: bool | None = None, progress: Progress | None = None) -> TriageResult:
    """`digest`: keep only the lines a triage can use (None: for large bundles; see timeline/digest.py)."""
    library = library or load_library()
    library.raise_problems()
    if is_timeline_db(path):
        timeline = load_timeline(path, library, digest)
    else:
        timeline = build_timeline(path, library, progress, digest=digest)
    return triage_timeline(str(path), timeline, library, tie_s)


def triage_timeline(name: str, timeline: Timeline, library: Library, tie_s: float = 2.0) -> TriageResult:
    events = timeline.events
    hits = all_hits(events, library)
    choice = first_failure.choose(hits, tie_s=tie_s)
    verdict_oom = oom.classify(choice.first, choice.cascade, events, hits)
    first = dict(choice.first) if choice.first else None
    if first is not None and verdict_oom.category:
        first["category"] = verdict_oom.category
    env = fingerprint(timeline.facts)
    verdict = acceptance(first, verdict_oom, env, timeline, hits)
    step = decide(first, verdict_oom, library, verdict.get("environment_problems", []))
    return TriageResult(name, timeline, hits, first, choice.cascade, choice.later, verdict_oom, step, env, verdict,
                        notes=list(library.notes))

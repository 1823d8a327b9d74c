"""Bundle → timeline: in memory (`build_timeline`, for triage) or a DuckDB file (`ingest`).

Both run the chunked two-pass build (`build.py`): memory follows the chunk size, not the
bundle, except for what the caller keeps (`build_timeline` returns every event).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from k3forensics import __version__
from k3forensics.library.loader import Library, load_library
from k3forensics.library.model import Role
from k3forensics.timeline.build import Progress, TimelineBuild
from k3forensics.timeline.digest import FINDINGS, Digest, digested, digestible, fact_lines
from k3forensics.timeline.inmemory import build_whole
from k3forensics.timeline.manifest import files_manifest, nodes_table
from k3forensics.timeline.parse_file import CHUNK_BYTES
from k3forensics.timeline.prefetch import prefetched
from k3forensics.timeline.sieve import Sieve
from k3forensics.timeline.store import TimelineWriter

ChunkObserver = Callable[[pl.DataFrame], None]

# A bundle whose events take more than this in memory while read is triaged from a digest.
DIGEST_MEMORY_BYTES = 256 << 20

__all__ = ["IngestSummary", "Progress", "Timeline", "build_timeline", "ingest"]


@dataclass
class IngestSummary:
    db: Path
    files: pl.DataFrame
    nodes: pl.DataFrame
    warnings: list[str] = field(default_factory=list)
    year: int | None = None

    @property
    def line_count(self) -> int:
        return int(self.files.get_column("line_count").sum()) if self.files.height else 0

    @property
    def unparsed_count(self) -> int:
        return int(self.files.get_column("unparsed_count").sum()) if self.files.height else 0


@dataclass
class Timeline:
    """The in-memory result of ingest, before (or instead of) writing it."""

    events: pl.DataFrame
    samples: pl.DataFrame
    facts: pl.DataFrame
    files: pl.DataFrame
    nodes: pl.DataFrame
    warnings: list[str]
    year: int
    digest: bool = False  # `events` holds only the lines a triage can use (the files table counts all)


def build_timeline(bundle: Path, library: Library | None = None, progress: Progress | None = None,
                   chunk_bytes: int = CHUNK_BYTES, digest: bool | None = False, *,
                   on_chunk: ChunkObserver | None = None, digest_roles: tuple[Role, ...] = FINDINGS) -> Timeline:
    """Every event of `bundle` in memory; with `digest`, only the lines a triage can use
    (`digest.py`; the others wait on disk between the passes and are counted, not kept).
    `digest=None` digests a bundle whose events outgrow `DIGEST_MEMORY_BYTES` while read.
    `on_chunk` sees every completed chunk of the chunked build, before any line is dropped;
    `digest_roles`: the roles whose signatures' candidate lines the digest keeps."""
    library = library or load_library()
    library.raise_problems()
    wanted = digest is not False and digestible(library, digest_roles)
    # Lines the digest could not keep are dropped while read once the spool is on disk (then
    # the digest is taken), unless `on_chunk` wants to see every line.
    sieve = Sieve(library) if wanted and on_chunk is None else None
    build = TimelineBuild(bundle, library, chunk_bytes=chunk_bytes, progress=progress, sieve=sieve,
                          spool_dir=Path(tempfile.gettempdir()) if wanted else None,
                          spool_memory_bytes=DIGEST_MEMORY_BYTES if wanted and digest is None else None)
    if not build.milestones_ready():
        build.spool.close()
        return Timeline(*build_whole(bundle, library, progress))
    try:
        build.read()
        settled = build.settle()
        samples, facts = build.side_tables()
        digest = wanted and build.spool.on_disk
        if digest:
            keeper = Digest(library, fact_lines(facts), digest_roles)
            kept = digested(keeper, observed(prefetched(build.finish()), on_chunk))
            chunks = [kept] if kept is not None else []
        else:
            chunks = list(observed(build.finish(), on_chunk))
    finally:
        build.spool.close()
    # An empty bundle gives a frame without columns, as the whole-bundle computation does.
    events = _one_chunk(chunks) if chunks else pl.DataFrame()
    files, nodes = _tables(build)
    return Timeline(events, samples, facts, files, nodes, build.warnings, settled.reference.year, digest=digest)


def ingest(bundle: Path, db: Path, library: Library | None = None, progress: Progress | None = None,
           chunk_bytes: int = CHUNK_BYTES, spool_dir: Path | None = None) -> IngestSummary:
    """Write the timeline of `bundle` to the DuckDB file `db`, holding about one chunk in memory
    (chunks wait in a temporary folder, `spool_dir` or the system's, between the passes)."""
    library = library or load_library()
    library.raise_problems()
    build = TimelineBuild(bundle, library, chunk_bytes=chunk_bytes, progress=progress,
                          spool_dir=spool_dir or Path(tempfile.gettempdir()))
    if not build.milestones_ready():
        build.spool.close()
        timeline = Timeline(*build_whole(bundle, library, progress))
        with TimelineWriter(db) as writer:
            if timeline.events.height:
                writer.add_events(timeline.events)
            writer.finish(samples=timeline.samples, facts=timeline.facts, files=timeline.files,
                          nodes=timeline.nodes, warnings=_warnings(timeline.warnings),
                          meta=_meta(bundle, timeline.year))
        return IngestSummary(db, timeline.files, timeline.nodes, timeline.warnings, timeline.year)
    try:
        build.read()
        settled = build.settle()
        with TimelineWriter(db) as writer:
            for chunk in prefetched(build.finish()):
                writer.add_events(chunk)
            samples, facts = build.side_tables()
            files, nodes = _tables(build)
            writer.finish(samples=samples, facts=facts, files=files, nodes=nodes,
                          warnings=_warnings(build.warnings), meta=_meta(bundle, settled.reference.year))
    finally:
        build.spool.close()
    return IngestSummary(db, files, nodes, build.warnings, settled.reference.year)


def observed(chunks: Iterator[pl.DataFrame], observer: ChunkObserver | None) -> Iterator[pl.DataFrame]:
    """The chunks, each shown to `observer` first."""
    for chunk in chunks:
        if observer is not None:
            observer(chunk)
        yield chunk


def _one_chunk(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """The chunks as one frame whose columns are each one contiguous chunk, built column by
    column so that at most one column exists twice. (Eager polars operations on a frame of
    many chunks copy it whole first: every filter the triage runs would.)"""
    frames, pending = list(frames), frames
    pending.clear()  # the caller's list must not keep the old chunks alive
    columns = []
    for name in frames[0].columns:
        columns.append(pl.concat([f.get_column(name) for f in frames], rechunk=True))
        frames = [f.drop(name) for f in frames]
    return pl.DataFrame(columns)


def _tables(build: TimelineBuild) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The files manifest and the nodes table from what pass 2 tallied."""
    rows = []
    for state in build.files:
        assert state.info.decoded is not None
        rows.append((state.info.file, build.node_of(state), state.info.decoded, state.info.detected_type,
                     state.info.envelope))
    counted = [s for s in build.files if s.lines]
    per_file = pl.DataFrame({
        "file": [s.info.file for s in counted],
        "line_count": [s.lines for s in counted],
        "parsed_count": [s.parsed for s in counted],
        "first_ts": [s.first_ts for s in counted],
        "last_ts": [s.last_ts for s in counted],
    }, schema={"file": pl.Utf8, "line_count": pl.UInt32, "parsed_count": pl.UInt32,
               "first_ts": pl.Datetime("us", "UTC"), "last_ts": pl.Datetime("us", "UTC")})
    if not counted:
        per_file = pl.DataFrame(schema={"file": pl.Utf8})
    files = files_manifest(rows, per_file)
    hosts = pl.DataFrame({"node": list(build.hosts), "hostnames": [sorted(h) for h in build.hosts.values()]},
                         schema={"node": pl.Utf8, "hostnames": pl.List(pl.Utf8)})
    return files, nodes_table(files, hosts)


def _warnings(warnings: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"file": [w.split(":", 1)[0] for w in warnings], "line_no": [None] * len(warnings),
                         "message": warnings}, schema={"file": pl.Utf8, "line_no": pl.Int64, "message": pl.Utf8})


def _meta(bundle: Path, year: int) -> dict[str, str]:
    return {"bundle": str(bundle), "k3forensics_version": __version__, "reference_year": str(year),
            "ingested_at": datetime.now(UTC).isoformat(timespec="seconds")}

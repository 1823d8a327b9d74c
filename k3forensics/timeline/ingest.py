"""Bundle → timeline database: the ingest pipeline end to end."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from k3forensics import __version__
from k3forensics.bundle import open_bundle
from k3forensics.library.loader import Library, load_library
from k3forensics.timeline.nodes import DEFAULT_NODE, node_of_paths, single_node_name
from k3forensics.timeline.parse_file import ParsedFile, parse_file
from k3forensics.timeline.phases import assign_phases, milestone_column
from k3forensics.timeline.store import write_timeline
from k3forensics.timeline.times import reference_instant, resolve_times

Progress = Callable[[str, int, int], None]  # (file, files done, files total)


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


def build_timeline(bundle: Path, library: Library | None = None, progress: Progress | None = None) -> Timeline:
    library = library or load_library()
    library.raise_problems()
    with open_bundle(bundle) as opened:
        paths = [bf.rel_path for bf in opened.files]
        node_by_path = node_of_paths(paths)
        parsed: list[ParsedFile] = []
        for done, bf in enumerate(opened.files):
            if progress:
                progress(bf.rel_path, done, len(paths))
            parsed.append(parse_file(bf, node_by_path[bf.rel_path]))
        warnings = list(opened.warnings)
        mtimes = [bf.mtime for bf in opened.files if bf.mtime]
    if progress:
        progress("", len(paths), len(paths))
    for p in parsed:
        warnings += p.warnings
    events = _concat([p.events.with_columns(pl.lit(node_by_path[p.file]).alias("node")) for p in parsed])
    facts = _concat([p.facts.with_columns(pl.lit(node_by_path[p.file]).alias("node"), pl.lit(p.file).alias("file"))
                     for p in parsed])
    samples = _concat([p.samples.with_columns(pl.lit(node_by_path[p.file]).alias("node"),
                                              pl.lit(p.file).alias("file")) for p in parsed])
    if set(node_by_path.values()) == {DEFAULT_NODE}:
        name = single_node_name(events, facts) if events.height else None
        if name:
            events, facts, samples = (f.with_columns(pl.lit(name).alias("node")) for f in (events, facts, samples))
            node_by_path = {k: name for k in node_by_path}
    events = events.with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64))
    reference = reference_instant(events, hint=max(mtimes) if mtimes else None)
    year = reference.year
    events = resolve_times(events, reference)
    events = assign_phases(milestone_column(events, library))
    files = _files_manifest(parsed, node_by_path, events)
    nodes = _nodes_table(files, events)
    return Timeline(events, samples, facts, files, nodes, warnings, year)


def ingest(bundle: Path, db: Path, library: Library | None = None, progress: Progress | None = None) -> IngestSummary:
    timeline = build_timeline(bundle, library, progress)
    write_timeline(
        db, events=timeline.events, samples=timeline.samples, facts=timeline.facts, files=timeline.files,
        nodes=timeline.nodes,
        warnings=pl.DataFrame({"file": [w.split(":", 1)[0] for w in timeline.warnings],
                               "line_no": [None] * len(timeline.warnings), "message": timeline.warnings},
                              schema={"file": pl.Utf8, "line_no": pl.Int64, "message": pl.Utf8}),
        meta={"bundle": str(bundle), "k3forensics_version": __version__, "reference_year": str(timeline.year),
              "ingested_at": datetime.now(UTC).isoformat(timespec="seconds")},
    )
    return IngestSummary(db, timeline.files, timeline.nodes, timeline.warnings, timeline.year)


def _concat(frames: list[pl.DataFrame]) -> pl.DataFrame:
    frames = [f for f in frames if f.width]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def _files_manifest(parsed: list[ParsedFile], node_by_path: dict[str, str], events: pl.DataFrame) -> pl.DataFrame:
    per_file = events.group_by("file").agg(
        pl.len().alias("line_count"), pl.col("parsed").sum().alias("parsed_count"),
        pl.col("ts").min().alias("first_ts"), pl.col("ts").max().alias("last_ts"),
    ) if events.height else pl.DataFrame(schema={"file": pl.Utf8})
    rows = pl.DataFrame({
        "file": [p.file for p in parsed],
        "node": [node_by_path[p.file] for p in parsed],
        "sha256": [p.decoded.sha256 for p in parsed],
        "size_bytes": [p.decoded.size for p in parsed],
        "detected_type": [p.detected_type for p in parsed],
        "envelope": [p.envelope for p in parsed],
        "encoding": [p.decoded.encoding for p in parsed],
        "encoding_problems": [list(p.decoded.problems) for p in parsed],
    }, schema_overrides={"envelope": pl.Utf8, "encoding_problems": pl.List(pl.Utf8)})
    out = rows.join(per_file, on="file", how="left") if per_file.height else rows
    return out.with_columns(
        pl.col("line_count").fill_null(0).cast(pl.Int64) if "line_count" in out.columns else pl.lit(0, pl.Int64).alias("line_count"),
        pl.col("parsed_count").fill_null(0).cast(pl.Int64) if "parsed_count" in out.columns else pl.lit(0, pl.Int64).alias("parsed_count"),
    ).with_columns(
        (pl.col("line_count") - pl.col("parsed_count")).alias("unparsed_count"),
        *[pl.lit(None, pl.Datetime("us", "UTC")).alias(c) for c in ("first_ts", "last_ts") if c not in out.columns],
    ).select("file", "node", "sha256", "size_bytes", "detected_type", "envelope", "encoding", "encoding_problems",
             "line_count", "parsed_count", "unparsed_count", "first_ts", "last_ts")


def _nodes_table(files: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    hosts = (
        events.select("node", pl.col("attrs").str.json_path_match("$.host").alias("host")).drop_nulls()
        .unique().group_by("node").agg(pl.col("host").sort().alias("hostnames"))
        if events.height else pl.DataFrame(schema={"node": pl.Utf8, "hostnames": pl.List(pl.Utf8)})
    )
    table = files.group_by("node").agg(
        pl.len().alias("file_count"), pl.col("line_count").sum(),
        pl.col("first_ts").min(), pl.col("last_ts").max(),
    )
    return table.join(hosts, on="node", how="left").select(
        "node", pl.col("file_count").cast(pl.Int64), pl.col("line_count").cast(pl.Int64), "first_ts", "last_ts",
        pl.col("hostnames").fill_null([]),
    ).sort("node")

"""The timeline computed over the whole bundle at once: every file parsed, then concatenated.

The reference the chunked build (`build.py`) is tested against, and its fallback when a
milestone signature needs more than one line to decide (a window, a traceback, a phase):
such a library cannot be matched while files are still being read.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import polars as pl

from k3forensics.bundle import open_bundle
from k3forensics.library.loader import Library
from k3forensics.timeline.manifest import files_manifest, nodes_table
from k3forensics.timeline.nodes import DEFAULT_NODE, node_of_paths, single_node_name
from k3forensics.timeline.parse_file import ParsedFile, parse_file
from k3forensics.timeline.phases import assign_phases, milestone_column
from k3forensics.timeline.times import reference_instant, resolve_times

WholeTimeline = tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame, list[str], int]


def build_whole(bundle: Path, library: Library, progress=None) -> WholeTimeline:  # type: ignore[no-untyped-def]
    """(events, samples, facts, files, nodes, warnings, year) of a bundle, all in memory."""
    with open_bundle(bundle) as opened:
        paths = [bf.rel_path for bf in opened.files]
        node_by_path = node_of_paths(paths)
        parsed: list[ParsedFile] = []
        for done, bf in enumerate(opened.files):
            if progress:
                progress(bf.rel_path, done, len(paths))
            parsed.append(parse_file(bf, node_by_path[bf.rel_path]))
        warnings = list(opened.warnings)
        mtimes: list[datetime] = [bf.mtime for bf in opened.files if bf.mtime]
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
    events = resolve_times(events, reference)
    events = assign_phases(milestone_column(events, library))
    files = files_manifest(
        [(p.file, node_by_path[p.file], p.decoded, p.detected_type, p.envelope) for p in parsed],
        _per_file(events),
    )
    nodes = nodes_table(files, _hosts(events))
    return events, samples, facts, files, nodes, warnings, reference.year


def _concat(frames: list[pl.DataFrame]) -> pl.DataFrame:
    frames = [f for f in frames if f.width]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def _per_file(events: pl.DataFrame) -> pl.DataFrame:
    if events.height == 0:
        return pl.DataFrame(schema={"file": pl.Utf8})
    return events.group_by("file").agg(
        pl.len().alias("line_count"), pl.col("parsed").sum().alias("parsed_count"),
        pl.col("ts").min().alias("first_ts"), pl.col("ts").max().alias("last_ts"),
    )


def _hosts(events: pl.DataFrame) -> pl.DataFrame:
    if events.height == 0:
        return pl.DataFrame(schema={"node": pl.Utf8, "hostnames": pl.List(pl.Utf8)})
    return (
        events.select("node", pl.col("attrs").str.json_path_match("$.host").alias("host")).drop_nulls()
        .unique().group_by("node").agg(pl.col("host").sort().alias("hostnames"))
    )

"""Signature hits joined to their events and to their signatures' metadata."""

from __future__ import annotations

import polars as pl

from k3forensics.library.loader import Library
from k3forensics.library.match import match_events

HIT_EVENT_COLUMNS = ["seq", "file", "line_no", "node", "ts", "ts_order", "phase", "line", "tb_group", "process",
                     "source", "step", "milestone"]


def signature_table(library: Library) -> pl.DataFrame:
    sigs = list(library.signatures.values())
    return pl.DataFrame({
        "signature": [s.id for s in sigs],
        "role": [s.role.value for s in sigs],
        "category": [s.category for s in sigs],
        "priority": [s.priority for s in sigs],
        "causal_window_s": [s.causal_window_s for s in sigs],
        "severity": [s.severity.value for s in sigs],
        "title": [s.title for s in sigs],
    }, schema_overrides={"priority": pl.Int64, "causal_window_s": pl.Float64})


def all_hits(events: pl.DataFrame, library: Library) -> pl.DataFrame:
    """Failure and context hits, one row per (line, signature), in event order."""
    hits = match_events(events, library)
    columns = [c for c in HIT_EVENT_COLUMNS if c in events.columns]
    return (
        hits.join(events.select(columns), on="seq", how="left")
        .join(signature_table(library), on="signature", how="left")
        .sort("seq", "signature")
    )

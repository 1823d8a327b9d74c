"""Run every signature's example lines through the real log pipeline and the matcher."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from k3forensics.library.loader import Library
from k3forensics.library.match import match_events
from k3forensics.library.model import Example, Role, Signature
from k3forensics.sources.base import ParseContext, lines_frame
from k3forensics.sources.logs import parse_log


@dataclass(frozen=True)
class ExampleFailure:
    signature: str
    origin: str
    line: str
    expected: bool  # True: should have matched

    def __str__(self) -> str:
        verb = "did not match" if self.expected else "matched but must not"
        return f"{self.origin}: {self.signature} {verb}: {self.line!r}"


def example_events(examples: list[Example]) -> pl.DataFrame:
    """Each example as one event, parsed like a log line, with its extra fields applied."""
    events = parse_log(lines_frame([e.line for e in examples], file="example.log"), ParseContext("example.log")).events
    events = events.with_row_index("seq").with_columns(
        pl.col("seq").cast(pl.Int64),
        pl.lit("node0").alias("node"),
        pl.col("ts").alias("ts_order"),
        pl.lit(None, pl.Utf8).alias("milestone"),
        pl.lit("serving").alias("phase"),
    )
    overrides = [e.fields for e in examples]
    for column in sorted({k for f in overrides for k in f}):
        values = [str(f[column]) if column in f else None for f in overrides]
        events = events.with_columns(
            pl.coalesce(pl.Series(column + "_x", values, dtype=pl.Utf8), pl.col(column) if column in events.columns
                        else pl.lit(None, pl.Utf8)).alias(column)
        )
    return events


def run_examples(library: Library, signatures: list[Signature] | None = None) -> list[ExampleFailure]:
    """Every example of every (or the given) signature; each example is matched alone, so
    examples of different signatures never see each other."""
    failures: list[ExampleFailure] = []
    sigs = signatures or [s for s in library.signatures.values()]
    for sig in sigs:
        cases = [(e, True) for e in sig.matches] + [(e, False) for e in sig.no_match]
        if not cases:
            continue
        events = example_events([e for e, _ in cases])
        roles = (sig.role,) if sig.role != Role.MILESTONE else (Role.MILESTONE,)
        hits = match_events(events, library, roles=roles)
        matched = set(hits.filter(pl.col("signature") == sig.id).get_column("seq").to_list())
        for i, (example, expected) in enumerate(cases):
            if (i in matched) != expected:
                failures.append(ExampleFailure(sig.id, sig.origin, example.line, expected))
    return failures


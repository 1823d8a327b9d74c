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


def example_events(groups: list[tuple[str, list[Example]]]) -> pl.DataFrame:
    """Examples as events, parsed like log lines in one pass; each group is its own file
    (so a traceback in one group never joins another), with extra fields applied."""
    examples = [e for _, group in groups for e in group]
    files = [name for name, group in groups for _ in group]
    numbers = [i + 1 for _, group in groups for i in range(len(group))]
    lines = lines_frame([e.line for e in examples]).with_columns(
        pl.Series("file", files, dtype=pl.Utf8), pl.Series("line_no", numbers, dtype=pl.Int64))
    events = parse_log(lines, ParseContext("examples")).events.with_columns(
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
    """Every example of every (or the given) signature, all matched in one pass.

    Each signature's examples form their own file, so a traceback in one signature's
    examples never joins another's; a signature is judged on its own examples only.
    """
    sigs = signatures or list(library.signatures.values())
    groups: list[tuple[str, list[Example]]] = []
    cases: list[tuple[Signature, Example, bool]] = []
    for sig in sigs:
        examples = [(e, True) for e in sig.matches] + [(e, False) for e in sig.no_match]
        if examples:
            groups.append((f"{sig.id}.log", [e for e, _ in examples]))
            cases += [(sig, e, expected) for e, expected in examples]
    if not groups:
        return []
    events = example_events(groups).with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64))
    hits = match_events(events, library, roles=tuple(Role))
    matched = set(hits.select("seq", "signature").iter_rows())
    failures: list[ExampleFailure] = []
    for seq, (sig, example, expected) in enumerate(cases):
        if ((seq, sig.id) in matched) != expected:
            failures.append(ExampleFailure(sig.id, sig.origin, example.line, expected))
    return failures

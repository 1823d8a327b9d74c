"""The contract between the ingest pipeline and one log source.

A *source* is one module under `k3forensics/sources/` with:

* ``NAME``: a short stable id stored in ``events.source`` and ``files.detected_type``;
* ``detect(head: str) -> bool``: a cheap check on the first few KiB of a file (decoded
  text, envelope already removed). No side effects;
* ``parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult``: turns the whole column of
  lines into event columns with polars expressions (no Python loop per line).

The frame handed to ``parse`` has one row per physical line of one file, in file order,
with the columns of ``LINE_SCHEMA``. ``ParseResult.events`` must have the same height and
order and carry every column of ``EVENT_SCHEMA`` (use ``empty_event_columns`` for the
defaults). A line a parser does not understand stays, with ``parsed = False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import polars as pl

UTC_US = pl.Datetime("us", "UTC")

# What every parser receives.
LINE_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.Utf8(),         # path inside the bundle, posix separators
    "line_no": pl.Int64(),     # 1-based physical line number in the file
    "byte_offset": pl.Int64(), # offset of the line's first byte in the file
    "line": pl.Utf8(),         # the line as it stands (container envelope removed, trailing \r dropped)
    "text": pl.Utf8(),         # `line` with ANSI escape sequences removed: what patterns run on
    "outer_ts": UTC_US,        # timestamp from a container envelope (docker/CRI), else null
    "stream": pl.Utf8(),       # stdout/stderr from a container envelope, else null
}

# What every parser must add. ts_quality: exact | yearless | zoneless | missing
# (the timeline turns yearless/zoneless into inferred once the bundle's year and zone are known).
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.Utf8(),
    "parsed": pl.Boolean(),
    "process": pl.Utf8(),      # e.g. "EngineCore_DP0", "Worker_TP3", "APIServer", a pod or unit name
    "pid": pl.Int64(),
    "rank": pl.Utf8(),         # e.g. "TP3", "rank7", NCCL device "[4]"
    "ts": UTC_US,
    "ts_quality": pl.Utf8(),
    "level": pl.Utf8(),        # DEBUG | INFO | WARNING | ERROR | CRITICAL (normalised), or null
    "message": pl.Utf8(),      # the text after the line's own prefix
    "attrs": pl.Utf8(),        # JSON object of parsed attributes, or null
}

SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "metric": pl.Utf8(),
    "labels": pl.Utf8(),       # JSON object with sorted keys
    "ts": UTC_US,              # null when the scrape carried no timestamp and none could be given
    "value": pl.Float64(),
    "line_no": pl.Int64(),     # line of the file the sample came from
}

# Environment fingerprint facts: key vocabulary in docs/ARCHITECTURE.md.
FACT_SCHEMA: dict[str, pl.DataType] = {
    "key": pl.Utf8(),
    "value": pl.Utf8(),
    "line_no": pl.Int64(),
}


@dataclass(frozen=True)
class ParseContext:
    """What a parser may know beyond the lines themselves."""

    file: str
    node: str | None = None
    file_mtime: datetime | None = None   # UTC; a weak hint for year-less timestamps


@dataclass
class ParseResult:
    events: pl.DataFrame
    samples: pl.DataFrame | None = None
    facts: pl.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)


class Source(Protocol):
    NAME: str

    def detect(self, head: str) -> bool: ...

    def parse(self, lines: pl.DataFrame, ctx: ParseContext) -> ParseResult: ...


def empty_event_columns(source: str) -> list[pl.Expr]:
    """Default event columns: unparsed, no timestamp, message = text."""
    return [
        pl.lit(source, pl.Utf8).alias("source"),
        pl.lit(False).alias("parsed"),
        pl.lit(None, pl.Utf8).alias("process"),
        pl.lit(None, pl.Int64).alias("pid"),
        pl.lit(None, pl.Utf8).alias("rank"),
        pl.lit(None, UTC_US).alias("ts"),
        pl.lit("missing").alias("ts_quality"),
        pl.lit(None, pl.Utf8).alias("level"),
        pl.col("text").alias("message"),
        pl.lit(None, pl.Utf8).alias("attrs"),
    ]


def empty_frame(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def lines_frame(lines: list[str], file: str = "test.log") -> pl.DataFrame:
    """A LINE_SCHEMA frame from plain strings (tests, signature examples)."""
    from k3forensics.text import strip_ansi  # local import: text depends on polars only

    offsets: list[int] = []
    pos = 0
    for text in lines:  # test helper, not the ingest path
        offsets.append(pos)
        pos += len(text.encode("utf-8")) + 1
    frame = pl.DataFrame(
        {
            "file": [file] * len(lines),
            "line_no": list(range(1, len(lines) + 1)),
            "byte_offset": offsets,
            "line": lines,
        },
        schema={"file": pl.Utf8, "line_no": pl.Int64, "byte_offset": pl.Int64, "line": pl.Utf8},
    )
    return frame.with_columns(
        strip_ansi(pl.col("line")).alias("text"),
        pl.lit(None, UTC_US).alias("outer_ts"),
        pl.lit(None, pl.Utf8).alias("stream"),
    )

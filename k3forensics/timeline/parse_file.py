"""One bundle file → events (+ samples, facts) with the columns of the timeline."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from k3forensics.bundle import BundleFile
from k3forensics.decode import DecodedFile, decode_file
from k3forensics.sources import container, detect_document, detect_log
from k3forensics.sources.base import FACT_SCHEMA, SAMPLE_SCHEMA, UTC_US, ParseContext, ParseResult
from k3forensics.sources.logs import parse_log
from k3forensics.text import strip_ansi

HEAD_BYTES = 8192

# Every events frame is brought to these columns before the bundle is put together.
FRAME_COLUMNS: dict[str, pl.DataType] = {
    "file": pl.Utf8(), "line_no": pl.Int64(), "byte_offset": pl.Int64(), "source": pl.Utf8(),
    "format": pl.Utf8(), "parsed": pl.Boolean(), "process": pl.Utf8(), "pid": pl.Int64(), "rank": pl.Utf8(),
    "ts": UTC_US, "ts_quality": pl.Utf8(), "level": pl.Utf8(), "message": pl.Utf8(), "line": pl.Utf8(),
    "attrs": pl.Utf8(), "tb_group": pl.Int64(), "tb_final": pl.Boolean(), "exception": pl.Utf8(),
    "stream": pl.Utf8(),
}


@dataclass
class ParsedFile:
    file: str
    events: pl.DataFrame
    samples: pl.DataFrame
    facts: pl.DataFrame
    detected_type: str
    envelope: str | None
    decoded: DecodedFile
    warnings: list[str] = field(default_factory=list)


def head_of(lines: pl.DataFrame, column: str = "text") -> str:
    """The first few KiB of a file's text, for detection."""
    out: list[str] = []
    size = 0
    for text in lines.get_column(column).head(400).to_list():  # bounded: at most 400 lines
        out.append(text or "")
        size += len(out[-1]) + 1
        if size >= HEAD_BYTES:
            break
    return "\n".join(out)[:HEAD_BYTES]


def parse_file(bf: BundleFile, node: str) -> ParsedFile:
    decoded = decode_file(bf)
    lines = decoded.lines.with_columns(
        strip_ansi(pl.col("line")).alias("text"),
        pl.lit(None, UTC_US).alias("outer_ts"),
        pl.lit(None, pl.Utf8).alias("stream"),
    )
    envelope = container.envelope_kind(head_of(lines)) if lines.height else None
    if envelope:
        lines = container.unwrap(lines, envelope)
    ctx = ParseContext(file=bf.rel_path, node=node, file_mtime=bf.mtime)
    head = head_of(lines) if lines.height else ""
    document = detect_document(head) if head else None
    if document is not None:
        result: ParseResult = document.parse(lines, ctx)
        detected = str(document.NAME)
    else:
        result = parse_log(lines, ctx)
        detected = _dominant_source(result.events) or detect_log(head)
    if decoded.binary:
        detected = "binary"
    events = conform(result.events, lines)
    return ParsedFile(
        file=bf.rel_path,
        events=events,
        samples=_frame_or_empty(result.samples, SAMPLE_SCHEMA),
        facts=_frame_or_empty(result.facts, FACT_SCHEMA),
        detected_type=detected,
        envelope=envelope,
        decoded=decoded,
        warnings=list(decoded.problems) + [f"{bf.rel_path}: {w}" for w in result.warnings],
    )


def conform(events: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """Bring a parser's events to FRAME_COLUMNS; `line` always comes from the input lines."""
    if events.height != lines.height:
        raise AssertionError(f"parser returned {events.height} events for {lines.height} lines")
    events = events.with_columns(lines.get_column("line").alias("line"))
    if "stream" not in events.columns or events.get_column("stream").null_count() == events.height:
        events = events.with_columns(lines.get_column("stream").alias("stream"))
    exprs = [
        (pl.col(name) if name in events.columns else pl.lit(None)).cast(dtype).alias(name)
        for name, dtype in FRAME_COLUMNS.items()
    ]
    return events.select(exprs).with_columns(pl.col("tb_final").fill_null(False), pl.col("parsed").fill_null(False))


def _dominant_source(events: pl.DataFrame) -> str | None:
    named = events.filter(pl.col("parsed") & (pl.col("source") != "generic"))
    if named.height == 0:
        return None
    return str(named.get_column("source").mode().sort().first())


def _frame_or_empty(frame: pl.DataFrame | None, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    if frame is None or frame.height == 0:
        return pl.DataFrame(schema=schema)
    return frame.select([pl.col(k).cast(v) for k, v in schema.items()])

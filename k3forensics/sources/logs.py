"""The log pipeline: every line of a log file against every log line format."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from k3forensics.sources import generic, kernel, nccl, pytorch, traceback, vllm
from k3forensics.sources.base import UTC_US, ParseContext, ParseResult
from k3forensics.sources.logformat import PROCESS_PREFIX, LineFormat, apply_formats, formats_frame
from k3forensics.text import per_distinct

# Order matters: the first format that matches a line wins. Anchored, specific shapes
# first; NCCL is unanchored (it hides behind other prefixes); generic dated lines last.
LOG_FORMATS: list[LineFormat] = [
    *vllm.FORMATS,
    *pytorch.FORMATS,
    *nccl.FORMATS,
    *kernel.FORMATS,
    *traceback.FORMATS,
    *generic.FORMATS,
]


# Columns a caller derives from a line's message alone (see `parse_log_frame`).
MessageColumns = Callable[[pl.Series], pl.DataFrame]

# Every process prefix holds this literal: lines without it skip the prefix regex.
_PREFIX_LITERAL = " pid="


def parse_log(lines: pl.DataFrame, ctx: ParseContext, formats: list[LineFormat] | None = None) -> ParseResult:
    """Parse a LINE_SCHEMA frame of one log file into events (same height, same order)."""
    events = traceback.annotate(parse_log_frame(lines, formats or LOG_FORMATS).lazy()).collect()
    return ParseResult(events=events)


def parse_log_frame(lines: pl.DataFrame, formats: list[LineFormat],
                    per_message: MessageColumns | None = None, per_text: MessageColumns | None = None) -> pl.DataFrame:
    """`parse_log_lazy` without the traceback annotation, computed eagerly: the process prefix
    only on lines that can hold one, each format only on the lines no earlier one took, each
    distinct text once when texts repeat (`per_distinct`). `per_message`, `per_text`: more
    columns that depend on the message (the traceback shapes) or the text alone, computed
    with the fields."""
    text = lines.get_column("text").fill_null("")

    def fields_of(texts: pl.Series) -> pl.DataFrame:
        fields = text_fields(texts, formats, per_message)
        return fields.hstack(per_text(texts)) if per_text is not None else fields

    fields = per_distinct(text, fields_of)
    # The container envelope's time is when the line was written: it beats the inner one.
    return lines.hstack(fields).with_columns(
        pl.when(pl.col("outer_ts").is_not_null()).then(pl.col("ts")).otherwise(None).alias("inner_ts"),
        pl.coalesce(pl.col("outer_ts"), pl.col("ts")).cast(UTC_US).alias("ts"),
        pl.when(pl.col("outer_ts").is_not_null()).then(pl.lit("exact")).otherwise(pl.col("ts_quality"))
        .alias("ts_quality"),
    )


def text_fields(text: pl.Series, formats: list[LineFormat], per_message: MessageColumns | None = None) -> pl.DataFrame:
    """What a line's text alone decides, one row per text: `process`, `pid`, the fields of
    `formats_frame` (the message is the text after the process prefix where no format gives
    one) and `parsed`, then the `per_message` columns."""
    has_prefix = text.str.contains(_PREFIX_LITERAL, literal=True).fill_null(False)
    process = pl.repeat(None, text.len(), dtype=pl.Utf8, eager=True).alias("process")
    pid = pl.repeat(None, text.len(), dtype=pl.Int64, eager=True).alias("pid")
    rest = text.clone()  # `scatter` writes into its series
    if has_prefix.any():
        rows = has_prefix.arg_true()
        prefixed = pl.DataFrame({"t": text.gather(rows)}).select(
            pl.col("t").str.extract_groups(PROCESS_PREFIX).alias("g"),
            pl.col("t").str.replace(PROCESS_PREFIX, "").alias("rest"),
        )
        groups = prefixed.get_column("g")
        process = process.scatter(rows, groups.struct.field("proc").str.strip_chars())
        pid = pid.scatter(rows, groups.struct.field("pid").cast(pl.Int64, strict=False))
        rest = rest.scatter(rows, prefixed.get_column("rest"))
    fields = pl.DataFrame([process, pid, rest.alias("_rest")]).hstack(formats_frame(rest, formats)).with_columns(
        (pl.col("format").is_not_null() | pl.col("process").is_not_null()).alias("parsed"),
        pl.col("source").fill_null(generic.NAME),
        pl.coalesce(pl.col("message"), pl.col("_rest")).alias("message"),
        pl.col("ts_quality").fill_null("missing"),
    ).drop("_rest")
    return fields.hstack(per_message(fields.get_column("message"))) if per_message is not None else fields


def parse_log_lazy(lines: pl.LazyFrame, formats: list[LineFormat]) -> pl.LazyFrame:
    text = pl.col("text").fill_null("")
    prefix = text.str.extract_groups(PROCESS_PREFIX)
    with_prefix = lines.with_columns(
        prefix.struct.field("proc").str.strip_chars().alias("process"),
        prefix.struct.field("pid").cast(pl.Int64, strict=False).alias("pid"),
        # What follows the process prefix is what the line formats see.
        text.str.replace(PROCESS_PREFIX, "").alias("_rest"),
    )
    parsed = with_prefix.with_columns(apply_formats(pl.col("_rest"), formats)).with_columns(
        (pl.col("format").is_not_null() | pl.col("process").is_not_null()).alias("parsed"),
        pl.col("source").fill_null(generic.NAME),
        pl.coalesce(pl.col("message"), pl.col("_rest")).alias("message"),
        pl.col("ts_quality").fill_null("missing"),
    )
    # The container envelope's time is when the line was written: it beats the inner one.
    timed = parsed.with_columns(
        pl.when(pl.col("outer_ts").is_not_null()).then(pl.col("ts")).otherwise(None).alias("inner_ts"),
        pl.coalesce(pl.col("outer_ts"), pl.col("ts")).cast(UTC_US).alias("ts"),
        pl.when(pl.col("outer_ts").is_not_null()).then(pl.lit("exact")).otherwise(pl.col("ts_quality"))
        .alias("ts_quality"),
    )
    return traceback.annotate(timed.drop("_rest"))

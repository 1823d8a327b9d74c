"""NCCL debug output: `host:pid:tid [dev] NCCL INFO|WARN …`, anywhere inside other logs."""

from __future__ import annotations

import re

import numpy as np
import polars as pl

from k3forensics.sources.base import UTC_US
from k3forensics.sources.logformat import LineFormat, as_captures, attrs_json, iso_datetime, plain_attrs_json

NAME = "nccl"

# Unanchored: NCCL writes straight to the fd, so its lines appear behind launcher and
# Ray prefixes and spliced into other output.
NCCL_PATTERN = (
    r"^(?:\[(?P<date>\d{4}-\d\d-\d\d)[ T](?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?(?P<tz>Z|[+-]\d\d:?\d\d)?\]\s*)?"
    r".*?(?:^|\s|\]|:)(?:(?P<host>[\w.-]+):(?P<npid>\d+):(?P<tid>\d+) )?\[(?P<dev>\d+)\] "
    r"(?:(?P<srcf>[\w./-]+:\d+) )?NCCL (?P<nlevel>INFO|WARN|ERROR|TRACE|ABORT)\b ?(?P<msg>.*)$"
)
# The usual line: the host triple first, no CI timestamp, the level word then a space or the
# end. Its groups are the space-separated fields (`_split`), which cost a third of a capture.
USUAL_PATTERN = r"^[\w.-]+:\d+:\d+ \[\d+\] (?:[\w./-]+:\d+ )?NCCL (?:INFO|WARN|ERROR|TRACE|ABORT)(?: |$)"
BANNER_PATTERN = r"^(?P<banner>NCCL version (?P<ver>\d+\.\d+\.\d+)\S*)"

_LEVELS = {"WARN": "WARNING", "INFO": "INFO", "ERROR": "ERROR", "TRACE": "DEBUG", "ABORT": "CRITICAL"}


def _build(g: pl.Expr) -> dict[str, pl.Expr]:
    # Some launchers put a CI timestamp in front of WARN lines.
    ts, quality = iso_datetime(g.struct.field("date"), g.struct.field("hms"), g.struct.field("frac"), g.struct.field("tz"))
    return _build_usual(g) | {"ts": ts, "ts_quality": quality}


def _build_usual(g: pl.Expr) -> dict[str, pl.Expr]:
    """The fields of a line of USUAL_PATTERN, which has no CI timestamp (time and quality stay
    as `iso_datetime` leaves them without a date: null and "missing")."""
    return {
        "ts": pl.lit(None, UTC_US),
        "ts_quality": pl.lit("missing"),
        "level": g.struct.field("nlevel").replace_strict(_LEVELS, default=None, return_dtype=pl.Utf8),
        "message": g.struct.field("msg"),
        "rank": pl.concat_str([pl.lit("dev"), g.struct.field("dev")]),
        # The pattern admits no quote, backslash or control character in the host or the
        # source location; digits of any length match `\d+`: past Int64 they become null.
        "attrs": plain_attrs_json(
            ("host", "src"),
            host=g.struct.field("host"),
            pid=g.struct.field("npid").cast(pl.Int64, strict=False),
            tid=g.struct.field("tid").cast(pl.Int64, strict=False),
            dev=g.struct.field("dev").cast(pl.Int64, strict=False),
            src=g.struct.field("srcf"),
        ),
    }


def _split(texts: pl.Series) -> tuple[np.ndarray, pl.Series]:
    """`LineFormat.split` for NCCL_PATTERN: on a line of USUAL_PATTERN, the pattern takes the
    host triple, `[dev]`, an optional source location, `NCCL`, the level and, past one space,
    the message: the fields between single spaces (the message keeps its own)."""
    usual = texts.str.contains(USUAL_PATTERN).fill_null(False).to_numpy()
    if not usual.any():
        return usual, pl.Series(dtype=pl.Struct({}))
    field = pl.col("f").struct.field
    triple = field("field_0").str.split_exact(":", 2).struct.field
    located = field("field_2") != "NCCL"
    # Without a location the message is what follows the level: fields 4 and 5 joined again.
    bare = pl.concat_str([field("field_4"), field("field_5")], separator=" ", ignore_nulls=True)
    cut = pl.DataFrame({"t": texts.filter(pl.Series(usual))}).select(pl.col("t").str.splitn(" ", 6).alias("f")).select(
        triple("field_0").alias("host"), triple("field_1").alias("npid"), triple("field_2").alias("tid"),
        field("field_1").str.slice(1).str.head(-1).alias("dev"),
        pl.when(located).then(field("field_2")).alias("srcf"),
        pl.when(located).then(field("field_4")).otherwise(field("field_3")).alias("nlevel"),
        pl.when(located).then(field("field_5")).otherwise(bare).fill_null("").alias("msg"),
    )
    groups = {name: cut.get_column(name) for name in cut.columns}
    return usual, as_captures(groups, NCCL_PATTERN)


def _build_banner(g: pl.Expr) -> dict[str, pl.Expr]:
    return {
        "level": pl.lit("INFO"),
        "message": g.struct.field("banner"),
        "attrs": attrs_json(nccl_version=g.struct.field("ver")),
    }


FORMATS = [
    LineFormat("nccl", NAME, NCCL_PATTERN, _build, prefilter="NCCL ", split=_split, split_build=_build_usual),
    LineFormat("nccl_banner", NAME, BANNER_PATTERN, _build_banner, prefilter="NCCL version"),
]


_HEAD = re.compile(r"\[\d+\] (?:[\w./-]+:\d+ )?NCCL (?:INFO|WARN)|^NCCL version \d", re.MULTILINE)


def detect(head: str) -> bool:
    return _HEAD.search(head) is not None


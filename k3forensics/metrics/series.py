"""Select one metric's time series out of the `samples` table.

A series is identified by (node, labels): scrapes of one node in several files are one
series. Every frame returned here has the columns `node`, `labels` (JSON text, sorted keys),
`ts` (UTC) and `value`, sorted by series then time; rows without a time or value are left out
(they cannot be placed on the timeline).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import polars as pl

UTC_US = pl.Datetime("us", "UTC")
SERIES_KEY = ("node", "labels")
SERIES_SCHEMA: dict[str, pl.DataType] = {"node": pl.Utf8(), "labels": pl.Utf8(), "ts": UTC_US, "value": pl.Float64()}


def empty_series() -> pl.DataFrame:
    return pl.DataFrame(schema=SERIES_SCHEMA)


def series(samples: pl.DataFrame, metric: str, labels: Mapping[str, str] | None = None) -> pl.DataFrame:
    """The samples of `metric` whose labels include every pair of `labels`."""
    if samples.height == 0 or "metric" not in samples.columns:
        return empty_series()
    frame = samples.filter(pl.col("metric") == metric)
    for key, value in (labels or {}).items():
        frame = frame.filter(pl.col("labels").str.json_path_match(f"$.{key}") == value)
    if frame.height == 0:
        return empty_series()
    node = pl.col("node").fill_null("") if "node" in frame.columns else pl.lit("")
    return (
        frame.select(node.alias("node"), pl.col("labels").fill_null("{}"),
                     pl.col("ts").cast(UTC_US), pl.col("value").cast(pl.Float64))
        .drop_nulls(["ts", "value"])
        .filter(pl.col("value").is_not_nan())
        # one scrape may be collected twice (two copies of a file): keep one point per time
        .unique(subset=[*SERIES_KEY, "ts"], keep="first", maintain_order=True)
        .sort([*SERIES_KEY, "ts"])
    )


def first_present(samples: pl.DataFrame, names: Iterable[str]) -> str | None:
    """The first of `names` (newest metric name first, then older ones) the samples hold."""
    if samples.height == 0 or "metric" not in samples.columns:
        return None
    present = set(samples.get_column("metric").unique().to_list())
    return next((name for name in names if name in present), None)


def without_label(labels_json: str, key: str) -> str:
    """The labels object minus one key (`le` of a histogram bucket), still sorted."""
    data = json.loads(labels_json or "{}")
    data.pop(key, None)
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def window(frame: pl.DataFrame, start: object | None = None, end: object | None = None) -> pl.DataFrame:
    """Rows with `start <= ts <= end` (either bound may be None)."""
    if start is not None:
        frame = frame.filter(pl.col("ts") >= pl.lit(start).cast(UTC_US))
    if end is not None:
        frame = frame.filter(pl.col("ts") <= pl.lit(end).cast(UTC_US))
    return frame

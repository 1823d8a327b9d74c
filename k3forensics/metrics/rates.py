"""Counters as increases and rates, with counter resets handled as Prometheus does.

A counter that goes down was reset (the process restarted): the increase across the reset
is the new value itself, as if it had started from zero. `_sum`/`_count` of histograms are
counters too.
"""

from __future__ import annotations

import polars as pl

from k3forensics.metrics.series import SERIES_KEY, window


def increase(frame: pl.DataFrame, from_zero: bool = False) -> pl.DataFrame:
    """Per point: the increase since the previous point of the same series (`increase`) and
    the seconds between the two points (`dt_s`). A series' first point has no increase, unless
    `from_zero` (the counter is read since its process started: the first value is an increase)."""
    previous = pl.col("value").shift(1).over(SERIES_KEY)
    delta = pl.col("value") - previous
    first = pl.col("value") if from_zero else pl.lit(None, pl.Float64)
    return frame.with_columns(
        pl.when(previous.is_null()).then(first).when(delta < 0).then(pl.col("value")).otherwise(delta)
        .alias("increase"),
        ((pl.col("ts") - pl.col("ts").shift(1).over(SERIES_KEY)).dt.total_microseconds() / 1e6).alias("dt_s"),
    )


def rate(frame: pl.DataFrame) -> pl.DataFrame:
    """Per point: the per-second rate over the interval ending there (`rate`); null at first points."""
    return increase(frame).with_columns(
        pl.when(pl.col("dt_s") > 0).then(pl.col("increase") / pl.col("dt_s")).alias("rate")
    )


def total_increase(frame: pl.DataFrame, start: object | None = None, end: object | None = None) -> float | None:
    """The increase of all series together between `start` and `end` (None: no points).
    Without `start` the counters count from zero: a bundle's first scrape already holds
    what happened since the server started."""
    inside = window(frame, start, end)
    if inside.height == 0:
        return None
    return float(increase(inside, from_zero=start is None).get_column("increase").fill_null(0.0).sum())


def value_at(frame: pl.DataFrame, when: object) -> float | None:
    """The sum over series of each series' last value at or before `when` (a counter's reading)."""
    before = window(frame, None, when)
    if before.height == 0:
        return None
    return float(before.group_by(SERIES_KEY).agg(pl.col("value").last()).get_column("value").sum())

"""Give year-less and zone-less timestamps a year and zone, and every line an order time.

vLLM prints `MM-DD HH:MM:SS` with no year and no zone; glog and journald too. The year comes
from the rest of the bundle (container envelopes, ISO timestamps, `dmesg -T`, metrics), the
zone is taken as UTC (containers log in UTC unless told otherwise). Both are marked inferred.
"""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from k3forensics.sources.base import UTC_US

PLACEHOLDER_YEAR = 2000  # see sources.logformat.yearless


def reference_year(events: pl.DataFrame, hint: datetime | None = None) -> int:
    """The year most exact timestamps of the bundle fall in; else the hint's; else this year."""
    dated = events.filter(pl.col("ts_quality").is_in(["exact", "zoneless"]) & pl.col("ts").is_not_null())
    if dated.height:
        return int(dated.select(pl.col("ts").dt.year().mode().max()).item())
    return (hint or datetime.now(UTC)).year


def resolve_times(events: pl.DataFrame, year: int) -> pl.DataFrame:
    """Fix year-less rows (per file, counting New Year crossings), mark inferred rows, and add
    `ts_order`: the row's time, else its nearest earlier (then later) neighbour's in the file."""
    yearless = pl.col("ts_quality") == "yearless"
    month = pl.when(yearless).then(pl.col("ts").dt.month()).otherwise(None)
    prev_month = month.forward_fill().shift(1).over("file", order_by="line_no")
    # Months running backwards by more than half a year mean the log crossed New Year.
    wrapped = (yearless & (month < prev_month - 6)).fill_null(False).cast(pl.Int32)
    wraps_so_far = wrapped.cum_sum().over("file", order_by="line_no")
    # The bundle's year is taken as the year of the *end* of each file (logs are collected
    # after the incident), so earlier rows before a crossing fall in the year before.
    wraps_total = wrapped.sum().over("file")
    target_year = pl.lit(year) - wraps_total + wraps_so_far
    ts = pl.col("ts")
    rebuilt = pl.datetime(
        target_year, ts.dt.month(), ts.dt.day(), ts.dt.hour(), ts.dt.minute(), ts.dt.second(),
        ts.dt.microsecond(), time_zone="UTC",
    )
    out = events.with_columns(
        pl.when(yearless).then(rebuilt).otherwise(ts).cast(UTC_US).alias("ts"),
        pl.when(pl.col("ts_quality").is_in(["yearless", "zoneless"])).then(pl.lit("inferred"))
        .otherwise(pl.col("ts_quality")).alias("ts_quality"),
    )
    return out.with_columns(
        pl.col("ts").forward_fill().backward_fill().over("file", order_by="line_no").alias("ts_order"),
    )

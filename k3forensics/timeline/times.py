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


def reference_instant(events: pl.DataFrame, hint: datetime | None = None) -> datetime:
    """The median time of the bundle's dated lines; else the hint (newest file time); else now."""
    dated = events.filter(pl.col("ts_quality").is_in(["exact", "zoneless"]) & pl.col("ts").is_not_null())
    if dated.height:
        return dated.select(pl.col("ts").median()).item()
    return hint or datetime.now(UTC)


def reference_year(events: pl.DataFrame, hint: datetime | None = None) -> int:
    return reference_instant(events, hint).year


def resolve_times(events: pl.DataFrame, reference: datetime) -> pl.DataFrame:
    """Fix year-less rows, mark inferred rows, and add `ts_order`: the row's time, else its
    nearest earlier (then later) neighbour's in the file.

    Each file's first year-less line takes the year that puts it nearest the bundle's
    reference instant; later lines of the file move on a year at each New Year crossing
    (months running backwards by more than half a year).
    """
    yearless = pl.col("ts_quality") == "yearless"
    ts = pl.col("ts")
    month = pl.when(yearless).then(ts.dt.month()).otherwise(None)
    prev_month = month.forward_fill().shift(1).over("file", order_by="line_no")
    wrapped = (yearless & (month < prev_month - 6)).fill_null(False).cast(pl.Int32)
    wraps_so_far = wrapped.cum_sum().over("file", order_by="line_no")
    first = pl.when(yearless).then(ts).otherwise(None).drop_nulls().first().over("file")
    ref = pl.lit(reference).cast(UTC_US)

    def in_year(expr: pl.Expr, year: pl.Expr) -> pl.Expr:
        return pl.datetime(year, expr.dt.month(), expr.dt.day(), expr.dt.hour(), expr.dt.minute(),
                           expr.dt.second(), expr.dt.microsecond(), time_zone="UTC")

    candidates = [in_year(first, pl.lit(reference.year + d)) for d in (-1, 0, 1)]
    distance = [(c - ref).abs() for c in candidates]
    first_year = (
        pl.when(distance[0] < pl.min_horizontal(distance[1], distance[2])).then(pl.lit(reference.year - 1))
        .when(distance[2] < distance[1]).then(pl.lit(reference.year + 1))
        .otherwise(pl.lit(reference.year))
    )
    rebuilt = in_year(ts, first_year + wraps_so_far)
    out = events.with_columns(
        pl.when(yearless).then(rebuilt).otherwise(ts).cast(UTC_US).alias("ts"),
        pl.when(pl.col("ts_quality").is_in(["yearless", "zoneless"])).then(pl.lit("inferred"))
        .otherwise(pl.col("ts_quality")).alias("ts_quality"),
    )
    return out.with_columns(
        pl.col("ts").forward_fill().backward_fill().over("file", order_by="line_no").alias("ts_order"),
    )

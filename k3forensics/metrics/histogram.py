"""Classic Prometheus histograms (`X_bucket{le}`, `X_sum`, `X_count`) as quantiles and means.

`histogram_quantile` follows PromQL: cumulative bucket counts over a window (increases,
reset-aware), summed across series by `le`, then linear interpolation inside the bucket
that holds the rank; a rank in the `+Inf` bucket gives the highest finite bound.
"""

from __future__ import annotations

import math

import polars as pl

from k3forensics.metrics.rates import increase, total_increase
from k3forensics.metrics.series import series, window


def bucket_counts(samples: pl.DataFrame, base: str, start: object | None = None,
                  end: object | None = None) -> list[tuple[float, float]]:
    """(upper bound, cumulative count observed in the window) per bucket, sorted by bound."""
    frame = window(series(samples, f"{base}_bucket"), start, end)
    if frame.height == 0:
        return []
    frame = frame.with_columns(
        pl.col("labels").str.json_path_match("$.le").cast(pl.Float64, strict=False).alias("le"),
    ).drop_nulls("le")
    # without a start the counts run from the server's start (the first scrape counts in full)
    per_le = increase(frame, from_zero=start is None).group_by("le").agg(
        pl.col("increase").fill_null(0.0).sum().alias("count")).sort("le")
    return [(float(le), float(count)) for le, count in per_le.iter_rows()]


def quantile_from_buckets(q: float, buckets: list[tuple[float, float]]) -> float | None:
    if not buckets or not 0.0 <= q <= 1.0:
        return None
    total = buckets[-1][1]
    if total <= 0:
        return None
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):  # rank in the +Inf bucket: the last finite bound
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound


def histogram_quantile(samples: pl.DataFrame, base: str, q: float, start: object | None = None,
                       end: object | None = None) -> float | None:
    """The q-quantile of `base` observed between `start` and `end` (None: no observation)."""
    return quantile_from_buckets(q, bucket_counts(samples, base, start, end))


def histogram_mean(samples: pl.DataFrame, base: str, start: object | None = None,
                   end: object | None = None) -> float | None:
    """Mean observation in the window: increase of `_sum` over increase of `_count`."""
    count = total_increase(series(samples, f"{base}_count"), start, end)
    total = total_increase(series(samples, f"{base}_sum"), start, end)
    if not count or total is None:
        return None
    return total / count


def quantiles_over_time(samples: pl.DataFrame, base: str, q: float) -> pl.DataFrame:
    """`ts, value`: the q-quantile of the observations between each scrape and the one before
    (all series summed by `le`); intervals with no observation are left out."""
    frame = series(samples, f"{base}_bucket").with_columns(
        pl.col("labels").str.json_path_match("$.le").cast(pl.Float64, strict=False).alias("le"),
    ).drop_nulls("le")
    if frame.height == 0:
        return pl.DataFrame(schema={"ts": pl.Datetime("us", "UTC"), "value": pl.Float64})
    per_ts = (
        increase(frame).drop_nulls("increase").group_by("ts", "le").agg(pl.col("increase").sum())
        .sort("ts", "le").group_by("ts", maintain_order=True).agg(pl.col("le"), pl.col("increase"))
    )
    rows = []
    for ts, les, counts in per_ts.iter_rows():
        value = quantile_from_buckets(q, list(zip(les, counts, strict=True)))
        if value is not None:
            rows.append((ts, value))
    return pl.DataFrame(rows, schema={"ts": pl.Datetime("us", "UTC"), "value": pl.Float64}, orient="row")

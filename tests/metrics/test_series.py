"""Counter rates with resets, histogram quantiles and means, series selection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from k3forensics.metrics import (
    histogram_mean,
    histogram_quantile,
    quantiles_over_time,
    rate,
    series,
    total_increase,
)
from k3forensics.metrics.histogram import quantile_from_buckets

T0 = datetime(2026, 8, 31, 8, 0, tzinfo=UTC)


def samples(rows: list[tuple[str, str, int, float]], node: str = "n1") -> pl.DataFrame:
    """(metric, labels JSON, seconds after T0, value) rows as a samples table."""
    return pl.DataFrame(
        {"node": [node] * len(rows), "metric": [r[0] for r in rows], "labels": [r[1] for r in rows],
         "ts": [T0 + timedelta(seconds=r[2]) for r in rows], "value": [float(r[3]) for r in rows]},
        schema_overrides={"ts": pl.Datetime("us", "UTC")},
    )


COUNTER = samples([("c_total", "{}", t, v) for t, v in ((0, 10), (10, 30), (20, 5), (30, 25))])


def test_increase_treats_a_drop_as_a_reset() -> None:
    # 10 → 30 (+20), reset → 5 (+5), → 25 (+20); from zero the first 10 counts too
    assert total_increase(series(COUNTER, "c_total"), start=T0) == 45
    assert total_increase(series(COUNTER, "c_total")) == 55


def test_rate_per_interval() -> None:
    rates = rate(series(COUNTER, "c_total")).get_column("rate").to_list()
    assert rates == [None, 2.0, 0.5, 2.0]


def test_series_filters_labels_and_drops_untimed_rows() -> None:
    frame = pl.concat([
        samples([("g", '{"engine":"0"}', 0, 1.0), ("g", '{"engine":"1"}', 0, 2.0)]),
        samples([("g", '{"engine":"0"}', 0, 9.0)]).with_columns(pl.lit(None, pl.Datetime("us", "UTC")).alias("ts")),
    ])
    assert series(frame, "g", {"engine": "1"}).get_column("value").to_list() == [2.0]
    assert series(frame, "g").height == 2


def _histogram(at: int, counts: dict[str, float], total: float, sum_: float) -> list[tuple[str, str, int, float]]:
    rows = [("h_bucket", f'{{"le":"{le}"}}', at, n) for le, n in counts.items()]
    return rows + [("h_count", "{}", at, total), ("h_sum", "{}", at, sum_)]


HIST = samples(_histogram(0, {"0.5": 1, "1.0": 2, "2.5": 2, "+Inf": 2}, 2, 1.2)
               + _histogram(60, {"0.5": 1, "1.0": 4, "2.5": 10, "+Inf": 10}, 10, 14.0))


def test_quantile_interpolates_like_promql() -> None:
    # whole run: 10 observations; the median (rank 5) lies in (1.0, 2.5] holding ranks 5..10
    assert histogram_quantile(HIST, "h", 0.5) == pytest.approx(1.0 + 1.5 * (5 - 4) / 6)
    # only the window after the first scrape: 8 new observations, none below 0.5
    assert histogram_quantile(HIST, "h", 0.25, start=T0) == pytest.approx(0.5 + 0.5 * 2 / 2)


def test_quantile_in_the_inf_bucket_is_the_last_finite_bound() -> None:
    assert quantile_from_buckets(0.99, [(1.0, 1), (float("inf"), 10)]) == 1.0
    assert quantile_from_buckets(0.5, []) is None


def test_histogram_mean_over_a_window() -> None:
    assert histogram_mean(HIST, "h") == pytest.approx(1.4)
    assert histogram_mean(HIST, "h", start=T0) == pytest.approx((14.0 - 1.2) / 8)


def test_quantiles_over_time_per_scrape_interval() -> None:
    over = quantiles_over_time(HIST, "h", 0.5)
    assert over.height == 1 and over.get_column("value")[0] == pytest.approx(1.0 + 1.5 * (4 - 2) / 6)

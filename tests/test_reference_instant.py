"""The reference instant of a chunked build is the median of every dated time, found in place."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from k3forensics.timeline.times import FileClock, median_instant


def _median_of_all(parts: list[np.ndarray]) -> object:
    values = pl.Series("ts", np.concatenate(parts)).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    return pl.DataFrame({"ts": values}).select(pl.col("ts").median()).item()


@pytest.mark.parametrize("size", [1, 2, 3, 10, 11, 1000, 1001])
def test_the_median_of_the_clocks_times_is_polars_median_of_all_of_them(size: int) -> None:
    rng = np.random.default_rng(size)
    for _ in range(25):
        parts = [rng.integers(1_700_000_000_000_000, 1_800_000_000_000_000, size=rng.integers(0, size + 1))
                 for _ in range(3)]
        if not sum(p.size for p in parts):
            continue
        first, second = FileClock(), FileClock()
        first.dated, second.dated = [p.copy() for p in parts[:2]], [parts[2].copy()]
        assert median_instant([first, second], None) == _median_of_all(parts)
        assert first.dated == [] and second.dated == []  # consumed


def test_without_dated_times_the_hint_is_the_reference() -> None:
    hint = pl.Series([1_750_000_000_000_000]).cast(pl.Datetime("us", "UTC")).item()
    assert median_instant([FileClock()], hint) == hint

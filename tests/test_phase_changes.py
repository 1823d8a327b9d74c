"""The milestone map keeps only the rows where a node's phase changes (every served request is
a `serving` line): the phase found at any time is the one found over every row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from k3forensics.library.model import PHASES
from k3forensics.timeline.phases import changes

UTC_US = pl.Datetime("us", "UTC")
START = datetime(2026, 11, 30, tzinfo=UTC)


def _timeline(rng: np.random.Generator, rows: int) -> pl.DataFrame:
    """Random milestone rows: few nodes and phases, long runs of one phase, tied times."""
    phases = np.array(PHASES[:4])[np.cumsum(rng.random(rows) < 0.02) % 4]
    return pl.DataFrame({
        "node": rng.choice(["a", "b", "c"], size=rows),
        "ts_order": [START + timedelta(seconds=int(s)) for s in np.sort(rng.integers(0, rows // 3, size=rows))],
        "_node_phase": phases,
    }, schema={"node": pl.Utf8, "ts_order": UTC_US, "_node_phase": pl.Utf8}).sort("ts_order", maintain_order=True)


def _asof(times: pl.DataFrame, timeline: pl.DataFrame, by: str | None) -> list[tuple[object, ...]]:
    return times.join_asof(timeline, on="ts_order", by=by, strategy="backward", check_sortedness=False).rows()


@pytest.mark.parametrize("seed", range(6))
def test_an_asof_join_finds_the_same_phase_in_the_changes_alone(seed: int) -> None:
    rng = np.random.default_rng(seed)
    timeline = _timeline(rng, 3_000)
    times = pl.DataFrame({
        "node": rng.choice(["a", "b", "c", "d"], size=500),
        "ts_order": [START + timedelta(seconds=float(s)) for s in rng.uniform(-5, 1_100, size=500)],
    }, schema={"node": pl.Utf8, "ts_order": UTC_US}).sort("ts_order")
    by_node = changes(timeline, by="node")
    anywhere = changes(timeline.drop("node"))
    assert by_node.height < timeline.height // 5 and anywhere.height < timeline.height // 5
    assert _asof(times, by_node, "node") == _asof(times, timeline, "node")
    assert _asof(times, anywhere, None) == _asof(times, timeline.drop("node"), None)

"""The load read from vLLM's stats lines (their captures) and from scraped gauges."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from k3forensics.metrics.load import STATS_LINE, load_evidence

T0 = datetime(2026, 8, 31, 8, 0, tzinfo=UTC)


def stats_hits(points: list[dict[str, str] | None], order: list[int] | None = None) -> pl.DataFrame:
    """Stats-line hits, one per point (captures as the matcher writes them: JSON of text), listed in
    `order` (default: time order); a None point has no captures."""
    order = order if order is not None else list(range(len(points)))
    return pl.DataFrame({
        "seq": order, "signature": [STATS_LINE] * len(points),
        "ts_order": [T0 + timedelta(seconds=10 * i) for i in order],
        "captures": [json.dumps(points[i]) if points[i] is not None else None for i in order],
    }, schema_overrides={"ts_order": pl.Datetime("us", "UTC")})


def queue(waiting: int | None, running: int = 8) -> dict[str, str]:
    point = {"running": str(running), "kv_usage_pct": "50.0"}
    return point | ({"waiting": str(waiting)} if waiting is not None else {})


def test_peaks_and_shares_from_the_captures() -> None:
    points = [{"running": "12", "waiting": "0", "kv_usage_pct": "95.5", "preemptions": "3"},
              {"running": "61", "waiting": "4", "kv_usage_pct": "40"},
              {"running": "x1", "kv_usage_pct": "1.2.3"},  # not numbers: no value
              None,
              {"other": "7"}]
    ev = load_evidence(pl.DataFrame(schema={"metric": pl.Utf8}), stats_hits(points, order=[3, 0, 4, 1, 2]))
    assert (ev.source, ev.points) == ("stats_lines", 5)
    assert (ev.peak_running, ev.peak_waiting, ev.preemptions) == (61.0, 4.0, 3.0)
    assert ev.peak_kv_usage == pytest.approx(0.955)
    assert ev.high_kv_share == 0.5  # one of the two KV readings is at least 90 %
    assert ev.standing_queue is False


@pytest.mark.parametrize(("waiting", "standing"), [
    ([6, 6, 6], True),                 # three points in a row with a queue
    ([6, 6, 0, 6, 6], False),          # broken by an empty queue
    ([6, 6, None, 6, 6], False),       # broken by a point without a waiting count
    ([0, 6, 6, 6, 0], True),
    ([4, 4, 4, 4], False),             # under QUEUE_MIN
])
def test_a_standing_queue_holds_for_three_points_in_a_row(waiting: list[int | None], standing: bool) -> None:
    ev = load_evidence(pl.DataFrame(schema={"metric": pl.Utf8}), stats_hits([queue(w) for w in waiting]))
    assert ev.standing_queue is standing


def test_a_queue_is_counted_against_the_running_requests() -> None:
    # 25 % of 40 running is 10: six waiting is no queue beside them, twelve is.
    small = [queue(6, running=40)] * 3
    large = [queue(12, running=40)] * 3
    assert load_evidence(pl.DataFrame(schema={"metric": pl.Utf8}), stats_hits(small)).standing_queue is False
    assert load_evidence(pl.DataFrame(schema={"metric": pl.Utf8}), stats_hits(large)).standing_queue is True


def test_the_points_are_taken_in_time_order() -> None:
    # In time order: 6, 6, 0, 6 (no run of three); listed out of order they would make one.
    ev = load_evidence(pl.DataFrame(schema={"metric": pl.Utf8}),
                       stats_hits([queue(6), queue(6), queue(0), queue(6)], order=[0, 3, 1, 2]))
    assert ev.standing_queue is False

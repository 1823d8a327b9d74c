"""The prefetching iterator: same items in order, errors where they happened, clean early stop."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from k3forensics.timeline.prefetch import Ahead, prefetched


def test_items_come_in_order() -> None:
    assert list(prefetched(iter(range(1000)), depth=3)) == list(range(1000))
    assert list(prefetched(iter([]))) == []


def test_an_error_is_raised_at_its_item() -> None:
    def items() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("chunk 3 is broken")

    got = []
    with pytest.raises(ValueError, match="chunk 3 is broken"):
        for item in prefetched(items()):
            got.append(item)
    assert got == [1, 2]


def _endless(closed: threading.Event) -> Iterator[int]:
    """0, 1, 2, … until closed; then `closed` is set."""
    try:
        n = 0
        while True:
            yield n
            n += 1
    finally:
        closed.set()


def test_stopping_early_stops_the_worker_and_closes_the_source() -> None:
    closed = threading.Event()
    stream = prefetched(_endless(closed), depth=2)
    assert [next(stream) for _ in range(5)] == [0, 1, 2, 3, 4]
    stream.close()
    assert closed.wait(5)
    assert not any(t.name.startswith("k3f-prefetch") and t.is_alive() for t in threading.enumerate())


def _counting(n: int, label: str) -> Callable[[], Iterator[str]]:
    return lambda: (f"{label}{i}" for i in range(n))


def test_streams_ahead_come_in_order_whatever_their_lengths() -> None:
    # More streams than workers, queues of one: reading them in order must not deadlock.
    lengths = [5, 0, 40, 1, 17, 3]
    with Ahead([_counting(n, f"s{k}-") for k, n in enumerate(lengths)], workers=2, depth=1) as ahead:
        for k, n in enumerate(lengths):
            assert list(ahead.items(k)) == [f"s{k}-{i}" for i in range(n)]


def test_a_stream_error_is_raised_at_its_item_and_the_others_still_read() -> None:
    def broken() -> Iterator[str]:
        yield "a"
        raise ValueError("file 2 is unreadable")

    with Ahead([_counting(3, "x"), broken, _counting(2, "y")], workers=2) as ahead:
        assert list(ahead.items(0)) == ["x0", "x1", "x2"]
        got = []
        with pytest.raises(ValueError, match="file 2 is unreadable"):
            for item in ahead.items(1):
                got.append(item)
        assert got == ["a"]
        assert list(ahead.items(2)) == ["y0", "y1"]


def test_leaving_early_stops_the_workers_and_closes_the_streams() -> None:
    closed = threading.Event()
    with Ahead([lambda: _endless(closed), lambda: _endless(closed)], workers=2, depth=2) as ahead:
        assert next(ahead.items(0)) == 0
    assert closed.wait(5)
    assert not any(t.name.startswith("k3f-ahead") and t.is_alive() for t in threading.enumerate())

"""The prefetching iterator: same items in order, errors where they happened, clean early stop."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from k3forensics.timeline.prefetch import prefetched


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


def test_stopping_early_stops_the_worker_and_closes_the_source() -> None:
    closed = threading.Event()

    def items() -> Iterator[int]:
        try:
            n = 0
            while True:
                yield n
                n += 1
        finally:
            closed.set()

    stream = prefetched(items(), depth=2)
    assert [next(stream) for _ in range(5)] == [0, 1, 2, 3, 4]
    stream.close()
    assert closed.wait(5)
    assert not any(t.name == "k3f-prefetch" and t.is_alive() for t in threading.enumerate())

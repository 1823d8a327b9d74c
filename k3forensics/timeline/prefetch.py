"""Compute the next items of iterators in worker threads while the caller handles this one.

The timeline build is a pipeline of polars calls (which release the GIL): parsing the next
chunk while the current one is matched and spooled keeps both cores of a laptop busy, with
at most `depth` items waiting (memory stays a few chunks). `Ahead` does the same for several
streams read one after the other (the files of a bundle): up to `workers` of them are
computed at once, each at most `depth` items ahead of its reader.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")

_DONE = object()


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


def prefetched(items: Iterator[T], depth: int = 1) -> Iterator[T]:
    """The items of `items` in order; an exception raised while computing one is raised here,
    at that item. Closing this generator early stops the worker at its next item."""
    with Ahead([lambda: items], workers=1, depth=depth, name="k3f-prefetch") as ahead:
        yield from ahead.items(0)


def _close(items: Iterator[object]) -> None:
    """Run a generator's cleanup (open files, temporary folders) when its consumer stopped early."""
    close = getattr(items, "close", None)
    if close is not None:
        close()


class Ahead(Generic[T]):
    """Streams read in order, each computed in a pool of `workers` threads as soon as a worker
    is free. A stream's items wait in its own queue of `depth`: a worker whose stream is ahead
    of the reader waits, and the earliest unfinished stream always holds a worker (streams
    start in order), so reading them in order never deadlocks. Use as a context manager:
    leaving it stops the workers (at their next item) and closes the streams' generators."""

    def __init__(self, streams: list[Callable[[], Iterator[T]]], workers: int = 2, depth: int = 1,
                 name: str = "k3f-ahead"):
        self._stop = threading.Event()
        self._queues: list[queue.Queue[object]] = [queue.Queue(maxsize=depth) for _ in streams]
        self._pool = ThreadPoolExecutor(max_workers=max(workers, 1), thread_name_prefix=name)
        for stream, ready in zip(streams, self._queues, strict=True):
            self._pool.submit(self._work, stream, ready)

    def __enter__(self) -> Ahead[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def items(self, index: int) -> Iterator[T]:
        """The items of stream `index`, in order; its error is raised at the item it broke."""
        ready = self._queues[index]
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]

    def _put(self, ready: queue.Queue[object], item: object) -> bool:
        while not self._stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _work(self, stream: Callable[[], Iterator[T]], ready: queue.Queue[object]) -> None:
        if self._stop.is_set():
            return
        items: Iterator[T] | None = None
        try:
            items = stream()
            for item in items:
                if not self._put(ready, item):
                    _close(items)
                    return
            outcome: object = _DONE
        except BaseException as error:  # handed to the reader, which raises it
            outcome = _Failed(error)
        self._put(ready, outcome)

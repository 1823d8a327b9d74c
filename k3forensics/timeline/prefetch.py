"""Compute the next item of an iterator in a worker thread while the caller handles this one.

The timeline build is a pipeline of polars calls (which release the GIL): parsing the next
chunk while the current one is matched and spooled keeps both cores of a laptop busy, with
at most `depth` items waiting (memory stays a few chunks).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


def prefetched(items: Iterator[T], depth: int = 1) -> Iterator[T]:
    """The items of `items` in order; an exception raised while computing one is raised here,
    at that item. Closing this generator early stops the worker at its next item."""
    ready: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        """Hand one item over; False once the consumer has stopped."""
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put(item):
                    _close(items)
                    return
            outcome: object = _DONE
        except BaseException as error:  # handed to the consumer, which raises it
            outcome = _Failed(error)
        put(outcome)

    worker = threading.Thread(target=work, name="k3f-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()


def _close(items: Iterator[object]) -> None:
    """Run a generator's cleanup (open files, temporary folders) when its consumer stopped early."""
    close = getattr(items, "close", None)
    if close is not None:
        close()

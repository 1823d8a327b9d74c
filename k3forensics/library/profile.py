"""Per-signature matching cost over a bundle of any size (`k3forensics signatures profile`).

Each signature is evaluated on its own candidate lines, so its seconds are its own. A
row-local signature (one that decides a line from that line alone) is evaluated on each
completed chunk of the timeline build as it passes, before any line is dropped; the others
(windows, traceback groups, first milestones) once, on the timeline the build keeps: every
line of a small bundle, or the digest of a large one, which holds every line with a literal
of such a signature (`timeline/digest.py`, `undecided_roles`). So profiling a multi-GiB
bundle holds what its triage holds, and counts the same candidates and hits as matching
every line at once would.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import polars as pl

from k3forensics.library.compile import is_row_local
from k3forensics.library.loader import Library
from k3forensics.library.match import Matcher, SignatureCost
from k3forensics.library.model import Role, Signature

PROFILE_SCHEMA = {"signature": pl.Utf8, "seconds": pl.Float64, "candidates": pl.Int64, "hits": pl.Int64,
                  "prefilter": pl.Utf8}


@dataclass
class Profiler:
    library: Library
    costs: dict[str, SignatureCost] = field(default_factory=dict)
    pool_seconds: float = 0.0  # the shared literal passes (one per chunk)
    seconds: float = 0.0       # all of the profiler's own time (to tell it from the build's)
    chunks: int = 0

    def __post_init__(self) -> None:
        every = self.library.of_role(*Role)
        self._local = [s for s in every if is_row_local(s.condition)]
        self._rest = [s for s in every if not is_row_local(s.condition)]

    def chunk(self, events: pl.DataFrame) -> None:
        """A completed chunk of the build: its row-local signatures measured."""
        self.chunks += 1
        self._measure(events, self._local)

    def finish(self, events: pl.DataFrame) -> pl.DataFrame:
        """The other signatures measured on the timeline kept (all of them when no chunk was
        seen: a database read whole, or the whole-bundle build); PROFILE_SCHEMA rows, the
        slowest first."""
        self._measure(events, self._rest if self.chunks else self._local + self._rest)
        for sig in self.library.of_role(*Role):  # a signature no chunk had lines for
            self.costs.setdefault(sig.id, SignatureCost(sig.id))
        rows = sorted(self.costs.values(), key=lambda c: (-c.seconds, c.signature))
        return pl.DataFrame([(c.signature, c.seconds, c.candidates, c.hits, c.prefilter) for c in rows],
                            schema=PROFILE_SCHEMA, orient="row")

    def _measure(self, events: pl.DataFrame, signatures: list[Signature]) -> None:
        if not signatures or events.height == 0:
            return
        started = time.perf_counter()
        matcher = Matcher(events, self.library, batch_rows=0)  # no batching: each its own time
        matcher.hits(signatures)
        self.pool_seconds += matcher.pool_seconds
        for sig in signatures:  # not the signatures a window refers to: they count where they are
            cost = matcher.costs.get(sig.id)
            if cost is None:
                continue
            total = self.costs.setdefault(sig.id, SignatureCost(sig.id))
            total.seconds += cost.seconds
            total.candidates += cost.candidates
            total.hits += cost.hits
            total.prefilter = total.prefilter or cost.prefilter
        self.seconds += time.perf_counter() - started

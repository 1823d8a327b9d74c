"""Pass 1's first cut of a large bundle's log lines for a triage (`timeline/digest.py` makes
the final one in pass 2).

A triage of a multi-gigabyte NCCL-heavy bundle keeps a few per cent of its lines. Most of the
others can be told apart while the file is read: they hold no literal of a signature that is
decided later, no hit of a signature decided now, and are not near either. Dropping them
before they are spooled spares them the spool and all of pass 2. What pass 2 still needs of a
dropped line is taken first: `ts_order` comes from the stamp of the last timed line at or
before each kept line (`stamps_before`), and the files table's counts, first and last times
and host names are tallied from the dropped lines (`Dropped`).

The cut keeps a superset of what the digest keeps: every line holding a literal of a row-local
signature (but those of failures pass 1 can decide, whose hits it finds: their fields are
known, not `phase`, not `node`), the lines around those failure hits and around lines holding a
literal of a failure decided later or of a signature that is not row-local (±CONTEXT_LINES,
and the first and last CONTEXT_LINES lines of each chunk for context across the cut), every
milestone line, and what the digest keeps for itself. Tests hold a sieved triage equal to one over every line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from k3forensics.library.compile import is_row_local
from k3forensics.library.loader import Library
from k3forensics.library.match import NOT_YET
from k3forensics.library.model import Role, Signature
from k3forensics.library.prefilter import Literals, required
from k3forensics.sources.base import UTC_US
from k3forensics.timeline.digest import (
    CONTEXT_LINES,
    FINDINGS,
    hits_of,
    kept_for_itself,
    literal_lines,
    near_lines,
)
from k3forensics.timeline.nodes import hosts_named
from k3forensics.timeline.times import Stamp, resolved, stamps_before

_FAILURES = (Role.PRIMARY, Role.SECONDARY)
_TIMES_SCHEMA = pl.Schema({"yearless": pl.Boolean(), "_wraps": pl.Int32(), "low": UTC_US, "high": UTC_US})


@dataclass
class Dropped:
    """What the files table needs of a file's dropped lines, tallied in pass 1."""

    lines: int = 0
    parsed: int = 0
    hosts: set[str] = field(default_factory=set)
    times: list[pl.DataFrame] = field(default_factory=list)  # _TIMES_SCHEMA: raw extremes per year shift

    def add(self, dropped: pl.DataFrame) -> None:
        self.lines += dropped.height
        self.parsed += int(dropped.get_column("parsed").sum())
        self.hosts.update(host for _, host in hosts_named(dropped))
        timed = dropped.filter(pl.col("ts").is_not_null())
        if timed.height:
            # Resolving a time shifts it by whole years (`in_year`), which keeps the order of the
            # times it shifts alike: the extremes of each (year-less, crossings) group suffice.
            self.times.append(timed.group_by((pl.col("ts_quality") == "yearless").alias("yearless"), "_wraps").agg(
                pl.col("ts").min().alias("low"), pl.col("ts").max().alias("high")).cast(_TIMES_SCHEMA))

    def extremes(self, year: int | None) -> tuple[datetime | None, datetime | None]:
        """The first and last resolved time of the dropped lines (None without any)."""
        if not self.times:
            return None, None
        frame = pl.concat(self.times)
        shift = pl.lit(year if year is not None else 0, pl.Int32) + pl.col("_wraps")
        low, high = frame.select(resolved(pl.col("low"), pl.col("yearless"), shift).min(),
                                 resolved(pl.col("high"), pl.col("yearless"), shift).max()).row(0)
        return low, high


class Sieve:
    def __init__(self, library: Library):
        self.library = library
        findings = library.of_role(*FINDINGS)
        local = [s for s in findings if is_row_local(s.condition)]
        # Failures decided now bring their neighbours: matched exactly (one literal of theirs,
        # ` HTTP/`, is on every access-log line). Other row-local lines are kept by literal.
        self._now = [s for s in local if s.role in _FAILURES and is_row_local(s.condition, NOT_YET)]
        later = [s for s in local if s not in self._now]
        self._later = _union(later)
        self._near = _union([s for s in findings if not is_row_local(s.condition)]
                            + [s for s in later if s.role in _FAILURES])
        self.usable = self._later is not None and self._near is not None

    def cut(self, events: pl.DataFrame, before: Stamp | None) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(kept, dropped) lines of one chunk of one log file (pass-1 columns), the kept ones
        with the stamps their `ts_order` is resolved from (`_ff_ts`, `_ff_yearless`, `_ff_wraps`)."""
        assert self._later is not None and self._near is not None, "check `usable` first"
        events = stamps_before(events, before)
        literal = literal_lines(events, later=self._later, near=self._near)
        seq = events.get_column("seq")
        failure = seq.is_in(hits_of(events, self.library, self._now).get_column("seq").implode())
        near = near_lines(events.get_column("line_no"), (literal.get_column("near") | failure).fill_null(False))
        index = pl.int_range(pl.len())
        edges = (index < CONTEXT_LINES) | (index >= pl.len() - CONTEXT_LINES)
        alone = events.select(kept_for_itself(pl.lit(True)) | pl.col("milestone").is_not_null() | edges).to_series()
        keep = (literal.get_column("later") | near | alone).fill_null(True)
        return events.filter(keep), events.filter(~keep)


def _union(signatures: list[Signature]) -> Literals | None:
    """The literals of all these signatures (None when one requires none: no line can go)."""
    out = Literals()
    for sig in signatures:
        found = required(sig.condition)
        if found is None:
            return None
        out = out | found
    return out

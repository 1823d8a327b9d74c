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
and the first and last CONTEXT_LINES lines of each chunk for context across the cut), the
milestone lines pass 2 reads (`MilestoneMemory`), and what the digest keeps for itself. Tests
hold a sieved triage equal to one over every line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import polars as pl

from k3forensics.library.compile import is_row_local
from k3forensics.library.loader import Library
from k3forensics.library.match import NOT_YET
from k3forensics.library.model import PHASES, Role
from k3forensics.sources.base import UTC_US
from k3forensics.timeline.digest import (
    CONTEXT_LINES,
    FINDINGS,
    hits_of,
    kept_for_itself,
    literal_lines,
    near_lines,
)
from k3forensics.timeline.nodes import host_names
from k3forensics.timeline.times import Stamp, resolved, stamps_before

_FAILURES = (Role.PRIMARY, Role.SECONDARY)
_RANK = {p: i for i, p in enumerate(PHASES)}
_STAMP_KEY = ["milestone", "_ff_yearless", "_ff_wraps"]
_TIMES_SCHEMA = pl.Schema({"yearless": pl.Boolean(), "_wraps": pl.Int32(), "low": UTC_US, "high": UTC_US})


@dataclass
class ChunkMarks:
    """What the sieve decides on one chunk of a log file alone (`Sieve.marks`), so that it can
    be decided where the chunk is parsed; the file's milestones are decided in order (`cut`)."""

    keep: pl.Series    # lines kept for what they hold or are near (null: kept too)
    hosts: set[str]    # the host names the chunk's lines name (`host_names`)


@dataclass
class Dropped:
    """What the files table needs of a file's dropped lines, tallied in pass 1."""

    COLUMNS = ("parsed", "ts", "ts_quality", "_wraps")  # what `add` reads

    lines: int = 0
    parsed: int = 0
    # The host names of the dropped lines' chunks: those of the kept lines are counted again
    # in pass 2, so the files table's names are the same as the dropped lines' alone would give.
    hosts: set[str] = field(default_factory=set)
    times: list[pl.DataFrame] = field(default_factory=list)  # _TIMES_SCHEMA: raw extremes per year shift

    def add(self, dropped: pl.DataFrame, hosts: set[str]) -> None:
        self.lines += dropped.height
        self.parsed += int(dropped.get_column("parsed").sum())
        self.hosts.update(hosts)
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


@dataclass
class MilestoneMemory:
    """Which of a file's milestone lines pass 2 reads, decided chunk by chunk.

    Every served request is a `serving` line (a tenth of an NCCL-heavy log). Pass 2 reads of
    them: the phase each line reached (`FilePhases.in_file`: the highest milestone so far in a
    run, a run starting at each `container_init`), and, for the digest, each milestone's first
    line and its earliest in time (`Digest._first_milestones`). A milestone line that neither
    starts a run, raises the phase reached, nor is the earliest so far (a first line is)
    changes none of them. Resolving a year-less stamp shifts it by whole years, alike for the
    stamps of one New Year count, so the earliest is followed per milestone and kind of stamp
    in raw times. Traceback lines are kept for themselves, and their milestones may still be
    corrected (`_rematch_tracebacks`): they count for nothing here and end the run, so the
    phase reached is never overestimated and more lines are kept, not fewer.
    """

    reached: int | None = None             # highest rank in the current run
    earliest: pl.DataFrame | None = None   # _STAMP_KEY + _min: the earliest raw stamps so far

    def needed(self, events: pl.DataFrame) -> pl.Series:
        """Per line of one chunk (with `stamps_before` columns): a milestone line pass 2 reads."""
        own = pl.col("milestone").is_not_null() & pl.col("tb_group").is_null()
        rank = pl.when(own).then(pl.col("milestone").replace_strict(_RANK, default=None, return_dtype=pl.Int32))
        reset = pl.col("tb_group").is_not_null() | (own & (pl.col("milestone") == PHASES[0]))
        # Only milestone and traceback lines move the phase reached or start a run: the others
        # (most lines) are left out before the window functions.
        frame = (events.select("tb_group", *_STAMP_KEY, "_ff_ts").with_row_index("_i")  # the key holds `milestone`
                 .filter(pl.col("milestone").is_not_null() | pl.col("tb_group").is_not_null())
                 .select("_i", own.alias("_own"), rank.alias("_rank"), reset.cum_sum().alias("_run"), *_STAMP_KEY, "_ff_ts"))
        if frame.height == 0:  # the run open at the end of the last chunk goes on, unchanged
            return pl.repeat(False, events.height, eager=True)
        reached = pl.col("_rank").cum_max().forward_fill().shift(1).over("_run")
        if self.reached is not None:  # the run open at the end of the last chunk goes on
            reached = pl.when(pl.col("_run") == 0).then(pl.max_horizontal(reached, pl.lit(self.reached))).otherwise(reached)
        frame = frame.with_columns(reached.alias("_reached"))
        self.reached = frame.tail(1).select(pl.max_horizontal("_reached", "_rank")).item()
        lines = frame.filter(pl.col("_own"))
        if lines.height == 0:
            return pl.repeat(False, events.height, eager=True)
        so_far = pl.col("_ff_ts").cum_min().over(_STAMP_KEY)
        if self.earliest is not None:
            lines = lines.join(self.earliest, on=_STAMP_KEY, how="left", maintain_order="left", nulls_equal=True)
            so_far = pl.min_horizontal(so_far, pl.col("_min"))
        picked = lines.filter(
            pl.col("_reached").is_null() | (pl.col("_rank") > pl.col("_reached"))  # starts a run or moves on
            | pl.col("_ff_ts").is_null() | (pl.col("_ff_ts") <= so_far)  # before any time, or the earliest yet
        )
        mins = lines.group_by(_STAMP_KEY).agg(pl.col("_ff_ts").min().alias("_min"))
        if self.earliest is not None:
            mins = pl.concat([self.earliest, mins]).group_by(_STAMP_KEY).agg(pl.col("_min").min())
        self.earliest = mins
        needed = np.zeros(events.height, dtype=bool)
        needed[picked.get_column("_i").to_numpy()] = True
        return pl.Series(needed)


class Sieve:
    def __init__(self, library: Library):
        self.library = library
        findings = library.of_role(*FINDINGS)
        local = [s for s in findings if is_row_local(s.condition)]
        # Failures decided now bring their neighbours: matched exactly (a literal of theirs may
        # be on many lines that are no failure). Other row-local lines are kept by literal.
        self._now = [s for s in local if s.role in _FAILURES and is_row_local(s.condition, NOT_YET)]
        later = [s for s in local if s not in self._now]
        self._later = library.literals_of(later)
        self._near = library.literals_of([s for s in findings if not is_row_local(s.condition)]
                                         + [s for s in later if s.role in _FAILURES])
        self.usable = self._later is not None and self._near is not None
        # What a line must hold for the sieve to read more of it than its stamp and level.
        failures = library.literals_of(self._now)
        self.literals = (self._later | self._near | failures
                         if self._later is not None and self._near is not None and failures is not None else None)
        self._milestones: dict[str, MilestoneMemory] = {}  # per file, its chunks in order

    def failures(self, events: pl.DataFrame) -> pl.Series:
        """The `seq` of the lines a failure signature decided now hits (pass-1 columns; any
        number of chunks at once: matching costs about as much on few lines as on many; the
        lines may be only those holding `literals`)."""
        return hits_of(events, self.library, self._now).get_column("seq")

    def marks(self, events: pl.DataFrame, failures: pl.Series | None = None,
              gate: pl.Series | None = None) -> ChunkMarks:
        """What `cut` decides on these lines alone (one chunk of one log file, pass-1
        columns). `failures`: `self.failures` of these lines or more, when known; `gate`:
        the lines that may hold `literals` (the others hold none), when known."""
        assert self._later is not None and self._near is not None, "check `usable` first"
        hosts = host_names(events.get_column("attrs"))
        if events.height == 0:
            return ChunkMarks(pl.Series([], dtype=pl.Boolean), hosts)
        if failures is None:
            failures = self.failures(events if gate is None else events.filter(gate))
        literal = _scattered(literal_lines(events.filter(gate), later=self._later, near=self._near), gate) \
            if gate is not None else literal_lines(events, later=self._later, near=self._near)
        failure = events.get_column("seq").is_in(failures.implode())
        near = near_lines(events.get_column("line_no"), (literal.get_column("near") | failure).fill_null(False))
        index = pl.int_range(pl.len())
        edges = (index < CONTEXT_LINES) | (index >= pl.len() - CONTEXT_LINES)
        alone = events.select(kept_for_itself(pl.lit(True)) | edges).to_series()
        return ChunkMarks(literal.get_column("later") | near | alone, hosts)

    def cut(self, events: pl.DataFrame, before: Stamp | None, marks: ChunkMarks, dropped: Dropped) -> pl.DataFrame:
        """The kept lines of one chunk of one log file (pass-1 columns), with the stamps their
        `ts_order` is resolved from (`_ff_ts`, `_ff_yearless`, `_ff_wraps`); the others are
        tallied in `dropped`. `marks`: `self.marks` of these lines."""
        events = stamps_before(events, before)
        if events.height == 0:
            return events
        memory = self._milestones.setdefault(events.get_column("file")[0], MilestoneMemory())
        keep = (marks.keep | memory.needed(events)).fill_null(True)
        dropped.add(events.select(Dropped.COLUMNS).filter(~keep), marks.hosts)  # most go: copy only what is tallied
        return events.filter(keep)


def _scattered(found: pl.DataFrame, rows: pl.Series) -> pl.DataFrame:
    """Boolean columns computed on the `rows` of a frame, spread over all of it (False elsewhere)."""
    where = rows.arg_true()
    return pl.DataFrame([pl.repeat(False, rows.len(), eager=True).alias(name).scatter(where, found.get_column(name))
                         for name in found.columns])


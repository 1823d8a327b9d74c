"""The lines a triage can use, kept from each completed chunk of a large bundle.

A triage reads the timeline for: signature hits, milestones and start-up steps, traceback
groups, error and warning lines, captured API exchanges, the lines facts were read from, and
the context a report shows around a hit. Every other line of an NCCL-heavy multi-gigabyte
bundle (most of it) is counted in the files table and dropped, so the events held in memory
follow what happened, not the bundle's size. Hits on the digest equal hits on every line:
a row-local signature's hits are kept, and for the others every line holding their literals
(`library/prefilter.py`; the matcher looks at no other line either).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
import polars as pl

from k3forensics.library.compile import is_row_local
from k3forensics.library.loader import Library
from k3forensics.library.match import Matcher, text_column
from k3forensics.library.model import Role, Signature
from k3forensics.library.prefilter import Literals
from k3forensics.sources.api_capture import NAME as API_CAPTURE
from k3forensics.text import per_distinct
from k3forensics.timeline.prefetch import prefetched

DIGEST_BYTES = 128 << 20  # a triage of a timeline database this large reads a digest
CONTEXT_LINES = 5     # the report shows ±5 lines around a hit (report/model.py reads this)
SAMPLE_EVERY = 200    # and every 200th timed line as a tick on its node's lane
FINDINGS = (Role.PRIMARY, Role.SECONDARY, Role.CONTEXT)  # the roles a triage reports
MARK_BATCH_ROWS = 100_000  # completed lines marked at once (`digested`)
_NOTABLE_LEVEL = r"^(?i:ERROR|CRITICAL|FATAL|PANIC|WARN)"
_WANT, _NEAR = "_want", "_near"  # `Digest.marked`'s columns
_MARKS = [_WANT, _NEAR]


def kept_for_itself(timed: pl.Expr) -> pl.Expr:
    """The lines a digest keeps whatever the signatures say: start-up steps, traceback lines,
    API captures, error and warning lines, and every SAMPLE_EVERY-th line that is `timed`."""
    return (pl.col("step").is_not_null()
            | pl.col("tb_group").is_not_null()
            | (pl.col("source") == API_CAPTURE).fill_null(False)
            | pl.col("level").str.contains(_NOTABLE_LEVEL).fill_null(False)
            | ((pl.col("line_no") % SAMPLE_EVERY == 0) & timed))


def digestible(library: Library, roles: tuple[Role, ...] = FINDINGS) -> bool:
    """Every signature of these roles that cannot be decided on a chunk requires a literal
    (see `Digest`); else no line could be dropped."""
    return all(is_row_local(s.condition) or library.literals(s.id) is not None for s in library.of_role(*roles))


def fact_lines(facts: pl.DataFrame) -> pl.DataFrame:
    """The (file, line_no) of the lines facts were read from: a digest keeps them."""
    if not {"file", "line_no"} <= set(facts.columns):
        return pl.DataFrame(schema={"file": pl.Utf8, "line_no": pl.Int64})
    return facts.select(pl.col("file").cast(pl.Utf8), pl.col("line_no").cast(pl.Int64)).drop_nulls().unique()


@dataclass
class Digest:
    """Keeps a completed chunk's useful lines; chunks arrive in `seq` order, file after file."""

    library: Library
    fact_lines: pl.DataFrame  # file, line_no of the lines facts were read from
    # Whose candidate lines are all kept when not row-local: a triage's findings, or every role
    # for the signature profile (which evaluates those signatures on the digest).
    undecided_roles: tuple[Role, ...] = FINDINGS
    _tail: pl.DataFrame | None = None  # the previous chunk's last lines, for context across the cut
    _kept: set[int] = field(default_factory=set)  # seqs of `_tail` already kept

    def __post_init__(self) -> None:
        # Row-local signatures are matched on the chunk itself (a line holding an access log's
        # literal is not yet an HTTP 500): their hits are kept. The others (windows, traceback
        # groups) can only be told after the triage: every line holding their literals is kept.
        # Failures (not context signatures) bring the lines around them.
        findings = self.library.of_role(*FINDINGS)
        self._local = [s for s in findings if is_row_local(s.condition)]
        self._failures = {s.id for s in self._local if s.role in (Role.PRIMARY, Role.SECONDARY)}
        undecided = Literals()
        for sig in self.library.of_role(*self.undecided_roles):
            if not is_row_local(sig.condition):
                undecided = undecided | (self.library.literals(sig.id) or Literals())
        self._undecided = undecided
        self._milestones: dict[tuple[str, str], datetime | None] = {}  # (file, milestone) -> earliest ts_order kept

    def keep(self, events: pl.DataFrame) -> pl.DataFrame:
        """The useful lines of `events` (lines in `seq` order, one file's or several files'),
        as `marked` gave them."""
        if events.height == 0:
            return events.drop(_MARKS)
        files = events.get_column("file")
        if files.n_unique() > 1:
            parts = events.partition_by("file", maintain_order=True)
            return pl.concat([self._keep_file(part) for part in parts])
        return self._keep_file(events)

    def _keep_file(self, events: pl.DataFrame) -> pl.DataFrame:
        tail = self._tail
        carried = tail is not None and tail.height > 0 and tail.get_column("file")[0] == events.get_column("file")[0]
        frame = pl.concat([tail, events]) if carried and tail is not None else events
        fresh = pl.Series(np.arange(frame.height) >= frame.height - events.height)
        near = near_lines(frame.get_column("line_no"), frame.get_column(_NEAR))
        wanted = frame.get_column(_WANT) | near | (fresh & self._first_milestones(frame, fresh))
        if carried:  # tail lines kept with the previous chunk are not kept twice
            wanted = wanted & ~frame.get_column("seq").is_in(pl.Series(list(self._kept), dtype=pl.Int64).implode())
        kept = frame.filter(wanted)
        self._tail = events.tail(CONTEXT_LINES)
        self._kept = set(self._tail.get_column("seq").to_list()) & set(kept.get_column("seq").to_list())
        return _owned(kept.drop(_MARKS))

    def marked(self, events: pl.DataFrame) -> pl.DataFrame:
        """`events` with what each line decides alone: `_want`, kept for itself, and `_near`,
        its neighbours kept too (a failure hit, or a line holding a literal of a signature
        decided later). Reads nothing but the library: it may run in another thread, a chunk
        ahead of `keep`, which adds the neighbours across chunk cuts."""
        if events.height == 0:
            return events.with_columns(pl.lit(False).alias(_WANT), pl.lit(False).alias(_NEAR))
        undecided = literal_lines(events, undecided=self._undecided).get_column("undecided")
        hits = hits_of(events, self.library, self._local)
        seq = events.get_column("seq")
        hit = seq.is_in(hits.get_column("seq").implode())
        failure = seq.is_in(hits.filter(pl.col("signature").is_in(list(self._failures))).get_column("seq").implode())
        facts = events.select("file", "line_no").join(self.fact_lines.with_columns(pl.lit(True).alias("_f")),
                                                      on=["file", "line_no"], how="left",
                                                      maintain_order="left").get_column("_f").is_not_null()
        other = events.select(kept_for_itself(pl.col("ts_order").is_not_null())).to_series()
        return events.with_columns((hit | other | facts).fill_null(False).alias(_WANT),
                                   (undecided | failure).fill_null(False).alias(_NEAR))

    def _first_milestones(self, frame: pl.DataFrame, fresh: pl.Series) -> pl.Series:
        """Of each file's lines of one milestone (every served request is a `serving` line),
        the first one and the earliest in time (the first of the earliest, so that the pick does
        not depend on the other lines there): what phases, the OOM class and the report read."""
        rows = frame.with_row_index("_i").filter(fresh & pl.col("milestone").is_not_null())
        if rows.height == 0:
            return pl.repeat(False, frame.height, eager=True)
        firsts = rows.group_by("file", "milestone", maintain_order=True).agg(
            pl.col("_i").first().alias("first"), pl.col("_i").filter(pl.col("ts_order") == pl.col("ts_order").min()).first().alias("early"),
            pl.col("ts_order").min().alias("t"))
        picked: list[int] = []
        for file, milestone, first, early, t in firsts.iter_rows():  # a few rows a chunk
            key = (file, milestone)
            if key not in self._milestones:
                picked.append(first)
                self._milestones[key] = None
            best = self._milestones[key]
            if t is not None and (best is None or t < best):
                picked.append(early)
                self._milestones[key] = t
        return pl.Series(range(frame.height)).is_in(pl.Series(picked, dtype=pl.Int64).implode())


def near_lines(line_no: pl.Series, near: pl.Series) -> pl.Series:
    """Lines within CONTEXT_LINES line numbers of a `near` line (one file's lines in order; a
    frame sieved in pass 1 has gaps, so positions would not do)."""
    lines = line_no.to_numpy()
    marks = lines[near.to_numpy()]
    low = np.searchsorted(marks, lines - CONTEXT_LINES, side="left")
    high = np.searchsorted(marks, lines + CONTEXT_LINES, side="right")
    return pl.Series(high > low)


def literal_lines(events: pl.DataFrame, **literals: Literals) -> pl.DataFrame:
    """One boolean column per name: the line holds one of those literals (ANSI colour removed
    once for all of them)."""
    scan = pl.DataFrame({"t": text_column(events.get_column("line")), "tb_group": events.get_column("tb_group")})
    return scan.select((found.loose_mask(pl.col("t")) if found.strings or found.in_traceback else pl.lit(False))
                       .alias(name) for name, found in literals.items())


GATE_SCAN = "_gate"  # the column `gate_scan` gives


def gate_scan(texts: pl.Series, literals: Literals) -> pl.DataFrame:
    """Per text, whether it holds one of the `literals` strings (`literal_lines` of texts taken
    as lines; the traceback part of `literals` aside), as the column GATE_SCAN."""
    strings = replace(literals, in_traceback=False)
    scanned = pl.DataFrame({"line": texts, "tb_group": pl.repeat(None, texts.len(), dtype=pl.Int64, eager=True)})
    return literal_lines(scanned, **{GATE_SCAN: strings})


def gate_column(events: pl.DataFrame, literals: Literals, scanned: pl.Series | None = None) -> pl.Series:
    """`literal_lines(events, gate=literals)`'s column, each distinct line scanned once.
    `scanned`: `gate_scan` of each line's `text` (the line without ANSI colour, `text.stripped`),
    computed while parsing. The matcher strips colour only from lines holding an ESC, so a line
    whose text is not the line itself (colour, or its remnants) is scanned again as it stands."""
    lines = events.get_column("line").fill_null("")
    found = pl.repeat(False, lines.len(), eager=True)
    if literals.strings:
        if scanned is None:
            found = per_distinct(lines, lambda distinct: gate_scan(distinct, literals)).get_column(GATE_SCAN)
        else:
            found = scanned.fill_null(False).clone()  # `scatter` writes into its series
            changed = (events.get_column("text").fill_null("") != lines).arg_true()
            if changed.len():
                found = found.scatter(changed, gate_scan(lines.gather(changed), literals).get_column(GATE_SCAN))
    if literals.in_traceback:
        found = found | events.get_column("tb_group").is_not_null()
    return found.alias("gate")


def hits_of(events: pl.DataFrame, library: Library, signatures: list[Signature]) -> pl.DataFrame:
    """(seq, signature) of these signatures' hits on `events`."""
    if not signatures:
        return pl.DataFrame(schema={"seq": pl.Int64, "signature": pl.Utf8})
    return Matcher(events, library).hits(signatures)


def digested(keeper: Digest, chunks: Iterator[pl.DataFrame], batch_rows: int | None = None) -> pl.DataFrame | None:
    """`joined` kept lines of every chunk, each batch of chunks marked in a worker thread while
    the previous one is kept (marking is most of a digest's work). Chunks sieved in pass 1 are
    small, and each matching call has a fixed cost (compiling the expressions of the signatures
    with candidates): they are marked `batch_rows` at a time."""
    batches = _batched(chunks, MARK_BATCH_ROWS if batch_rows is None else batch_rows)
    return joined([keeper.keep(batch) for batch in prefetched(keeper.marked(batch) for batch in batches)])


def _batched(chunks: Iterator[pl.DataFrame], rows: int) -> Iterator[pl.DataFrame]:
    """Consecutive chunks joined until they hold at least `rows` lines (order kept)."""
    held: list[pl.DataFrame] = []
    size = 0
    for chunk in chunks:
        held.append(chunk)
        size += chunk.height
        if size >= rows:
            yield pl.concat(held)
            held, size = [], 0
    if held:
        yield pl.concat(held)


def joined(parts: list[pl.DataFrame]) -> pl.DataFrame | None:
    """The kept lines of every chunk as one frame in `seq` order (a line kept as context of the
    next chunk comes after lines of its own chunk kept before it), or None without any."""
    parts = [p for p in parts if p.height]
    return pl.concat(parts).sort("seq") if parts else None


def _owned(frame: pl.DataFrame) -> pl.DataFrame:
    """The kept rows as a frame of their own: filtered string columns still point into the whole
    chunk's buffers, which would otherwise stay in memory as long as the rows do. Appending an
    empty string builds new strings (measured: `rechunk`, `slice` and `shrink_to_fit` keep the
    old buffers)."""
    return frame.with_columns(pl.col(pl.Utf8) + "")

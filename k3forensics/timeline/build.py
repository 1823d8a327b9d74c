"""The timeline build in two passes over chunks, so that memory does not grow with the bundle.

Pass 1 (`TimelineBuild.read`) parses every file chunk by chunk, numbers the lines (`seq`),
matches the milestone signatures and spools the chunks (a large file's chunks are parsed and
matched in worker threads, `_match_chunk`); it keeps only small summaries: per
file its clock, traceback and phase state, the milestone lines, the facts and samples of the
document files. Between the passes the bundle-level facts are settled: the node name of a
one-node bundle, the reference instant and each file's year, the milestone map. Pass 2
(`TimelineBuild.finish`) hands out each chunk completed: times resolved, phases assigned,
traceback flags set, columns in the order of the events table.

The result equals the whole-bundle computation (`inmemory.py`), chunk size notwithstanding;
tests hold the two against each other on every sample bundle.

Small files are read in batches (`smallfiles.py`): one parse, one spooled chunk and one pass-2
completion per batch of whole files, the per-file rules vectorised over the `file` column, so
that a bundle of many tiny files does not pay a chunk's fixed costs for each of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from k3forensics.bundle import BundleFile, open_bundle
from k3forensics.library.compile import is_row_local, uses_tracebacks
from k3forensics.library.loader import Library
from k3forensics.library.match import pass_one_safe
from k3forensics.library.model import Role
from k3forensics.library.prefilter import Literals
from k3forensics.sources.base import FACT_SCHEMA, SAMPLE_SCHEMA, UTC_US
from k3forensics.timeline.digest import gate_column
from k3forensics.timeline.nodes import DEFAULT_NODE, hosts_named, node_of_paths
from k3forensics.timeline.parse_file import CHUNK_BYTES, FRAME_COLUMNS, FileInfo, FileReader, ParsedChunk
from k3forensics.timeline.phases import (
    FilePhases,
    MilestoneMap,
    finish_phases,
    milestone_column,
    milestone_map,
    whole_file_phases,
)
from k3forensics.timeline.prefetch import Ahead
from k3forensics.timeline.sieve import ChunkMarks, Dropped, Sieve
from k3forensics.timeline.smallfiles import BATCH_BYTES, BATCH_FILES, BatchReader, is_small
from k3forensics.timeline.spool import Spool
from k3forensics.timeline.times import (
    STAMP_COLUMNS,
    FileClock,
    Stamp,
    file_times,
    median_instant,
    observe_whole_files,
    resolve_times,
    resolved,
    stamps_before,
)
from k3forensics.timeline.tracebacks import FileTracebacks

Progress = Callable[[str, int, int], None]  # (file, files done, files total)
# Batches of small files (and documents) wait for milestone matching until this many lines
# are read: a matching pass has a fixed cost of about 20 ms. A large file's log chunks (16 MiB,
# about 130,000 lines) are matched one by one where they are parsed.
MILESTONE_BATCH_ROWS = 200_000
# Large files parsed at once, each at most a chunk ahead (memory: a few chunks). Three on two
# cores: a worker running Python between polars calls holds the GIL, and a third keeps both
# cores busy (measured at 1 GiB: 46.6 s with two, 40.0 s with three, 42.0 s with four).
PARSE_WORKERS = 3

# The events table's columns, in order (the whole-bundle computation adds them in this order).
EVENT_ORDER = ["seq", *FRAME_COLUMNS, "node", "ts_order", "milestone", "step", "phase"]
# The milestone lines pass 1 keeps (millions in a large bundle: every served request is one):
# their text columns hold a few distinct values each, as categories a third of the memory.
_MILESTONE_COLUMNS = {"seq": pl.Int64(), "file": pl.Categorical(), "node": pl.Categorical(),
                      "milestone": pl.Categorical(), "_ff_ts": UTC_US, "_ff_yearless": pl.Boolean(),
                      "_ff_wraps": pl.Int32()}


@dataclass
class FileState:
    info: FileInfo
    node: str
    clock: FileClock
    tracebacks: FileTracebacks
    phases: FilePhases = field(default_factory=FilePhases)
    traceback_lines: list[pl.DataFrame] = field(default_factory=list)  # pass 1, for `_rematch_tracebacks`
    corrected: pl.DataFrame | None = None  # seq, milestone, step of the traceback lines, matched whole
    lines: int = 0
    parsed: int = 0
    first_ts: datetime | None = None
    last_ts: datetime | None = None
    batched: bool = False  # read whole in a batch of small files (its clock and tracebacks unused)
    dropped: Dropped | None = None  # lines the sieve dropped in pass 1 (tallied in pass 2)


@dataclass
class FileBatch:
    """Small files read together: their chunk of events is completed as one (pass 2)."""

    states: dict[str, FileState]


Owner = FileState | FileBatch  # what a spooled chunk holds: part of one file, or whole files


@dataclass
class Settled:
    """What pass 2 needs from the whole bundle."""

    rename: str | None
    reference: datetime
    phases: MilestoneMap


class TimelineBuild:
    def __init__(self, bundle: Path, library: Library, *, spool_dir: Path | None = None,
                 spool_memory_bytes: int | None = None,
                 chunk_bytes: int = CHUNK_BYTES, progress: Progress | None = None, sieve: Sieve | None = None):
        self.bundle, self.library, self.chunk_bytes, self.progress = bundle, library, chunk_bytes, progress
        # With a sieve, log chunks spooled to disk lose the lines no triage can use (`sieve.py`).
        self.sieve = sieve if sieve is not None and sieve.usable else None
        self.spool = Spool(spool_dir, spool_memory_bytes)
        self.files: list[FileState] = []
        self.warnings: list[str] = []
        self.mtimes: list[datetime] = []
        self.milestones: list[pl.DataFrame] = []
        self.facts: list[pl.DataFrame] = []
        self.samples: list[pl.DataFrame] = []
        self.nccl_hosts: Counter[str] = Counter()
        self.single_node = False
        self.tracebacks_matter = any(uses_tracebacks(s.condition) for s in library.of_role(Role.MILESTONE))
        # One scan of each batch for the literals of the milestones and of the sieve: their
        # matching then reads only the lines holding one (about a tenth of an NCCL-heavy log).
        milestones = library.of_role(Role.MILESTONE)
        self._milestone_literals = (library.literals_of(milestones)
                                    if all(is_row_local(s.condition, tracebacks=True) for s in milestones) else None)
        sieved = self.sieve.literals if self.sieve is not None else None
        self._gate: Literals | None = None
        for found in (self._milestone_literals, sieved):
            if found is not None:
                self._gate = found if self._gate is None else self._gate | found
        self._sieve_gated = sieved is not None
        self.seq = 0
        self.settled: Settled | None = None
        self.hosts: dict[str, set[str]] = {}
        self._pending: list[tuple[pl.DataFrame, Stamp | None, Owner, bool]] = []  # read, not yet matched; sievable
        self._pending_rows = 0
        self._spooled: list[Owner] = []            # of each spooled chunk, in order
        self._clocks: list[pl.DataFrame] = []      # CLOCK_SCHEMA rows of batched files
        self._dated = FileClock()                  # the dated times of batched files

    # -- pass 1 ---------------------------------------------------------------------------------

    def read(self) -> None:
        with open_bundle(self.bundle) as opened:
            node_by_path = node_of_paths([bf.rel_path for bf in opened.files])
            self.single_node = set(node_by_path.values()) == {DEFAULT_NODE}
            self.spool.expect(sum(bf.size for bf in opened.files))
            total = len(opened.files)
            # Large files are parsed and matched in worker threads, a chunk or two ahead of the
            # sieving and spooling done here (polars releases the GIL; a laptop has cores to spare).
            readers = [FileReader(bf, node_by_path[bf.rel_path], self.chunk_bytes, gate=self._gate,
                                  matching=self._match_chunk)
                       for bf in opened.files if not is_small(bf, self.chunk_bytes)]
            batch: list[BundleFile] = []
            size = read = 0
            with Ahead([r.chunks for r in readers], workers=PARSE_WORKERS) as ahead:
                for done, bf in enumerate(opened.files):
                    if self.progress:
                        self.progress(bf.rel_path, done, total)
                    if is_small(bf, self.chunk_bytes):
                        batch.append(bf)
                        size += bf.size
                        if len(batch) >= BATCH_FILES or size >= min(BATCH_BYTES, self.chunk_bytes):
                            self._read_batch(batch, node_by_path)
                            batch, size = [], 0
                        continue
                    self._read_batch(batch, node_by_path)  # files keep their order (`seq`)
                    batch, size = [], 0
                    self._read_file(readers[read], ahead.items(read))
                    read += 1
                self._read_batch(batch, node_by_path)
            self._match_milestones()
            for state in self.files:
                self._rematch_tracebacks(state)
            self.warnings = list(opened.warnings)
            self.mtimes = [bf.mtime for bf in opened.files if bf.mtime]
        if self.progress:
            self.progress("", total, total)
        for state in self.files:
            self.warnings += state.info.warnings

    def _read_file(self, reader: FileReader, chunks: Iterator[ParsedChunk]) -> None:
        """One large file's chunks (`reader.chunks()`, computed ahead) numbered, observed and
        spooled. A log chunk comes matched (`_match_chunk`, in the parsing worker); a document
        waits for milestone matching with the small files."""
        state = FileState(reader.info, reader.node, FileClock(), reader.tracebacks)
        self.files.append(state)
        self._match_milestones()  # the files read before this one are spooled first
        for chunk in chunks:
            events = chunk.events.with_columns(pl.lit(reader.node, pl.Utf8).alias("node"))
            events = events.with_row_index("seq", offset=self.seq).with_columns(pl.col("seq").cast(pl.Int64))
            self.seq += events.height
            events, before = state.clock.observe(events)
            if self.single_node:
                self._note_nccl_hosts(events)
            for frames, extra in ((self.facts, chunk.facts), (self.samples, chunk.samples)):
                if extra is not None:
                    frames.append(extra.with_columns(pl.lit(reader.node).alias("node"),
                                                     pl.lit(reader.info.file).alias("file")))
            if chunk.matched:
                self._spool_part(events, before, state, sievable=True,
                                 gate=chunk.gate if self._sieve_gated else None, marks=chunk.marks)
                continue
            self._pending.append((events, before, state, chunk.facts is None))  # sievable: a log's chunk
            self._pending_rows += events.height
            if self._pending_rows >= MILESTONE_BATCH_ROWS:
                self._match_milestones()
        self._match_milestones()  # and before the next
        self._keep_side_columns()

    def _match_chunk(self, events: pl.DataFrame, gate: pl.Series | None) -> tuple[pl.DataFrame, ChunkMarks | None]:
        """What pass 1 decides on one log chunk alone, in the worker thread that parsed it: the
        milestones (`milestone`, `step`) and the sieve's marks (`Sieve.marks`), so that the
        thread that numbers and spools the chunks, pass 1's critical path, does not. A
        traceback group cut by the chunk's edge is matched again once the file is read
        (`_rematch_tracebacks`)."""
        rows = events.with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64))
        matched = milestone_column(rows, self.library, gate if self._milestone_literals is not None else None)
        marks = None
        if self.sieve is not None and self.spool.on_disk:  # else `_spool_part` marks it, if the spool spills
            marks = self.sieve.marks(matched, gate=gate if self._sieve_gated else None)
        return matched.drop("seq"), marks

    def _keep_side_columns(self) -> None:
        for frames, schema in ((self.facts, FACT_SCHEMA), (self.samples, SAMPLE_SCHEMA)):
            if not frames:  # keep the columns when no file has any
                frames.append(pl.DataFrame(schema=schema).with_columns(
                    pl.lit(None, pl.Utf8).alias("node"), pl.lit(None, pl.Utf8).alias("file")))

    def _read_batch(self, files: list[BundleFile], node_by_path: dict[str, str]) -> None:
        """Small whole files as one chunk: parsed together, numbered, observed per file."""
        if not files:
            return
        read = BatchReader(files, node_by_path).read()
        states = {i.file: FileState(i, node_by_path[i.file], _UNUSED_CLOCK, _UNUSED_TRACEBACKS, batched=True)
                  for i in read.infos}
        self.files += states.values()
        nodes = {f: node_by_path[f] for f in states}
        for frames, extra in ((self.facts, read.facts), (self.samples, read.samples)):
            frames += [e.with_columns(pl.lit(nodes[f]).alias("node"), pl.lit(f).alias("file")) for f, e in extra]
        self._keep_side_columns()
        events = read.events
        if not events.height:
            return
        events = events.with_columns(pl.col("file").replace_strict(nodes, return_dtype=pl.Utf8).alias("node"))
        events = events.with_row_index("seq", offset=self.seq).with_columns(pl.col("seq").cast(pl.Int64))
        self.seq += events.height
        events, clocks, dated = observe_whole_files(events)
        self._clocks.append(clocks)
        if dated.size:
            self._dated.dated.append(dated)
        self._pending.append((events, None, FileBatch(states), False))
        self._pending_rows += events.height
        if self.single_node:
            self._note_nccl_hosts(events)
        if self._pending_rows >= MILESTONE_BATCH_ROWS:
            self._match_milestones()

    def _match_milestones(self) -> None:
        """Match the milestone signatures on the chunks read so far, all at once (many small
        files cost one matching pass, not one each), then spool them."""
        if not self._pending:
            return
        batch = pl.concat([events for events, *_ in self._pending])
        gate = gate_column(batch, self._gate) if self._gate is not None else None
        matched = milestone_column(batch, self.library, gate if self._milestone_literals is not None else None)
        sieve_gate = gate if self._sieve_gated else None
        offset = 0
        failures: pl.Series | None = None  # of the rest of the batch, once a part is sieved
        for events, before, owner, sievable in self._pending:
            start, offset = offset, offset + events.height
            part = matched.slice(start, events.height)
            if failures is None and self.sieve is not None and self._sieved(sievable, owner):
                rest = matched.slice(start)
                failures = self.sieve.failures(rest if sieve_gate is None else rest.filter(sieve_gate.slice(start)))
            self._spool_part(part, before, owner, sievable,
                             None if sieve_gate is None else sieve_gate.slice(start, events.height), failures)
        self._pending, self._pending_rows = [], 0

    def _sieved(self, sievable: bool, owner: Owner) -> bool:
        return sievable and self.sieve is not None and self.spool.on_disk and isinstance(owner, FileState)

    def _spool_part(self, part: pl.DataFrame, before: Stamp | None, owner: Owner, sievable: bool,
                    gate: pl.Series | None, failures: pl.Series | None = None, marks: ChunkMarks | None = None) -> None:
        """One matched chunk (or a batch's part of one) noted, sieved when it may be, spooled.
        `marks`: the sieve's marks of the part when known, else found from `gate` and `failures`
        (as `Sieve.marks` takes them)."""
        self._note_milestones(part, before, owner)
        if self._sieved(sievable, owner):
            assert self.sieve is not None and isinstance(owner, FileState)
            owner.dropped = owner.dropped or Dropped()
            part = self.sieve.cut(part, before, self.sieve.marks(part, failures, gate) if marks is None else marks,
                                  owner.dropped)
        self.spool.add(part)
        self._spooled.append(owner)

    def _note_milestones(self, events: pl.DataFrame, before: Stamp | None, owner: Owner) -> None:
        """Keep the milestone lines (and, when milestones read traceback groups, the traceback
        lines of a file read in chunks) with the raw time their `ts_order` comes from."""
        whole = isinstance(owner, FileBatch)  # whole traceback groups: matched right the first time
        grouped = pl.col("tb_group").is_not_null() if self.tracebacks_matter and not whole else pl.lit(False)
        wanted = pl.col("milestone").is_not_null() | grouped
        rows = events.select(wanted).to_series()
        if not rows.any():
            return
        # The stamps of the wanted lines, filled over a few columns of every line (a filter of the
        # whole chunk would copy its text): the untimed lines fill nothing.
        stamps = stamps_before(events.select("file", "ts", "ts_quality", "_wraps"), before, by_file=whole)
        timed = events.filter(rows).hstack(stamps.select(STAMP_COLUMNS).filter(rows))
        self.milestones.append(_milestone_rows(timed.filter(pl.col("milestone").is_not_null() & ~grouped)))
        if isinstance(owner, FileState) and self.tracebacks_matter:
            owner.traceback_lines.append(_compact(timed.filter(grouped)))

    def _rematch_tracebacks(self, state: FileState) -> None:
        """A traceback group cut by a chunk boundary was matched in pieces: now that the file is
        read, match its lines again with whole groups (they are few: only traceback lines)."""
        if not state.traceback_lines:
            return
        rows = pl.concat(state.traceback_lines)
        state.traceback_lines = []
        fixed = milestone_column(rows.drop("milestone", "step"), self.library)
        state.corrected = fixed.select("seq", "milestone", "step")
        self.milestones.append(_milestone_rows(fixed.filter(pl.col("milestone").is_not_null())))

    def _note_nccl_hosts(self, events: pl.DataFrame) -> None:
        hosts = events.filter((pl.col("source") == "nccl") & pl.col("attrs").str.contains('"host":', literal=True))
        if hosts.height:
            # Few distinct attrs among many lines: read the JSON of each distinct one once.
            counted = hosts.group_by("attrs").len().select(
                pl.col("attrs").str.json_path_match("$.host").alias("host"), "len").drop_nulls("host")
            for host, count in counted.group_by("host").agg(pl.col("len").sum()).iter_rows():
                self.nccl_hosts[host] += count

    # -- between the passes ---------------------------------------------------------------------

    def settle(self) -> Settled:
        rename = None
        if self.single_node and self.seq:
            rename = self._single_node_name()
        chunked = [s for s in self.files if not s.batched]
        reference = median_instant([s.clock for s in chunked] + [self._dated], max(self.mtimes) if self.mtimes else None)
        times = file_times(pl.concat([*self._clocks, *(s.clock.summary(s.info.file) for s in chunked)]), reference)
        years = dict(times.select("file", "year").drop_nulls().iter_rows())
        for state in chunked:
            state.clock.year = years.get(state.info.file)
        milestones = self._milestone_times(times)
        if rename:
            milestones = milestones.with_columns(pl.lit(rename).alias("node"))
        self.settled = Settled(rename, reference, milestone_map(milestones))
        return self.settled

    def _single_node_name(self) -> str | None:
        """`nodes.single_node_name` from the facts and the NCCL host counts of pass 1."""
        facts = pl.concat(self.facts, how="diagonal_relaxed")
        named = facts.filter(pl.col("key") == "hostname")
        if named.height:
            return str(named.get_column("value").first())
        if self.nccl_hosts:
            top = max(self.nccl_hosts.values())
            return min(h for h, n in self.nccl_hosts.items() if n == top)
        return None

    def _milestone_times(self, times: pl.DataFrame) -> pl.DataFrame:
        """The milestone lines (file, node, milestone, as categories) with their `ts_order`,
        resolved as pass 2 will resolve them (`times`: each file's year and resolved first
        time, from `file_times`), in `seq` order. A large bundle has millions (every served
        request): each part is resolved to these columns and let go before the next, rather
        than all of them concatenated, sorted and joined in several copies at once."""
        columns = ["seq", "file", "node", "milestone"]
        schema = {**{c: _MILESTONE_COLUMNS[c] for c in columns}, "ts_order": UTC_US}
        own = resolved(pl.col("_ff_ts"), pl.col("_ff_yearless"), pl.col("year") + pl.col("_ff_wraps"))
        times = times.with_columns(pl.col("file").cast(pl.Categorical))
        parts, self.milestones = self.milestones, []
        parts.reverse()
        done = [pl.DataFrame(schema=schema)]
        while parts:  # a loop over chunks
            part = parts.pop().join(times, on="file", how="left", maintain_order="left")
            done.append(part.select(*columns, pl.coalesce(own, pl.col("first")).cast(UTC_US).alias("ts_order")))
        rows = pl.concat(done)
        done.clear()
        # Traceback lines matched again once their file was read come after the file's chunks.
        return (rows if rows.get_column("seq").is_sorted() else rows.sort("seq")).drop("seq")

    # -- pass 2 ---------------------------------------------------------------------------------

    def finish(self) -> Iterator[pl.DataFrame]:
        """Each chunk completed, in order (call `settle` first, and read everything)."""
        settled = self.settled or self.settle()
        owners, self._spooled = self._spooled, []
        for events, owner in zip(self.spool.drain(), owners, strict=True):
            if isinstance(owner, FileBatch):
                yield self._complete_batch(events, owner, settled)
            else:
                yield self._complete(events, owner, settled)
        self.spool.close()

    def _complete_batch(self, events: pl.DataFrame, batch: FileBatch, settled: Settled) -> pl.DataFrame:
        """`_complete` for whole files: the whole-file rules over the `file` column (their
        traceback flags are final already)."""
        if settled.rename:
            events = events.with_columns(pl.lit(settled.rename).alias("node"))
        events = resolve_times(events, settled.reference)
        events = whole_file_phases(events, pl.col("file").is_in(list(settled.phases.files)))
        events = finish_phases(events, settled.phases).select(EVENT_ORDER)
        per_file = events.group_by("file").agg(
            pl.len().alias("lines"), pl.col("parsed").sum().alias("parsed"),
            pl.col("ts").min().alias("first"), pl.col("ts").max().alias("last"),
        )
        for file, lines, parsed, first, last in per_file.iter_rows():
            state = batch.states[file]
            state.lines, state.parsed, state.first_ts, state.last_ts = lines, parsed, first, last
        self._note_hosts(events)
        return events

    def _complete(self, events: pl.DataFrame, state: FileState, settled: Settled) -> pl.DataFrame:
        if settled.rename:
            events = events.with_columns(pl.lit(settled.rename).alias("node"))
        if state.corrected is not None:
            events = self._corrected(events, state.corrected)
        events = state.clock.resolve(events).with_columns(state.tracebacks.final_flags(events).alias("tb_final"))
        events = state.phases.in_file(events, own=state.info.file in settled.phases.files)
        events = finish_phases(events, settled.phases).select(EVENT_ORDER)
        self._tally(events, state)
        if state.dropped is not None:
            self._tally_dropped(state, settled)
        return events

    def _tally_dropped(self, state: FileState, settled: Settled) -> None:
        dropped, state.dropped = state.dropped, None
        assert dropped is not None
        state.lines += dropped.lines
        state.parsed += dropped.parsed
        low, high = dropped.extremes(state.clock.year)
        if low is not None and high is not None:
            _widen(state, low, high)
        if dropped.hosts:
            self.hosts.setdefault(settled.rename or state.node, set()).update(dropped.hosts)

    @staticmethod
    def _corrected(events: pl.DataFrame, corrected: pl.DataFrame) -> pl.DataFrame:
        fixed = events.join(corrected.rename({"milestone": "_m", "step": "_s"}), on="seq", how="left",
                            maintain_order="left")
        grouped = pl.col("tb_group").is_not_null()
        return fixed.with_columns(
            pl.when(grouped).then(pl.col("_m")).otherwise(pl.col("milestone")).alias("milestone"),
            pl.when(grouped).then(pl.col("_s")).otherwise(pl.col("step")).alias("step"),
        ).drop("_m", "_s")

    def _tally(self, events: pl.DataFrame, state: FileState) -> None:
        state.lines += events.height
        state.parsed += int(events.get_column("parsed").sum())
        ts = events.get_column("ts").drop_nulls()
        if ts.len():
            _widen(state, ts.min(), ts.max())  # type: ignore[arg-type]
        self._note_hosts(events)

    def _note_hosts(self, events: pl.DataFrame) -> None:
        for node, host in hosts_named(events):
            self.hosts.setdefault(node, set()).add(host)

    # -- the small tables -----------------------------------------------------------------------

    def node_of(self, state: FileState) -> str:
        return self.settled.rename if self.settled and self.settled.rename else state.node

    def side_tables(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(samples, facts) of the whole bundle."""
        out = []
        for frames in (self.samples, self.facts):
            frame = pl.concat([f for f in frames if f.width], how="diagonal_relaxed")
            if self.settled and self.settled.rename:
                frame = frame.with_columns(pl.lit(self.settled.rename).alias("node"))
            out.append(frame)
        return out[0], out[1]

    def milestones_ready(self) -> bool:
        """Milestone conditions read only what pass 1 knows; else the whole-bundle path is needed."""
        return all(pass_one_safe(s.condition) for s in self.library.of_role(Role.MILESTONE))


def _widen(state: FileState, low: datetime, high: datetime) -> None:
    """Stretch the file's first and last time to take in [low, high]."""
    state.first_ts = low if state.first_ts is None else min(state.first_ts, low)
    state.last_ts = high if state.last_ts is None else max(state.last_ts, high)


# Batched files share these: their clocks and tracebacks are handled batch-wide.
_UNUSED_CLOCK = FileClock()
_UNUSED_TRACEBACKS = FileTracebacks("", whole_files=True)


def _milestone_rows(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(pl.col(name).cast(dtype) for name, dtype in _MILESTONE_COLUMNS.items())


def _compact(frame: pl.DataFrame) -> pl.DataFrame:
    """A copy of a few rows that owns its strings: a filtered frame's string columns still
    point into the whole chunk's text, which would stay in memory as long as the rows do."""
    return pl.DataFrame({c: frame.get_column(c).to_list() for c in frame.columns}, schema=frame.schema)

"""One bundle file → events (+ samples, facts) with the columns of the timeline.

Log files are read in chunks cut on line ends (`FileReader.chunks`), so a file of any size is
parsed with about one chunk in memory; what spans chunks (traceback groups) is carried over.
Document files (nvidia-smi, metrics, kubectl, …) have one structure per file and are parsed
whole, as are small files (one chunk).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from types import ModuleType

import polars as pl

from k3forensics.bundle import BundleFile
from k3forensics.decode import DecodedFile, iter_decoded_chunks
from k3forensics.library.prefilter import Literals
from k3forensics.sources import container, detect_document, detect_log
from k3forensics.sources.base import FACT_SCHEMA, SAMPLE_SCHEMA, UTC_US, ParseContext, ParseResult
from k3forensics.sources.logs import LOG_FORMATS, parse_log_frame
from k3forensics.text import stripped
from k3forensics.timeline.digest import GATE_SCAN, gate_column, gate_scan
from k3forensics.timeline.sieve import ChunkMarks
from k3forensics.timeline.tracebacks import FileTracebacks, shapes

HEAD_BYTES = 8192
CHUNK_BYTES = 16 << 20  # log files are parsed this many bytes at a time (memory follows it)

# Every events frame is brought to these columns before the bundle is put together.
FRAME_COLUMNS: dict[str, pl.DataType] = {
    "file": pl.Utf8(), "line_no": pl.Int64(), "byte_offset": pl.Int64(), "source": pl.Utf8(),
    "format": pl.Utf8(), "parsed": pl.Boolean(), "process": pl.Utf8(), "pid": pl.Int64(), "rank": pl.Utf8(),
    "ts": UTC_US, "ts_quality": pl.Utf8(), "level": pl.Utf8(), "message": pl.Utf8(), "line": pl.Utf8(),
    "attrs": pl.Utf8(), "tb_group": pl.Int64(), "tb_final": pl.Boolean(), "exception": pl.Utf8(),
    "stream": pl.Utf8(),
}


@dataclass
class FileInfo:
    """What the files manifest needs of one file, complete once its chunks are read."""

    file: str
    detected_type: str = "generic"
    envelope: str | None = None
    decoded: DecodedFile | None = None     # the last chunk: hash, size, encoding, problems
    warnings: list[str] = field(default_factory=list)
    sources: Counter[str] = field(default_factory=Counter)  # parsed log lines per named source


@dataclass
class ParsedFile:
    file: str
    events: pl.DataFrame
    samples: pl.DataFrame
    facts: pl.DataFrame
    detected_type: str
    envelope: str | None
    decoded: DecodedFile
    warnings: list[str] = field(default_factory=list)


# The matching a reader applies to each log chunk where it is parsed (`TimelineBuild._match_chunk`):
# (events, gate lines) -> (the events with `milestone` and `step`, the sieve's marks or None).
Matching = Callable[[pl.DataFrame, "pl.Series | None"], "tuple[pl.DataFrame, ChunkMarks | None]"]


@dataclass
class ParsedChunk:
    events: pl.DataFrame                   # FRAME_COLUMNS; tb_final provisional (see FileReader.tracebacks)
    samples: pl.DataFrame | None = None
    facts: pl.DataFrame | None = None
    gate: pl.Series | None = None          # a log chunk's lines holding the reader's `gate` literals
    matched: bool = False                  # a log chunk matched by the reader's `matching`, which
    marks: ChunkMarks | None = None        # gave these sieve marks (None: not sieved there)


def head_of(lines: pl.DataFrame, column: str = "text") -> str:
    """The first few KiB of a file's text, for detection."""
    out: list[str] = []
    size = 0
    for text in lines.get_column(column).head(400).to_list():  # bounded: at most 400 lines
        out.append(text or "")
        size += len(out[-1]) + 1
        if size >= HEAD_BYTES:
            break
    return "\n".join(out)[:HEAD_BYTES]


def _head_complete(frames: list[pl.DataFrame]) -> bool:
    """Do these first lines of a file hold all `head_of` reads (400 lines or HEAD_BYTES)?"""
    lines = sum(f.height for f in frames)
    if lines >= 400:
        return True
    chars = sum(int(f.get_column("text").fill_null("").str.len_chars().sum()) + f.height for f in frames)
    return chars >= HEAD_BYTES


def text_of(line: pl.Series) -> pl.Series:
    """The `text` column: the line without ANSI colour (`text.stripped`)."""
    return stripped(line).alias("text")


class FileReader:
    """Parses one file: `chunks()` yields its events chunk by chunk; `info` is complete after."""

    def __init__(self, bf: BundleFile, node: str, chunk_bytes: int = CHUNK_BYTES, gate: Literals | None = None,
                 matching: Matching | None = None):
        # `gate`: literals whose lines a log chunk marks (`gate_column`); `matching`: applied
        # to each log chunk and its gate. Both run where the chunk is parsed (a worker thread).
        self.bf, self.node, self.chunk_bytes, self.gate, self.matching = bf, node, chunk_bytes, gate, matching
        self.info = FileInfo(bf.rel_path)
        self.tracebacks = FileTracebacks(bf.rel_path)
        self.ctx = ParseContext(file=bf.rel_path, node=node, file_mtime=bf.mtime)
        self._envelope_pending = True
        self._raw_head: list[pl.DataFrame] = []
        self._head = ""
        self._bare: container.BareLines | None = None  # lines lacking the envelope, over all chunks

    def chunks(self) -> Iterator[ParsedChunk]:
        raw: list[pl.DataFrame] = []       # lines read before the envelope is known
        inner: list[pl.DataFrame] = []     # unwrapped lines read before the file type is known
        document: ModuleType | None = None
        decided = False
        pending: list[pl.DataFrame] = []   # a document's lines, parsed once all are read
        for decoded in iter_decoded_chunks(self.bf, chunk_bytes=self.chunk_bytes):
            # Keep what the manifest needs, not the chunk's lines (a file's worth of text).
            self.info.decoded = replace(decoded, lines=decoded.lines.clear())
            if decoded.lines.height:
                raw.append(self._lines(decoded.lines))
            if not decided:
                # Detection reads the head of the file (as the whole-file reading does), which
                # a small chunk may not hold yet.
                inner, decided, document = self._detect(raw, inner, final=bool(decoded.sha256))
                raw = []
                if not decided:
                    continue
                ready, inner = inner, []
            else:
                ready, raw = [self._unwrap(r) for r in raw], []
            for lines in ready:
                if document is not None:
                    pending.append(lines)
                else:
                    yield self._log_chunk(lines)
        decoded = self.info.decoded
        assert decoded is not None, "iter_decoded_chunks yields at least one chunk"
        if document is not None:
            yield self._document(document, pl.concat(pending))
        else:
            named = self.info.sources.most_common()
            top = [name for name, count in named if count == named[0][1]] if named else []
            self.info.detected_type = min(top) if top else detect_log(self._head)
        if decoded.binary:
            self.info.detected_type = "binary"
        bare = self._bare.warning() if self._bare else []
        self.info.warnings = list(decoded.problems) + bare + self.info.warnings

    def _detect(self, raw: list[pl.DataFrame], inner: list[pl.DataFrame],
                final: bool) -> tuple[list[pl.DataFrame], bool, ModuleType | None]:
        """Envelope, then document type, once the head of the file is read (or the file is)."""
        if self._envelope_pending:
            self._raw_head += raw
            if not (final or _head_complete(self._raw_head)):
                return inner, False, None
            if self._raw_head:
                self.info.envelope = container.envelope_kind(head_of(pl.concat(self._raw_head)))
            raw, self._raw_head, self._envelope_pending = self._raw_head, [], False
        inner = inner + [self._unwrap(r) for r in raw]
        if not (final or _head_complete(inner)):
            return inner, False, None
        self._head = head_of(pl.concat(inner)) if inner else ""
        return inner, True, detect_document(self._head) if self._head else None

    def _lines(self, decoded: pl.DataFrame) -> pl.DataFrame:
        # Once a file is known to carry an envelope, `_unwrap` gives each line its text: the
        # inner text's, or the whole line's where the envelope is missing (a few lines).
        unwrapped = not self._envelope_pending and self.info.envelope
        return decoded.with_columns(
            pl.lit(None, pl.Utf8).alias("text") if unwrapped else text_of(decoded.get_column("line")),
            pl.lit(None, UTC_US).alias("outer_ts"),
            pl.lit(None, pl.Utf8).alias("stream"),
        )

    def _unwrap(self, lines: pl.DataFrame) -> pl.DataFrame:
        if not self.info.envelope:
            return lines
        out, bare = container.unwrap_counted(lines, self.info.envelope)
        bare_text = (out.get_column("text").is_null() & out.get_column("line").is_not_null()).arg_true()
        if bare_text.len():  # lines read without their text (`_lines`) that lack the envelope
            text = out.get_column("text").scatter(bare_text, text_of(out.get_column("line").gather(bare_text)))
            out = out.with_columns(text)
        if self._bare is None:
            self._bare = bare
        else:
            self._bare.add(bare)
        return out

    def _log_chunk(self, lines: pl.DataFrame) -> ParsedChunk:
        gate_literals = self.gate
        # The gate's scan runs with the parsing, once per distinct text.
        per_text = (lambda texts: gate_scan(texts, gate_literals)) if gate_literals and gate_literals.strings else None
        events = self.tracebacks.annotate(parse_log_frame(lines, LOG_FORMATS, per_message=shapes, per_text=per_text))
        named = events.filter(pl.col("parsed") & (pl.col("source") != "generic")).get_column("source")
        self.info.sources.update(dict(named.value_counts().iter_rows()))
        gate = None
        if gate_literals is not None:
            gate = gate_column(events, gate_literals, events.get_column(GATE_SCAN) if per_text else None)
        events = conform(events, lines)
        if self.matching is None:
            return ParsedChunk(events, gate=gate)
        matched, marks = self.matching(events.with_columns(pl.lit(self.node, pl.Utf8).alias("node")), gate)
        return ParsedChunk(matched, gate=gate, matched=True, marks=marks)

    def _document(self, document: ModuleType, lines: pl.DataFrame) -> ParsedChunk:
        result: ParseResult = document.parse(lines, self.ctx)
        self.info.detected_type = str(document.NAME)
        self.info.warnings += [f"{self.bf.rel_path}: {w}" for w in result.warnings]
        return ParsedChunk(
            conform(result.events, lines),
            frame_or_empty(result.samples, SAMPLE_SCHEMA),
            frame_or_empty(result.facts, FACT_SCHEMA),
        )


def parse_file(bf: BundleFile, node: str) -> ParsedFile:
    """A whole file at once (tests and small tools; ingest reads big files chunk by chunk)."""
    reader = FileReader(bf, node, chunk_bytes=max(bf.size, 1))
    chunks = list(reader.chunks())
    events = pl.concat([c.events for c in chunks]) if chunks else pl.DataFrame(schema=FRAME_COLUMNS)
    events = events.with_columns(reader.tracebacks.final_flags(events).alias("tb_final"))
    decoded = reader.info.decoded
    assert decoded is not None
    samples = [c.samples for c in chunks if c.samples is not None]
    facts = [c.facts for c in chunks if c.facts is not None]
    return ParsedFile(
        file=bf.rel_path, events=events,
        samples=samples[0] if samples else pl.DataFrame(schema=SAMPLE_SCHEMA),
        facts=facts[0] if facts else pl.DataFrame(schema=FACT_SCHEMA),
        detected_type=reader.info.detected_type, envelope=reader.info.envelope, decoded=decoded,
        warnings=reader.info.warnings,
    )


def conform(events: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """Bring a parser's events to FRAME_COLUMNS; `line` always comes from the input lines."""
    if events.height != lines.height:
        raise AssertionError(f"parser returned {events.height} events for {lines.height} lines")
    events = events.with_columns(lines.get_column("line").alias("line"))
    if "stream" not in events.columns or events.get_column("stream").null_count() == events.height:
        events = events.with_columns(lines.get_column("stream").alias("stream"))
    exprs = [
        (pl.col(name) if name in events.columns else pl.lit(None)).cast(dtype).alias(name)
        for name, dtype in FRAME_COLUMNS.items()
    ]
    return events.select(exprs).with_columns(pl.col("tb_final").fill_null(False), pl.col("parsed").fill_null(False))


def frame_or_empty(frame: pl.DataFrame | None, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    if frame is None or frame.height == 0:
        return pl.DataFrame(schema=schema)
    return frame.select([pl.col(k).cast(v) for k, v in schema.items()])

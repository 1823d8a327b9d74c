"""Many small files read as one batch: what `FileReader` pays once per file (a dozen polars
calls to decode, detect and parse, a traceback pass) is paid once per batch instead.

Every file of a batch is whole, so nothing is carried from one chunk to the next; per-file
rules run over a `file` column (`over("file")`), and only what is Python by nature runs per
file: reading the bytes, envelope and document detection on the head text. Plain ASCII files
(most small logs) are decoded together; any other file takes `decode_file`. Container
envelopes and document files are handled file by file, the log files of a batch are parsed
together. The events equal `FileReader`'s on each file (tests hold them against each other).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType

import numpy as np
import polars as pl
import pyarrow as pa

from k3forensics.bundle import BundleFile
from k3forensics.decode import _BINARY_MAGIC, LINES_SCHEMA, DecodedFile, decode_file
from k3forensics.errors import BundleError, Location
from k3forensics.sources import container, detect_document, detect_log
from k3forensics.sources.base import FACT_SCHEMA, SAMPLE_SCHEMA, UTC_US, ParseContext, ParseResult
from k3forensics.sources.logs import LOG_FORMATS, parse_log_frame
from k3forensics.timeline.parse_file import (
    FRAME_COLUMNS,
    HEAD_BYTES,
    FileInfo,
    conform,
    frame_or_empty,
    text_of,
)
from k3forensics.timeline.tracebacks import FileTracebacks, shapes

SMALL_FILE_BYTES = 256 << 10  # files up to this size are read in batches (below decode's line cap)
BATCH_BYTES = 8 << 20         # a batch holds about this many bytes ...
BATCH_FILES = 20_000          # ... or this many files
_HEAD_LINES = 400             # `head_of` reads at most this many lines
# Bytes `decode` keeps as they are in UTF-8 text: printable ASCII, tab, newline, VT, FF, ESC,
# backspace (no CR, NUL or other control bytes: those are cleaned or counted).
_PLAIN_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n\x0b\x0c\x1b\x08"
_NO_LINES = pl.DataFrame(schema=LINES_SCHEMA)


@dataclass
class ParsedBatch:
    events: pl.DataFrame                         # FRAME_COLUMNS, file by file; tb_final final
    infos: list[FileInfo]                        # one per file, in order
    facts: list[tuple[str, pl.DataFrame]] = field(default_factory=list)    # (file, facts) of document files
    samples: list[tuple[str, pl.DataFrame]] = field(default_factory=list)  # (file, samples) of document files


def is_small(bf: BundleFile, chunk_bytes: int) -> bool:
    return bf.size <= min(SMALL_FILE_BYTES, chunk_bytes)


# -- decoding -------------------------------------------------------------------------------------


def _plain(data: bytes) -> bool:
    """Bytes `decode` reads as UTF-8 with nothing to clean or count, and no binary magic."""
    if data.translate(None, _PLAIN_BYTES):
        return False
    return not any(data.startswith(magic) for magic, _ in _BINARY_MAGIC) and data[8:12] != b"DUCK"


def _read(bf: BundleFile) -> bytes:
    try:
        if bf.data is not None:
            return bf.data
        with bf.open() as fh:
            return fh.read()
    except OSError as exc:
        raise BundleError(f"cannot be read: {exc.strerror or exc}", Location(bf.rel_path),
                          "check that the file is still there and readable") from exc


def _plain_lines(names: Sequence[str], datas: Sequence[bytes]) -> pl.DataFrame:
    """LINES_SCHEMA rows of plain files, all split at once (as `decode` splits each)."""
    pieces = [d if not d or d.endswith(b"\n") else d + b"\n" for d in datas]  # a last line without \n
    buf = b"".join(pieces)
    if not buf:
        return _NO_LINES
    counts = np.array([p.count(b"\n") for p in pieces], np.int64)
    sizes = np.array([len(p) for p in pieces], np.int64)
    nl = np.flatnonzero(np.frombuffer(buf, np.uint8) == 10)
    starts = np.concatenate(([0], nl[:-1] + 1))
    owner = np.repeat(np.arange(len(pieces)), counts)
    first_line = np.cumsum(counts) - counts
    offsets = np.append(starts, len(buf)).astype(np.int64)
    text = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(buf))
    return pl.DataFrame({
        "file": pl.Series(names, dtype=pl.Utf8).gather(owner),
        "line_no": np.arange(len(starts), dtype=np.int64) - first_line[owner] + 1,
        "byte_offset": starts - (np.cumsum(sizes) - sizes)[owner],
        "line": pl.Series(text).str.head(-1),
    }, schema=LINES_SCHEMA)


def decode_batch(files: Sequence[BundleFile]) -> tuple[pl.DataFrame, list[DecodedFile]]:
    """Each file's lines (one frame, file by file) and what the manifest needs of it."""
    frames: list[pl.DataFrame] = []
    decoded: list[DecodedFile] = []
    run: list[tuple[str, bytes]] = []  # consecutive plain files, split together
    for bf in files:
        data = _read(bf)
        if _plain(data):
            run.append((bf.rel_path, data))
            decoded.append(DecodedFile(_NO_LINES, hashlib.sha256(data).hexdigest(), len(data), "utf-8"))
            continue
        if run:
            frames.append(_plain_lines(*zip(*run, strict=True)))
            run = []
        whole = decode_file(bf)
        frames.append(whole.lines)
        decoded.append(replace(whole, lines=_NO_LINES))
    if run:
        frames.append(_plain_lines(*zip(*run, strict=True)))
    frames = [f for f in frames if f.height]
    return (pl.concat(frames) if frames else _NO_LINES), decoded


# -- detection and parsing ------------------------------------------------------------------------


def heads(lines: pl.DataFrame) -> dict[str, str]:
    """`head_of` of every file with lines: its first lines up to 400 or HEAD_BYTES characters."""
    size = (pl.col("text").fill_null("").str.len_chars() + 1).cum_sum().over("file")
    before = size.shift(1).over("file").fill_null(0)  # head_of stops once HEAD_BYTES are read
    taken = pl.int_range(pl.len()).over("file") < _HEAD_LINES
    rows = lines.select("file", "text", (taken & (before < HEAD_BYTES)).alias("_in"))
    joined = rows.filter("_in").group_by("file", maintain_order=True).agg(
        pl.col("text").fill_null("").str.join("\n").str.slice(0, HEAD_BYTES))
    return dict(zip(joined.get_column("file").to_list(), joined.get_column("text").to_list(), strict=True))


class BatchReader:
    """Parses a batch of whole small files (see module doc)."""

    def __init__(self, files: Sequence[BundleFile], nodes: dict[str, str]):
        self.files, self.nodes = files, nodes
        self.out = ParsedBatch(pl.DataFrame(), [])
        self._parts: list[pl.DataFrame] = []      # events, file by file
        self._logs: list[pl.DataFrame] = []       # lines of the log files not parsed yet ...
        self._log_infos: list[tuple[FileInfo, str]] = []  # ... and those files, with their heads
        self._lines = pl.DataFrame()
        self._span: tuple[int, int] | None = None  # rows of `lines` of plain log files not yet in `_logs`

    def read(self) -> ParsedBatch:
        raw, decoded = decode_batch(self.files)
        infos = [FileInfo(bf.rel_path, decoded=d) for bf, d in zip(self.files, decoded, strict=True)]
        self.out.infos = infos
        lines = raw.with_columns(text_of(raw.get_column("line")), pl.lit(None, UTC_US).alias("outer_ts"),
                                 pl.lit(None, pl.Utf8).alias("stream"))
        self._lines = lines
        counts = dict(lines.group_by("file").len().iter_rows())
        head = heads(lines)
        at = 0
        for bf, info in zip(self.files, infos, strict=True):
            n = counts.get(info.file, 0)
            self._file(bf, info, (at, n), head.get(info.file, ""))
            at += n
        self._parse_logs()
        for info in infos:
            assert info.decoded is not None
            if info.decoded.binary:
                info.detected_type = "binary"
            info.warnings = list(info.decoded.problems) + info.warnings
        parts = [p for p in self._parts if p.height]
        self.out.events = pl.concat(parts) if parts else _empty_events()
        return self.out

    def _file(self, bf: BundleFile, info: FileInfo, span: tuple[int, int], head: str) -> None:
        lines = self._lines
        info.envelope = container.envelope_kind(head) if span[1] else None
        own: pl.DataFrame | None = None
        if info.envelope:
            own, bare = container.unwrap_counted(lines.slice(*span), info.envelope)
            info.warnings += bare.warning()
            own = own.drop("continued")
            head = heads(own).get(info.file, "")
        document = detect_document(head) if head else None
        if document is not None:
            self._parse_logs()
            self._parts.append(self._document(document, bf, info, own if own is not None else lines.slice(*span)))
            return
        self._log_infos.append((info, head))
        if own is not None:
            self._flush_span()
            self._logs.append(own)
        elif self._span is None:
            self._span = span
        else:
            self._span = (self._span[0], self._span[1] + span[1])

    def _flush_span(self) -> None:
        if self._span is not None:
            self._logs.append(self._lines.slice(*self._span))
            self._span = None

    def _parse_logs(self) -> None:
        """Parse the log files read so far together."""
        if not self._log_infos:
            return
        self._flush_span()
        frames = [f for f in self._logs if f.height]
        infos, self._logs, self._log_infos = self._log_infos, [], []
        if not frames:
            for info, head in infos:
                info.detected_type = detect_log(head)
            return
        lines = pl.concat(frames)
        events = FileTracebacks("", whole_files=True).annotate(parse_log_frame(lines, LOG_FORMATS, per_message=shapes))
        named = events.filter(pl.col("parsed") & (pl.col("source") != "generic")).group_by("file", "source").len()
        tally: dict[str, Counter[str]] = {}
        for file, source, n in named.iter_rows():
            tally.setdefault(file, Counter())[source] = n
        for info, head in infos:
            info.sources = tally.get(info.file, Counter())
            ranked = info.sources.most_common()
            top = [name for name, count in ranked if count == ranked[0][1]] if ranked else []
            info.detected_type = min(top) if top else detect_log(head)
        self._parts.append(conform(events, lines))

    def _document(self, document: ModuleType, bf: BundleFile, info: FileInfo, lines: pl.DataFrame) -> pl.DataFrame:
        ctx = ParseContext(file=bf.rel_path, node=self.nodes[bf.rel_path], file_mtime=bf.mtime)
        result: ParseResult = document.parse(lines, ctx)
        info.detected_type = str(document.NAME)
        info.warnings += [f"{bf.rel_path}: {w}" for w in result.warnings]
        for frames, extra, schema in ((self.out.samples, result.samples, SAMPLE_SCHEMA),
                                      (self.out.facts, result.facts, FACT_SCHEMA)):
            frames.append((bf.rel_path, frame_or_empty(extra, schema)))
        return conform(result.events, lines)


def _empty_events() -> pl.DataFrame:
    return pl.DataFrame(schema=FRAME_COLUMNS)

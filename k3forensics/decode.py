"""Bytes to lines: one row per physical line, exact byte offsets, encoding problems counted.

Rules (what a reader of the events table can rely on):

* Lines split on ``\\n`` (on the code unit 0x000A in UTF-16). One trailing ``\\r`` per line is
  dropped; any other ``\\r`` (tqdm redraws one physical line many times) becomes a space, so
  the whole line stays readable and nothing is lost.
* ``byte_offset`` is the offset of the line's first byte in the original file (line 1 starts
  at 0 even when the file opens with a byte-order mark). ``line_no`` is 1-based.
* UTF-8 is expected; a UTF-8 BOM is dropped; UTF-16 (with a BOM, or plain ASCII-range UTF-16
  recognised by its zero bytes) is transcoded. Invalid UTF-8 is shown as U+FFFD and counted;
  a file that is not UTF-8 at all (its non-ASCII bytes are nearly all invalid) is read as
  Latin-1 and reported once. NUL bytes are shown as U+2400 ("␀") and counted.
* A line longer than ``max_line_bytes`` keeps its first ``max_line_bytes`` bytes (cut on a
  character boundary) followed by `` …[truncated N bytes]``; only that much of it is ever held
  in memory.
* A binary file (known magic bytes, or a head that is mostly control bytes) yields no lines
  and one problem; it stays in the files manifest.

Decoding is vectorised: newline positions come from numpy over the bytes, clean UTF-8 goes
into an Arrow string array without a copy, and only damaged text takes one C-level
decode/encode of the whole block.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import BinaryIO

import numpy as np
import polars as pl
import pyarrow as pa

from k3forensics.bundle import BundleFile
from k3forensics.errors import BundleError, Location
from k3forensics.sources.base import LINE_SCHEMA, UTC_US
from k3forensics.text import strip_ansi

LINES_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.Utf8(),
    "line_no": pl.Int64(),
    "byte_offset": pl.Int64(),
    "line": pl.Utf8(),
}
BIG_FILE_BYTES = 256 << 20   # above this, ingest should use iter_decoded_chunks
_SNIFF_BYTES = 8 << 10       # binary / UTF-16 decision
_SAMPLE_BYTES = 64 << 10     # UTF-8 vs Latin-1 decision
_LATIN1_MIN_INVALID = 8      # a few stray bytes in a UTF-8 log are shown as U+FFFD instead
_NUL_MARK = "\u2400"
_TEXT_CONTROLS = {0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B}  # backspace, whitespace, ESC
_CONTROL_TABLE = np.array([(b < 0x20 and b not in _TEXT_CONTROLS) or b == 0x7F for b in range(256)])
_BINARY_MAGIC = (
    (b"\x7fELF", "ELF executable or core dump"),
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"\x1f\x8b", "gzip data"),
    (b"PK\x03\x04", "zip data"),
    (b"\x28\xb5\x2f\xfd", "zstd data"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"PAR1", "Parquet file"),
    (b"ARROW1", "Arrow file"),
    (b"\x93NUMPY", "NumPy array"),
)


@dataclass
class DecodedFile:
    lines: pl.DataFrame     # file, line_no, byte_offset, line (LINES_SCHEMA)
    sha256: str             # of the original bytes ("" on all but the last chunk of a stream)
    size: int               # bytes in the file
    encoding: str           # utf-8 | utf-8-sig | utf-16-le | utf-16-be | latin-1 fallback | binary
    problems: list[str] = field(default_factory=list)  # counted, naming file and first line
    binary: bool = False


@dataclass(frozen=True)
class _Codec:
    label: str
    python: str
    unit: int = 1               # width of the newline code unit
    bom: int = 0
    numpy_unit: str = "u1"      # dtype to find newline units with


_UTF8 = _Codec("utf-8", "utf-8")
_UTF8_SIG = _Codec("utf-8-sig", "utf-8", bom=3)
_LATIN1 = _Codec("latin-1 fallback", "latin-1")


def _utf16(label: str, bom: int) -> _Codec:
    return _Codec(label, label, unit=2, bom=bom, numpy_unit="<u2" if label.endswith("le") else ">u2")


# -- sniffing -------------------------------------------------------------------------------------


def _sniff(head: bytes) -> _Codec | str:
    """The codec of a file from its first bytes, or why it is binary."""
    if head.startswith(b"\xef\xbb\xbf"):
        return _UTF8_SIG
    if head.startswith(b"\xff\xfe"):
        return _utf16("utf-16-le", 2)
    if head.startswith(b"\xfe\xff"):
        return _utf16("utf-16-be", 2)
    for magic, what in _BINARY_MAGIC:
        if head.startswith(magic):
            return what
    if head[8:12] == b"DUCK":
        return "DuckDB database"
    return _utf16_without_bom(head) or _binary_reason(head) or _UTF8


def _utf16_without_bom(head: bytes) -> _Codec | None:
    """ASCII-range UTF-16 written without a BOM: every other byte is zero."""
    even = np.frombuffer(head[: len(head) // 2 * 2], np.uint8)
    if even.size < 16:
        return None
    low_zero, high_zero = float(np.mean(even[0::2] == 0)), float(np.mean(even[1::2] == 0))
    if high_zero > 0.9 and low_zero < 0.1:
        return _utf16("utf-16-le", 0)
    if low_zero > 0.9 and high_zero < 0.1:
        return _utf16("utf-16-be", 0)
    return None


def _binary_reason(head: bytes) -> str | None:
    if not head:
        return None
    arr = np.frombuffer(head, np.uint8)
    nul = float(np.mean(arr == 0))
    control = float(np.mean(_CONTROL_TABLE[arr]))
    invalid = head.decode("utf-8", "replace").count("\ufffd") / len(head)
    if nul > 0.1:
        return "NUL-heavy start"
    if control > 0.1 or (control > 0.02 and invalid > 0.1):
        return "mostly non-text bytes at the start"
    return None


def _prefer_latin1(sample: bytes) -> bool:
    """Not UTF-8 at all: most non-ASCII bytes of the sample are invalid sequences, and there
    are more than a few of them."""
    cut = sample.rfind(b"\n")
    sample = sample[: cut + 1] if cut >= 0 else sample  # do not judge a character split by the cut
    non_ascii = int(np.count_nonzero(np.frombuffer(sample, np.uint8) >= 0x80))
    if non_ascii == 0:
        return False
    invalid = sample.decode("utf-8", "replace").count("\ufffd") - sample.count(b"\xef\xbf\xbd")
    return invalid >= _LATIN1_MIN_INVALID and invalid * 2 >= non_ascii


# -- problem counts -------------------------------------------------------------------------------


@dataclass
class _Tally:
    lines: int = 0
    first: int | None = None
    units: int = 0  # e.g. NUL bytes

    def add(self, flags: pl.Series, first_line_no: int, units: int = 0) -> None:
        hits = flags.arg_true()
        if hits.len():
            self.lines += hits.len()
            self.first = self.first if self.first is not None else first_line_no + int(hits[0])
        self.units += units


@dataclass
class _Problems:
    invalid: _Tally = field(default_factory=_Tally)
    nul: _Tally = field(default_factory=_Tally)
    cut: _Tally = field(default_factory=_Tally)
    latin1: _Tally = field(default_factory=_Tally)

    def render(self, rel: str, codec: _Codec, max_line_bytes: int) -> list[str]:
        out = []
        if self.latin1.lines:
            out.append(f"{rel}: not valid UTF-8, decoded as Latin-1 ({_count(self.latin1.lines, 'line')} "
                       f"with non-ASCII bytes, first at line {self.latin1.first})")
        if self.invalid.lines:
            name = "UTF-16" if codec.unit == 2 else "UTF-8"
            out.append(f"{rel}: {_count(self.invalid.lines, 'line')} with invalid {name} (first at line "
                       f"{self.invalid.first}), shown with U+FFFD")
        if self.nul.lines:
            out.append(f"{rel}: {_count(self.nul.units, 'NUL byte')} in {_count(self.nul.lines, 'line')} "
                       f"(first at line {self.nul.first}), shown as {_NUL_MARK}")
        if self.cut.lines:
            out.append(f"{rel}: {_count(self.cut.lines, 'line')} longer than {max_line_bytes} bytes (first "
                       f"at line {self.cut.first}), cut and marked '…[truncated N bytes]'")
        return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# -- one block of whole lines ---------------------------------------------------------------------


def _newlines(buf: bytes | memoryview, codec: _Codec) -> np.ndarray:
    """Byte positions of the newline code units in `buf`."""
    usable = len(buf) - len(buf) % codec.unit
    units = np.frombuffer(buf, np.dtype(codec.numpy_unit), count=usable // codec.unit)
    return np.flatnonzero(units == 10) * codec.unit


class _LineReader:
    """Turns a byte stream into line frames; holds the unfinished last line between chunks."""

    def __init__(self, rel: str, codec: _Codec, max_line_bytes: int):
        self.rel, self.codec, self.max = rel, codec, max(max_line_bytes, 1)
        self.problems = _Problems()
        self.line_no = 1
        self.start = 0      # file offset of the first byte of the pending line
        self.shift = codec.bom  # bytes of the pending line not in `pending` (BOM, dropped middle)
        self.dropped = 0    # ... of which belong to the line's text (counted as truncated)
        self.pending = b""

    def feed(self, chunk: bytes | memoryview) -> pl.DataFrame | None:
        buf = self.pending + chunk if self.pending else chunk
        nl = _newlines(buf, self.codec)
        if not nl.size:
            self.hold(buf)
            return None
        end = int(nl[-1]) + self.codec.unit
        starts = np.concatenate(([0], nl[:-1] + self.codec.unit))
        frame = self.block(memoryview(buf)[:end], starts, nl, with_newline=True)
        self.start += self.shift + end
        self.shift = self.dropped = 0
        self.pending = b""
        self.hold(buf[end:])
        return frame

    def finish(self) -> pl.DataFrame | None:
        if not self.pending and not self.dropped:
            return None
        end = np.array([len(self.pending)], np.int64)
        return self.block(memoryview(self.pending), np.zeros(1, np.int64), end, with_newline=False)

    def hold(self, tail: bytes | memoryview) -> None:
        """Keep an unfinished line; past the cap only its head is kept, the rest is counted."""
        keep = self.max + 4 + (self.max + 4) % self.codec.unit  # room to back off to a char boundary
        if len(tail) > keep:
            self.dropped += len(tail) - keep
            self.shift += len(tail) - keep
            tail = tail[:keep]
        self.pending = bytes(tail)

    def block(self, buf: memoryview, starts: np.ndarray, ends: np.ndarray, with_newline: bool) -> pl.DataFrame:
        """A frame for whole lines `buf[starts[i]:ends[i]]`; the first may continue a held line."""
        offsets = starts + (self.start + self.shift)
        offsets[0] = self.start
        lengths = ends - starts
        lengths[0] += self.dropped
        cut = np.zeros(len(starts), np.int64)
        if (lengths > self.max).any():
            buf, starts, cut = self.cut_long(buf, starts, ends, lengths)
        lines, haystack, replaced = self.to_text(buf, starts)
        frame = self.clean(lines, cut, haystack, replaced, with_newline).with_columns(
            pl.lit(self.rel, pl.Utf8).alias("file"),
            pl.int_range(self.line_no, self.line_no + len(starts), dtype=pl.Int64).alias("line_no"),
            pl.Series("byte_offset", offsets, pl.Int64),
        )
        self.line_no += len(starts)
        return frame.select(list(LINES_SCHEMA))

    def cut_long(self, buf: memoryview, starts: np.ndarray, ends: np.ndarray,
                 lengths: np.ndarray) -> tuple[memoryview, np.ndarray, np.ndarray]:
        """Drop the bytes of over-long lines past the cap (a loop over the long lines only)."""
        pieces, prev = [], 0
        removed = np.zeros(len(starts), np.int64)
        cut = np.zeros(len(starts), np.int64)
        for i in np.flatnonzero(lengths > self.max):
            s, e = int(starts[i]), int(ends[i])
            keep_end = self.char_boundary(buf, s, min(s + self.max, e))
            pieces.append(buf[prev:keep_end])
            prev = e
            removed[i] = e - keep_end
            cut[i] = lengths[i] - (keep_end - s)
        pieces.append(buf[prev:])
        shifted = starts - np.concatenate(([0], np.cumsum(removed)[:-1]))
        return memoryview(b"".join(pieces)), shifted, cut

    def char_boundary(self, buf: memoryview, start: int, end: int) -> int:
        """Move a cut back so that it does not split a character."""
        if self.codec.unit == 2:
            end -= (end - start) % 2
            if end - start >= 2:
                high = buf[end - 1] if self.codec.numpy_unit == "<u2" else buf[end - 2]
                end -= 2 if 0xD8 <= high <= 0xDB else 0  # a high surrogate waits for its pair
            return end
        if self.codec is _LATIN1 or end >= len(buf):
            return end
        back = end
        while back > start and end - back < 3 and buf[back] & 0xC0 == 0x80:  # continuation byte
            back -= 1
        return back

    def to_text(self, buf: memoryview, starts: np.ndarray) -> tuple[pl.Series, bytes, bool]:
        """One string per line (each still ending in its newline), the UTF-8 bytes behind them,
        and whether invalid sequences were replaced. Clean UTF-8 is not copied."""
        if self.codec.python == "utf-8":
            array = _string_array(buf, starts)
            if array is not None:
                return pl.Series("line", array), buf.obj, False  # type: ignore[return-value]
        text = str(buf, self.codec.python, "replace")
        data = text.encode("utf-8")
        nl = np.flatnonzero(np.frombuffer(data, np.uint8) == 10)
        array = _string_array(memoryview(data), np.concatenate(([0], nl + 1))[: len(starts)])
        assert array is not None, "re-encoded text is valid UTF-8"
        replaced = self.codec is not _LATIN1 and "\ufffd" in text
        return pl.Series("line", array), data, replaced

    def clean(self, lines: pl.Series, cut: np.ndarray, haystack: bytes, replaced: bool,
              with_newline: bool) -> pl.DataFrame:
        """Newline and \\r handling, NUL and invalid-text counts, the truncation marker."""
        if with_newline:
            lines = lines.str.head(-1)
        if haystack.find(b"\r") >= 0:  # may look past this block: at worst a no-op pass
            lines = lines.str.strip_suffix("\r").str.replace_all("\r", " ", literal=True)
        if haystack.find(b"\x00") >= 0:
            nuls = lines.str.count_matches("\x00", literal=True)
            self.problems.nul.add(nuls > 0, self.line_no, int(nuls.sum()))
            lines = lines.str.replace_all("\x00", _NUL_MARK, literal=True)
        if replaced:
            self.problems.invalid.add(lines.str.contains("\ufffd", literal=True), self.line_no)
        if self.codec is _LATIN1:
            self.problems.latin1.add(lines.str.contains(r"[^\x00-\x7F]"), self.line_no)
        frame = pl.DataFrame([lines.alias("line"), pl.Series("cut", cut)])
        if cut.any():
            self.problems.cut.add(frame["cut"] > 0, self.line_no)
            marked = pl.concat_str(pl.col("line"), pl.lit(" …[truncated "), pl.col("cut"), pl.lit(" bytes]"))
            frame = frame.with_columns(pl.when(pl.col("cut") > 0).then(marked).otherwise(pl.col("line")).alias("line"))
        return frame.drop("cut")


def _string_array(buf: memoryview, starts: np.ndarray) -> pa.Array | None:
    """An Arrow string array over `buf` without copying it, or None if it is not valid UTF-8."""
    offsets = np.empty(len(starts) + 1, np.int64)
    offsets[:-1] = starts
    offsets[-1] = len(buf)
    array = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(buf))
    try:
        array.validate(full=True)
    except pa.ArrowInvalid:
        return None
    return array


# -- public API -----------------------------------------------------------------------------------


def _empty_lines() -> pl.DataFrame:
    return pl.DataFrame(schema=LINES_SCHEMA)


def _decode_stream(rel: str, fh: BinaryIO, chunk_bytes: int, max_line_bytes: int) -> Iterator[DecodedFile]:
    digest = hashlib.sha256()
    step = max(chunk_bytes, 2) + max(chunk_bytes, 2) % 2  # even: UTF-16 units never straddle reads
    first = fh.read(max(step, _SAMPLE_BYTES))
    digest.update(first)
    size = len(first)
    sniffed = _sniff(first[:_SNIFF_BYTES])
    if isinstance(sniffed, str):
        while chunk := fh.read(step):
            digest.update(chunk)
            size += len(chunk)
        problem = f"{rel}: binary file ({sniffed}); listed in the files manifest, no lines read"
        yield DecodedFile(_empty_lines(), digest.hexdigest(), size, "binary", [problem], binary=True)
        return
    codec = _LATIN1 if sniffed is _UTF8 and _prefer_latin1(first[:_SAMPLE_BYTES]) else sniffed
    reader = _LineReader(rel, codec, max_line_bytes)
    held: pl.DataFrame | None = None
    chunk: bytes | memoryview = memoryview(first)[codec.bom:]  # no copy of a whole-file read
    while chunk:
        frame = reader.feed(chunk)
        if frame is not None:
            if held is not None:  # one frame of look-ahead: the last one carries hash and problems
                yield DecodedFile(held, "", size, codec.label)
            held = frame
        chunk = fh.read(step)
        digest.update(chunk)
        size += len(chunk)
    tail = reader.finish()
    if held is not None and tail is not None:
        yield DecodedFile(held, "", size, codec.label)
    last = tail if tail is not None else held if held is not None else _empty_lines()
    problems = reader.problems.render(rel, codec, reader.max)
    yield DecodedFile(last, digest.hexdigest(), size, codec.label, problems)


def iter_decoded_chunks(bf: BundleFile, chunk_bytes: int = 64 << 20, *,
                        max_line_bytes: int = 1 << 20) -> Iterator[DecodedFile]:
    """Decode a big file in chunks cut on line ends, holding about one chunk in memory.

    Line numbers and byte offsets continue across chunks. Only the last chunk carries the
    file's sha256 (computed while reading) and the counted problems; the others carry "" and
    no problems. An empty or binary file yields exactly one chunk with no lines."""
    try:
        with bf.open() as fh:
            yield from _decode_stream(bf.rel_path, fh, chunk_bytes, max_line_bytes)
    except OSError as exc:
        raise BundleError(f"cannot be read: {exc.strerror or exc}", Location(bf.rel_path),
                          "check that the file is still there and readable") from exc


def decode_file(bf: BundleFile, *, max_line_bytes: int = 1 << 20) -> DecodedFile:
    """Decode a whole file at once (for files over BIG_FILE_BYTES prefer iter_decoded_chunks)."""
    try:
        size = len(bf.data) if bf.data is not None else bf.path.stat().st_size
    except OSError as exc:
        raise BundleError(f"cannot be read: {exc.strerror or exc}", Location(bf.rel_path),
                          "check that the file is still there and readable") from exc
    chunks = list(iter_decoded_chunks(bf, chunk_bytes=max(size, 1), max_line_bytes=max_line_bytes))
    if len(chunks) == 1:
        return chunks[0]
    return replace(chunks[-1], lines=pl.concat([c.lines for c in chunks]))


def as_line_frame(lines: pl.DataFrame) -> pl.DataFrame:
    """Decoded lines as the LINE_SCHEMA frame parsers take (no envelope removed yet)."""
    return lines.with_columns(
        strip_ansi(pl.col("line")).alias("text"),
        pl.lit(None, UTC_US).alias("outer_ts"),
        pl.lit(None, pl.Utf8).alias("stream"),
    ).select(list(LINE_SCHEMA))

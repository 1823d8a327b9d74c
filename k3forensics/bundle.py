"""Open a collected bundle safely: a folder, a .tar / .tar.gz / .tgz / .zip archive, a .gz file or one file.

The container is recognised by its magic bytes, never by its name. Archives are unpacked
into a private temporary folder that is removed when the `with` block ends; every member is
stored there under an opaque numbered name (its bundle path lives in `BundleFile.rel_path`),
so no member name can ever steer where a byte is written. Small members (up to 256 KiB, and
256 MiB in all) are held in memory instead (`BundleFile.data`): nothing is written for them.

Hostile input is refused with a `BundleError` naming the member: a path with `..` or an
absolute path, a link pointing outside the archive, more files or bytes than `Limits`
allows, a member that expands more than `Limits.max_ratio` times, a truncated or corrupt
archive, an empty one. Harmless oddities are skipped with a warning: links inside the
archive (never followed), device files and FIFOs, encrypted zip members, archives nested
deeper than `Limits.max_depth`. Members that are gzip files are decompressed (their
`rel_path` drops `.gz`); a damaged gzip member keeps what could be read, with a warning.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, BinaryIO

from k3forensics.errors import BundleError, Location

_COPY_CHUNK = 1 << 20
# Archive members up to this size stay in memory (up to _MEMORY_BUDGET in all): writing,
# reading back and deleting a file per member costs 0.3-1 ms each, which a bundle of
# 100,000 one-line files would spend mostly on the filesystem.
_MEMORY_MEMBER = 256 << 10
_MEMORY_BUDGET = 256 << 20
_HEAD = 512
_SNIFF = 1024  # two tar blocks: an empty tar is two zero blocks
_EMPTY_TAR_MAX = 20480
# Files a folder bundle may hold that are not evidence: version control, and our own output.
_SKIP_DIRS = {".git"}
_SKIP_SUFFIXES = (".duckdb", ".duckdb.wal")
_ARCHIVE_SUFFIXES = (".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tbz2", ".txz", ".tar", ".zip", ".gz", ".bz2", ".xz")
_WARNINGS_PER_KIND = 50


@dataclass(frozen=True)
class BundleFile:
    rel_path: str            # posix path inside the bundle
    path: Path               # a readable regular file on disk (for a member held in `data`: its archive)
    size: int
    mtime: datetime | None   # UTC; zip times carry no zone and are read as UTC
    data: bytes | None = field(default=None, repr=False, compare=False)  # a small archive member's content

    def open(self) -> BinaryIO:
        """The content, from memory or from disk (read it through this, never through `path`)."""
        return io.BytesIO(self.data) if self.data is not None else open(self.path, "rb")


@dataclass(frozen=True)
class Limits:
    max_total_bytes: int = 64 << 30   # all unpacked bytes together
    max_files: int = 200_000          # archive members / folder entries
    max_ratio: float = 200.0          # uncompressed / compressed, checked ...
    ratio_min_bytes: int = 1 << 20    # ... once a member (or stream) has produced this much
    max_depth: int = 1                # archives inside the bundle expanded this many levels


@dataclass
class Bundle:
    root: Path               # the folder given, or the private extraction folder
    name: str
    files: list[BundleFile]  # sorted by rel_path; read `path`, not `root / rel_path`
    warnings: list[str] = field(default_factory=list)


class Container(StrEnum):
    GZIP = "gzip"
    BZIP2 = "bzip2"
    XZ = "xz"
    TAR = "tar"
    ZIP = "zip"


# Single-stream compressors: how to open one over a raw file, and the suffix its name drops.
_STREAMS: dict[Container, Callable[[Any], Any]] = {
    Container.GZIP: lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    Container.BZIP2: lambda raw: bz2.BZ2File(raw),
    Container.XZ: lambda raw: lzma.LZMAFile(raw),
}
_STREAM_SUFFIX = {Container.GZIP: ".gz", Container.BZIP2: ".bz2", Container.XZ: ".xz"}
_READ_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, tarfile.TarError, zipfile.BadZipFile, ValueError)


class _Damaged(BundleError):
    """A truncated or corrupt archive: fatal for the bundle itself, a warning when nested."""


def _magic(head: bytes, size: int | None) -> Container | None:
    """The container a file's first bytes announce; `size` (uncompressed, if known) tells an
    empty tar from a file of zeros."""
    if head.startswith(b"\x1f\x8b"):
        return Container.GZIP
    if head.startswith(b"BZh") and head[4:10] == b"1AY&SY":
        return Container.BZIP2
    if head.startswith(b"\xfd7zXZ\x00"):
        return Container.XZ
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08"):
        return Container.ZIP
    return Container.TAR if _is_tar_header(head, size) else None


def _is_tar_header(head: bytes, size: int | None) -> bool:
    if len(head) < _HEAD:
        return False
    if head[257:262] == b"ustar":
        return True
    if not any(head[:_HEAD]):  # an empty tar is zero blocks up to one 10 KiB record
        return len(head) >= _SNIFF and size is not None and size <= _EMPTY_TAR_MAX
    try:  # old v7 archives have no magic: a valid header checksum is the proof
        tarfile.TarInfo.frombuf(head[:_HEAD], "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


def _holds_tar(path: Path, kind: Container) -> bool:
    """Whether a compressed file holds a tar (a .tgz) rather than one plain file."""
    head = b""
    try:
        with open(path, "rb") as raw, _STREAMS[kind](raw) as stream:
            while len(head) < _SNIFF and (piece := stream.read(128)):  # small reads: keep what a cut file gives
                head += piece
    except _READ_ERRORS:
        pass
    return _magic(head, _gzip_size(path) if kind is Container.GZIP else None) is Container.TAR


def _gzip_size(path: Path) -> int | None:
    """The uncompressed size a gzip trailer records (modulo 4 GiB; enough to spot an empty tar)."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() < 18:
            return None
        fh.seek(-4, os.SEEK_END)
        return int.from_bytes(fh.read(4), "little")


def _display(name: str) -> str:
    """A member name as valid text (undecodable bytes become U+FFFD)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _human(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # unreachable


def _utc(seconds: float) -> datetime | None:
    if seconds <= 0:  # reproducible archives store 0: no information
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _zip_mtime(info: zipfile.ZipInfo) -> datetime | None:
    try:
        return datetime(*info.date_time, tzinfo=UTC) if info.date_time[0] > 1980 else None
    except ValueError:
        return None


def _is_skipped(rel: str) -> bool:
    return bool(_SKIP_DIRS.intersection(rel.split("/"))) or rel.endswith(_SKIP_SUFFIXES)


def _drop_suffix(rel: str, kind: Container) -> str:
    suffix = _STREAM_SUFFIX[kind]
    return rel[: -len(suffix)] if rel.lower().endswith(suffix) and len(rel) > len(suffix) else rel


def _why(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 160 else text[:160] + "…"


def _strip_archive_suffix(rel: str) -> str:
    lower = rel.lower()
    for suffix in _ARCHIVE_SUFFIXES:
        if lower.endswith(suffix) and len(rel) > len(suffix):
            return rel[: -len(suffix)]
    return rel


class _CountingReader:
    """Counts the compressed bytes a decompressor pulls, for the ratio check."""

    def __init__(self, raw: Any):
        self.raw = raw
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.count += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True


@dataclass
class _Meter:
    """Output produced against compressed input consumed (a stream, or one zip member)."""

    consumed: Callable[[], int]
    out: int = 0


class _Opener:
    """State of one `open_bundle` call: limits, counters, warnings, the extraction store."""

    def __init__(self, path: Path, work: Path, limits: Limits):
        self.name = path.name or str(path)   # as the user gave it
        self.path = path.resolve()           # a link given as the bundle itself is followed
        self.work, self.limits = work, limits
        self.files: dict[str, BundleFile] = {}
        self.gz_names: dict[str, str] = {}  # rel without .gz -> original rel, to undo on a clash
        self.entries = 0
        self.total = 0
        self.stored = 0
        self.in_memory = 0
        self.warnings: list[str] = []
        self.overflow: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()

    # -- bookkeeping ---------------------------------------------------------------------------

    def warn(self, kind: str, text: str) -> None:
        self.kinds[kind] += 1
        if self.kinds[kind] <= _WARNINGS_PER_KIND:
            self.warnings.append(text)
        else:
            self.overflow[kind] += 1

    def all_warnings(self) -> list[str]:
        extra = [f"{n} more warnings of the kind '{kind}' not listed" for kind, n in self.overflow.items()]
        return self.warnings + extra

    def count_entry(self, label: str, member: str) -> None:
        self.entries += 1
        if self.entries > self.limits.max_files:
            raise BundleError(
                f"holds more than {self.limits.max_files} files (stopped at member '{member}')",
                Location(label),
                "possibly an archive bomb; if the bundle is genuine, pass one node's folder at a time "
                "or raise the file-count limit",
            )

    def charge(self, n: int, label: str, member: str) -> None:
        self.total += n
        if self.total > self.limits.max_total_bytes:
            raise BundleError(
                f"expands to more than {_human(self.limits.max_total_bytes)} (stopped at member '{member}')",
                Location(label),
                "possibly a decompression bomb; if the bundle is genuine, pass a subset "
                "(one node's folder) or raise the size limit",
            )

    def check_ratio(self, meter: _Meter, label: str, member: str) -> None:
        lim = self.limits
        if meter.out > lim.ratio_min_bytes and meter.out > lim.max_ratio * max(meter.consumed(), 1):
            raise BundleError(
                f"member '{member}' expands more than {lim.max_ratio:g} times its compressed size",
                Location(label),
                "a decompression bomb, or a file of repeated bytes; unpack it yourself and pass the "
                "folder if it is genuine, or raise the ratio limit",
            )

    def put(self, rel: str, bf: BundleFile, gz_name: str | None = None) -> None:
        """Record a file; on a name clash a decompressed `.gz` keeps its `.gz` name."""
        if rel in self.files:
            if gz_name is not None:
                rel, bf = gz_name, replace(bf, rel_path=gz_name)
            elif rel in self.gz_names:
                old = self.gz_names.pop(rel)
                self.files[old] = replace(self.files.pop(rel), rel_path=old)
            if rel in self.files:
                self.warn("duplicate", f"{rel}: appears twice in the bundle; the last copy is used")
        elif gz_name is not None:
            self.gz_names[rel] = gz_name
        self.files[rel] = bf

    # -- the store -----------------------------------------------------------------------------

    def new_store_path(self) -> Path:
        self.stored += 1
        shard = self.work / f"{self.stored // 4096:05d}"
        shard.mkdir(exist_ok=True)
        return shard / f"{self.stored:08d}"

    def copy(self, src: Any, label: str, member: str, meter: _Meter | None, expected: int | None = None) -> _Copied:
        """Stream one member into the store under the caps; a read error ends the copy and is returned.
        A member announcing at most `_MEMORY_MEMBER` bytes is kept in memory while it keeps to that."""
        read = getattr(src, "read1", src.read)  # read1: a cut stream still yields what precedes the cut
        held = bytearray()
        if expected is not None and expected <= _MEMORY_MEMBER and self.in_memory + expected <= _MEMORY_BUDGET:
            copied = _Copied(None)
            while len(held) <= _MEMORY_MEMBER:
                if not self._take(read, copied, held, label, member, meter):
                    copied.data = bytes(held)
                    self.in_memory += len(held)
                    return copied
        copied = _Copied(self.new_store_path(), size=len(held))
        try:
            out = open(copied.dest, "xb")  # type: ignore[arg-type]
        except OSError as exc:
            raise self.write_error(label, member, exc) from exc
        with out:
            while True:  # `held` starts with what was read before the member outgrew memory
                self._write(out, held, label, member)
                held.clear()
                if not self._take(read, copied, held, label, member, meter):
                    return copied

    def _take(self, read: Callable[[int], bytes], copied: _Copied, into: bytearray, label: str, member: str,
              meter: _Meter | None) -> bool:
        """Read the next piece into `into`, under the caps; False at the end or at a read error."""
        try:
            chunk = read(_COPY_CHUNK)
        except _READ_ERRORS as exc:
            copied.error = exc
            return False
        if not chunk:
            return False
        copied.size += len(chunk)
        self.charge(len(chunk), label, member)
        if meter is not None:
            meter.out += len(chunk)
            self.check_ratio(meter, label, member)
        into += chunk
        return True

    def _write(self, out: IO[bytes], data: bytes | bytearray, label: str, member: str) -> None:
        try:
            out.write(data)
        except OSError as exc:
            raise self.write_error(label, member, exc) from exc

    def write_error(self, label: str, member: str, exc: OSError) -> BundleError:
        return BundleError(
            f"cannot unpack member '{member}' into the temporary folder {self.work}: {exc.strerror or exc}",
            Location(label),
            "free space there, or point TMPDIR to a larger disk",
        )

    # -- entry points --------------------------------------------------------------------------

    def open(self) -> Bundle:
        if self.path.is_dir():
            self.walk_folder(self.path)
            return self.finish(self.path, "the folder holds no readable files")
        head = _read_head(self.path)
        if head is None:
            raise BundleError("is neither a regular file nor a folder", Location(str(self.path)),
                              "give a folder, an archive, a .gz file or a log file")
        st = self.path.stat()
        kind = _magic(head, st.st_size)
        if kind is None:
            self.put(self.name, BundleFile(self.name, self.path, st.st_size, _utc(st.st_mtime)))
            return self.finish(self.path.parent, "")
        if kind in _STREAMS and not _holds_tar(self.path, kind):
            self.read_single(kind)
        else:
            self.open_archive(self.path, kind, self.name, "", depth=0)
        return self.finish(self.work, "the archive holds no readable files")

    def finish(self, root: Path, empty_message: str) -> Bundle:
        if not self.files:
            hint = f"first warning: {self.warnings[0]}" if self.warnings else "nothing to read"
            raise BundleError(empty_message, Location(self.name), hint)
        files = sorted(self.files.values(), key=lambda f: f.rel_path)
        return Bundle(root=root, name=self.name, files=files, warnings=self.all_warnings())

    def read_single(self, kind: Container) -> None:
        """The bundle is one compressed file: damage is fatal here, as for any archive."""
        rel = _drop_suffix(self.name, kind) or "content"
        copied = self.decompress_to_store(self.path, kind, self.name, rel)
        if copied.error is not None:
            raise _damaged(self.name, rel, copied.error, during_data=True) from copied.error
        assert copied.dest is not None
        self.put(rel, BundleFile(rel, copied.dest, copied.size, _utc(self.path.stat().st_mtime)))

    # -- folders -------------------------------------------------------------------------------

    def walk_folder(self, top: Path) -> None:
        def on_error(exc: OSError) -> None:
            self.warn("unreadable", f"{_display(str(exc.filename))}: cannot list this folder "
                                    f"({exc.strerror}); skipped")

        for dirpath, dirnames, filenames in os.walk(top, onerror=on_error, followlinks=False):
            base = Path(dirpath)
            rel_dir = base.relative_to(top).as_posix()
            links = [d for d in dirnames if (base / d).is_symlink()]
            for name in sorted(links):  # walk never enters a linked folder; say so
                self.skip_folder_link(top, base / name, _display(_join(rel_dir, name)))
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and d not in links)
            for name in sorted(filenames):
                rel = _display(_join(rel_dir, name))
                if not _is_skipped(rel):
                    self.add_folder_file(top, base / name, rel)

    def skip_folder_link(self, top: Path, path: Path, rel: str) -> None:
        self.count_entry(self.name, rel)
        if not path.exists():
            where = "its target is missing"
        elif Path(os.path.realpath(path)).is_relative_to(os.path.realpath(top)):
            where = "inside the bundle, read under its own name"
        else:
            where = "outside the bundle"
        self.warn("link", f"{rel}: symbolic link to '{_display(os.readlink(path))}' ({where}); not followed")

    def add_folder_file(self, top: Path, path: Path, rel: str) -> None:
        self.count_entry(self.name, rel)
        try:
            st = path.lstat()
        except OSError as exc:
            self.warn("unreadable", f"{rel}: cannot be read ({exc.strerror}); skipped")
            return
        if stat.S_ISLNK(st.st_mode):
            self.skip_folder_link(top, path, rel)
            return
        if not stat.S_ISREG(st.st_mode):
            self.warn("special", f"{rel}: {_kind_of(st.st_mode)}, not a regular file; skipped")
            return
        head = _read_head(path)
        if head is None:
            self.warn("unreadable", f"{rel}: cannot be read (permission?); skipped")
            return
        self.charge(st.st_size, self.name, rel)
        self.add(rel, path, st.st_size, _utc(st.st_mtime), head, self.name, depth=0)

    # -- any file found in the bundle ------------------------------------------------------------

    def add(self, rel: str, path: Path, size: int, mtime: datetime | None, head: bytes,
            label: str, depth: int) -> None:
        """A regular file of the bundle: decompress it, expand it, or list it as it is."""
        kind = _magic(head, size)
        if kind in _STREAMS and _holds_tar(path, kind):
            self.nested(rel, path, size, mtime, kind, label, depth)
        elif kind in _STREAMS:
            self.decompress(rel, path, size, mtime, kind, label)
        elif kind in (Container.TAR, Container.ZIP):
            self.nested(rel, path, size, mtime, kind, label, depth)
        else:
            self.put(rel, BundleFile(rel, path, size, mtime))

    def nested(self, rel: str, path: Path, size: int, mtime: datetime | None, kind: Container,
               label: str, depth: int) -> None:
        """An archive inside the bundle: unpacked under its name, unless nested too deep or damaged."""
        if depth >= self.limits.max_depth:
            self.warn("nested", f"{rel}: archive nested deeper than {self.limits.max_depth} level(s); "
                                "kept as an opaque file, not unpacked")
            self.put(rel, BundleFile(rel, path, size, mtime))
            return
        before = dict(self.files)
        try:
            self.open_archive(path, kind, f"{label}/{rel}", _strip_archive_suffix(rel) + "/", depth + 1)
        except _Damaged as exc:  # refusals (traversal, bombs) are not caught: they stay fatal
            self.files = before
            self.warn("damaged", f"{rel}: nested archive is damaged ({exc}); kept as an opaque file")
            self.put(rel, BundleFile(rel, path, size, mtime))

    def decompress(self, rel: str, path: Path, size: int, mtime: datetime | None, kind: Container,
                   label: str) -> None:
        """A compressed single file: its content replaces it; damage keeps what could be read."""
        new_rel = _drop_suffix(rel, kind)
        copied = self.decompress_to_store(path, kind, label, rel)
        if copied.error is not None and copied.size == 0:
            self.warn("damaged", f"{rel}: compressed file cannot be read ({_why(copied.error)}); "
                                 "kept as it is")
            self.put(rel, BundleFile(rel, path, size, mtime))
            return
        if copied.error is not None:
            self.warn("damaged", f"{rel}: compressed file is damaged ({_why(copied.error)}); "
                                 f"the first {copied.size} bytes are kept")
        assert copied.dest is not None
        self.put(new_rel, BundleFile(new_rel, copied.dest, copied.size, mtime),
                 gz_name=rel if new_rel != rel else None)

    def decompress_to_store(self, path: Path, kind: Container, label: str, member: str) -> _Copied:
        with open(path, "rb") as raw_file:
            raw = _CountingReader(raw_file)
            try:
                stream = _STREAMS[kind](raw)
            except _READ_ERRORS as exc:  # lzma reads its header at once
                dest = self.new_store_path()
                dest.touch()
                copied = _Copied(dest)
                copied.error = exc
                return copied
            with stream:
                return self.copy(stream, label, member, _Meter(lambda: raw.count))  # on disk: no `expected`

    # -- archives ------------------------------------------------------------------------------

    def open_archive(self, path: Path, kind: Container, label: str, prefix: str, depth: int) -> None:
        if kind is Container.ZIP:
            self.read_zip(path, label, prefix, depth)
            return
        with open(path, "rb") as raw_file:
            raw = _CountingReader(raw_file)
            if kind is Container.TAR:
                self.read_tar(raw, None, label, prefix, depth)
                return
            try:
                stream = _STREAMS[kind](raw)
            except _READ_ERRORS as exc:
                raise _damaged(label, None, exc, during_data=False) from exc
            with stream:
                self.read_tar(stream, _Meter(lambda: raw.count), label, prefix, depth)

    def read_tar(self, fileobj: Any, meter: _Meter | None, label: str, prefix: str, depth: int) -> None:
        last: str | None = None
        try:
            tar = tarfile.open(fileobj=fileobj, mode="r:", encoding="utf-8", errors="surrogateescape")
        except _READ_ERRORS as exc:
            raise _damaged(label, None, exc, during_data=False) from exc
        while True:
            try:
                member = tar.next()
            except _READ_ERRORS as exc:
                raise _damaged(label, last, exc, during_data=False) from exc
            if member is None:
                break
            last = self.tar_member(tar, member, meter, label, prefix, depth)
        _check_tar_end(tar, label, last)
        if last is None:
            raise _Damaged("archive is empty", Location(label), _EMPTY_HINT)

    def tar_member(self, tar: tarfile.TarFile, member: tarfile.TarInfo, meter: _Meter | None,
                   label: str, prefix: str, depth: int) -> str:
        name = _display(member.name)
        self.count_entry(label, name)
        rel = _member_rel(member.name, label)
        if not rel or member.isdir() or _is_skipped(rel):
            return name
        if member.issym() or member.islnk():
            self.link(rel, member.linkname, member.islnk(), label)
        elif not member.isreg():
            self.warn("special", f"{label}: member '{name}' is a {_tar_kind(member)}; skipped")
        else:
            copied = self.copy(tar.extractfile(member), label, name, meter, expected=member.size)
            if copied.error is not None:
                raise _damaged(label, name, copied.error, during_data=True) from copied.error
            self.add_member(prefix + rel, copied, _utc(member.mtime), label, depth)
        return name

    def read_zip(self, path: Path, label: str, prefix: str, depth: int) -> None:
        try:
            archive = zipfile.ZipFile(path)
        except _READ_ERRORS as exc:
            raise _Damaged("zip archive is truncated or corrupt: its central directory cannot be read",
                           Location(label), f"{_why(exc)}; {_DAMAGED_HINT}") from exc
        with archive:
            infos = archive.infolist()
            if not infos:
                raise _Damaged("archive is empty", Location(label), _EMPTY_HINT)
            if len(infos) > self.limits.max_files:
                self.count_entry(label, _display(infos[self.limits.max_files].filename))
            for info in infos:
                self.zip_member(archive, info, label, prefix, depth)

    def zip_member(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, label: str, prefix: str,
                   depth: int) -> None:
        name = _display(info.filename)
        self.count_entry(label, name)
        rel = _member_rel(info.filename, label)
        mode = info.external_attr >> 16
        if not rel or info.is_dir() or _is_skipped(rel):
            return
        if info.flag_bits & 0x1:
            self.warn("encrypted", f"{label}: member '{name}' is encrypted; skipped")
            return
        if stat.S_IFMT(mode) and not stat.S_ISREG(mode) and not stat.S_ISLNK(mode):
            self.warn("special", f"{label}: member '{name}' is a {_kind_of(mode)}; skipped")
            return
        try:
            with archive.open(info) as src:
                if stat.S_ISLNK(mode):  # zip stores a link as a member whose content is the target
                    self.link(rel, src.read(4096).decode("utf-8", "replace"), False, label)
                    return
                copied = self.copy(src, label, name, _Meter(lambda: info.compress_size), expected=info.file_size)
        except NotImplementedError as exc:
            self.warn("unsupported", f"{label}: member '{name}' cannot be read ({exc}); skipped")
            return
        except _READ_ERRORS as exc:
            raise _damaged(label, name, exc, during_data=True) from exc
        if copied.error is not None:
            raise _damaged(label, name, copied.error, during_data=True) from copied.error
        self.add_member(prefix + rel, copied, _zip_mtime(info), label, depth)

    def add_member(self, rel: str, copied: _Copied, mtime: datetime | None, label: str, depth: int) -> None:
        if copied.data is not None and _magic(copied.data[:_SNIFF], copied.size) is None:
            self.put(rel, BundleFile(rel, self.path, copied.size, mtime, data=copied.data))
            return
        if copied.data is not None:  # an archive or a compressed file: those are read from disk
            copied.dest = self.new_store_path()
            try:
                copied.dest.write_bytes(copied.data)
            except OSError as exc:
                raise self.write_error(label, rel, exc) from exc
            copied.data = None
        assert copied.dest is not None
        self.add(rel, copied.dest, copied.size, mtime, _read_head(copied.dest) or b"", label, depth)

    def link(self, member_rel: str, target: str, hard: bool, label: str) -> None:
        """Links are never followed: one pointing outside the archive is refused, others skipped."""
        what = "a hard link" if hard else "a symbolic link"
        base = "" if hard else posixpath.dirname(member_rel)  # hard links name a path from the top
        resolved = posixpath.normpath(posixpath.join(base, target.replace("\\", "/")))
        if target.startswith(("/", "\\")) or resolved == ".." or resolved.startswith("../"):
            raise BundleError(
                f"member '{member_rel}' is {what} to '{_display(target)}', outside the archive",
                Location(label),
                "links are never followed; re-create the archive storing files instead of links "
                "(tar -h) or remove the link",
            )
        self.warn("link", f"{label}: member '{member_rel}' is {what} to '{_display(target)}'; "
                          "not followed (the target is read under its own name)")


@dataclass
class _Copied:
    dest: Path | None          # in the store; None while the content is held in `data`
    size: int = 0
    error: BaseException | None = None
    data: bytes | None = None


_DAMAGED_HINT = "the copy is incomplete or damaged: copy it again, or unpack what you can and pass the folder"
_EMPTY_HINT = "it holds no members; check that the collection step wrote into it"


def _damaged(label: str, member: str | None, exc: BaseException, during_data: bool) -> _Damaged:
    truncated = isinstance(exc, EOFError) or "unexpected end of data" in str(exc)
    where = "at the first member" if member is None else (
        f"at member '{member}'" if during_data else f"after member '{member}'")
    what = "truncated" if truncated else "corrupt"
    return _Damaged(f"archive is {what} {where}", Location(label), f"{_why(exc)}; {_DAMAGED_HINT}")


def _check_tar_end(tar: tarfile.TarFile, label: str, last: str | None) -> None:
    """tarfile stops quietly at a cut or garbled header: insist on the end-of-archive block."""
    try:
        tar.fileobj.seek(tar.offset)  # type: ignore[union-attr]
        block = tar.fileobj.read(_HEAD)  # type: ignore[union-attr]
        tar.fileobj.read(_COPY_CHUNK)  # type: ignore[union-attr]  # lets gzip verify its CRC if it ends here
    except _READ_ERRORS as exc:
        raise _damaged(label, last, exc, during_data=False) from exc
    if len(block) < _HEAD:
        raise _damaged(label, last, EOFError("no end-of-archive block"), during_data=False)
    if any(block):
        raise _damaged(label, last, ValueError("unreadable header"), during_data=False)


def _member_rel(name: str, label: str) -> str:
    """The normalised posix path of a member; refuses absolute paths and `..`."""
    raw = _display(name).replace("\\", "/")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:/", raw):
        raise BundleError(
            f"member '{_display(name)}' has an absolute path", Location(label),
            "unsafe to unpack; re-create the archive with relative paths (tar -C <folder> -czf bundle.tgz .)",
        )
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BundleError(
            f"member '{_display(name)}' has a path that leads outside the archive ('..')", Location(label),
            "unsafe to unpack; re-create the archive from the collected folder (tar -C <folder> -czf bundle.tgz .)",
        )
    return "/".join(parts)


def _join(rel_dir: str, name: str) -> str:
    return name if rel_dir in ("", ".") else f"{rel_dir}/{name}"


def _read_head(path: Path) -> bytes | None:
    """First bytes of a regular file, or None: never blocks on a FIFO, never follows a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return fh.read(_SNIFF)


def _kind_of(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.ischr() or member.isblk():
        return "device file"
    return "FIFO" if member.isfifo() else f"member of unsupported type {member.type!r}"


@contextmanager
def open_bundle(path: Path, limits: Limits = Limits()) -> Iterator[Bundle]:  # noqa: B008 - frozen
    """Open a bundle; archives are unpacked into a private folder removed on exit."""
    path = Path(path)
    if not path.exists():
        raise BundleError(
            "does not exist", Location(str(path)),
            "give a folder, a .tar / .tar.gz / .tgz / .zip archive, a .gz file or a single log file",
        )
    work = Path(tempfile.mkdtemp(prefix="k3f-bundle-"))
    try:
        yield _Opener(path, work, limits).open()
    finally:
        shutil.rmtree(work, ignore_errors=True)

"""open_bundle: every container kind, and every hostile archive ends in a BundleError naming
the member or in a counted warning, never in another exception or a write outside tmp."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import tempfile
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from k3forensics.bundle import Bundle, BundleFile, Limits, open_bundle
from k3forensics.errors import BundleError

MTIME = 1_760_000_000  # 2025-10-09


def _content(bf: BundleFile) -> bytes:
    with bf.open() as fh:
        return fh.read()


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Extraction goes to tmp_path/tmp, which must be empty again after each test."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    yield scratch
    assert list(scratch.iterdir()) == [], "the extraction folder was not removed"


def tar_info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size, info.mtime = kind, link, size, MTIME
    return info


def make_tar(path: Path, members: list[tuple[str, bytes] | tarfile.TarInfo], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
            else:
                name, data = member
                tar.addfile(tar_info(name, size=len(data)), io.BytesIO(data))
    return path


def tar_bytes(members: list[tuple[str, bytes] | tarfile.TarInfo], mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
            else:
                tar.addfile(tar_info(member[0], size=len(member[1])), io.BytesIO(member[1]))
    return buf.getvalue()


def make_zip(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(2025, 10, 9, 8, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return path


def contents(bundle: Bundle) -> dict[str, bytes]:
    return {f.rel_path: _content(f) for f in bundle.files}


def refused(path: Path, limits: Limits = Limits()) -> str:  # noqa: B008 - frozen dataclass
    """The message of the BundleError opening `path` raises; nothing appears next to it."""
    before = sorted(os.listdir(path.parent))
    with pytest.raises(BundleError) as caught, open_bundle(path, limits):
        pass
    assert sorted(os.listdir(path.parent)) == before
    return str(caught.value)


LOGS = [("node1/vllm.log", b"INFO 08-14 10:11:12 [api_server.py:1] start\n"),
        ("node1/nvidia-smi.txt", b"| NVIDIA-SMI 570.133.20 |\n"),
        ("./node2/dmesg.log", b"[  1.0] NVRM: Xid 79\n")]
EXPECTED = {"node1/vllm.log": LOGS[0][1], "node1/nvidia-smi.txt": LOGS[1][1], "node2/dmesg.log": LOGS[2][1]}


# -- golden --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, mode", [("bundle.tar.gz", "w:gz"), ("bundle.tgz", "w:gz"), ("bundle.tar", "w"),
                                        ("bundle.tar.xz", "w:xz"), ("bundle.tar.bz2", "w:bz2")])
def test_tar_kinds(tmp_path: Path, name: str, mode: str) -> None:
    path = make_tar(tmp_path / name, LOGS, mode)
    with open_bundle(path) as bundle:
        assert contents(bundle) == EXPECTED
        assert [f.rel_path for f in bundle.files] == sorted(EXPECTED)
        assert bundle.warnings == [] and bundle.name == name
        assert all(f.mtime == datetime.fromtimestamp(MTIME, UTC) for f in bundle.files)
        assert all(f.size == len(EXPECTED[f.rel_path]) for f in bundle.files)
        root = bundle.root
    assert not root.exists()
    assert sorted(os.listdir(tmp_path)) == [name, "tmp"]


def test_zip(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "bundle.zip", [(n, d) for n, d in LOGS] + [("node3/", b"")])
    with open_bundle(path) as bundle:
        assert contents(bundle) == EXPECTED
        assert bundle.files[0].mtime == datetime(2025, 10, 9, 8, 0, tzinfo=UTC)


def test_kind_comes_from_magic_bytes_not_the_name(tmp_path: Path) -> None:
    make_tar(tmp_path / "really-a-tgz.zip", LOGS)
    make_zip(tmp_path / "really-a-zip.tar.gz", LOGS)
    (tmp_path / "really-plain.gz").write_bytes(b"plain text\n")
    for name in ("really-a-tgz.zip", "really-a-zip.tar.gz"):
        with open_bundle(tmp_path / name) as bundle:
            assert contents(bundle) == EXPECTED
    with open_bundle(tmp_path / "really-plain.gz") as bundle:
        assert contents(bundle) == {"really-plain.gz": b"plain text\n"}


def test_single_file_and_single_gz(tmp_path: Path) -> None:
    (tmp_path / "vllm.log").write_bytes(b"one\n")
    (tmp_path / "old.log.gz").write_bytes(gzip.compress(b"two\n"))
    with open_bundle(tmp_path / "vllm.log") as bundle:
        assert contents(bundle) == {"vllm.log": b"one\n"}
        assert bundle.files[0].path == tmp_path / "vllm.log"
        assert bundle.files[0].mtime is not None and bundle.files[0].mtime.tzinfo is UTC
    with open_bundle(tmp_path / "old.log.gz") as bundle:
        assert contents(bundle) == {"old.log": b"two\n"}


def test_gz_members_drop_the_suffix_unless_that_name_is_taken(tmp_path: Path) -> None:
    path = make_tar(tmp_path / "b.tgz", [("a.log.gz", gzip.compress(b"rotated\n")), ("a.log", b"current\n"),
                                          ("b.log.1.gz", gzip.compress(b"older\n")),
                                          ("c.gz", gzip.compress(tar_bytes([("in.log", b"x\n")], "w")))])
    with open_bundle(path) as bundle:
        assert contents(bundle) == {"a.log": b"current\n", "a.log.gz": b"rotated\n", "b.log.1": b"older\n",
                                    "c/in.log": b"x\n"}


def test_folder_bundle(tmp_path: Path) -> None:
    top = tmp_path / "collected"
    (top / "node1").mkdir(parents=True)
    (top / "node1" / "vllm.log").write_bytes(b"log\n")
    (top / "node1" / "vllm.log.1.gz").write_bytes(gzip.compress(b"older\n"))
    (top / ".git" / "objects").mkdir(parents=True)
    (top / ".git" / "objects" / "ab").write_bytes(b"git object")
    (top / "timeline.duckdb").write_bytes(b"db")
    (top / "timeline.duckdb.wal").write_bytes(b"wal")
    (top / "node2.tar.gz").write_bytes(tar_bytes([("dmesg.log", b"Xid\n")]))
    os.mkfifo(top / "pipe")
    os.symlink("/etc/passwd", top / "outside")
    os.symlink("node1/vllm.log", top / "inside")
    os.symlink("/etc", top / "linked_dir")
    with open_bundle(top) as bundle:
        assert contents(bundle) == {"node1/vllm.log": b"log\n", "node1/vllm.log.1": b"older\n",
                                    "node2/dmesg.log": b"Xid\n"}
        assert bundle.root == top
        text = "\n".join(bundle.warnings)
        assert len(bundle.warnings) == 4
        for member in ("pipe: FIFO", "outside: symbolic link", "inside: symbolic link", "linked_dir: symbolic link"):
            assert member in text
    assert sorted(os.listdir(top)) == sorted([".git", "inside", "linked_dir", "node1", "node2.tar.gz", "outside",
                                               "pipe", "timeline.duckdb", "timeline.duckdb.wal"])


def test_nested_archive_expanded_once_deeper_kept_opaque(tmp_path: Path) -> None:
    deeper = tar_bytes([("deep.log", b"deep\n")])
    inner = tar_bytes([("inner.log", b"inner\n"), ("deeper.tar.gz", deeper)])
    path = make_zip(tmp_path / "b.zip", [("node1/logs.tar.gz", inner), ("top.log", b"top\n")])
    with open_bundle(path) as bundle:
        files = contents(bundle)
        assert files == {"node1/logs/inner.log": b"inner\n", "node1/logs/deeper.tar.gz": deeper, "top.log": b"top\n"}
        assert bundle.warnings == ["node1/logs/deeper.tar.gz: archive nested deeper than 1 level(s); kept as an "
                                   "opaque file, not unpacked"]
    with open_bundle(path, Limits(max_depth=0)) as bundle:
        assert "node1/logs.tar.gz" in contents(bundle)


def test_damaged_nested_archive_and_gz_member_are_warnings(tmp_path: Path) -> None:
    inner = tar_bytes([("a.log", os.urandom(50_000))])
    log_gz = gzip.compress(b"recoverable line\n" * 5000)
    path = make_tar(tmp_path / "b.tgz", [("n/cut.tar.gz", inner[: len(inner) // 2]), ("n/cut.log.gz", log_gz[:200]),
                                          ("ok.log", b"ok\n")])
    with open_bundle(path) as bundle:
        files = contents(bundle)
        assert files["ok.log"] == b"ok\n"
        assert files["n/cut.tar.gz"] == inner[: len(inner) // 2]
        assert files["n/cut.log"].startswith(b"recoverable line\n")
        assert len(bundle.warnings) == 2
        assert bundle.warnings[0].startswith("n/cut.tar.gz: nested archive is damaged")
        assert bundle.warnings[1].startswith("n/cut.log.gz: compressed file is damaged")


def test_skipped_members_warn_and_warnings_are_capped(tmp_path: Path) -> None:
    devices = [tar_info(f"dev/tty{i}", tarfile.CHRTYPE) for i in range(60)]
    path = make_tar(tmp_path / "b.tgz", [("a.log", b"a\n"), *devices, tar_info("fifo", tarfile.FIFOTYPE),
                                          tar_info("n/link", tarfile.SYMTYPE, "../a.log"),
                                          tar_info("hard", tarfile.LNKTYPE, "a.log")])
    with open_bundle(path) as bundle:
        assert contents(bundle) == {"a.log": b"a\n"}
        assert "b.tgz: member 'dev/tty0' is a device file; skipped" in bundle.warnings
        assert "b.tgz: member 'fifo' is a FIFO; skipped" not in bundle.warnings  # past the cap of 50 per kind
        assert "11 more warnings of the kind 'special' not listed" in bundle.warnings
        assert any("'n/link' is a symbolic link to '../a.log'; not followed" in w for w in bundle.warnings)
        assert any("'hard' is a hard link to 'a.log'; not followed" in w for w in bundle.warnings)


# -- hostile -------------------------------------------------------------------------------------


def test_truncated_tar_gz_names_the_member(tmp_path: Path) -> None:
    data = tar_bytes([("node1/small.log", b"x\n"), ("node1/vllm.log", os.urandom(200_000))])
    (tmp_path / "bundle.tar.gz").write_bytes(data[: len(data) // 2])
    message = refused(tmp_path / "bundle.tar.gz")
    assert message.startswith("bundle.tar.gz: archive is truncated at member 'node1/vllm.log' (")


@pytest.mark.parametrize("cut", [700, 2048 + 512, 1024 + 300])
def test_truncated_plain_tar(tmp_path: Path, cut: int) -> None:
    data = make_tar(tmp_path / "x", [("a.log", b"a" * 1000), ("b.log", b"b" * 1000)], "w").read_bytes()
    (tmp_path / "x").unlink()
    (tmp_path / "bundle.tar").write_bytes(data[:cut])
    message = refused(tmp_path / "bundle.tar")
    assert "archive is truncated" in message and ("'a.log'" in message or "'b.log'" in message)


def test_corrupt_zip_names_the_member(tmp_path: Path) -> None:
    data = bytearray(make_zip(tmp_path / "x.zip", [("node1/vllm.log", b"hello world " * 1000)]).read_bytes())
    data[60:90] = b"\x00" * 30  # inside the deflated data
    (tmp_path / "bundle.zip").write_bytes(bytes(data))
    message = refused(tmp_path / "bundle.zip")
    assert message.startswith("bundle.zip: archive is corrupt at member 'node1/vllm.log'")


def test_truncated_zip(tmp_path: Path) -> None:
    data = make_zip(tmp_path / "x.zip", LOGS).read_bytes()
    (tmp_path / "bundle.zip").write_bytes(data[:-40])
    assert "zip archive is truncated or corrupt" in refused(tmp_path / "bundle.zip")


@pytest.mark.parametrize("member, expected", [
    (("../../etc/cron.d/evil", b"x"), "member '../../etc/cron.d/evil' has a path that leads outside the archive"),
    (("node1/../../evil", b"x"), "member 'node1/../../evil' has a path that leads outside"),
    (("/etc/passwd", b"x"), "member '/etc/passwd' has an absolute path"),
    (tar_info("node1/link", tarfile.SYMTYPE, "/etc/shadow"), "member 'node1/link' is a symbolic link to '/etc/shadow', "
                                                             "outside the archive"),
    (tar_info("node1/link", tarfile.SYMTYPE, "../../x"), "is a symbolic link to '../../x', outside the archive"),
    (tar_info("hard", tarfile.LNKTYPE, "../outside"), "member 'hard' is a hard link to '../outside', outside"),
    (tar_info("hard", tarfile.LNKTYPE, "/etc/passwd"), "member 'hard' is a hard link to '/etc/passwd'"),
])
def test_unsafe_members_are_refused(tmp_path: Path, member: tuple[str, bytes] | tarfile.TarInfo,
                                    expected: str) -> None:
    path = make_tar(tmp_path / "evil.tgz", [("ok.log", b"ok\n"), member])
    assert expected in refused(path)
    assert not (tmp_path / "etc").exists() and not (tmp_path.parent / "evil").exists()


def test_unsafe_zip_members_are_refused(tmp_path: Path) -> None:
    assert "has a path that leads outside" in refused(make_zip(tmp_path / "a.zip", [("..\\..\\evil", b"x")]))
    assert "has an absolute path" in refused(make_zip(tmp_path / "b.zip", [("C:/Windows/evil", b"x")]))
    with zipfile.ZipFile(tmp_path / "c.zip", "w") as archive:
        info = zipfile.ZipInfo("link")
        info.external_attr = (0o120777 << 16)
        archive.writestr(info, "/etc/passwd")
    assert "member 'link' is a symbolic link to '/etc/passwd'" in refused(tmp_path / "c.zip")


def test_gzip_bomb_ratio(tmp_path: Path) -> None:
    (tmp_path / "bomb.gz").write_bytes(gzip.compress(b"\0" * (4 << 20)))
    limits = Limits(ratio_min_bytes=256 << 10)
    assert "member 'bomb' expands more than 200 times its compressed size" in refused(tmp_path / "bomb.gz", limits)
    make_tar(tmp_path / "bomb.tgz", [("node1/zeros.log", b"\0" * (4 << 20))])
    assert "member 'node1/zeros.log' expands more than 200 times" in refused(tmp_path / "bomb.tgz", limits)
    make_zip(tmp_path / "bomb.zip", [("zeros.log", b"\0" * (4 << 20))])
    assert "member 'zeros.log' expands more than 200 times" in refused(tmp_path / "bomb.zip", limits)


def test_total_size_and_file_count_caps(tmp_path: Path) -> None:
    path = make_tar(tmp_path / "b.tgz", [(f"f{i}.log", os.urandom(1000)) for i in range(10)])
    assert "expands to more than 4.9 KiB (stopped at member 'f5.log')" in refused(path, Limits(max_total_bytes=5000))
    assert "holds more than 3 files (stopped at member 'f3.log')" in refused(path, Limits(max_files=3))
    folder = tmp_path / "folder"
    folder.mkdir()
    for i in range(5):
        (folder / f"{i}.log").write_bytes(b"x" * 100)
    assert "holds more than 2 files" in refused(folder, Limits(max_files=2))
    assert "expands to more than" in refused(folder, Limits(max_total_bytes=250))


@pytest.mark.parametrize("maker", [
    lambda p: make_tar(p / "empty.tar.gz", []),
    lambda p: make_tar(p / "empty.tar", [], "w"),
    lambda p: make_zip(p / "empty.zip", []),
])
def test_empty_archive(tmp_path: Path, maker) -> None:  # type: ignore[no-untyped-def]
    message = refused(maker(tmp_path))
    assert ": archive is empty (" in message


def test_archive_of_only_skipped_members_and_empty_folder(tmp_path: Path) -> None:
    path = make_tar(tmp_path / "b.tgz", [tar_info("dev/null", tarfile.CHRTYPE), tar_info("d/", tarfile.DIRTYPE)])
    assert "the archive holds no readable files (first warning: b.tgz: member 'dev/null'" in refused(path)
    (tmp_path / "empty").mkdir()
    assert "empty: the folder holds no readable files" in refused(tmp_path / "empty")


def test_a_link_given_as_the_bundle_is_followed(tmp_path: Path) -> None:
    make_tar(tmp_path / "bundle-2025.tgz", LOGS)
    os.symlink("bundle-2025.tgz", tmp_path / "latest.tgz")
    with open_bundle(tmp_path / "latest.tgz") as bundle:
        assert contents(bundle) == EXPECTED and bundle.name == "latest.tgz"


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="nope.tgz: does not exist"), open_bundle(tmp_path / "nope.tgz"):
        pass


def test_a_file_of_zeros_is_not_an_empty_archive(tmp_path: Path) -> None:
    (tmp_path / "zeros.bin").write_bytes(bytes(100_000))
    with open_bundle(tmp_path / "zeros.bin") as bundle:
        assert [f.rel_path for f in bundle.files] == ["zeros.bin"]


@pytest.mark.slow
def test_hundred_thousand_tiny_files(tmp_path: Path) -> None:
    top = tmp_path / "many"
    for d in range(100):
        (top / f"d{d:02d}").mkdir(parents=True)
        for i in range(1000):
            fd = os.open(top / f"d{d:02d}" / f"{i:03d}.log", os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"x\n")
            os.close(fd)
    started = time.monotonic()
    with open_bundle(top) as bundle:
        assert len(bundle.files) == 100_000 and bundle.warnings == []
        assert bundle.files[0].rel_path == "d00/000.log"
    assert time.monotonic() - started < 120  # a sanity bound, not a benchmark


def test_small_members_stay_in_memory_and_large_ones_on_disk(tmp_path: Path) -> None:
    small = b"INFO 08-18 14:10:00 one line\n"
    large = b"x" * (300 << 10) + b"\n"
    nested = tar_bytes([("inner.log", small)])
    archive = make_tar(tmp_path / "b.tar.gz", [("small.log", small), ("large.log", large), ("inner.tar.gz", nested)])
    with open_bundle(archive) as bundle:
        by_name = {f.rel_path: f for f in bundle.files}
        assert contents(bundle) == {"small.log": small, "large.log": large, "inner/inner.log": small}
        assert by_name["small.log"].data == small
        assert by_name["large.log"].data is None and by_name["large.log"].path.is_file()

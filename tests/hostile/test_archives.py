"""Hostile archives through the real command line: refused with one clear line, or read with a
counted warning; never a traceback, never a byte written outside the outputs asked for."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import make
import pytest
from hostile_run import (
    Accepted,
    Run,
    Sandbox,
    ZooRun,
    check_conserved,
    check_refusal,
    check_run,
    query,
    run_refusals,
    warnings_of,
)

from k3forensics.bundle import Limits, open_bundle
from k3forensics.errors import BundleError

ESCAPE = "k3f-escaped-member"


def _escaped_anywhere(sandbox: Sandbox) -> list[Path]:
    """Where a naive extractor would have put `../` members: beside the extraction folder, the
    sandbox, the current folder; and anywhere under the sandbox."""
    roots = [sandbox.root, sandbox.root.parent, sandbox.tmp, sandbox.work.parent, sandbox.inputs.parent]
    return [p for root in roots for p in root.rglob(f"{ESCAPE}*")]


def _nested_bomb(folder: Path) -> Path:
    """A nested archive that is damaged is only a warning; one that is a bomb stays a refusal."""
    bomb = make.zip_bomb(folder, mib=16)
    outer = make.write_tar(folder / "outer.tar.gz", [make.member("vllm.log", make.failing_log()),
                                                make.member("node-b/bomb.zip", bomb.read_bytes())])
    bomb.unlink()
    return outer


def _absolute(sandbox: Sandbox) -> Path:
    return make.absolute_tar(sandbox.inputs, sandbox.root / "outside" / f"{ESCAPE}-absolute.txt")


# (builder, words the error must contain besides the archive's name)
REFUSED: dict[str, tuple[Callable[[Sandbox], Path], tuple[str, ...]]] = {
    "truncated-tar.gz": (lambda s: make.truncated_tgz(s.inputs), ("truncated", "node-a/worker.log")),
    "corrupt-zip": (lambda s: make.corrupt_zip(s.inputs), ("corrupt", "worker.log")),
    "traversal-tar": (lambda s: make.traversal_tar(s.inputs, ESCAPE), ("outside the archive", f"../{ESCAPE}")),
    "traversal-zip": (lambda s: make.traversal_zip(s.inputs, ESCAPE), ("outside the archive", f"../{ESCAPE}")),
    "absolute-path": (_absolute, ("absolute path", f"/outside/{ESCAPE}-absolute.txt")),
    "symlink-absolute": (lambda s: make.symlink_outside_tar(s.inputs, "/etc/passwd"), ("symbolic link", "/etc/passwd")),
    "symlink-dotdot": (lambda s: make.symlink_outside_tar(s.inputs, f"../../{ESCAPE}"), ("symbolic link", "evidence.log")),
    "hardlink-dotdot": (lambda s: make.hardlink_outside_tar(s.inputs, f"../{ESCAPE}"), ("hard link", "evidence.log")),
    "zip-symlink": (lambda s: make.symlink_outside_zip(s.inputs, "/etc/shadow"), ("symbolic link", "/etc/shadow")),
    "zip-bomb": (lambda s: make.zip_bomb(s.inputs, mib=16), ("expands more than", "zeros.log")),
    "tar.gz-bomb": (lambda s: make.tgz_bomb(s.inputs, mib=16), ("expands more than", "zeros.log")),
    "nested-bomb": (lambda s: _nested_bomb(s.inputs), ("expands more than", "zeros.log")),
    "empty-tar.gz": (lambda s: make.empty_archive(s.inputs, "tgz"), ("archive is empty",)),
    "empty-zip": (lambda s: make.empty_archive(s.inputs, "zip"), ("archive is empty",)),
}
# `ingest` runs on every case; `triage` and `report` open bundles with the very same code, so
# they run on one case of each family (damaged, unsafe path, over a cap): each command costs a
# second of start-up, and the suite has to stay fast.
EVERY_COMMAND = {"truncated-tar.gz", "traversal-zip", "zip-bomb"}


@dataclass
class Refused:
    sandbox: Sandbox
    bundle: Path
    runs: list[Run]


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory, mpl_config: Path) -> dict[str, Refused]:
    boxes = {case: Sandbox(tmp_path_factory.mktemp(case), mpl_config) for case in REFUSED}
    bundles = {case: REFUSED[case][0](box) for case, box in boxes.items()}
    runs = run_refusals({case: (boxes[case], bundles[case], case in EVERY_COMMAND) for case in REFUSED})
    return {case: Refused(boxes[case], bundles[case], runs[case]) for case in REFUSED}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_with_one_clear_line(refused: dict[str, Refused], case: str) -> None:
    """Exit 2, one line naming the archive and the member, and nothing written at all: not even
    a partial database or report; the private extraction folder is gone (a member may have been
    unpacked before the bad one was met)."""
    got = refused[case]
    assert len(got.runs) == (4 if case in EVERY_COMMAND else 1)
    for run in got.runs:
        check_refusal(run, got.bundle.name, *REFUSED[case][1])
    got.sandbox.check_writes()
    assert _escaped_anywhere(got.sandbox) == []


def test_absolute_member_path_is_not_written(refused: dict[str, Refused]) -> None:
    target = refused["absolute-path"].sandbox.root / "outside" / f"{ESCAPE}-absolute.txt"
    assert not target.exists() and not target.parent.exists()


def test_bombs_stop_early(sandbox: Sandbox) -> None:
    """A 64 MiB gzip bomb: the ratio check fires after a few MiB, long before the end."""
    bundle = make.gzip_bomb(sandbox.inputs, mib=64)
    sandbox.snapshot()
    started = time.monotonic()
    run = sandbox.run("ingest", bundle, "--db", "out.duckdb")
    check_refusal(run, bundle.name, "expands more than", "bomb.log")
    assert time.monotonic() - started < 30
    sandbox.check_writes()


def test_total_size_and_file_count_caps_name_the_member(tmp_path: Path) -> None:
    """The caps the CLI uses (64 GiB, 200,000 files) are too large to reach in a test: the same
    code path with small caps, on an archive whose ratio is ordinary."""
    bundle = make.low_ratio_tgz(tmp_path)
    with pytest.raises(BundleError, match=r"expands to more than 1\.0 MiB \(stopped at member 'node-\d/worker\.log'\)"):
        with open_bundle(bundle, Limits(max_total_bytes=1 << 20)):
            pass
    with pytest.raises(BundleError, match=r"holds more than 2 files \(stopped at member 'node-2/worker\.log'\)"):
        with open_bundle(bundle, Limits(max_files=2)):
            pass


# -- accepted, with a counted warning ----------------------------------------------------------------


def test_oddities_lose_no_line(oddities: tuple[make.Oddities, Accepted]) -> None:
    built, result = oddities
    check_conserved(result.db, built.lines)
    assert result.first_signature == make.FAILURE_SIGNATURE


def test_device_files_and_fifos_are_skipped_with_a_warning(oddities: tuple[make.Oddities, Accepted]) -> None:
    _, result = oddities
    warnings = warnings_of(result.db)
    for member, kind in (("dev/nvidia0", "device file"), ("dev/sda", "device file"), ("run/engine.fifo", "FIFO")):
        assert any(member in w and kind in w and "skipped" in w for w in warnings), (member, warnings)
        assert member in result.ingest.stderr


def test_links_inside_the_archive_are_not_followed(oddities: tuple[make.Oddities, Accepted]) -> None:
    _, result = oddities
    warnings = [w for w in warnings_of(result.db) if "not followed" in w]
    assert len(warnings) == 2 and "'current.log'" in warnings[0] + warnings[1], warnings
    assert query(result.db, "SELECT count(*) FROM files WHERE file IN ('current.log', 'copy.log')") == [(0,)]


def test_nested_archives_one_level_expanded_deeper_kept_opaque(oddities: tuple[make.Oddities, Accepted]) -> None:
    built, result = oddities
    # the archive two levels down is listed (no data lost) but gives no lines: it is not text
    assert query(result.db, f"SELECT detected_type FROM files WHERE file = '{built.opaque}'") == [("binary",)]
    assert any(built.opaque in w and "nested deeper" in w for w in warnings_of(result.db))
    assert query(result.db, f"SELECT count(*) FROM events WHERE file = '{built.inner_log}'") == [(4,)]


def test_folder_links_to_outside_are_not_followed(zoo: ZooRun) -> None:
    db = zoo.result.db
    assert query(db, "SELECT count(*) FROM events WHERE line LIKE '%TOPSECRET%'") == [(0,)]
    assert query(db, "SELECT count(*) FROM files WHERE file LIKE 'secrets%' OR file LIKE 'etc%'") == [(0,)]
    warnings = warnings_of(db)
    for link in ("secrets.log", "etc"):
        assert any(w.startswith(f"{link}: symbolic link") and "outside the bundle" in w and "not followed" in w
                   for w in warnings), (link, warnings)


@pytest.mark.slow
def test_hundred_thousand_tiny_files(sandbox: Sandbox) -> None:
    bundle = make.many_files(sandbox.inputs, n=100_000)
    sandbox.snapshot()
    run = sandbox.run("ingest", bundle, "--db", "many.duckdb", timeout=120)
    check_run(run, [0])
    sandbox.check_writes("many.duckdb")
    db = sandbox.work / "many.duckdb"
    assert query(db, "SELECT count(*), sum(line_count) FROM files") == [(100_000, 100_003)]
    assert query(db, "SELECT count(*) FROM events") == [(100_003,)]

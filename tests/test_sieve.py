"""The pass-1 sieve: a large bundle's routine lines are dropped before they are spooled, and
what pass 2 needs of them (counts, times, hosts) is tallied first. That a sieved triage says
what a triage over every line says is held in test_digest.py, on every sample and excerpt."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from k3forensics.sources.base import UTC_US
from k3forensics.timeline.build import TimelineBuild
from k3forensics.timeline.sieve import Dropped, Sieve

ROOT = Path(__file__).resolve().parent.parent


def noisy_bundle(tmp_path: Path, noise_lines: int) -> tuple[Path, str]:
    """A copy of the two-node NCCL sample with routine NCCL INFO lines inside one log."""
    sample = ROOT / "samples" / "nccl-ib-two-node" / "bundle"
    bundle = tmp_path / "bundle"
    for path in sample.rglob("*"):
        if path.is_file():
            target = bundle / path.relative_to(sample)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    log = next(p for p in sorted(bundle.rglob("*.log")) if "NCCL" in p.read_text(encoding="utf-8", errors="replace"))
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    noise = [f"k3-node:{n}:{n + 1} [{n % 8}] NCCL INFO Channel {n % 24:02d}/24 : via P2P/CUMEM/read\n"
             for n in range(noise_lines)]
    log.write_text("".join(lines[:5] + noise + lines[5:]), encoding="utf-8")
    return bundle, log.relative_to(bundle).as_posix()


def test_routine_lines_are_dropped_before_the_spool(tmp_path: Path, library) -> None:
    bundle, noisy = noisy_bundle(tmp_path, 20_000)
    build = TimelineBuild(bundle, library, spool_dir=tmp_path, chunk_bytes=64 << 10, sieve=Sieve(library))
    try:
        build.read()
        state = next(s for s in build.files if s.info.file == noisy)
        assert state.dropped is not None and state.dropped.lines > 19_000
        assert "k3-node" in state.dropped.hosts
        build.settle()
        spooled = sum(chunk.height for chunk in build.finish())
    finally:
        build.spool.close()
    assert spooled < 2_000
    assert state.lines > 20_000  # the files table counts every line


def test_without_a_spool_on_disk_nothing_is_dropped(tmp_path: Path, library) -> None:
    bundle, noisy = noisy_bundle(tmp_path, 2_000)
    build = TimelineBuild(bundle, library, chunk_bytes=64 << 10, sieve=Sieve(library))  # in memory
    build.read()
    assert all(s.dropped is None for s in build.files)


def test_dropped_times_resolve_across_new_year() -> None:
    # Year-less times: Dec 31, then Jan 1 after one New Year crossing (pass 1's `_wraps`).
    dropped = Dropped()
    dropped.add(pl.DataFrame({
        "parsed": [True, True, True],
        "attrs": [None, None, None],
        "ts": [datetime(2000, 12, 31, 23, 59, tzinfo=UTC), datetime(2000, 1, 1, 0, 1, tzinfo=UTC), None],
        "ts_quality": ["yearless", "yearless", "missing"],
        "_wraps": [0, 1, 1],
    }, schema={"parsed": pl.Boolean, "attrs": pl.Utf8, "ts": UTC_US, "ts_quality": pl.Utf8, "_wraps": pl.Int32}))
    assert (dropped.lines, dropped.parsed) == (3, 3)
    assert dropped.extremes(2025) == (datetime(2025, 12, 31, 23, 59, tzinfo=UTC), datetime(2026, 1, 1, 0, 1, tzinfo=UTC))
    assert Dropped().extremes(2025) == (None, None)

"""The pass-1 sieve: a large bundle's routine lines are dropped before they are spooled, and
what pass 2 needs of them (counts, times, hosts) is tallied first. That a sieved triage says
what a triage over every line says is held in test_digest.py, on every sample and excerpt."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from noisy_bundles import with_nccl_noise

from k3forensics.sources.base import UTC_US
from k3forensics.timeline.build import TimelineBuild
from k3forensics.timeline.sieve import Dropped, Sieve


def test_routine_lines_are_dropped_before_the_spool(tmp_path: Path, library) -> None:
    bundle, noisy = with_nccl_noise(tmp_path, 20_000)
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
    bundle, noisy = with_nccl_noise(tmp_path, 2_000)
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

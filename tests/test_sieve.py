"""The pass-1 sieve: a large bundle's routine lines are dropped before they are spooled, and
what pass 2 needs of them (counts, times, hosts) is tallied first. That a sieved triage says
what a triage over every line says is held in test_digest.py, on every sample and excerpt."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from noisy_bundles import with_nccl_noise

from k3forensics.library.model import PHASES
from k3forensics.sources.base import UTC_US
from k3forensics.timeline.build import TimelineBuild
from k3forensics.timeline.nodes import host_names, hosts_named
from k3forensics.timeline.phases import FilePhases
from k3forensics.timeline.sieve import Dropped, MilestoneMemory, Sieve


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


def test_a_chunks_host_names_are_those_its_lines_name() -> None:
    attrs = ['{"host":"gpu-1","pid":3}', '{"host":"gpu-1","pid":4}', '{"host":"h\u00f6st-2"}', '{"src":"x.py:1"}',
             '{"msg":"\\"host\\": not a member"}', None, '{"host":null}']
    frame = pl.DataFrame({"node": ["n"] * len(attrs), "attrs": attrs}, schema={"node": pl.Utf8, "attrs": pl.Utf8})
    assert host_names(frame.get_column("attrs")) == {h for _, h in hosts_named(frame)} == {"gpu-1", "h\u00f6st-2"}


def test_dropped_times_resolve_across_new_year() -> None:
    # Year-less times: Dec 31, then Jan 1 after one New Year crossing (pass 1's `_wraps`).
    dropped = Dropped()
    dropped.add(pl.DataFrame({
        "parsed": [True, True, True],
        "ts": [datetime(2000, 12, 31, 23, 59, tzinfo=UTC), datetime(2000, 1, 1, 0, 1, tzinfo=UTC), None],
        "ts_quality": ["yearless", "yearless", "missing"],
        "_wraps": [0, 1, 1],
    }, schema={"parsed": pl.Boolean, "ts": UTC_US, "ts_quality": pl.Utf8, "_wraps": pl.Int32}), {"h"})
    assert (dropped.lines, dropped.parsed, dropped.hosts) == (3, 3, {"h"})
    assert dropped.extremes(2025) == (datetime(2025, 12, 31, 23, 59, tzinfo=UTC), datetime(2026, 1, 1, 0, 1, tzinfo=UTC))
    assert Dropped().extremes(2025) == (None, None)


def _milestone_chunks(seed: int, lines: int = 600, chunk: int = 50) -> list[pl.DataFrame]:
    """One file's lines in chunks: milestones in runs with restarts, traceback lines, stamps
    that mostly rise but sometimes go back, and untimed lines at the start."""
    rng = random.Random(seed)
    rows = []
    reached = 0
    for i in range(lines):
        if rng.random() < 0.01:
            reached = 0  # a restart: container_init again
            milestone: str | None = PHASES[0]
        elif rng.random() < 0.5:
            reached = min(len(PHASES) - 1, max(reached, rng.choice([reached, reached + 1, rng.randrange(len(PHASES))])))
            milestone = PHASES[reached] if rng.random() < 0.8 else rng.choice(PHASES)
        else:
            milestone = None
        rows.append({
            "file": "f.log", "line_no": i + 1, "milestone": milestone,
            "tb_group": rng.randrange(3) if rng.random() < 0.03 else None,
            "_ff_ts": None if i < 5 else datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i - rng.choice([0, 0, 0, 200, 400])),
            "_ff_yearless": None if i < 5 else False, "_ff_wraps": None if i < 5 else 0,
        })
    frame = pl.DataFrame(rows, schema={"file": pl.Utf8, "line_no": pl.Int64, "milestone": pl.Utf8, "tb_group": pl.Int64,
                                       "_ff_ts": UTC_US, "_ff_yearless": pl.Boolean, "_ff_wraps": pl.Int32})
    return [frame.slice(start, chunk) for start in range(0, lines, chunk)]


def _phases(chunks: list[pl.DataFrame]) -> pl.DataFrame:
    state = FilePhases()
    return pl.concat([state.in_file(c, own=True) for c in chunks]).select("line_no", "phase")


def _firsts_and_earliest(lines: pl.DataFrame) -> set[tuple[str, int]]:
    own = lines.filter(pl.col("milestone").is_not_null())
    first = own.group_by("milestone").agg(pl.col("line_no").first())
    timed = own.filter(pl.col("_ff_ts").is_not_null())
    early = timed.filter(pl.col("_ff_ts") == pl.col("_ff_ts").min().over("milestone")).group_by("milestone").agg(
        pl.col("line_no").first())
    return set(first.iter_rows()) | set(early.iter_rows())


@pytest.mark.parametrize("seed", range(12))
def test_dropped_milestone_lines_change_no_phase_nor_first_or_earliest_line(seed: int) -> None:
    chunks = _milestone_chunks(seed)
    memory = MilestoneMemory()
    kept = [c.filter(memory.needed(c) | pl.col("tb_group").is_not_null()) for c in chunks]  # traceback lines kept
    whole, sieved = pl.concat(chunks), pl.concat(kept)
    assert sieved.height < whole.filter(pl.col("milestone").is_not_null()).height // 2  # most repeats go
    # Pass 2 may still correct a traceback line's milestone: phases must agree whatever it says.
    for fix in (None, PHASES[0], PHASES[-1]):
        fixed = [c.with_columns(pl.when(pl.col("tb_group").is_not_null()).then(pl.lit(fix, pl.Utf8))
                                .otherwise(pl.col("milestone")).alias("milestone")) for c in chunks]
        full = _phases(fixed)
        few = _phases([k.join(f.select("line_no", "milestone"), on="line_no", how="left", suffix="_f",
                              maintain_order="left").drop("milestone").rename({"milestone_f": "milestone"})
                       for k, f in zip(kept, fixed, strict=True)])
        assert few.equals(full.join(few.select("line_no"), on="line_no", how="semi", maintain_order="left"))
    assert _firsts_and_earliest(whole) <= set(sieved.select("milestone", "line_no").iter_rows())

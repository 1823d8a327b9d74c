"""The spool between the passes: chunks come back in order, from memory or from disk."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from k3forensics.timeline.spool import Spool


def _chunks() -> list[pl.DataFrame]:
    return [pl.DataFrame({"seq": list(range(i * 100, i * 100 + 100)), "line": [f"line {i}"] * 100}) for i in range(6)]


def test_a_budget_moves_every_chunk_to_disk_once_outgrown(tmp_path: Path) -> None:
    chunks = _chunks()
    spool = Spool(tmp_path, memory_bytes=chunks[0].estimated_size() * 2)
    for chunk in chunks[:2]:
        spool.add(chunk)
    assert not spool.on_disk and not list(tmp_path.iterdir())
    for chunk in chunks[2:]:
        spool.add(chunk)
    assert spool.on_disk and len(spool) == 6
    assert pl.concat(list(spool.drain())).equals(pl.concat(chunks))
    spool.close()
    assert not list(tmp_path.iterdir())


def test_within_the_budget_nothing_is_written(tmp_path: Path) -> None:
    spool = Spool(tmp_path, memory_bytes=1 << 30)
    for chunk in _chunks():
        spool.add(chunk)
    assert not spool.on_disk and not list(tmp_path.iterdir())
    assert pl.concat(list(spool.drain())).equals(pl.concat(_chunks()))
    spool.close()


def test_a_folder_without_budget_is_on_disk_from_the_start(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    assert spool.on_disk
    spool.close()
    assert not list(tmp_path.iterdir())


def test_text_larger_than_the_budget_goes_to_disk_from_the_first_chunk(tmp_path: Path) -> None:
    chunks = _chunks()
    spool = Spool(tmp_path, memory_bytes=1000)
    spool.expect(999)
    assert not spool.on_disk
    spool.expect(1001)
    assert spool.on_disk
    for chunk in chunks:
        spool.add(chunk)
    assert pl.concat(list(spool.drain())).equals(pl.concat(chunks))
    spool.close()


def test_expected_text_moves_nothing_without_a_folder_or_a_budget(tmp_path: Path) -> None:
    for spool in (Spool(), Spool(None, memory_bytes=10)):
        spool.expect(1 << 40)
        assert not spool.on_disk

"""The parsed-library cache: a second load reads what the first parsed; any change to what a
parse depends on parses again; a broken or unwritable cache is never an error."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_loader import GOOD

from k3forensics.library import cache, loader
from k3forensics.library.loader import load_library


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    monkeypatch.delenv(cache.NO_CACHE_ENV, raising=False)
    return folder


def library_folder(tmp_path: Path, text: str = GOOD) -> Path:
    folder = tmp_path / "team"
    folder.mkdir(exist_ok=True)
    (folder / "team.yaml").write_text(text, encoding="utf-8")
    return folder


def no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("the library was parsed again")

    monkeypatch.setattr(loader, "_parse_library", refuse)


def test_a_second_load_reads_the_first_parse(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = library_folder(tmp_path)
    first = load_library([folder])
    assert len(list(cache_dir.glob("library-*.pickle"))) == 1
    no_parsing(monkeypatch)
    second = load_library([folder])
    assert second is not first
    assert second.signatures == first.signatures and second.folders == first.folders


def test_a_changed_signature_file_is_parsed_again(tmp_path: Path, cache_dir: Path) -> None:
    folder = library_folder(tmp_path)
    assert load_library([folder]).signatures["team.thing"].title == "A thing failed"
    library_folder(tmp_path, GOOD.replace("A thing failed", "A thing broke"))
    assert load_library([folder]).signatures["team.thing"].title == "A thing broke"
    (folder / "more.yaml").write_text(GOOD.replace("team.thing", "team.other"), encoding="utf-8")
    assert set(load_library([folder]).signatures) == {"team.thing", "team.other"}


def test_problems_come_back_from_the_cache(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = library_folder(tmp_path, GOOD.replace('contains "thing failed"', 'contains "thing" and and'))
    parsed = [str(p) for p in load_library([folder]).problems]
    assert parsed and "team.yaml:6" in parsed[0]
    no_parsing(monkeypatch)
    assert [str(p) for p in load_library([folder]).problems] == parsed


def test_a_damaged_entry_is_parsed_again(tmp_path: Path, cache_dir: Path) -> None:
    folder = library_folder(tmp_path)
    load_library([folder])
    for entry in cache_dir.glob("library-*.pickle"):
        entry.write_bytes(b"\x80\x05 not a pickle")
    assert set(load_library([folder]).signatures) == {"team.thing"}


def test_a_cache_that_cannot_be_written_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker / "cache"))
    assert set(load_library([library_folder(tmp_path)]).signatures) == {"team.thing"}


def test_the_cache_can_be_turned_off(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.NO_CACHE_ENV, "1")
    load_library([library_folder(tmp_path)])
    assert not cache_dir.exists()


def test_only_the_newest_entries_are_kept(tmp_path: Path, cache_dir: Path) -> None:
    folder = library_folder(tmp_path)
    for n in range(cache.KEEP_ENTRIES + 3):
        library_folder(tmp_path, GOOD.replace("A thing failed", f"A thing failed {n}"))
        load_library([folder])
    assert len(list(cache_dir.glob("library-*.pickle"))) == cache.KEEP_ENTRIES

"""Every sample bundle's triage equals its expected.json; healthy bundles stay silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3forensics.triage.contract import to_contract
from k3forensics.triage.run import triage

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CASES = sorted(p.parent for p in SAMPLES.glob("*/expected.json") if (p.parent / "bundle").is_dir())


def test_there_are_enough_samples() -> None:
    assert len(CASES) >= 10


@pytest.fixture(scope="module")
def results(library) -> dict[str, dict]:
    return {case.name: to_contract(triage(case / "bundle", library)) for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_triage_matches_expected(case: Path, results: dict[str, dict]) -> None:
    expected = json.loads((case / "expected.json").read_text(encoding="utf-8"))
    got = results[case.name]
    want_first, first = expected["first_failure"], got["first_failure"]
    if want_first is None:
        assert first is None, f"healthy bundle, but {first and first['signature']} fired"
    else:
        assert first is not None
        assert (first["category"], first["file"], first["line_no"]) == (
            want_first["category"], want_first["file"], want_first["line_no"])
        assert want_first["line_contains"] in first["line"]
        if want_first.get("phase"):
            assert first["phase"] == want_first["phase"]
    assert got["oom"]["class"] == expected["oom"]["class"]
    assert got["oom"]["subclass"] == expected["oom"].get("subclass")
    found = {h["category"] for h in got["secondary"]}
    missing = set(expected.get("secondary_categories", [])) - found
    assert not missing, f"cascade lacks {missing}"


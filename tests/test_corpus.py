"""Triage on real excerpts from public issue threads: the labelled first failure and OOM class."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3forensics.triage.contract import to_contract
from k3forensics.triage.run import triage

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p.parent for p in CORPUS.glob("*/label.json"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_first_failure_and_oom_class(case: Path, library) -> None:
    label = json.loads((case / "label.json").read_text(encoding="utf-8"))
    result = to_contract(triage(case / "bundle", library))
    first = result["first_failure"]
    want = label["primary"]
    if want["category"] == "none":
        assert first is None
    else:
        assert first is not None, "no failure found"
        assert want["line_contains"] in first["line"]
        assert first["category"] == want["category"]
    assert result["oom"]["class"] == label["oom_class"]

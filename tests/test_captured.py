"""Real output captured on an NVIDIA H200 (samples/captured): every file ingests, and triage
names the failure its expected.json records (or nothing, for healthy output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3forensics.triage.contract import to_contract
from k3forensics.triage.run import triage

CAPTURED = Path(__file__).resolve().parent.parent / "samples" / "captured"
EXPECTED = json.loads((CAPTURED / "expected.json").read_text(encoding="utf-8"))["files"]


@pytest.mark.gpu_capture
@pytest.mark.parametrize("name", sorted(EXPECTED), ids=sorted(EXPECTED))
def test_captured_file(name: str, library) -> None:
    want = EXPECTED[name]
    result = to_contract(triage(CAPTURED / name, library))
    first = result["first_failure"]
    assert result["counts"]["lines"] == len((CAPTURED / name).read_bytes().splitlines())
    if want["category"] is None:
        assert first is None, f"healthy output, but {first and first['signature']} fired on line {first and first['line_no']}"
        return
    assert first is not None
    assert first["category"] == want["category"]
    assert first["line_no"] == want["first_failure_line_no"]
    assert want["first_failure_match"] in first["line"]

"""Triage each sample bundle once per test session (triage takes seconds per bundle)."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

from k3forensics.triage.run import TriageResult, triage

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@functools.cache
def triaged(name: str) -> TriageResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return triage(SAMPLES / name / "bundle")

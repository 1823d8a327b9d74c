"""Fixtures for report tests (helpers live in report_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_helpers import write_planted_bundle


@pytest.fixture(scope="session")
def planted_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_planted_bundle(tmp_path_factory.mktemp("planted") / "bundle")

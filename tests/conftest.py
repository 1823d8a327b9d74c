"""Shared fixtures: the shipped signature library, loaded once per session."""

from __future__ import annotations

import pytest

from k3forensics.library.loader import Library, load_library
from k3forensics.resources import signatures_dir


@pytest.fixture(scope="session")
def library() -> Library:
    lib = load_library([signatures_dir()])
    lib.raise_problems()
    return lib

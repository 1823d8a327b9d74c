"""Shared fixtures: the shipped signature library, loaded once per session."""

from __future__ import annotations

import os
import tempfile

import pytest

from k3forensics.library.loader import Library, load_library
from k3forensics.resources import signatures_dir


def pytest_configure(config: pytest.Config) -> None:
    # The parsed-library cache of the tests and of the commands they run lives in a folder of
    # its own, never in the user's home.
    os.environ.setdefault("K3F_CACHE_DIR", tempfile.mkdtemp(prefix="k3f-test-cache-"))


@pytest.fixture(scope="session")
def library() -> Library:
    lib = load_library([signatures_dir()])
    lib.raise_problems()
    return lib

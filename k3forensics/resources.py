"""Locate the data shipped with k3forensics: the signature library and the grammars.

In a source checkout they live at the repository top level (`signatures/`, `grammars/`);
in an installed wheel they are copied to `k3forensics/_data/`.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    for candidate in (_PACKAGE.parent / name, _PACKAGE / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"k3forensics data folder {name!r} is missing from the installation")


def signatures_dir() -> Path:
    return _data_dir("signatures")


def grammars_dir() -> Path:
    return _data_dir("grammars")

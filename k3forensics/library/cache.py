"""A parsed signature library kept between runs, so that a triage of a small bundle does not
spend a third of its time reading YAML, parsing conditions and validating regexes again.

The entry's key is a hash of everything the parse depends on: every signature file's bytes and
place, the folders asked for, the code that parses them (this package's sources and the
condition grammar), and the versions of Python and polars (whose regex engine decides which
patterns are valid). Any change gives a new key; a missing, unreadable or foreign entry is
ignored and the library parsed again. Entries live in `$K3F_CACHE_DIR`, else
`$XDG_CACHE_HOME/k3forensics`, else `~/.cache/k3forensics`; `K3F_NO_CACHE=1` turns the cache
off. The newest few entries are kept. A cache that cannot be written is not an error.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path

import polars as pl

from k3forensics import __version__
from k3forensics.resources import grammars_dir

CACHE_ENV, NO_CACHE_ENV = "K3F_CACHE_DIR", "K3F_NO_CACHE"
KEEP_ENTRIES = 8
_PREFIX, _SUFFIX = "library-", ".pickle"
_CODE = sorted(Path(__file__).parent.glob("*.py"))  # the modules a parsed library is made by


def cache_dir() -> Path | None:
    if os.environ.get(NO_CACHE_ENV, "") not in ("", "0"):
        return None
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "k3forensics"


def library_key(folders: list[Path], files: list[tuple[Path, Path | None]]) -> str | None:
    """The hash of what parsing these files gives; None when one cannot be read (the parse
    then reports it)."""
    digest = hashlib.sha256()
    for part in (__version__, pl.__version__, sys.version, *map(str, folders)):
        digest.update(part.encode() + b"\0")
    try:
        for code in (*_CODE, grammars_dir() / "condition.lark"):
            digest.update(code.read_bytes() + b"\0")
        for folder, path in files:
            digest.update(f"{folder}\0{path}\0".encode())
            if path is not None:
                digest.update(path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()


def load(key: str | None) -> object | None:
    folder = cache_dir()
    if key is None or folder is None:
        return None
    try:
        with (folder / f"{_PREFIX}{key}{_SUFFIX}").open("rb") as fh:
            return pickle.load(fh)
    except Exception:  # missing, cut short, or written by other code: parse again
        return None


def store(key: str | None, value: object) -> None:
    folder = cache_dir()
    if key is None or folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Written whole under a temporary name, then renamed: a reader never sees half of it.
        with tempfile.NamedTemporaryFile("wb", dir=folder, prefix=".tmp-", delete=False) as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(fh.name, folder / f"{_PREFIX}{key}{_SUFFIX}")
        _prune(folder)
    except Exception:  # a read-only home, a full disk: the next run parses again
        return


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob(f"{_PREFIX}*{_SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP_ENTRIES:]:
        old.unlink(missing_ok=True)

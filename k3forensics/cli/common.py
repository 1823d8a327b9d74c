"""Shared CLI plumbing: error mapping, library options, safe terminal text."""

from __future__ import annotations

import functools
import os
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.text import Text

from k3forensics.errors import K3Error
from k3forensics.library.loader import Library, default_folders, load_library

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_FAILURE_FOUND, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
# Terminal control sequences and other C0/C1 controls must never reach the user's terminal.
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: object) -> Text:
    """Log text as inert terminal text: no rich markup, no escape sequences."""
    return Text(_CONTROL.sub("", str(text)))


def console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def _first_line(exc: BaseException) -> str:
    """An exception's message up to its first line break: engines (polars, duckdb) append the
    whole failing expression, which is for the trace (K3F_DEBUG=1), not for the user."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


def _format_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    line: str | None = None) -> str:
    """A Python warning raised inside k3forensics or a library it calls, as one line: the
    default format prints our source line, which means nothing to the user. (Only the format
    is replaced: whoever records warnings, such as a test runner, still records them.)"""
    return (f"internal warning: {category.__name__}: {_CONTROL.sub('', _first_line(Warning(message)))} "
            f"({Path(filename).name}:{lineno}; a k3forensics bug, please report it)\n")


def reports_errors(func: F) -> F:
    """Turn every K3Error into one clear line on stderr and exit code 2; never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = warnings.formatwarning
        if not os.environ.get("K3F_DEBUG"):
            warnings.formatwarning = _format_warning  # for this command only (callers in-process keep theirs)
        try:
            return _run(func, *args, **kwargs)
        finally:
            warnings.formatwarning = previous

    return wrapper  # type: ignore[return-value]


def _run(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return func(*args, **kwargs)
    except K3Error as exc:
        console(stderr=True).print(safe(f"error: {exc}"))
        sys.exit(EXIT_USAGE)
    except MemoryError:
        console(stderr=True).print("error: out of memory while reading the bundle; see the README, Performance")
        sys.exit(EXIT_USAGE)
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        console(stderr=True).print(safe(f"error: {where}{exc.strerror or exc}"))
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # a bug of ours: one line for the user, the trace on request
        if os.environ.get("K3F_DEBUG"):
            raise
        console(stderr=True).print(safe(
            f"internal error: {type(exc).__name__}: {_first_line(exc)} (a k3forensics bug; rerun with "
            "K3F_DEBUG=1 for the trace and report it)"))
        sys.exit(EXIT_INTERNAL)


def signature_options(func: F) -> F:
    """`--signatures DIR` (repeatable), on top of the shipped library and $K3F_SIGNATURES."""
    return click.option(
        "--signatures", "signature_dirs", multiple=True, type=click.Path(path_type=Path, file_okay=False),
        help="An extra signature library folder (repeatable; later folders override earlier ids).",
    )(func)


def library_from(signature_dirs: tuple[Path, ...]) -> Library:
    library = load_library(default_folders(list(signature_dirs)))
    library.raise_problems()
    for note in library.notes:
        console(stderr=True).print(safe(f"note: {note}"))
    return library

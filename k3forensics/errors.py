"""One exception root with a location; the CLI maps every K3Error to exit code 2."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Location:
    """Where a problem is: a file inside the bundle (or on disk), optionally a line and column."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        out = self.file
        if self.line is not None:
            out += f":{self.line}"
            if self.column is not None:
                out += f":{self.column}"
        return out


class K3Error(Exception):
    """Root of every error k3forensics reports to a user (never a traceback)."""

    def __init__(self, message: str, location: Location | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        if self.hint:
            text += f" ({self.hint})"
        return text


class BundleError(K3Error):
    """The bundle cannot be read safely: bad archive, traversal, bomb, missing path."""


class ParseError(K3Error):
    """A file's content cannot be parsed as its detected type."""


class SignatureError(K3Error):
    """A signature file or condition is invalid."""


class ReportError(K3Error):
    """A report cannot be rendered."""


class DatabaseError(K3Error):
    """A timeline database is missing, from another tool, or of an unknown schema version."""

"""The command line: thin click commands over the library; every K3Error becomes exit code 2."""

from __future__ import annotations

import sys

from k3forensics.cli import allocator  # noqa: F401  (before polars is imported)
from k3forensics.cli.main import cli


def main() -> None:
    sys.exit(cli.main(standalone_mode=True))


__all__ = ["cli", "main"]

"""Column-wise text helpers shared by parsers."""

from __future__ import annotations

import polars as pl

# CSI sequences (colours, cursor moves), OSC sequences, lone ESC pairs, and the
# "ESC lost" remnants seen in copied logs (`[1;36m(VllmWorker …)[0m`).
ANSI_PATTERN = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\^\[\[[0-9;]*m|\[[0-9;]{1,8}m"


def strip_ansi(expr: pl.Expr) -> pl.Expr:
    return expr.str.replace_all(ANSI_PATTERN, "")

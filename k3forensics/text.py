"""Column-wise text helpers shared by parsers."""

from __future__ import annotations

import polars as pl

# CSI sequences (colours, cursor moves), OSC sequences, lone ESC pairs, caret notation.
ANSI_PATTERN = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\^\[\[[0-9;]*m"
# Remnants whose ESC byte was lost in copying (`[1;36m(VllmWorker …)[0m`): only before a
# space, `(`, `[` or the line end, so that text such as a PromQL range `[5m]` survives.
LOST_ESC_PATTERN = r"\[(?:\d{1,3};)*\d{1,3}m(\s|\(|\[|$)"


def strip_ansi(expr: pl.Expr) -> pl.Expr:
    return expr.str.replace_all(ANSI_PATTERN, "").str.replace_all(LOST_ESC_PATTERN, "$1")

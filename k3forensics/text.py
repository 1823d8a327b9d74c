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


def stripped(lines: pl.Series) -> pl.Series:
    """`strip_ansi` over a column, running its two replacement regexes only on the lines that
    hold an escape sequence or one of its remnants (most log lines hold neither). Every
    alternative of ANSI_PATTERN starts with ESC or `^[[`; LOST_ESC_PATTERN is checked as it
    stands."""
    marked = lines.str.contains_any(["\x1b", "^[["]) | lines.str.contains(LOST_ESC_PATTERN)
    rows = marked.fill_null(False).arg_true()
    if rows.len() == 0:
        return lines
    fixed = pl.DataFrame({"t": lines.gather(rows)}).select(strip_ansi(pl.col("t"))).to_series()
    return lines.scatter(rows, fixed)

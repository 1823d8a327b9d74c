"""Column-wise text helpers shared by parsers."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

# CSI sequences (colours, cursor moves), OSC sequences, lone ESC pairs, caret notation.
ANSI_PATTERN = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\^\[\[[0-9;]*m"
# Remnants whose ESC byte was lost in copying (`[1;36m(VllmWorker …)[0m`): only before a
# space, `(`, `[` or the line end, so that text such as a PromQL range `[5m]` survives.
LOST_ESC_PATTERN = r"\[(?:\d{1,3};)*\d{1,3}m(\s|\(|\[|$)"
# `per_distinct` computes once per distinct value when at most this share of the values are
# distinct: finding them and joining back costs about a sixth of parsing every line.
REPEATS_SHARE = 0.5


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


def per_distinct(values: pl.Series, compute: Callable[[pl.Series], pl.DataFrame]) -> pl.DataFrame:
    """`compute(values)` (a frame of one row per value, that row depending on the value alone),
    computed on the distinct values and joined back when they repeat (an NCCL-heavy log
    repeats most of its lines once the envelope's time is off). Null values give null rows
    in the joined frame: pass values without nulls when that matters."""
    distinct = values.unique()
    if distinct.len() > values.len() * REPEATS_SHARE:
        return compute(values)
    found = compute(distinct).with_columns(distinct.alias("_key"))
    return pl.DataFrame({"_key": values}).join(found, on="_key", how="left", maintain_order="left").drop("_key")

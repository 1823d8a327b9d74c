"""Choose the first real failure and its cascade.

Hits are ordered by time (clock-skew tolerant) and grouped into *moments*: hits within
`tie_s` of each other (or, without timestamps, within a few lines of the same file). The
first moment that holds a primary or secondary hit names the failure; inside it a primary
beats a secondary (so an echo printed just before its cause — `EngineCore failed to start.`
before the traceback — never wins), then the higher priority, then the earlier line.
A secondary hit is named first only when no primary precedes it: an OOM at start-up with no
CUDA/NCCL/driver error before it is the failure; an OOM after one is its cascade.

An echo (`EngineDeadError`, `EngineCore failed to start.`: a secondary hit of negative
priority) says that something else failed. When the first moment holds only echoes, their
nodes show no cause of their own within the echoes' causal window, and another node shows a
cause within it, the echoes are taken for that cause's, seen through node clocks that disagree
by more than `tie_s`: the cause's moment names the failure and the echoes join its cascade.
On one node the clock is one clock, so an echo there is never moved behind a later cause.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

FAILURE_ROLES = ("primary", "secondary")
LINES_PER_MOMENT = 40  # without timestamps: hits this close in one file are one moment


@dataclass(frozen=True)
class Choice:
    first: dict[str, object] | None
    cascade: list[dict[str, object]]
    later: list[dict[str, object]]


def order_hits(hits: pl.DataFrame, tie_s: float) -> pl.DataFrame:
    """Failure hits sorted by time with a `moment` id."""
    failures = hits.filter(pl.col("role").is_in(FAILURE_ROLES))
    if failures.height == 0:
        return failures.with_columns(pl.lit(0).alias("moment"))
    ordered = failures.sort(pl.col("ts_order"), pl.col("seq"), nulls_last=True)
    gap = (pl.col("ts_order") - pl.col("ts_order").shift(1)).dt.total_microseconds() / 1e6
    same_file_close = (pl.col("file") == pl.col("file").shift(1)) & (
        (pl.col("line_no") - pl.col("line_no").shift(1)).abs() <= LINES_PER_MOMENT
    )
    new_moment = pl.when(pl.col("ts_order").is_not_null() & pl.col("ts_order").shift(1).is_not_null()).then(
        gap > tie_s
    ).otherwise(~same_file_close).fill_null(True)
    return ordered.with_columns(new_moment.cum_sum().alias("moment"))


# A cause: any primary, or a secondary of non-negative priority (an OOM); the rest are echoes.
_CAUSE = (pl.col("role") == "primary") | (pl.col("priority") >= 0)


def _named_moment(ordered: pl.DataFrame) -> tuple[int, list[int]]:
    """The moment that names the failure, and the `seq` of the echoes passed over (see the
    module doc): the first moment, unless it holds only echoes of a cause on another node."""
    first = ordered.get_column("moment").min()
    lead = ordered.filter(pl.col("moment") == first)
    start = lead.get_column("ts_order").min()
    if start is None or lead.select(_CAUSE.any()).item():
        return first, []
    window = float(lead.get_column("causal_window_s").max() or 0.0)
    delta = (pl.col("ts_order") - pl.lit(start)).dt.total_microseconds().abs() / 1e6
    causes = ordered.filter(_CAUSE & (delta <= window))
    echo_nodes = lead.get_column("node").unique().to_list()
    if causes.height == 0 or causes.select(pl.col("node").is_in(echo_nodes).any()).item():
        return first, []
    named = causes.get_column("moment").min()
    passed = ordered.filter((pl.col("moment") < named) & ~_CAUSE & pl.col("node").is_in(echo_nodes))
    return named, passed.get_column("seq").to_list()


def choose(hits: pl.DataFrame, tie_s: float = 2.0, limit: int = 25) -> Choice:
    ordered = order_hits(hits, tie_s)
    if ordered.height == 0:
        return Choice(None, [], [])
    first_moment, echoes = _named_moment(ordered)
    moment = ordered.filter(pl.col("moment") == first_moment).with_columns(
        (pl.col("role") == "primary").alias("_primary"), (pl.col("priority") >= 0).alias("_not_echo")
    )
    # Primary over secondary, cause over echo, then the earliest line; priority only
    # decides between signatures that hit the very same line.
    best = moment.sort(["_primary", "_not_echo", "ts_order", "seq", "priority"],
                       descending=[True, True, False, False, True], nulls_last=True).row(0, named=True)
    rest = ordered.filter(pl.col("seq") != best["seq"]).filter(
        ~((pl.col("seq") == best["seq"]) & (pl.col("signature") == best["signature"]))
    )
    # One line is named once: the other signatures that hit the first failure's line are dropped.
    rest = rest.filter(pl.col("seq") != best["seq"])
    # Each signature once per node, earliest first.
    rest = rest.unique(subset=["signature", "node"], keep="first", maintain_order=True)
    cascade, later = _split_by_window(rest, best, echoes)
    return Choice(best, cascade[:limit], later[:limit])


def _split_by_window(rest: pl.DataFrame, first: dict[str, object],
                     echoes: list[int]) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    start = first["ts_order"]
    if start is None:
        in_window = pl.col("seq") > first["seq"]
    else:
        delta = (pl.col("ts_order") - pl.lit(start)).dt.total_microseconds() / 1e6
        in_window = delta.is_between(-2.0, pl.col("causal_window_s")).fill_null(pl.col("seq") > first["seq"])
    marked = rest.with_columns((in_window | pl.col("seq").is_in(echoes)).alias("_in"))
    cascade = marked.filter(pl.col("_in")).drop("_in").to_dicts()
    later = marked.filter(~pl.col("_in")).drop("_in").to_dicts()
    return cascade, later

"""Start-up phases: every event carries the phase of its node at that moment.

Milestone signatures (role `milestone`, with a `phase`) mark where a phase begins. Within a
file the phase is the last milestone seen; lines before the first one are `container_init`.
Files with no milestone of their own (dmesg, NCCL, metrics) take the phase of their node's
milestone timeline at their time (or the whole bundle's, when the node has none).
"""

from __future__ import annotations

import polars as pl

from k3forensics.library.loader import Library
from k3forensics.library.match import match_events
from k3forensics.library.model import PHASES, Role

FIRST_PHASE = PHASES[0]


def milestone_column(events: pl.DataFrame, library: Library) -> pl.DataFrame:
    """Add `milestone` (the phase a line starts, or null) and `step` (a finer engine_init step)."""
    milestones = {s.id: s for s in library.of_role(Role.MILESTONE)}
    hits = match_events(events, library, roles=(Role.MILESTONE,))
    if hits.height:
        rank = {p: i for i, p in enumerate(PHASES)}
        table = hits.with_columns(
            pl.col("signature").replace_strict({k: v.phase for k, v in milestones.items()}, default=None)
            .alias("milestone"),
            pl.col("signature").replace_strict({k: v.step for k, v in milestones.items()}, default=None,
                                               return_dtype=pl.Utf8).alias("step"),
        ).with_columns(pl.col("milestone").replace_strict(rank, default=-1).alias("_rank"))
        # One line may match several milestones: keep the latest phase.
        table = table.sort("seq", "_rank").group_by("seq").agg(pl.col("milestone").last(), pl.col("step").last())
        return events.join(table, on="seq", how="left")
    return events.with_columns(pl.lit(None, pl.Utf8).alias("milestone"), pl.lit(None, pl.Utf8).alias("step"))


def assign_phases(events: pl.DataFrame) -> pl.DataFrame:
    """Add `phase` from the `milestone` column (see module doc).

    Processes of one server interleave in a file and repeat early milestones (every worker
    prints its platform detection), so within one run of a server the phase only moves
    forward; a new `container_init` milestone (a restart) starts a new run.
    """
    rank = {p: i for i, p in enumerate(PHASES)}
    milestone_rank = pl.col("milestone").replace_strict(rank, default=None, return_dtype=pl.Int32)
    run = (pl.col("milestone") == FIRST_PHASE).fill_null(False).cum_sum().over("file", order_by="line_no")
    events = events.with_columns(run.alias("_run"), milestone_rank.alias("_mrank"))
    reached = pl.col("_mrank").forward_fill().cum_max().over(["file", "_run"], order_by="line_no")
    in_file = reached.replace_strict(dict(enumerate(PHASES)), default=None, return_dtype=pl.Utf8)
    has_own = pl.col("milestone").is_not_null().any().over("file")
    out = events.with_columns(
        pl.when(has_own).then(in_file.fill_null(FIRST_PHASE)).otherwise(None).alias("phase")
    ).drop("_run", "_mrank")
    timeline = (
        out.filter(pl.col("milestone").is_not_null() & pl.col("ts_order").is_not_null())
        .select("node", "ts_order", pl.col("milestone").alias("_node_phase"))
        .sort("ts_order")
    )
    if timeline.height == 0:
        return out.with_columns(pl.col("phase").fill_null(FIRST_PHASE))
    out = _follow_head_node(out, timeline)
    orphans = out.filter(pl.col("phase").is_null())
    if orphans.height == 0:
        return out
    by_node = _asof(orphans, timeline, by="node")
    anywhere = _asof(orphans, timeline.drop("node"), by=None)
    filled = orphans.select("seq").with_columns(
        pl.coalesce(by_node["_node_phase"], anywhere["_node_phase"], pl.lit(FIRST_PHASE)).alias("_phase")
    )
    return out.join(filled, on="seq", how="left").with_columns(
        pl.coalesce("phase", "_phase").alias("phase")
    ).drop("_phase")


def _asof(orphans: pl.DataFrame, timeline: pl.DataFrame, by: str | None) -> pl.DataFrame:
    """The phase in force at each orphan's time, keeping the orphans' order."""
    left = orphans.select("seq", "node", "ts_order").with_row_index("_i")
    timed = left.filter(pl.col("ts_order").is_not_null()).sort("ts_order")
    joined = timed.join_asof(timeline, on="ts_order", by=by, strategy="backward", check_sortedness=False)
    return left.join(joined.select("_i", "_node_phase"), on="_i", how="left").sort("_i")


READY_RANK = PHASES.index("api_ready")
ENGINE_RANK = PHASES.index("engine_init")


def _follow_head_node(events: pl.DataFrame, timeline: pl.DataFrame) -> pl.DataFrame:
    """A headless engine node (a pipeline or data-parallel peer) never prints api_ready:
    once its own start-up is done (engine_init), it serves when the head node does."""
    ready = timeline.filter(pl.col("_node_phase").is_in(PHASES[READY_RANK:]))
    if ready.height == 0:
        return events
    rank = {p: i for i, p in enumerate(PHASES)}
    phase_rank = pl.col("phase").replace_strict(rank, default=-1, return_dtype=pl.Int32)
    never_ready = phase_rank.max().over("node") < READY_RANK
    candidates = events.filter((phase_rank == ENGINE_RANK) & never_ready & pl.col("ts_order").is_not_null())
    if candidates.height == 0:
        return events
    heads = ready.filter(~pl.col("node").is_in(candidates.get_column("node").unique().implode()))
    if heads.height == 0:
        return events
    head = _asof(candidates, heads.drop("node"), by=None).select("seq", pl.col("_node_phase").alias("_head"))
    return events.join(head, on="seq", how="left").with_columns(
        pl.coalesce("_head", "phase").alias("phase")
    ).drop("_head")

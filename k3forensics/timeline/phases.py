"""Start-up phases: every event carries the phase of its node at that moment.

Milestone signatures (role `milestone`, with a `phase`) mark where a phase begins. Within a
file the phase is the last milestone seen; lines before the first one are `container_init`.
Files with no milestone of their own (dmesg, NCCL, metrics) take the phase of their node's
milestone timeline at their time (or the whole bundle's, when the node has none).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from k3forensics.library.loader import Library
from k3forensics.library.match import match_events
from k3forensics.library.model import PHASES, Role

FIRST_PHASE = PHASES[0]


def milestone_column(events: pl.DataFrame, library: Library, rows: pl.Series | None = None) -> pl.DataFrame:
    """Add `milestone` (the phase a line starts, or null) and `step` (a finer engine_init step).
    `rows`: the lines that may match (holding a milestone's literal, or traceback lines), when
    known; milestones are decided by the line or its traceback group, both among them."""
    milestones = {s.id: s for s in library.of_role(Role.MILESTONE)}
    hits = match_events(events if rows is None else events.filter(rows), library, roles=(Role.MILESTONE,))
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
        return events.join(table, on="seq", how="left", maintain_order="left")
    return events.with_columns(pl.lit(None, pl.Utf8).alias("milestone"), pl.lit(None, pl.Utf8).alias("step"))


def assign_phases(events: pl.DataFrame) -> pl.DataFrame:
    """Add `phase` from the `milestone` column (see module doc).

    Processes of one server interleave in a file and repeat early milestones (every worker
    prints its platform detection), so within one run of a server the phase only moves
    forward; a new `container_init` milestone (a restart) starts a new run.
    """
    out = whole_file_phases(events, pl.col("milestone").is_not_null().any().over("file"))
    return finish_phases(out, milestone_map(out))


def whole_file_phases(events: pl.DataFrame, own: pl.Expr) -> pl.DataFrame:
    """Add `phase` within each whole file (`own`: the line's file has milestones of its own;
    null elsewhere, for `finish_phases`)."""
    rank = {p: i for i, p in enumerate(PHASES)}
    milestone_rank = pl.col("milestone").replace_strict(rank, default=None, return_dtype=pl.Int32)
    run = (pl.col("milestone") == FIRST_PHASE).fill_null(False).cum_sum().over("file", order_by="line_no")
    events = events.with_columns(run.alias("_run"), milestone_rank.alias("_mrank"))
    reached = pl.col("_mrank").forward_fill().cum_max().over(["file", "_run"], order_by="line_no")
    in_file = reached.replace_strict(dict(enumerate(PHASES)), default=None, return_dtype=pl.Utf8)
    return events.with_columns(
        pl.when(own).then(in_file.fill_null(FIRST_PHASE)).otherwise(None).alias("phase")
    ).drop("_run", "_mrank")


@dataclass(frozen=True)
class MilestoneMap:
    """The bundle-level part of phase assignment: small tables built from the milestone lines."""

    timeline: pl.DataFrame      # node, ts_order, _node_phase: milestones with a time, in time order
    files: frozenset[str]       # files with milestones of their own
    heads: pl.DataFrame         # ts_order, _node_phase: api_ready and later on nodes a headless node follows
    never_ready: frozenset[str]  # nodes whose own milestones never reach api_ready
    anywhere: pl.DataFrame      # ts_order, _node_phase: the timeline over all nodes


def milestone_map(milestones: pl.DataFrame) -> MilestoneMap:
    """From the milestone lines (file, node, ts_order, milestone; any order of seq kept)."""
    rows = milestones.filter(pl.col("milestone").is_not_null())
    # A large bundle has millions (every served request): node and phase are categories while
    # they are sorted and thinned (a third of the memory of text), text again once few.
    timeline = (
        rows.filter(pl.col("ts_order").is_not_null())
        .select(pl.col("node").cast(pl.Categorical), "ts_order",
                pl.col("milestone").cast(pl.Categorical).alias("_node_phase"))
        .sort("ts_order")
    )
    rank = {p: i for i, p in enumerate(PHASES)}
    top = rows.group_by("node").agg(
        pl.col("milestone").replace_strict(rank, default=None, return_dtype=pl.Int32).max()
    )
    never_ready = frozenset(n for n, r in top.iter_rows() if r is not None and r < READY_RANK)
    # A headless node follows the head once its own start-up reached engine_init (module doc).
    followers = set(timeline.filter((pl.col("_node_phase") == PHASES[ENGINE_RANK])
                                    & pl.col("node").is_in(list(never_ready))).get_column("node").to_list())
    ready = timeline.filter(pl.col("_node_phase").is_in(PHASES[READY_RANK:]))
    heads = ready.filter(~pl.col("node").is_in(list(followers))).drop("node") if followers else ready.clear().drop("node")
    files = frozenset(rows.get_column("file").unique().to_list())  # millions of rows, few files
    return MilestoneMap(_as_text(changes(timeline, by="node")), files,
                        _as_text(changes(heads)), never_ready, _as_text(changes(timeline.drop("node"))))


def _as_text(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col(pl.Categorical).cast(pl.Utf8))


def changes(timeline: pl.DataFrame, by: str | None = None) -> pl.DataFrame:
    """The rows of a time-ordered phase timeline where the phase changes (within each `by`
    group): every served request is a `serving` line, millions in a large bundle. A backward
    as-of join over them finds what it finds over all rows: where the last row at or before a
    time is one dropped, the nearest earlier row kept holds the same phase."""
    previous = pl.col("_node_phase").shift(1)
    if by is not None:
        previous = previous.over(by)
    return timeline.filter(previous.is_null() | (pl.col("_node_phase") != previous))


def finish_phases(events: pl.DataFrame, phases: MilestoneMap) -> pl.DataFrame:
    """Phases of lines whose file has no milestones (and of headless nodes), from the map."""
    if phases.timeline.height == 0:
        return events.with_columns(pl.col("phase").fill_null(FIRST_PHASE))
    out = _follow_head_node(events, phases)
    orphans = out.filter(pl.col("phase").is_null())
    if orphans.height == 0:
        return out
    by_node = _asof(orphans, phases.timeline, by="node")
    anywhere = _asof(orphans, phases.anywhere, by=None)
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


def _follow_head_node(events: pl.DataFrame, phases: MilestoneMap) -> pl.DataFrame:
    """A headless engine node (a pipeline or data-parallel peer) never prints api_ready:
    once its own start-up is done (engine_init), it serves when the head node does."""
    if phases.heads.height == 0:
        return events
    candidates = events.filter((pl.col("phase") == PHASES[ENGINE_RANK]) & pl.col("node").is_in(list(phases.never_ready))
                               & pl.col("ts_order").is_not_null())
    if candidates.height == 0:
        return events
    head = _asof(candidates, phases.heads, by=None).select("seq", pl.col("_node_phase").alias("_head"))
    return events.join(head, on="seq", how="left").with_columns(
        pl.coalesce("_head", "phase").alias("phase")
    ).drop("_head")


@dataclass
class FilePhases:
    """In-file phases of one file read in chunks: the phase reached so far in the current run."""

    reached: int | None = None

    def in_file(self, events: pl.DataFrame, own: bool) -> pl.DataFrame:
        """Add `phase` as `assign_phases` does before the bundle-level steps (null when the
        file has no milestones of its own)."""
        if not own:
            return events.with_columns(pl.lit(None, pl.Utf8).alias("phase"))
        rank = {p: i for i, p in enumerate(PHASES)}
        local = (pl.col("milestone") == FIRST_PHASE).fill_null(False).cum_sum()
        mrank = pl.col("milestone").replace_strict(rank, default=None, return_dtype=pl.Int32)
        frame = events.with_columns(local.alias("_run"), mrank.alias("_mrank"))
        reached = pl.col("_mrank").forward_fill().cum_max().over("_run")
        carried = pl.max_horizontal(reached, pl.lit(self.reached, pl.Int32))
        frame = frame.with_columns(pl.when(pl.col("_run") == 0).then(carried).otherwise(reached).alias("_reached"))
        if frame.height:
            self.reached = frame.get_column("_reached")[-1]
        in_file = pl.col("_reached").replace_strict(dict(enumerate(PHASES)), default=None, return_dtype=pl.Utf8)
        return frame.with_columns(in_file.fill_null(FIRST_PHASE).alias("phase")).drop("_run", "_mrank", "_reached")

"""Choosing the first real failure: moments, roles, echoes, clock skew, no timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from k3forensics.triage.first_failure import choose

T0 = datetime(2026, 8, 14, 10, 0, 0, tzinfo=UTC)


def hits(*rows: tuple) -> pl.DataFrame:
    """rows: (seq, node, file, line_no, seconds or None, role, category, priority)."""
    return pl.DataFrame(
        {
            "seq": [r[0] for r in rows], "node": [r[1] for r in rows], "file": [r[2] for r in rows],
            "line_no": [r[3] for r in rows],
            "ts_order": [None if r[4] is None else T0 + timedelta(seconds=r[4]) for r in rows],
            "role": [r[5] for r in rows], "category": [r[6] for r in rows], "priority": [r[7] for r in rows],
            "signature": [f"s.{r[6]}" for r in rows], "causal_window_s": [600.0] * len(rows),
        },
        schema_overrides={"ts_order": pl.Datetime("us", "UTC")},
    )


def test_primary_beats_an_earlier_secondary_in_the_same_moment_across_skewed_nodes() -> None:
    # node-b's clock runs 1.5 s behind: its watchdog echo looks earlier than node-a's Xid.
    choice = choose(hits(
        (0, "node-b", "b.log", 10, 0.5, "secondary", "nccl_timeout", -1),
        (1, "node-a", "a.log", 20, 2.0, "primary", "xid_hardware", 30),
    ), tie_s=2.0)
    assert choice.first is not None and choice.first["category"] == "xid_hardware"
    assert [h["category"] for h in choice.cascade] == ["nccl_timeout"]


def test_with_no_skew_tolerance_the_earlier_secondary_stands() -> None:
    choice = choose(hits(
        (0, "node-b", "b.log", 10, 0.5, "secondary", "oom_runtime", 5),
        (1, "node-a", "a.log", 20, 2.0, "primary", "xid_hardware", 30),
    ), tie_s=1.0)
    assert choice.first is not None and choice.first["category"] == "oom_runtime"


def test_echo_printed_before_its_cause_never_wins() -> None:
    choice = choose(hits(
        (0, "n", "v.log", 10, 0.0, "secondary", "engine_dead", -10),
        (1, "n", "v.log", 40, 0.0, "secondary", "oom_runtime", 5),
    ))
    assert choice.first is not None and choice.first["category"] == "oom_runtime"


def test_earliest_primary_wins_and_priority_only_splits_one_line() -> None:
    choice = choose(hits(
        (0, "n", "v.log", 10, 1.0, "primary", "nccl_init_failed", 6),
        (1, "n", "v.log", 12, 1.0, "primary", "cuda_init_failed", 20),
        (0, "n", "v.log", 10, 1.0, "primary", "config_error", 9),
    ))
    assert choice.first is not None and choice.first["category"] == "config_error"


def test_an_oom_long_before_a_later_primary_is_the_failure() -> None:
    choice = choose(hits(
        (0, "n", "v.log", 10, 0.0, "secondary", "oom_runtime", 5),
        (1, "n", "v.log", 900, 3600.0, "primary", "nccl_network", 20),
    ))
    assert choice.first is not None and choice.first["category"] == "oom_runtime"
    assert choice.cascade == [] and [h["category"] for h in choice.later] == ["nccl_network"]


def test_without_timestamps_file_order_and_nearby_lines_decide() -> None:
    choice = choose(hits(
        (0, "n", "v.log", 3, None, "secondary", "engine_dead", -10),
        (1, "n", "v.log", 9, None, "primary", "cuda_illegal_access", 20),
        (2, "n", "v.log", 500, None, "primary", "nccl_network", 20),
    ))
    assert choice.first is not None and choice.first["category"] == "cuda_illegal_access"


def test_context_hits_never_name_a_failure() -> None:
    assert choose(hits((0, "n", "v.log", 3, 0.0, "context", "unknown", 0))).first is None


def test_an_echo_on_a_lagging_node_passes_to_the_cause_on_another() -> None:
    # node-b's clock runs 3 minutes behind: its engine-dead echoes look earlier than node-a's
    # OOM, and node-b shows no cause of its own.
    choice = choose(hits(
        (0, "node-b", "b.log", 2, 0.0, "secondary", "engine_dead", -10),
        (1, "node-b", "b.log", 3, 0.0, "secondary", "engine_dead", -20),
        (2, "node-a", "a.log", 3, 178.0, "secondary", "engine_dead", -10),
        (3, "node-a", "a.log", 4, 178.0, "secondary", "oom_runtime", 5),
    ))
    assert choice.first is not None and (choice.first["node"], choice.first["category"]) == ("node-a", "oom_runtime")
    # each signature once per node; the passed-over echoes are the cause's cascade
    assert [(h["node"], h["category"]) for h in choice.cascade] == [("node-b", "engine_dead"), ("node-a", "engine_dead")]


def test_an_echo_stands_before_a_later_cause_on_its_own_node() -> None:
    # One node, one clock: a cause printed minutes after the echo did not cause it.
    choice = choose(hits(
        (0, "n", "v.log", 2, 0.0, "secondary", "engine_dead", -10),
        (1, "n", "v.log", 400, 178.0, "secondary", "oom_runtime", 5),
    ))
    assert choice.first is not None and choice.first["category"] == "engine_dead"


def test_an_echo_stands_when_its_node_has_a_cause_of_its_own() -> None:
    choice = choose(hits(
        (0, "node-b", "b.log", 2, 0.0, "secondary", "engine_dead", -10),
        (1, "node-b", "b.log", 400, 120.0, "primary", "nccl_network", 20),
        (2, "node-a", "a.log", 4, 178.0, "secondary", "oom_runtime", 5),
    ))
    assert choice.first is not None and choice.first["category"] == "engine_dead"


def test_an_echo_stands_when_the_other_cause_is_outside_its_window() -> None:
    choice = choose(hits(
        (0, "node-b", "b.log", 2, 0.0, "secondary", "engine_dead", -10),
        (1, "node-a", "a.log", 4, 3600.0, "secondary", "oom_runtime", 5),
    ))
    assert choice.first is not None and choice.first["category"] == "engine_dead"

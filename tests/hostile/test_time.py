"""Hostile time: no timestamps, mixed zones, skewed node clocks, a clock stepped back, year-less
dates over New Year. Every line keeps its place and its written time; the quality says how sure
the time is (exact / inferred / missing); the triage still names the failure."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import make
import pytest
from hostile_run import (
    EXIT_RESULT,
    Accepted,
    Case,
    Sandbox,
    accept,
    check_conserved,
    check_run,
    query,
    run_cases,
)

FAILURE = make.FAILURE_SIGNATURE


def _times(db, file: str) -> list[tuple[int, datetime | None, str, datetime | None]]:  # type: ignore[no-untyped-def]
    rows = query(db, f"SELECT line_no, ts, ts_quality, ts_order FROM events WHERE file = '{file}' ORDER BY line_no")
    return [(n, _utc(ts), q, _utc(order)) for n, ts, q, order in rows]


def _utc(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


def _at(hms: str, day: str = "2026-08-18") -> datetime:
    return datetime.fromisoformat(f"{day}T{hms}+00:00")


# (builder, triage/report options, render the HTML report?)
CASES: dict[str, tuple[Callable[[Path], Path], tuple[str, ...], bool]] = {
    "no-timestamps": (make.no_timestamps, (), True),          # a timeline picture with no time at all
    "mixed-zones": (make.mixed_zones, (), False),
    "backwards": (make.backwards_time, (), True),             # a picture whose times run backwards
    "new-year": (make.yearless_new_year, (), False),
    "skewed": (lambda d: make.skewed_nodes(d, skew_minutes=3), ("--skew", "240"), False),
    "impossible": (make.impossible_dates, (), False),
}


@pytest.fixture(scope="module")
def timed(tmp_path_factory: pytest.TempPathFactory, mpl_config: Path) -> dict[str, Accepted]:
    cases = {}
    for key, (build, options, report) in CASES.items():
        box = Sandbox(tmp_path_factory.mktemp(key), mpl_config)
        cases[key] = Case(box, build(box.inputs), options, report=report, full=False, name=key)
    return run_cases(cases)


def _checked(timed: dict[str, Accepted], key: str) -> Accepted:
    timed[key].check()
    return timed[key]


def test_no_timestamps_at_all(timed: dict[str, Accepted]) -> None:
    result = _checked(timed, "no-timestamps")
    check_conserved(result.db, {"stderr.txt": 5})
    times = _times(result.db, "stderr.txt")
    assert {(ts, quality, order) for _, ts, quality, order in times} == {(None, "missing", None)}
    first = result.contract["first_failure"]
    assert first is not None and first["file"] == "stderr.txt" and first["line_no"] == 5
    assert first["category"].startswith("oom")


def test_mixed_zones_meet_on_one_instant(timed: dict[str, Accepted]) -> None:
    result = _checked(timed, "mixed-zones")
    check_conserved(result.db, {"vllm.log": 4, "proxy.log": 3})
    proxy = _times(result.db, "proxy.log")
    assert [(ts, q) for _, ts, q, _ in proxy] == [(_at("14:10:45"), "exact")] * 3  # Berlin, UTC, Pacific
    vllm = _times(result.db, "vllm.log")
    assert [q for _, _, q, _ in vllm] == ["inferred"] * 4  # no zone, no year: taken as UTC, said so
    assert vllm[3][1] == _at("14:10:50")
    assert result.first_signature == FAILURE


def test_clock_stepped_back_keeps_written_times_and_file_order(timed: dict[str, Accepted]) -> None:
    result = _checked(timed, "backwards")
    check_conserved(result.db, {"vllm.log": 6})
    times = _times(result.db, "vllm.log")
    assert [ts for _, ts, _, _ in times] == [_at("14:10:40"), _at("14:10:41"), None, _at("14:05:00"),
                                              _at("14:05:09"), _at("14:05:10")]
    # a line without a time is placed by its neighbour in the file
    assert times[2][2] == "missing" and times[2][3] == _at("14:10:41")
    assert result.first_signature == FAILURE
    assert result.contract["first_failure"]["line_no"] == 6


def test_year_less_dates_across_new_year(timed: dict[str, Accepted]) -> None:
    result = _checked(timed, "new-year")
    check_conserved(result.db, {"syslog": 4, "collector.log": 1})
    times = _times(result.db, "syslog")
    assert [ts for _, ts, _, _ in times] == [
        _at("23:59:58", "2026-12-31"), _at("23:59:59", "2026-12-31"),
        _at("00:00:02", "2027-01-01"), _at("00:00:05", "2027-01-01")]
    assert {q for _, _, q, _ in times} == {"inferred"}
    first = result.contract["first_failure"]
    assert first is not None and first["file"] == "syslog" and first["line_no"] == 2


def test_nodes_with_clocks_minutes_apart(timed: dict[str, Accepted]) -> None:
    """node-b runs 3 minutes behind: with --skew covering that, the real failure (node-a's OOM) is
    named, and node-b's echo is not promoted to first failure."""
    result = _checked(timed, "skewed")
    check_conserved(result.db, {"node-a/vllm.log": 4, "node-b/vllm.log": 3})
    assert query(result.db, "SELECT node FROM nodes ORDER BY node") == [("node-a",), ("node-b",)]
    # each node keeps its own clock's times: the database never rewrites what a line says
    assert _times(result.db, "node-b/vllm.log")[1][1] == _at("14:07:52")
    first = result.contract["first_failure"]
    assert first is not None and first["signature"] == FAILURE and first["node"] == "node-a"


def test_nodes_with_clocks_minutes_apart_default_skew(sandbox: Sandbox) -> None:
    run = sandbox.run("triage", make.skewed_nodes(sandbox.inputs, skew_minutes=3), "--format", "json")
    check_run(run, EXIT_RESULT)
    first = json.loads(run.stdout)["first_failure"]
    assert first["signature"] == FAILURE and first["node"] == "node-a"


def test_year_less_leap_day_in_a_non_leap_year(sandbox: Sandbox) -> None:
    result = accept(sandbox, make.leap_day_without_year(sandbox.inputs), full=False, report=False)
    check_conserved(result.db, {"syslog": 2, "collector.log": 1})
    assert result.first_signature == "kernel.xid-79-fallen-off-bus"


def test_impossible_dates_are_kept_without_a_time(timed: dict[str, Accepted]) -> None:
    result = _checked(timed, "impossible")
    check_conserved(result.db, {"vllm.log": 5})
    assert [ts for _, ts, _, _ in _times(result.db, "vllm.log")] == [None] * 5


def test_impossible_dates_say_missing(timed: dict[str, Accepted]) -> None:
    assert {q for _, _, q, _ in _times(timed["impossible"].db, "vllm.log")} == {"missing"}

"""Hostile signature files: every problem reported in one pass with file:line(:col) by `lint`
(exit 1), and `triage --signatures` refusing the library with a clear message (exit 2); a regex
that would backtrack catastrophically elsewhere runs in linear time here."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import make
import polars as pl
import pytest
from hostile_run import EXIT_REFUSED, Run, Sandbox, check_run

LIBRARY = "hostile-sigs"
# file -> (body, location the problem is reported at, words of the message)
BAD: dict[str, tuple[str, str, str]] = {
    "bomb": (make.yaml_bomb(), "bomb.yaml:1:5", "YAML anchors are not allowed in signature files (&a0)"),
    "dupkeys": (make.duplicate_keys(), "dupkeys.yaml:7:5", "duplicate key 'role' (first at line 5)"),
    "unknown": (make.unknown_field(), "unknown.yaml:7", "unknown field(s): colour"),
    "lookaround": (make.regex_signature("team.lookaround", make.LOOKAROUND_REGEX), "lookaround.yaml:2",
                   "regex '(?<=CUDA )error' is not valid for the matching engine"),
    "backref": (make.regex_signature("team.backref", make.BACKREFERENCE_REGEX), "backref.yaml:2",
                "is not valid for the matching engine"),
    "sizebomb": (make.regex_signature("team.sizebomb", make.SIZE_BOMB_REGEX), "sizebomb.yaml:2",
                 "exceeds size limit"),
}


@dataclass
class LibraryRuns:
    lint: Run
    triage: Run


@pytest.fixture(scope="module")
def bad_library(tmp_path_factory: pytest.TempPathFactory, mpl_config: Path) -> LibraryRuns:
    box = Sandbox(tmp_path_factory.mktemp("signatures"), mpl_config)
    library = make.write_signatures(box.inputs / LIBRARY, {name: body for name, (body, _, _) in BAD.items()})
    (box.inputs / "vllm.log").write_bytes(make.failing_log())
    box.snapshot()
    lint, triage = box.run_all(["signatures", "lint", "--signatures", library],
                               ["triage", box.inputs / "vllm.log", "--signatures", library, "--format", "json"])
    box.check_writes()
    return LibraryRuns(lint, triage)


def test_lint_reports_every_problem_in_one_pass(bad_library: LibraryRuns) -> None:
    check_run(bad_library.lint, [1])
    assert f"{len(BAD)} problem(s)" in bad_library.lint.text


def test_triage_refuses_a_broken_library(bad_library: LibraryRuns) -> None:
    check_run(bad_library.triage, [EXIT_REFUSED])
    assert bad_library.triage.stderr.startswith(f"error: {len(BAD)} problem(s) in the signature library")
    assert bad_library.triage.stdout == b""


@pytest.mark.parametrize("case", list(BAD))
def test_problem_is_named_with_its_location(bad_library: LibraryRuns, case: str) -> None:
    _, where, words = BAD[case]
    for out in (bad_library.lint.text, bad_library.triage.stderr):
        line = next((ln for ln in out.splitlines() if f"{LIBRARY}/{where}:" in ln), None)
        assert line is not None and words in line, (where, out)


def test_unknown_field_points_at_the_key(bad_library: LibraryRuns) -> None:
    assert f"{LIBRARY}/unknown.yaml:7:5: " in bad_library.lint.text


def test_rejected_regex_says_why_and_where(bad_library: LibraryRuns) -> None:
    out = bad_library.lint.text
    assert "look-around, including look-ahead and look-behind, is not supported" in out
    assert "backreferences are not supported" in out
    assert f"{LIBRARY}/lookaround.yaml:6:" in out


def test_condition_nested_too_deep_is_a_problem_not_a_crash(sandbox: Sandbox) -> None:
    library = make.write_signatures(sandbox.inputs / "deep", {"deep": make.deep_condition()})
    run = sandbox.run("signatures", "lint", "--signatures", library)
    check_run(run, [1])
    assert "deep/deep.yaml:6" in run.text


# -- the regex engine is linear-time ------------------------------------------------------------------


def test_catastrophic_backtracking_pattern_runs_in_linear_time(sandbox: Sandbox) -> None:
    """`(a+)+$` over `a…ab` takes exponential time in a backtracking engine (Python's `re` would
    not finish); patterns run in polars' Rust engine, which has no backtracking."""
    line = "a" * 100_000 + "b"
    started = time.monotonic()
    assert pl.Series([line] * 10).str.contains(make.BACKTRACKING_REGEX).to_list() == [False] * 10
    assert time.monotonic() - started < 2.0

    library = make.write_signatures(sandbox.inputs / "backtrack",
                                    {"backtrack": make.regex_signature("team.backtrack", make.BACKTRACKING_REGEX)})
    bundle = make.backtracking_line(sandbox.inputs)
    sandbox.snapshot()
    started = time.monotonic()
    lint, triage = sandbox.run_all(["signatures", "lint", "--signatures", library],
                                   ["triage", bundle, "--signatures", library, "--format", "json"], timeout=120)
    check_run(lint, [0])
    assert "0 problem(s)" in lint.text  # accepted: it is safe here
    check_run(triage, [1])
    assert time.monotonic() - started < 60
    sandbox.check_writes()

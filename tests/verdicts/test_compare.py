"""`diff` and `repro` on sample bundles, through the library and the CLI."""

from __future__ import annotations

import json

from click.testing import CliRunner
from triaged_samples import SAMPLES, triaged

from k3forensics.cli.main import cli
from k3forensics.compare.diff import diff_runs
from k3forensics.compare.repro import Repro, reproduce
from k3forensics.compare.summary import summarize


def test_repro_unstable_stage() -> None:
    runs = [summarize(triaged(f"repro-unstable-run{i}")) for i in (1, 2, 3)]
    verdict = reproduce(runs)
    assert verdict.outcome == Repro.UNSTABLE_STAGE
    assert [r["phase"] for r in verdict.runs] == ["gpu_detect", "dist_init", "weight_load"]
    assert "isolated environment" in verdict.advice
    assert verdict.notes == []  # one command, one environment


def test_repro_stable() -> None:
    verdict = reproduce([summarize(triaged(f"repro-stable-run{i}")) for i in (1, 2)])
    assert verdict.outcome == Repro.STABLE
    assert {r["signature"] for r in verdict.runs} == {"nccl.system-error"}


def test_repro_of_a_failing_and_a_healthy_run_is_intermittent_and_notes_other_commands() -> None:
    verdict = reproduce([summarize(triaged("repro-stable-run1")), summarize(triaged("healthy-limited-no-prefix-reuse"))])
    assert verdict.outcome == Repro.INTERMITTENT
    assert any("launch arguments" in n for n in verdict.notes)


def test_diff_warns_when_environment_and_arguments_changed_at_once() -> None:
    d = diff_runs(summarize(triaged("driver-r575-cuda13")), summarize(triaged("healthy-prefix-cache-tools")))
    assert d.changed_at_once == ["environment", "arguments"] and d.warning
    assert ("driver", "575.57.08", "580.95.05") in d.environment
    assert d.first_failure and d.first_failure[0]["category"] == "driver_incompatible" and d.first_failure[1] is None
    assert d.acceptance == ("rebuild_environment", "ready")
    assert "vllm.stats-line" in d.signatures_added


def test_diff_of_one_changed_stage_and_no_environment_change() -> None:
    d = diff_runs(summarize(triaged("repro-unstable-run1")), summarize(triaged("repro-unstable-run2")))
    assert d.environment == [] and d.arguments == [] and d.warning is None
    assert d.phase_reached == ("gpu_detect", "dist_init")
    assert any("NCCL Error <n>" in t for t in d.templates_added)


def test_missing_facts_are_not_changes() -> None:
    d = diff_runs(summarize(triaged("healthy-prefix-cache-tools")), summarize(triaged("healthy-limited-no-prefix-reuse")))
    assert d.environment == [] and {k for k, _, _ in d.not_recorded} >= {"image", "vllm"}


def test_cli_diff_and_repro_json() -> None:
    runner = CliRunner()
    diff = runner.invoke(cli, ["diff", str(SAMPLES / "repro-stable-run1" / "bundle"),
                               str(SAMPLES / "repro-unstable-run1" / "bundle"), "--format", "json"])
    assert diff.exit_code == 0, diff.output
    assert json.loads(diff.stdout)["phase_reached"] == {"a": "dist_init", "b": "gpu_detect"}
    repro = runner.invoke(cli, ["repro", *(str(SAMPLES / f"repro-stable-run{i}" / "bundle") for i in (1, 2))])
    assert repro.exit_code == 0 and "stable_reproduction" in repro.output
    one = runner.invoke(cli, ["repro", str(SAMPLES / "repro-stable-run1" / "bundle")])
    assert one.exit_code == 2 and "at least two runs" in one.output

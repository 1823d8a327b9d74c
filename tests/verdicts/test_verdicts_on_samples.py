"""Each verdict on sample bundles with opposite outcomes (the samples' READMEs say why)."""

from __future__ import annotations

import json

import pytest
from triaged_samples import SAMPLES, triaged

from k3forensics.triage.contract import to_contract


@pytest.mark.parametrize(("sample", "outcome"), [
    ("healthy-prefix-cache-tools", "ready"),
    ("healthy-limited-no-prefix-reuse", "limited"),
    ("poc-single-request", "limited"),
    ("driver-r575-cuda13", "rebuild_environment"),
    ("oom-weight-load", "scale_resources"),
    ("repro-stable-run1", "unknown"),
])
def test_acceptance(sample: str, outcome: str) -> None:
    verdict = triaged(sample).verdict
    assert verdict["acceptance"] == outcome, verdict["reasons"]
    assert verdict["reasons"]


def test_ready_needs_all_four_criteria_met() -> None:
    marks = {k: v["mark"] for k, v in triaged("healthy-prefix-cache-tools").verdict["criteria"].items()}
    assert marks == {"compatibility": "met", "oom_headroom": "met", "prefix_cache_reuse": "met", "agent_api": "met"}
    limited = {k: v["mark"] for k, v in triaged("healthy-limited-no-prefix-reuse").verdict["criteria"].items()}
    assert limited["prefix_cache_reuse"] == "not_met" and limited["agent_api"] == "not_met"


@pytest.mark.parametrize(("sample", "status", "reason"), [
    ("healthy-prefix-cache-tools", "effective", "hit rate 67.7%"),
    ("healthy-limited-no-prefix-reuse", "not_effective", "--enable-prefix-caching is absent"),
    ("poc-single-request", "inconclusive", "only one request"),
    ("oom-runtime-concurrency", "inconclusive", "under pressure"),
])
def test_prefix_cache_reuse(sample: str, status: str, reason: str) -> None:
    prefix = triaged(sample).verdict["prefix_cache"]
    assert prefix["status"] == status
    assert any(reason in r for r in prefix["reasons"]), prefix["reasons"]


def test_prefix_cache_names_every_reason_of_no_reuse() -> None:
    reasons = " | ".join(triaged("healthy-limited-no-prefix-reuse").verdict["prefix_cache"]["reasons"])
    assert "enable_prefix_caching=False" in reasons and "no shared prefix" in reasons


@pytest.mark.parametrize(("sample", "status"), [
    ("healthy-prefix-cache-tools", "pass"),
    ("healthy-limited-no-prefix-reuse", "fail"),
    ("poc-single-request", "no_evidence"),
])
def test_agent_api(sample: str, status: str) -> None:
    assert triaged(sample).verdict["agent_api"]["status"] == status


def test_agent_api_failure_points_at_the_capture_line() -> None:
    api = triaged("healthy-limited-no-prefix-reuse").verdict["agent_api"]
    assert api["counts"]["tool_calls"] == 24 and api["finish_reasons"] == {"tool_calls": 24, "stop": 6}
    [example] = api["failing_examples"]
    assert (example["kind"], example["file"], example["line_no"], example["tool"]) == (
        "arguments_not_json", "api-capture.jsonl", 13, "create_ticket")


@pytest.mark.parametrize(("sample", "outcome"), [
    ("healthy-prefix-cache-tools", "stable_with_documented_limits"),
    ("oom-runtime-long-prompt", "stable_with_documented_limits"),
    ("poc-single-request", "functional_only_at_low_load"),
    ("oom-weight-load", "cannot_load_or_no_headroom"),
    ("oom-runtime-concurrency", "cannot_load_or_no_headroom"),
])
def test_tune_or_scale(sample: str, outcome: str) -> None:
    assert triaged(sample).verdict["tune_or_scale"]["outcome"] == outcome


def test_baseline_deviation_quotes_the_evidence_line() -> None:
    findings = triaged("driver-r575-cuda13").verdict["baseline"]["findings"]
    driver = [f for f in findings if f["requirement"] == "host-driver-r580" and f["status"] == "deviation"]
    assert driver and {f["found"] for f in driver} == {"575.57.08"}
    assert all(f["line_no"] and "575.57.08" in f["line"] for f in driver)
    healthy = triaged("healthy-prefix-cache-tools").verdict["baseline"]
    assert healthy["id"] == "kimi-k3"
    assert {f["status"] for f in healthy["findings"]} == {"met"}


def test_hardware_outside_the_recipe_is_a_resource_finding_not_an_environment_one() -> None:
    verdict = triaged("oom-weight-load").verdict
    gpus = [f for f in verdict["baseline"]["findings"] if f["requirement"] == "supported-gpus"]
    assert gpus[0]["status"] == "deviation" and gpus[0]["kind"] == "resources"
    assert verdict["environment_problems"] == []
    assert triaged("oom-weight-load").next_step.action == "scale"


def test_checklist_marks_the_seed_items() -> None:
    items = {i["item"]: i["mark"] for i in triaged("healthy-prefix-cache-tools").verdict["checklist"]}
    assert len(items) == 10
    assert items["cuda13_r580_checked"] == "met" and items["prefix_metrics_checked"] == "met"
    assert items["signed_off"] == "no_evidence"
    driver = {i["item"]: i["mark"] for i in triaged("driver-r575-cuda13").verdict["checklist"]}
    assert driver["cuda13_r580_checked"] == "not_met"


def test_contract_carries_environment_and_verdict() -> None:
    contract = to_contract(triaged("healthy-prefix-cache-tools"))
    env = contract["environment"]
    assert (env["vllm"], env["cuda_runtime"], env["driver"], env["image"]) == (
        "0.27.1", "13.0", "580.95.05", "vllm/vllm-openai:v0.27.1-cu130")
    assert env["gpu_count"] == 8 and env["per_node"]["node0"]["args"]["tensor_parallel_size"] == "8"
    verdict = contract["verdict"]
    assert {"acceptance", "reasons", "criteria", "checklist", "tune_or_scale", "prefix_cache", "agent_api"} <= set(verdict)
    assert "environment_problems" not in verdict
    json.dumps(contract, default=str)


VERDICT_KEYS = ("acceptance", "tune_or_scale", "prefix_cache", "agent_api")


@pytest.mark.parametrize("sample", sorted(p.parent.name for p in SAMPLES.glob("*/expected.json")
                                          if p.parent.joinpath("bundle").is_dir()
                                          and "tune_or_scale" in json.loads(p.read_text())))
def test_expected_verdicts_of_the_samples(sample: str) -> None:
    expected = json.loads((SAMPLES / sample / "expected.json").read_text())
    verdict = triaged(sample).verdict
    got = {"acceptance": verdict["acceptance"], "tune_or_scale": verdict["tune_or_scale"]["outcome"],
           "prefix_cache": verdict["prefix_cache"]["status"], "agent_api": verdict["agent_api"]["status"]}
    assert got == {k: expected[k] for k in VERDICT_KEYS}

"""kubectl describe pod, get events, get pods."""

from __future__ import annotations

import pytest
from _docgolden import check, head, inputs, log_heads, other_inputs, run

from k3forensics.sources import kubectl

CASES = inputs("kubectl")


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_golden(path):
    check(kubectl, path)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_detects_its_documents(path):
    assert kubectl.detect(head(path))


@pytest.mark.parametrize("path", log_heads() + other_inputs("kubectl"), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_declines_logs_and_other_documents(path):
    assert not kubectl.detect(head(path))


def _facts(stem: str) -> dict[str, list[str]]:
    result = run(kubectl, next(p for p in CASES if p.stem == stem))
    out: dict[str, list[str]] = {}
    for key, value in result.facts.select("key", "value").iter_rows():
        out.setdefault(key, []).append(value)
    return out


def test_describe_termination_facts_skip_a_completed_init_container():
    facts = _facts("describe_oomkilled")
    assert facts["pod"] == ["kimi-k3-7d9f8b6c4-x2p9q"]
    assert facts["k8s_node"] == ["gpu-node-3"]
    assert facts["image"] == ["vllm/vllm-openai:v0.27.1"]
    assert facts["termination_reason"] == ["OOMKilled"]
    assert facts["waiting_reason"] == ["CrashLoopBackOff"]
    assert facts["exit_code"] == ["137"]
    assert facts["restart_count"] == ["4"]
    assert facts["k8s_limit.memory"] == ["64Gi"]
    assert facts["arg.tensor_parallel_size"] == ["8"]


def test_relative_ages_are_not_timestamps():
    result = run(kubectl, next(p for p in CASES if p.stem == "get_events"))
    assert result.events.get_column("ts").null_count() == result.events.height
    levels = result.events.get_column("level").to_list()
    assert levels[1:5] == ["INFO", "WARNING", "WARNING", "WARNING"]
    assert result.events.get_column("process").to_list()[4] == "gpu-node-3"

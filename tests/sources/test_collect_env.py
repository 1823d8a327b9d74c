"""collect_env documents: flat (PyTorch) and sectioned (vLLM >= 0.10) layouts, package lists."""

from __future__ import annotations

import json

import pytest
from _docgolden import check, head, inputs, log_heads, other_inputs, run

from k3forensics.sources import collect_env
from k3forensics.sources.base import ParseContext, lines_frame

CASES = inputs("collect_env")


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_golden(path):
    check(collect_env, path)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_detects_its_documents(path):
    assert collect_env.detect(head(path))


@pytest.mark.parametrize("path", log_heads() + other_inputs("collect_env"), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_declines_logs_and_other_documents(path):
    assert not collect_env.detect(head(path))


def _facts(path_stem: str) -> dict[str, list[str]]:
    result = run(collect_env, next(p for p in CASES if p.stem == path_stem))
    out: dict[str, list[str]] = {}
    for key, value in result.facts.select("key", "value").iter_rows():
        out.setdefault(key, []).append(value)
    return out


def test_sectioned_layout_facts():
    facts = _facts("sectioned_v011")
    expected = {
        "vllm_version": ["0.11.0"], "torch_version": ["2.8.0+cu128"], "cuda_runtime": ["12.8"],
        "driver_version": ["570.133.20"], "gpu_count": ["4"], "os": ["Ubuntu 22.04.5 LTS (x86_64)"],
        "kernel": ["5.15.0-139-generic"], "python_version": ["3.12.11"], "nccl_version": ["2.27.3"],
        "topology": ["gpus=4 SYS:4 NV12:2"], "cuda_visible_devices": ["0,1,2,3"],
        "env.NCCL_IB_HCA": ["mlx5_0,mlx5_1"],
    }
    for key, value in expected.items():
        assert facts[key] == value, key
    assert facts["gpu_model"] == ["NVIDIA H100 NVL"] * 4


def test_single_gpu_on_the_label_line_of_the_flat_layout():
    facts = _facts("flat_v063")
    assert facts["gpu_model"] == ["NVIDIA A100-SXM4-80GB"]
    assert facts["gpu_count"] == ["1"]
    assert facts["vllm_version"] == ["0.6.3"]


def test_package_list_alone_gives_versions():
    facts = _facts("packages_excerpt")
    assert facts["torch_version"] == ["2.6.0+cu124"]
    assert facts["nccl_version"] == ["2.21.5"]
    assert facts["pip.transformers"] == ["4.51.3"]


def test_stated_version_wins_over_the_package_list():
    lines = ["PyTorch version: 2.4.0+cu121", "Is debug build: False", "[pip3] torch==2.4.0", "[pip3] numpy==1.26.4"]
    facts = collect_env.parse(lines_frame(lines), ParseContext(file="env.txt")).facts
    assert facts.filter(facts["key"] == "torch_version").get_column("value").to_list() == ["2.4.0+cu121"]


def test_key_value_lines_are_parsed_events_with_attrs():
    lines = ["PyTorch version: 2.4.0+cu121", "CUDA used to build PyTorch: 12.1", "", "some stray text"]
    events = collect_env.parse(lines_frame(lines), ParseContext(file="env.txt")).events
    assert events.get_column("parsed").to_list() == [True, True, False, False]
    assert json.loads(events.get_column("attrs").to_list()[1]) == {"key": "CUDA used to build PyTorch", "value": "12.1"}

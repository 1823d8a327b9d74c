"""nvidia-smi documents: table, -q, CSV queries, topo -m, -L, failure text."""

from __future__ import annotations

import json

import polars as pl
import pytest
from _docgolden import check, head, inputs, log_heads, other_inputs, run

from k3forensics.sources import nvidia_smi
from k3forensics.sources.base import ParseContext, lines_frame

CASES = inputs("nvidia_smi")


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_golden(path):
    check(nvidia_smi, path)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_detects_its_documents(path):
    assert nvidia_smi.detect(head(path))


@pytest.mark.parametrize("path", log_heads() + other_inputs("nvidia_smi"), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_declines_logs_and_other_documents(path):
    assert not nvidia_smi.detect(head(path))


def _facts(result) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in result.facts.select("key", "value").iter_rows():
        out.setdefault(key, []).append(value)
    return out


def test_table_header_date_gives_sample_time_even_with_a_wrong_weekday():
    # 14 Aug 2026 is a Friday; pasted headers are not always right about it
    lines = [
        "Thu Aug 14 10:11:12 2026",
        "| NVIDIA-SMI 580.65.06              Driver Version: 580.65.06      CUDA Version: 13.0     |",
        "|   0  NVIDIA H200                    On  |   00000000:18:00.0 Off |                    0 |",
        "| N/A   41C    P0            612W /  700W |  132118MiB / 143771MiB |     99%      Default |",
    ]
    result = nvidia_smi.parse(lines_frame(lines), ParseContext(file="nvidia-smi.txt"))
    used = result.samples.filter(pl.col("metric") == "nvidia_smi_memory_used_mib").row(0, named=True)
    assert used["ts"].isoformat() == "2026-08-14T10:11:12+00:00"
    assert json.loads(used["labels"]) == {"gpu": "0"}
    assert used["value"] == 132118.0
    assert result.events.get_column("ts_quality").to_list()[0] == "zoneless"


def test_table_facts_vocabulary():
    path = next(p for p in CASES if p.stem == "table_h200")
    facts = _facts(run(nvidia_smi, path))
    assert facts["driver_version"] == ["580.65.06"]
    assert facts["driver_cuda"] == ["13.0"]
    assert facts["gpu_count"] == ["8"]
    assert facts["gpu_model"] == ["NVIDIA H200"] * 8
    assert facts["gpu_memory_total_mib"] == ["143771"]
    assert facts["gpu_process"][0] == "gpu=0 pid=1042311 name=VLLM::Worker_TP0 used_mib=132090"


def test_csv_query_series_per_gpu_over_time():
    path = next(p for p in CASES if p.stem == "query_csv")
    samples = run(nvidia_smi, path).samples
    used = samples.filter(pl.col("metric") == "nvidia_smi_memory_used_mib").sort("line_no")
    assert used.get_column("labels").to_list() == ['{"gpu":"0"}', '{"gpu":"1"}'] * 2
    assert used.get_column("value").to_list() == [132118.0, 132104.0, 143210.0, 1.0]
    assert [t.isoformat() for t in used.get_column("ts").to_list()][:1] == ["2026-08-14T10:11:12.123000+00:00"]
    # `[N/A]` is no sample
    assert samples.filter(pl.col("metric") == "nvidia_smi_power_draw_w").height == 3


def test_query_q_ecc_and_pending_remap():
    path = next(p for p in CASES if p.stem == "q_h100")
    result = run(nvidia_smi, path)
    facts = _facts(result)
    assert facts["gpu_remap_pending"] == ["gpu=1 Pending=Yes"]
    dram = result.samples.filter(pl.col("metric") == "nvidia_smi_ecc_errors_volatile_dram_uncorrectable")
    assert dram.select("labels", "value").rows() == [('{"gpu":"0"}', 0.0), ('{"gpu":"1"}', 2.0)]


def test_topology_summary_counts_gpu_pairs_by_link():
    facts = _facts(run(nvidia_smi, next(p for p in CASES if p.stem == "topo_pcie_spaces")))
    assert facts["topology"] == ["gpus=4 SYS:4 PHB:2"]
    assert "GPU0-GPU1=PHB" in facts["topology_link"]


def test_driver_failure_is_an_error_event():
    result = run(nvidia_smi, next(p for p in CASES if p.stem == "failure"))
    assert result.events.get_column("level").to_list()[0] == "ERROR"
    assert _facts(result)["nvidia_smi_error"][0].startswith("NVIDIA-SMI has failed")

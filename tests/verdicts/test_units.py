"""The verdict modules on small hand-made inputs: baselines, compatibility, agent API, prefix cache."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from k3forensics.errors import SignatureError
from k3forensics.metrics.load import STATS_LINE, LoadEvidence
from k3forensics.verdicts import agent_api
from k3forensics.verdicts.baseline import load_baselines, version_tuple
from k3forensics.verdicts.compatibility import environment_problems, evaluate
from k3forensics.verdicts.prefix_cache import Observed, Reuse, _judge, from_stats_lines


def facts(rows: list[tuple[str, str, str, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"node": pl.Utf8, "key": pl.Utf8, "value": pl.Utf8, "line_no": pl.Int64},
                        orient="row").with_columns(pl.format("{}/env.txt", "node").alias("file"))


def test_versions_compare_numerically() -> None:
    assert version_tuple("580.65.06") >= version_tuple("580")  # type: ignore[operator]
    assert version_tuple("0.27.1rc2+cu130") == (0, 27, 1)
    assert version_tuple("0.9.2") < version_tuple("0.27.1")  # type: ignore[operator]
    assert version_tuple("unknown") is None


def test_the_shipped_baselines_load_and_choose_by_model() -> None:
    baselines = load_baselines()
    baselines.raise_problems()
    assert baselines.choose(["moonshotai/Kimi-K3"]).id == "kimi-k3"  # type: ignore[union-attr]
    assert baselines.choose(["Qwen/Qwen3-32B"]).id == "default"  # type: ignore[union-attr]


def test_a_team_baseline_overrides_and_errors_carry_their_line(tmp_path: Path) -> None:
    good, bad = tmp_path / "good" / "baselines", tmp_path / "bad" / "baselines"
    good.mkdir(parents=True)
    bad.mkdir(parents=True)
    (good / "k3.yaml").write_text("baseline:\n  id: kimi-k3\n  title: ours\n  applies_to:\n    models: ['K3']\n"
                                  "  requirements:\n    - id: r\n      text: t\n      fact: driver_version\n"
                                  "      version_at_least: '590'\n")
    (bad / "x.yaml").write_text("baseline:\n  id: x\n  title: x\n  requirements:\n    - id: r\n      text: t\n"
                                "      colour: blue\n")
    shipped = load_baselines()
    ours = load_baselines([*[Path(p) for p in []], *_shipped_folders(), tmp_path / "good"])
    assert ours.baselines["kimi-k3"].title == "ours" != shipped.baselines["kimi-k3"].title
    broken = load_baselines([tmp_path / "bad"])
    with pytest.raises(SignatureError, match=r"x\.yaml:5: unknown requirement key\(s\): colour"):
        broken.raise_problems()


def _shipped_folders() -> list[Path]:
    from k3forensics.library.loader import default_folders

    return default_folders()


def test_nodes_with_different_drivers_are_an_environment_deviation() -> None:
    rows = facts([("node-a", "driver_version", "580.95.05", 3), ("node-b", "driver_version", "575.57.08", 3),
                  ("node-a", "image", "vllm/vllm-openai:v0.27.1-cu130", 1),
                  ("node-b", "image", "vllm/vllm-openai:v0.27.1-cu130", 1)])
    baseline = load_baselines().baselines["default"]
    findings = evaluate(baseline, rows, pl.DataFrame())
    drivers = [f for f in findings if f.requirement == "same-driver-every-node"]
    assert [f.status for f in drivers] == ["deviation", "deviation"]
    assert {f.node for f in drivers} == {"node-a", "node-b"}
    assert [f for f in findings if f.requirement == "same-image-every-node"][0].status == "met"
    assert len(environment_problems(findings)) == 2


def test_gpu_count_below_the_recipe_is_a_resource_deviation() -> None:
    rows = facts([("n", "gpu_model", "NVIDIA GB300", i) for i in range(4)] + [("n", "gpu_count", "4", 9)])
    findings = evaluate(load_baselines().baselines["kimi-k3"], rows, pl.DataFrame())
    [gpus] = [f for f in findings if f.requirement == "supported-gpus"]
    assert (gpus.status, gpus.kind, gpus.found) == ("deviation", "resources", "4 x NVIDIA GB300")
    assert environment_problems(findings) == []


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city"], "additionalProperties": False}}}


def exchange(arguments: str, name: str = "get_weather", content: str | None = None, finish: str = "tool_calls",
             status: int = 200, messages: list[dict[str, str]] | None = None) -> dict[str, object]:
    message = {"role": "assistant", "content": content,
               "tool_calls": [{"id": "c0", "type": "function", "function": {"name": name, "arguments": arguments}}]}
    return {"file": "cap.jsonl", "line_no": 1, "status": status, "ts": None,
            "request": {"messages": messages or [{"role": "user", "content": "weather?"}], "tools": [WEATHER]},
            "response": {"choices": [{"index": 0, "finish_reason": finish, "message": message}]}}


@pytest.mark.parametrize(("arguments", "name", "kind"), [
    ('{"city": "Osaka"}', "get_weather", None),
    ('{"city": "Osaka",}', "get_weather", "arguments_not_json"),
    ('["Osaka"]', "get_weather", "arguments_not_object"),
    ('{"unit": "celsius"}', "get_weather", "schema_violation"),
    ('{"city": "Osaka", "unit": "kelvin"}', "get_weather", "schema_violation"),
    ('{"q": "x"}', "search_web", "unknown_tool"),
])
def test_tool_call_checks(arguments: str, name: str, kind: str | None) -> None:
    failures = agent_api.check_exchange(exchange(arguments, name), Counter(), Counter())
    assert [f.kind for f in failures] == ([kind] if kind else [])


def test_tool_markup_left_in_content_is_a_separation_failure() -> None:
    failures = agent_api.check_exchange(
        exchange('{"city": "Osaka"}', content="<|tool_calls_section_begin|> functions.get_weather:0"),
        Counter(), Counter())
    assert [f.kind for f in failures] == ["tool_markup_in_content"]


def test_a_retried_timeout_is_counted_and_one_demo_is_not_evidence() -> None:
    asked = [{"role": "user", "content": "weather in Osaka?"}]
    timeout = {"file": "c", "line_no": 1, "status": 504, "ts": None, "request": {"messages": asked, "tools": [WEATHER]},
               "response": {"error": {"message": "upstream request timeout"}}}
    retry = exchange('{"city": "Osaka"}', messages=asked)
    verdict = agent_api.decide([timeout, retry], pl.DataFrame())
    assert verdict.counts["timeouts"] == 1 and verdict.counts["retries_succeeded"] == 1
    assert verdict.status == agent_api.ApiStatus.NO_EVIDENCE


def test_prefix_cache_reasons() -> None:
    quiet = LoadEvidence("metrics", 5, peak_kv_usage=0.2, high_kv_share=0.0)
    one = _judge(Observed("metrics", requests=1, hit_rate=0.0), "true", None, quiet, None)
    assert one[0] == Reuse.INCONCLUSIVE and "only one request" in one[1][0]
    no_shared = _judge(Observed("metrics", requests=9, hit_rate=0.0), "true", None, quiet, False)
    assert no_shared[0] == Reuse.INCONCLUSIVE and "no shared prefix" in no_shared[1][-1]
    fell = _judge(Observed("metrics", requests=9, hit_rate=0.6, cached_tokens=900, prefill_cold_s=0.8,
                           prefill_warm_s=0.2), "true", None, quiet, True)
    assert fell[0] == Reuse.EFFECTIVE and "prefill time fell" in fell[1][-1]
    slower = _judge(Observed("metrics", requests=9, hit_rate=0.6, prefill_cold_s=0.2, prefill_warm_s=0.5),
                    "true", None, quiet, True)
    assert slower[0] == Reuse.INCONCLUSIVE
    full = LoadEvidence("metrics", 5, peak_kv_usage=0.98, high_kv_share=0.6)
    assert _judge(Observed("metrics", requests=9, hit_rate=0.6), "true", None, full, True)[0] == Reuse.INCONCLUSIVE
    assert _judge(Observed("metrics", requests=9), "false", None, quiet, True)[0] == Reuse.NOT_EFFECTIVE


def test_prefill_time_of_the_cold_request_against_the_rest_from_metrics() -> None:
    from k3forensics.verdicts.prefix_cache import from_metrics

    t0 = datetime(2026, 8, 31, 8, 0, tzinfo=UTC)
    rows = []
    for minutes, requests, hits, queries, prefill_sum in ((1, 1, 0, 2000, 0.8), (5, 10, 14000, 20000, 2.6)):
        at = t0 + timedelta(minutes=minutes)
        rows += [("vllm:request_success_total", '{"finished_reason":"stop"}', at, requests),
                 ("vllm:prefix_cache_hits_total", "{}", at, hits), ("vllm:prefix_cache_queries_total", "{}", at, queries),
                 ("vllm:request_prefill_time_seconds_count", "{}", at, requests),
                 ("vllm:request_prefill_time_seconds_sum", "{}", at, prefill_sum)]
    samples = pl.DataFrame(rows, schema={"metric": pl.Utf8, "labels": pl.Utf8, "ts": pl.Datetime("us", "UTC"),
                                         "value": pl.Float64}, orient="row").with_columns(pl.lit("n").alias("node"))
    seen = from_metrics(samples)
    assert seen is not None and seen.requests == 10
    assert seen.hit_rate == pytest.approx(14000 / 18000)
    assert seen.prefill_cold_s == pytest.approx(0.8) and seen.prefill_warm_s == pytest.approx(0.2)
    assert seen.prefill_fell


def test_prefix_cache_rate_from_stats_lines_skips_the_cold_first_one() -> None:
    captures = [json.dumps({"prefix_hit_pct": "12.0"}), None, json.dumps({"prefix_hit_pct": "63.5"}),
                json.dumps({"running": "3"}), json.dumps({"prefix_hit_pct": "41.2"}), json.dumps({"prefix_hit_pct": "9.9"})]
    order = [2, 5, 0, 3, 4, 1]  # listed out of time order
    t0 = datetime(2026, 8, 31, 8, 0, tzinfo=UTC)
    hits = pl.DataFrame({"seq": order, "signature": [STATS_LINE] * 6,
                         "ts_order": [t0 + timedelta(seconds=10 * i) for i in order],
                         "captures": [captures[i] for i in order]})
    seen = from_stats_lines(hits)
    assert seen is not None and seen.source == "stats_lines"
    # In time order the rates are 12.0 (the cold first request), 63.5, 41.2, 9.9.
    assert seen.hit_rate == pytest.approx(0.635) and seen.extra["stats_lines"] == 4
    assert from_stats_lines(hits.filter(pl.col("seq") == 0)).hit_rate is None  # type: ignore[union-attr]
    assert from_stats_lines(hits.filter(pl.col("seq") == 3)) is None

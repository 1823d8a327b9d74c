"""The sign-off checklist of seed 003, each item marked met / not_met / no_evidence.

The items are the seed's, in its order; a bundle rarely proves all of them, and saying which
ones it does not prove is the point.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from k3forensics.metrics.load import KV_USAGE
from k3forensics.verdicts.evidence import Evidence, Mark

PREFIX_METRICS = {
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "prompt_tokens_cached": ("vllm:prompt_tokens_cached_total",),
}
MEMORY_SERIES = (*KV_USAGE, "nvidia_smi_memory_used_mib", "DCGM_FI_DEV_FB_USED")
ITEMS = (
    ("image_vllm_model_recorded", "container tag, vLLM version and model identifier recorded"),
    ("cuda13_r580_checked", "CUDA 13 container and host driver R580 or newer checked against each other"),
    ("gpus_topology_recorded", "GPU model, count and interconnect topology recorded for every node"),
    ("load_logs_saved", "logs of model load, long input, concurrency and sustained run saved"),
    ("oom_memory_curve_linked", "memory curve around the OOM linked to the request conditions"),
    ("prefix_cold_vs_hot", "prefix-cache metrics compared between cold and warm requests"),
    ("prefix_metrics_checked", "prefix_cache_queries, prefix_cache_hits and prompt_tokens_cached checked"),
    ("tool_calls_validated", "tool calls, reasoning, content and structured output validated against schemas"),
    ("retry_fallback_checked", "retry after failure and the API-side fallback checked"),
    ("signed_off", "judge, date, samples used and next action recorded"),
)


def recorded(facts: pl.DataFrame, samples: pl.DataFrame, hits: pl.DataFrame) -> dict[str, bool]:
    """Which of the checklist's facts and series the bundle holds."""
    keys = set(facts.get_column("key").to_list()) if facts.height else set()
    metrics = set(samples.get_column("metric").unique().to_list()) if samples.height else set()
    signatures = set(hits.get_column("signature").unique().to_list()) if hits.height else set()
    out = {k: k in keys for k in ("image", "gpu_model", "gpu_count", "topology", "nccl_transport", "driver_version")}
    out["vllm_version"] = "vllm_version" in keys or "vllm.engine-config" in signatures
    out["model"] = "arg.model" in keys or "arg.served_model_name" in keys
    out["memory_curve"] = bool(metrics & set(MEMORY_SERIES)) or "vllm.stats-line" in signatures
    for name, aliases in PREFIX_METRICS.items():
        out[name] = bool(metrics & set(aliases))
    return out


def checklist(ev: Evidence, marks: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    judged = {
        "image_vllm_model_recorded": _all_recorded(ev, ("image", "vllm_version", "model")),
        "cuda13_r580_checked": _baseline(ev, ("cuda13-runtime", "cu130-image-tag", "host-driver-r580")),
        "gpus_topology_recorded": _gpus(ev),
        "load_logs_saved": _load_logs(ev),
        "oom_memory_curve_linked": _oom_curve(ev),
        "prefix_cold_vs_hot": (marks["prefix_cache_reuse"]["mark"], marks["prefix_cache_reuse"]["why"][:1]),
        "prefix_metrics_checked": _all_recorded(ev, tuple(PREFIX_METRICS)),
        "tool_calls_validated": (marks["agent_api"]["mark"], marks["agent_api"]["why"][:1]),
        "retry_fallback_checked": _retries(ev),
        "signed_off": (Mark.NO_EVIDENCE.value, ["the judge, date and samples are outside the bundle; this report "
                                                "gives the verdict and the next step to sign"]),
    }
    return [{"item": item, "text": text, "mark": judged[item][0], "why": judged[item][1]} for item, text in ITEMS]


def _all_recorded(ev: Evidence, keys: tuple[str, ...]) -> tuple[str, list[str]]:
    missing = [k for k in keys if not ev.recorded.get(k)]
    if not missing:
        return Mark.MET.value, [f"recorded: {', '.join(keys)}"]
    return Mark.NO_EVIDENCE.value, [f"not in the bundle: {', '.join(missing)}"]


def _baseline(ev: Evidence, requirements: tuple[str, ...]) -> tuple[str, list[str]]:
    found = [f for f in ev.findings if f.requirement in requirements]
    bad = [f.summary() for f in found if f.status == "deviation"]
    if bad:
        return Mark.NOT_MET.value, bad
    if found and all(f.status == "met" for f in found):
        return Mark.MET.value, [f.summary() for f in found]
    if not found:
        return Mark.NO_EVIDENCE.value, ["this model's baseline states no CUDA / driver requirement"]
    return Mark.NO_EVIDENCE.value, [f"not recorded: {', '.join(f.requirement for f in found if f.status != 'met')}"]


def _gpus(ev: Evidence) -> tuple[str, list[str]]:
    have = [k for k in ("gpu_model", "gpu_count") if ev.recorded.get(k)]
    link = ev.recorded.get("topology") or ev.recorded.get("nccl_transport")
    if len(have) == 2 and link:
        return Mark.MET.value, ["GPU model, count and topology / NCCL transport recorded"]
    missing = [k for k in ("gpu_model", "gpu_count") if k not in have] + ([] if link else ["topology"])
    return Mark.NO_EVIDENCE.value, [f"not in the bundle: {', '.join(missing)}"]


def _load_logs(ev: Evidence) -> tuple[str, list[str]]:
    if ev.served and ev.load.has_load:
        return Mark.MET.value, [f"start-up and served load ({ev.load.source}, {ev.load.points} points)"]
    return Mark.NO_EVIDENCE.value, ["the bundle holds no served load (only start-up)" if not ev.served
                                    else "served, but no metrics or stats lines show the load"]


def _oom_curve(ev: Evidence) -> tuple[str, list[str]]:
    if ev.oom.oom_class not in ("load_time", "runtime"):
        return Mark.NO_EVIDENCE.value, ["no OOM in this bundle"]
    if ev.recorded.get("memory_curve"):
        return Mark.MET.value, ["memory / KV-cache series next to the OOM"] + ev.oom.evidence[:1]
    return Mark.NOT_MET.value, ["OOM without a memory or KV-cache curve in the bundle"]


def _retries(ev: Evidence) -> tuple[str, list[str]]:
    counts = ev.agent.counts
    timeouts = counts.get("timeouts", 0)
    if not timeouts:
        return Mark.NO_EVIDENCE.value, ["no timeout in the captured traffic, so no retry to check"]
    retried = counts.get("timeouts_retried", 0)
    if retried < timeouts:
        return Mark.NOT_MET.value, [f"{timeouts - retried} of {timeouts} timeout(s) never retried"]
    return Mark.MET.value, [f"{retried} timeout(s) retried, {counts.get('retries_succeeded', 0)} succeeded"]

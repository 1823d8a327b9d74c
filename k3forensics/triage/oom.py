"""The OOM class (load_time / runtime / secondary / none), its subclass and the evidence.

Load-time: the node never reached `api_ready` before the OOM; the subclass comes from the
signature when it is specific, else from the last start-up step reached in that file
(weights → profile → kv_cache → cuda_graph). Runtime: the subclass comes from the load the
bundle shows just before the OOM: captures named `running`, `waiting`, `kv_usage_pct`,
`preemptions`, `prompt_tokens`, `computed_tokens` of context signatures (stats lines,
scheduler dumps), and the metrics samples.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta

import polars as pl

READY_PHASES = ("api_ready", "serving", "shutdown")
CATEGORY_OF_SUBCLASS = {
    "weights": "oom_weight_load", "profile": "oom_profile", "kv_cache": "oom_kv_cache_insufficient",
    "cuda_graph": "oom_cuda_graph",
}
SUBCLASS_OF_CATEGORY = {v: k for k, v in CATEGORY_OF_SUBCLASS.items()}
GENERIC_OOM = "oom_runtime"
STALE = "oom_stale_process"
HOST_OOM = "container_oomkilled"

# Thresholds for the runtime subclass (documented in the README).
LONG_PROMPT_TOKENS = 16_000
BUSY_RUNNING = 4
HIGH_KV_PCT = 90.0
SUSTAINED_S = 3600.0


@dataclass
class OomVerdict:
    oom_class: str = "none"
    subclass: str | None = None
    evidence: list[str] = field(default_factory=list)
    category: str | None = None   # the first failure's category after re-derivation


def is_gpu_oom(category: str | None) -> bool:
    return bool(category) and str(category).startswith("oom_")


def classify(first: dict[str, object] | None, cascade: list[dict[str, object]], events: pl.DataFrame,
             hits: pl.DataFrame) -> OomVerdict:
    if first is None:
        return OomVerdict(evidence=["no failure found"])
    category = str(first["category"])
    where = f"{first['file']}:{first['line_no']}"
    if category == STALE:
        return OomVerdict("secondary", "stale_process", [
            f"{where}: GPU memory was already held by another process when the engine started"], category)
    if not is_gpu_oom(category):
        ooms = [h for h in cascade if is_gpu_oom(str(h["category"]))]
        if ooms:
            oom = ooms[0]
            return OomVerdict("secondary", None, [
                f"{oom['file']}:{oom['line_no']}: OOM after the first failure ({category} at {where})"], category)
        return OomVerdict("none", None, [f"first failure is {category}, no GPU OOM follows it"], category)
    phase = first.get("phase")
    if phase in READY_PHASES or _ready_elsewhere(first, events):
        return _runtime(first, events, hits, where)
    if not _has_startup_lines(first, events) and category == GENERIC_OOM:
        verdict = _runtime(first, events, hits, where)
        verdict.evidence[0] = (f"{where}: OOM with no start-up lines in the bundle at all; an excerpt that "
                               "starts at the crash is taken as runtime")
        return verdict
    return _load_time(first, category, events, where)


def _ready_elsewhere(first: dict[str, object], events: pl.DataFrame) -> bool:
    """Another node (a headless PP/DP peer's server) was already ready before the OOM."""
    if first.get("ts_order") is None:
        return False
    ready = events.filter(pl.col("milestone").is_in(READY_PHASES) & pl.col("ts_order").is_not_null()
                          & (pl.col("node") != first["node"]) & (pl.col("ts_order") < first["ts_order"]))
    return ready.height > 0


def _has_startup_lines(first: dict[str, object], events: pl.DataFrame) -> bool:
    """Start-up milestones on the OOM's node at or before it (runtime ones do not count)."""
    same_file_before = (pl.col("file") == first["file"]) & (pl.col("line_no") <= first["line_no"])
    when = first.get("ts_order")
    other_file_before = (
        (pl.col("file") != first["file"]) & (pl.col("ts_order") <= when) if when is not None else pl.lit(False)
    )
    startup = pl.col("milestone").is_not_null() & ~pl.col("milestone").is_in(READY_PHASES + ("serving",))
    found = events.filter((pl.col("node") == first["node"]) & startup
                          & (same_file_before | other_file_before.fill_null(False)))
    return found.height > 0


def _load_time(first: dict[str, object], category: str, events: pl.DataFrame, where: str) -> OomVerdict:
    evidence = [f"{where}: OOM in phase {first.get('phase')}, before the API server was ready"]
    subclass = SUBCLASS_OF_CATEGORY.get(category)
    if subclass:
        evidence.append(f"signature {first['signature']} names the step ({category})")
    else:
        step = _last_step(events, first)
        if step:
            subclass = step
            evidence.append(f"last start-up step reached in {first['file']}: {step}")
        else:
            evidence.append("no start-up step milestone before the OOM in its file")
    final = CATEGORY_OF_SUBCLASS.get(subclass or "", category)
    return OomVerdict("load_time", subclass, evidence, final)


def _last_step(events: pl.DataFrame, first: dict[str, object]) -> str | None:
    if "step" not in events.columns:
        return None
    before = events.filter((pl.col("file") == first["file"]) & (pl.col("line_no") < first["line_no"])
                           & pl.col("step").is_not_null())
    return str(before.get_column("step").last()) if before.height else None


def _runtime(first: dict[str, object], events: pl.DataFrame, hits: pl.DataFrame, where: str) -> OomVerdict:
    evidence = [f"{where}: OOM in phase {first.get('phase')}, after the API server was ready"]
    load = _load_before(first, hits)
    served_s = _served_seconds(first, events)
    subclass: str | None = None
    prompt = max(load.get("prompt_tokens", 0.0), load.get("computed_tokens", 0.0))
    running = load.get("running")
    if prompt >= LONG_PROMPT_TOKENS:
        subclass = "long_context"
        evidence.append(f"a request of about {int(prompt):,} prompt tokens was being processed")
    elif running is not None and (running >= BUSY_RUNNING or load.get("waiting", 0) > 0
                                  or load.get("kv_usage_pct", 0) >= HIGH_KV_PCT or load.get("preemptions", 0) > 0):
        subclass = "concurrency"
        evidence.append(
            f"load before the OOM: running {int(running)}, waiting {int(load.get('waiting', 0))}, "
            f"KV cache {load.get('kv_usage_pct', 0):.1f}%")
    elif running is not None and running <= 2:
        subclass = "long_context"
        evidence.append(f"only {int(running)} request(s) running when memory ran out")
    elif served_s is not None and served_s >= SUSTAINED_S:
        subclass = "sustained"
        evidence.append(f"the server had been serving for {served_s / 3600:.1f} h before the OOM")
    else:
        evidence.append("the bundle shows no load figures before the OOM (stats lines or metrics)")
    category = str(first["category"])
    if category in CATEGORY_OF_SUBCLASS.values() or category == GENERIC_OOM:
        category = GENERIC_OOM
    return OomVerdict("runtime", subclass, evidence, category)


MOMENT_S = 5.0  # crash dumps print just after the OOM they describe


def _load_before(first: dict[str, object], hits: pl.DataFrame) -> dict[str, float]:
    """The latest values of load captures up to the OOM's moment: on its own node, else on
    any node (a headless pipeline stage's load shows in the head node's stats)."""
    if "captures" not in hits.columns:
        return {}
    candidates = hits.filter(pl.col("captures").is_not_null() & (pl.col("role") == "context"))
    if first.get("ts_order") is not None:
        limit = first["ts_order"] + timedelta(seconds=MOMENT_S)  # type: ignore[operator]
        in_time = (pl.col("seq") <= first["seq"]) | (pl.col("ts_order") <= limit).fill_null(False)
    else:
        in_time = pl.col("seq") <= first["seq"]
    rows = candidates.filter(in_time).sort("ts_order", "seq", nulls_last=True)
    own = _load_values(rows.filter(pl.col("node") == first["node"]))
    return own or _load_values(rows)


LOAD_KEYS = ("running", "waiting", "kv_usage_pct", "preemptions", "prompt_tokens", "computed_tokens")


def _load_values(rows: pl.DataFrame) -> dict[str, float]:
    """The latest numeric value of each load capture (a handful of hits, not lines)."""
    values: dict[str, float] = {}
    for text in rows.get_column("captures").to_list():
        for key, value in json.loads(text).items():
            if key not in LOAD_KEYS or value is None:
                continue
            try:
                values[key] = float(str(value).replace(",", ""))
            except ValueError:
                continue
    return values


def _served_seconds(first: dict[str, object], events: pl.DataFrame) -> float | None:
    ready = events.filter((pl.col("node") == first["node"]) & (pl.col("milestone") == "api_ready")
                          & pl.col("ts_order").is_not_null())
    if ready.height == 0 or first.get("ts_order") is None:
        return None
    start = ready.get_column("ts_order").min()
    return (first["ts_order"] - start).total_seconds()  # type: ignore[operator]

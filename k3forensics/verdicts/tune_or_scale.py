"""Tune or scale (seed 000): three outcomes, from where the OOM happened and the load shown.

* `functional_only_at_low_load` — it works, but only light load is in the bundle: keep the
  minimal environment and do not mistake it for production capacity.
* `stable_with_documented_limits` — stable at the load shown, or stable once one limit
  (context length, concurrency, memory headroom) is lowered within reason: document the
  limits and monitor.
* `cannot_load_or_no_headroom` — the weights / KV cache do not fit, the environment is off
  the baseline, or the pressure persists at the load: move to a conforming environment or
  scale out (multi-node included).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from k3forensics.metrics.load import LoadEvidence
from k3forensics.triage.oom import OomVerdict

LOW_LOAD_REQUESTS = 10      # fewer finished requests than this is a functional check
LOW_LOAD_RUNNING = 1        # never more than this many requests at once is a functional check
RUNTIME_LIMIT = {
    "long_context": "--max-model-len (below the prompt that failed)",
    "concurrency": "--max-num-seqs",
    "sustained": "--gpu-memory-utilization and the prefix-cache retention",
}


class Scale(StrEnum):
    FUNCTIONAL_LOW_LOAD = "functional_only_at_low_load"
    STABLE_WITH_LIMITS = "stable_with_documented_limits"
    NO_HEADROOM = "cannot_load_or_no_headroom"
    UNKNOWN = "unknown"


@dataclass
class TuneOrScale:
    outcome: Scale
    reasons: list[str]
    limits: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome.value, "reasons": self.reasons, "limits": self.limits}


def decide(first: dict[str, Any] | None, oom: OomVerdict, env_problems: list[str], load: LoadEvidence,
           served: bool, args: dict[str, str]) -> TuneOrScale:
    limits: dict[str, str] = {k: args[k] for k in ("max_model_len", "max_num_seqs", "gpu_memory_utilization")
                              if k in args}
    if oom.oom_class == "load_time":
        return TuneOrScale(Scale.NO_HEADROOM, [f"load-time OOM ({oom.subclass}): the model does not fit this "
                                               "topology; lowering concurrency will not help"], limits)
    if env_problems and not served:
        return TuneOrScale(Scale.NO_HEADROOM, ["the environment is off the baseline and the server never served: "
                                               "move to an environment that meets the official conditions"]
                           + env_problems[:3], limits)
    if oom.oom_class == "runtime":
        return _runtime(oom, load, limits)
    if first is not None and first.get("category") == "container_oomkilled":
        return TuneOrScale(Scale.NO_HEADROOM, ["the container ran out of host memory under load"], limits)
    if first is not None and oom.oom_class == "none":
        return TuneOrScale(Scale.UNKNOWN, [f"{first['category']} failed first: fix it before judging capacity"],
                           limits)
    if not served:
        why = f"start-up failed ({first['category']})" if first else "the bundle shows no served request"
        return TuneOrScale(Scale.UNKNOWN, [f"{why}: capacity cannot be judged"], limits)
    if load.persistent_pressure:
        return TuneOrScale(Scale.NO_HEADROOM, ["no headroom at this load: " + "; ".join(load.pressure_reasons())],
                           limits)
    if _low_load(load):
        return TuneOrScale(Scale.FUNCTIONAL_LOW_LOAD, [_load_text(load) + ": a functional check, not production "
                                                       "capacity; keep it apart from capacity planning"], limits)
    return TuneOrScale(Scale.STABLE_WITH_LIMITS, [_load_text(load) + " without OOM or standing pressure: document "
                                                  "the limits below and monitor"], limits)


def _runtime(oom: OomVerdict, load: LoadEvidence, limits: dict[str, str]) -> TuneOrScale:
    if load.persistent_pressure:
        return TuneOrScale(Scale.NO_HEADROOM, [f"runtime OOM ({oom.subclass or 'subclass unknown'}) with persistent pressure: "
                                               + "; ".join(load.pressure_reasons())
                                               + " — if lowering the limits breaks the business need, scale out"],
                           limits)
    parameter = RUNTIME_LIMIT.get(oom.subclass or "", "context length, concurrency, prefix caching (one at a time)")
    return TuneOrScale(Scale.STABLE_WITH_LIMITS, [f"runtime OOM ({oom.subclass or 'subclass unknown'}) without "
                                                  f"standing pressure: lower {parameter} on the same request set "
                                                  "and document it as the limit"], limits)


def _low_load(load: LoadEvidence) -> bool:
    if not load.has_load:
        return True
    few = load.requests is not None and load.requests < LOW_LOAD_REQUESTS
    single = load.peak_running is not None and load.peak_running <= LOW_LOAD_RUNNING
    return few or single


def _load_text(load: LoadEvidence) -> str:
    if not load.has_load:
        return "served, but no load evidence (no metrics, no stats lines)"
    parts = []
    if load.requests is not None:
        parts.append(f"{load.requests:g} requests")
    if load.peak_running is not None:
        parts.append(f"peak {load.peak_running:g} running")
    if load.peak_kv_usage is not None:
        parts.append(f"KV-cache peak {load.peak_kv_usage:.1%}")
    return "served " + ", ".join(parts) if parts else "served"

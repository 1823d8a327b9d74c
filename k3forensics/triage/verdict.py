"""The verdicts of a triaged timeline: compatibility baseline, prefix-cache reuse, agent API,
acceptance (seed 003) and tune-or-scale (seed 000). The logic lives in `k3forensics.verdicts`;
this module gathers the evidence once and returns the JSON-ready `verdict` object.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from k3forensics.metrics.load import load_evidence
from k3forensics.timeline.ingest import Timeline
from k3forensics.triage.oom import OomVerdict
from k3forensics.verdicts import acceptance as seed003
from k3forensics.verdicts import agent_api, prefix_cache, tune_or_scale
from k3forensics.verdicts.baseline import load_baselines
from k3forensics.verdicts.checklist import recorded
from k3forensics.verdicts.compatibility import evaluate, model_names
from k3forensics.verdicts.evidence import Evidence
from k3forensics.verdicts.exchanges import exchanges_of

SERVING_PHASES = ("serving",)


def acceptance(first: dict[str, Any] | None, oom: OomVerdict, env: dict[str, Any], timeline: Timeline,
               hits: pl.DataFrame) -> dict[str, Any]:
    baselines = load_baselines()
    baselines.raise_problems()
    baseline = baselines.choose(model_names(timeline.facts))
    findings = evaluate(baseline, timeline.facts, timeline.events) if baseline else []
    load = load_evidence(timeline.samples, hits)
    exchanges = exchanges_of(timeline.events)
    prefix = prefix_cache.decide(timeline.samples, timeline.facts, hits, exchanges, load)
    agent = agent_api.decide(exchanges, hits)
    served = _served(timeline.events, load.requests, exchanges)
    evidence = Evidence(first, oom, findings, load, prefix, agent, served,
                        recorded(timeline.facts, timeline.samples, hits))
    verdict = seed003.decide(evidence)
    args: dict[str, str] = dict(env["args"]) if isinstance(env.get("args"), dict) else {}
    scale = tune_or_scale.decide(first, oom, verdict.environment_problems, load, served, args)
    return {
        "acceptance": verdict.acceptance.value,
        "reasons": verdict.reasons,
        "criteria": verdict.criteria,
        "checklist": verdict.checklist,
        "tune_or_scale": scale.to_dict(),
        "baseline": {"id": baseline.id if baseline else None, "origin": baseline.origin if baseline else None,
                     "findings": [f.to_dict() for f in findings]},
        "prefix_cache": prefix.to_dict(),
        "agent_api": agent.to_dict(),
        "load": load.to_dict(),
        "environment_problems": verdict.environment_problems,
    }


def _served(events: pl.DataFrame, requests: float | None, exchanges: list[dict[str, Any]]) -> bool:
    """The engine answered requests: a serving phase, finished requests counted, or a response captured."""
    if events.height and "phase" in events.columns and events.filter(pl.col("phase").is_in(SERVING_PHASES)).height:
        return True
    if requests:
        return True
    return any((e.get("response") or {}).get("choices") for e in exchanges)

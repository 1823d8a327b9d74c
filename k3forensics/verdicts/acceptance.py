"""The acceptance verdict of seed 003 and its checklist.

Four criteria decide it — compatibility, OOM headroom under the load, prefix-cache reuse,
agent API correctness — each `met`, `not_met` or `no_evidence` (in this bundle):

* `rebuild_environment`: the environment is off the baseline (CUDA 13 image, R580 driver,
  vLLM, official image, per-node consistency) or start-up failed on it;
* `scale_resources`: compatible, but OOM, queueing or KV-cache pressure persist at the load;
* `ready`: all four criteria met on the recipe's hardware;
* `limited`: it works, with limits (a documented context limit, reuse or API not proven,
  hardware outside the recipe's boundary);
* `unknown`: another failure must be fixed first, or nothing was served.

The seed's sign-off checklist is marked the same way, item by item.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from k3forensics.verdicts.agent_api import ApiStatus
from k3forensics.verdicts.checklist import checklist
from k3forensics.verdicts.compatibility import resource_deviations
from k3forensics.verdicts.evidence import HOST_MEMORY, Evidence, Mark
from k3forensics.verdicts.prefix_cache import Reuse


class Acceptance(StrEnum):
    READY = "ready"
    LIMITED = "limited"
    REBUILD_ENVIRONMENT = "rebuild_environment"
    SCALE_RESOURCES = "scale_resources"
    UNKNOWN = "unknown"


@dataclass
class AcceptanceVerdict:
    acceptance: Acceptance
    reasons: list[str]
    criteria: dict[str, dict[str, Any]]
    checklist: list[dict[str, Any]]
    environment_problems: list[str]


def criteria(ev: Evidence) -> dict[str, dict[str, Any]]:
    return {
        "compatibility": _compatibility(ev),
        "oom_headroom": _headroom(ev),
        "prefix_cache_reuse": {"mark": _from_reuse(ev.prefix.status).value, "why": ev.prefix.reasons},
        "agent_api": {"mark": _from_api(ev.agent.status).value, "why": ev.agent.reasons},
    }


def _compatibility(ev: Evidence) -> dict[str, Any]:
    problems = ev.environment_problems()
    if problems:
        return {"mark": Mark.NOT_MET.value, "why": problems}
    env = [f for f in ev.findings if f.kind == "environment"]
    met = [f for f in env if f.status == "met"]
    if not met:
        return {"mark": Mark.NO_EVIDENCE.value, "why": ["the bundle records no environment fact the baseline checks"]}
    missing = [f.requirement for f in env if f.status == "no_evidence"]
    if missing:
        return {"mark": Mark.NO_EVIDENCE.value, "why": [f"not recorded in the bundle: {', '.join(missing)}",
                                                       f"{len(met)} baseline requirement(s) met"]}
    return {"mark": Mark.MET.value, "why": [f"{len(met)} baseline requirement(s) met"]}


def _headroom(ev: Evidence) -> dict[str, Any]:
    if ev.oom.oom_class in ("load_time", "runtime"):
        return {"mark": Mark.NOT_MET.value, "why": [f"{ev.oom.oom_class} OOM ({ev.oom.subclass or 'subclass unknown'})"]
                + ev.oom.evidence[:2]}
    if ev.first is not None and ev.first.get("category") == HOST_MEMORY:
        return {"mark": Mark.NOT_MET.value, "why": ["the container was OOM-killed (host memory)"]}
    if ev.load.persistent_pressure:
        return {"mark": Mark.NOT_MET.value, "why": ev.load.pressure_reasons()}
    if not ev.served or not ev.load.has_load:
        return {"mark": Mark.NO_EVIDENCE.value, "why": ["no load evidence (metrics or stats lines) of a served run"]}
    return {"mark": Mark.MET.value, "why": [f"no OOM; KV-cache peak {_pct(ev.load.peak_kv_usage)}, "
                                            f"peak {ev.load.peak_waiting or 0:g} waiting ({ev.load.source})"]}


def _pct(value: float | None) -> str:
    return "not recorded" if value is None else f"{value:.1%}"


def _from_reuse(status: Reuse) -> Mark:
    return {Reuse.EFFECTIVE: Mark.MET, Reuse.NOT_EFFECTIVE: Mark.NOT_MET}.get(status, Mark.NO_EVIDENCE)


def _from_api(status: ApiStatus) -> Mark:
    return {ApiStatus.PASS: Mark.MET, ApiStatus.FAIL: Mark.NOT_MET}.get(status, Mark.NO_EVIDENCE)


def decide(ev: Evidence) -> AcceptanceVerdict:
    marks = criteria(ev)
    problems = ev.environment_problems()
    verdict, reasons = _verdict(ev, marks, problems)
    return AcceptanceVerdict(verdict, reasons, marks, checklist(ev, marks), problems)


def _verdict(ev: Evidence, marks: dict[str, dict[str, Any]], problems: list[str]) -> tuple[Acceptance, list[str]]:
    if problems:
        return Acceptance.REBUILD_ENVIRONMENT, ["the environment deviates from the baseline: " + p for p in problems]
    category = (ev.first or {}).get("category")
    if ev.oom.oom_class == "load_time" or category == HOST_MEMORY:
        return Acceptance.SCALE_RESOURCES, marks["oom_headroom"]["why"] + _hardware(ev)
    if ev.oom.oom_class == "runtime":
        if ev.load.persistent_pressure:
            return Acceptance.SCALE_RESOURCES, marks["oom_headroom"]["why"] + ev.load.pressure_reasons()
        return Acceptance.LIMITED, [f"runtime OOM ({ev.oom.subclass or 'subclass unknown'}) without persistent "
                                    "pressure: works within a documented limit"] + _open(marks)
    if ev.first is not None:
        return Acceptance.UNKNOWN, [f"{category} at {ev.first['file']}:{ev.first['line_no']} must be fixed "
                                    "before acceptance"]
    if not ev.served:
        return Acceptance.UNKNOWN, ["no served request in the bundle"]
    if ev.load.persistent_pressure:
        return Acceptance.SCALE_RESOURCES, ev.load.pressure_reasons()
    hardware = _hardware(ev)
    if all(m["mark"] == Mark.MET.value for m in marks.values()) and not hardware:
        return Acceptance.READY, [f"{name}: {'; '.join(m['why'][:2])}" for name, m in marks.items()]
    return Acceptance.LIMITED, _open(marks) + hardware


def _open(marks: dict[str, dict[str, Any]]) -> list[str]:
    """The criteria not met or not evidenced, each with its first reason."""
    return [f"{name} {m['mark']}: {m['why'][0] if m['why'] else ''}" for name, m in marks.items()
            if m["mark"] != Mark.MET.value]


def _hardware(ev: Evidence) -> list[str]:
    deviations = resource_deviations(ev.findings)
    return [f"outside the recipe's hardware boundary: {d}" for d in deviations[:2]]

"""Several runs of one command: is the first failure the same, at the same phase? (seed 001)

* `stable_reproduction`: every run fails with the same first failure at the same phase —
  a reproduction worth handing over;
* `unstable_stage`: the runs fail at different start-up phases — stop changing the shared
  cluster and move to an isolated environment;
* `different_failures`: same phase, different first failure — freeze the environment and
  compare the runs' fingerprints before going on;
* `intermittent`: some runs do not fail at all;
* `no_failure`: none fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from k3forensics.compare.summary import RunSummary
from k3forensics.errors import K3Error


class Repro(StrEnum):
    STABLE = "stable_reproduction"
    UNSTABLE_STAGE = "unstable_stage"
    DIFFERENT_FAILURES = "different_failures"
    INTERMITTENT = "intermittent"
    NO_FAILURE = "no_failure"


ADVICE = {
    Repro.STABLE: "stable reproduction: keep this command and request as the minimal reproduction",
    Repro.UNSTABLE_STAGE: "fails at a different start-up stage each time → move to an isolated environment",
    Repro.DIFFERENT_FAILURES: "same stage, different first failure: freeze the environment and compare the runs' "
                              "fingerprints before changing anything else",
    Repro.INTERMITTENT: "the failure does not reproduce every time: record what differs between the failing and "
                        "the passing runs before changing anything",
    Repro.NO_FAILURE: "no run failed",
}


@dataclass
class ReproVerdict:
    outcome: Repro
    advice: str
    runs: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome.value, "advice": self.advice, "runs": self.runs, "notes": self.notes}


def reproduce(runs: list[RunSummary]) -> ReproVerdict:
    if len(runs) < 2:
        raise K3Error("repro needs at least two runs of the same command", hint="pass two or more bundles")
    rows = [_row(r) for r in runs]
    outcome = _outcome(runs)
    return ReproVerdict(outcome, ADVICE[outcome], rows, _command_notes(runs))


def _outcome(runs: list[RunSummary]) -> Repro:
    failing = [r for r in runs if r.first_failure is not None]
    if not failing:
        return Repro.NO_FAILURE
    if len(failing) < len(runs):
        return Repro.INTERMITTENT
    phases = {r.first_failure.get("phase") for r in failing if r.first_failure}
    if len(phases) > 1:
        return Repro.UNSTABLE_STAGE
    if len({r.failure_key for r in failing}) > 1:
        return Repro.DIFFERENT_FAILURES
    return Repro.STABLE


def _row(run: RunSummary) -> dict[str, Any]:
    first = run.first_failure or {}
    return {"run": run.name, "category": first.get("category"), "signature": first.get("signature"),
            "phase": first.get("phase"), "where": f"{first['file']}:{first['line_no']}" if first else None,
            "phase_reached": run.phase_reached}


def _command_notes(runs: list[RunSummary]) -> list[str]:
    """The runs should be of one command in one environment; say where they are not."""
    notes = []
    for label, values in (("launch arguments", [r.args for r in runs]),
                          ("environment", [r.environment for r in runs])):
        known = [v for v in values if v]
        if len(known) > 1 and any(v != known[0] for v in known[1:]):
            keys = sorted({k for v in known for k in v if any(o.get(k) != v.get(k) for o in known)})
            notes.append(f"the runs differ in their {label} ({', '.join(keys)}): not one command repeated")
    return notes

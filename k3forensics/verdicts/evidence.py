"""What the acceptance verdict and its checklist read, already decided by the other verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from k3forensics.metrics.load import LoadEvidence
from k3forensics.triage.oom import OomVerdict
from k3forensics.verdicts.agent_api import AgentApiVerdict
from k3forensics.verdicts.compatibility import Finding, environment_problems
from k3forensics.verdicts.prefix_cache import PrefixCacheVerdict

# First-failure categories that are the environment's fault (the README's list).
ENVIRONMENT_CATEGORIES = {"driver_incompatible", "cuda_arch_unsupported", "cuda_init_failed", "shm_insufficient"}
HOST_MEMORY = "container_oomkilled"


class Mark(StrEnum):
    MET = "met"
    NOT_MET = "not_met"
    NO_EVIDENCE = "no_evidence"


@dataclass
class Evidence:
    """Everything the acceptance reads."""

    first: dict[str, Any] | None
    oom: OomVerdict
    findings: list[Finding]
    load: LoadEvidence
    prefix: PrefixCacheVerdict
    agent: AgentApiVerdict
    served: bool
    recorded: dict[str, bool] = field(default_factory=dict)   # what the bundle records (checklist.recorded)

    def environment_problems(self) -> list[str]:
        problems = environment_problems(self.findings)
        if self.first is not None and self.first.get("category") in ENVIRONMENT_CATEGORIES:
            problems.append(f"{self.first['category']} at {self.first['file']}:{self.first['line_no']}: "
                            f"{str(self.first.get('line', ''))[:160]}")
        return problems

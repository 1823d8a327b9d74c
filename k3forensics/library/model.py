"""Typed signature records (built from YAML by the loader)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Role(StrEnum):
    PRIMARY = "primary"        # a root cause: CUDA/driver/NCCL/hardware/config failures
    SECONDARY = "secondary"    # usually a consequence: OOM, EngineDeadError, worker died, watchdog
    CONTEXT = "context"        # worth showing, never a failure by itself
    MILESTONE = "milestone"    # a start-up phase boundary


class Status(StrEnum):
    EXPERIMENTAL = "experimental"
    STABLE = "stable"
    DEPRECATED = "deprecated"


class Severity(StrEnum):
    CRITICAL = "critical"
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Action(StrEnum):
    REBUILD_ENVIRONMENT = "rebuild_environment"
    TUNE = "tune"
    SCALE = "scale"
    REPAIR_HARDWARE = "repair_hardware"
    FIX_CONFIG = "fix_config"
    INVESTIGATE = "investigate"


PHASES = ("container_init", "gpu_detect", "dist_init", "weight_load", "engine_init", "api_ready", "serving", "shutdown")
# Finer steps inside engine_init, used for the load-time OOM subclass.
STEPS = ("weights", "profile", "kv_cache", "cuda_graph")

CATEGORIES = (
    "driver_incompatible", "cuda_arch_unsupported", "cuda_init_failed", "cuda_illegal_access",
    "cuda_graph_capture_failed", "xid_hardware", "nccl_init_failed", "nccl_timeout", "nccl_network",
    "shm_insufficient", "oom_weight_load", "oom_kv_cache_insufficient", "oom_profile", "oom_cuda_graph",
    "oom_runtime", "oom_stale_process", "container_oomkilled", "config_error", "model_load_error",
    "engine_dead", "unknown",
)


@dataclass(frozen=True)
class Remediation:
    action: Action
    text: str
    parameter: str | None = None


@dataclass(frozen=True)
class Example:
    line: str
    fields: dict[str, Any] = field(default_factory=dict)   # e.g. {"phase": "serving"} for phase-dependent tests


@dataclass(frozen=True)
class Signature:
    id: str
    title: str
    category: str
    role: Role
    severity: Severity
    status: Status
    match: str
    condition: Any                     # the typed AST (library.condition)
    origin: str                        # file:line where the signature starts
    library: str                       # the library folder it came from
    sources: tuple[str, ...] = ()
    captures: tuple[str, ...] = ()
    phase: str | None = None           # milestones: the phase that starts at this line
    step: str | None = None            # milestones: a finer engine_init step
    causes: tuple[str, ...] = ()
    caused_by: tuple[str, ...] = ()
    causal_window_s: float = 600.0     # how far after a primary a secondary still counts as its echo
    priority: int = 0                  # several hits at one moment: the higher priority names the failure
    remediation: Remediation | None = None
    references: tuple[str, ...] = ()
    matches: tuple[Example, ...] = ()
    no_match: tuple[Example, ...] = ()
    description: str = ""

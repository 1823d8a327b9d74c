"""One run, reduced to what `diff` and `repro` compare."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from k3forensics.library.model import PHASES
from k3forensics.triage.run import TriageResult

ENVIRONMENT_KEYS = ("image", "vllm", "torch", "cuda_runtime", "driver", "driver_cuda", "nccl", "os", "kernel")
ERROR_LEVELS = ("ERROR", "CRITICAL", "FATAL")
# Variable parts of a log message, replaced to get its template (order matters: hex before numbers).
TEMPLATE_RULES = (
    (r"0x[0-9a-fA-F]+", "<hex>"),
    (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>"),
    (r"(?:/[\w.\-]+){2,}", "<path>"),
    (r"\d+(?:\.\d+)?", "<n>"),
)
MAX_TEMPLATES = 40


@dataclass
class RunSummary:
    name: str
    environment: dict[str, Any]
    args: dict[str, str]
    launch_command: str | None
    first_failure: dict[str, Any] | None
    phase_reached: str | None
    signatures: dict[str, int]
    templates: dict[str, int]
    acceptance: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def failure_key(self) -> tuple[str, str] | None:
        if self.first_failure is None:
            return None
        return (str(self.first_failure["category"]), str(self.first_failure["signature"]))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "environment": self.environment, "args": self.args,
                "first_failure": self.first_failure, "phase_reached": self.phase_reached,
                "acceptance": self.acceptance, "signatures": self.signatures, "error_templates": self.templates}


def summarize(result: TriageResult) -> RunSummary:
    env = result.environment
    environment = {k: env.get(k) for k in ENVIRONMENT_KEYS if env.get(k) is not None}
    models = sorted({str(g) for g in env.get("gpus") or []})
    if models:
        count = env.get("gpu_count")
        environment["gpus"] = (f"{count} x " if count else "") + " + ".join(models)
    first = None
    if result.first:
        first = {k: result.first.get(k) for k in ("category", "signature", "phase", "file", "line_no", "line", "node")}
    events = result.timeline.events
    return RunSummary(
        result.bundle, environment, dict(env.get("args") or {}), env.get("launch_command"), first,
        first["phase"] if first and first.get("phase") else phase_reached(events), _signature_counts(result.hits), error_templates(events),
        str(result.verdict.get("acceptance")),
    )


def phase_reached(events: pl.DataFrame) -> str | None:
    """The furthest start-up phase any line of the run reached (for a run that failed, the
    phase of its first failure is used instead: the lines after it are its echo)."""
    if events.height == 0 or "phase" not in events.columns:
        return None
    seen = set(events.get_column("phase").drop_nulls().unique().to_list())
    reached = [p for p in PHASES if p in seen]
    return reached[-1] if reached else None


def _signature_counts(hits: pl.DataFrame) -> dict[str, int]:
    if hits.height == 0:
        return {}
    counted = hits.filter(pl.col("role") != "milestone").group_by("signature").len().sort("signature")
    return {str(s): int(n) for s, n in counted.iter_rows()}


def error_templates(events: pl.DataFrame) -> dict[str, int]:
    """Messages of error lines with their variable parts replaced, and how often each occurs."""
    if events.height == 0 or "level" not in events.columns:
        return {}
    message = pl.col("message").fill_null("")
    for pattern, mark in TEMPLATE_RULES:
        message = message.str.replace_all(pattern, mark)
    counted = (
        events.filter(pl.col("level").is_in(ERROR_LEVELS))
        # a traceback counts once, by its final line (its frames would drown the other errors)
        .filter(pl.col("tb_group").is_null() | pl.col("tb_final").fill_null(False)
                if "tb_group" in events.columns and "tb_final" in events.columns else pl.lit(True))
        .select(message.str.strip_chars().str.slice(0, 200).alias("template"))
        .filter(pl.col("template") != "")
        .group_by("template").len().sort(["len", "template"], descending=[True, False]).head(MAX_TEMPLATES)
    )
    return {str(t): int(n) for t, n in counted.iter_rows()}

"""The acceptance verdict (seed 003): ready, limited, rebuild_environment, scale_resources, unknown."""

from __future__ import annotations

from typing import Any

import polars as pl

from k3forensics.timeline.ingest import Timeline
from k3forensics.triage.oom import OomVerdict

ENVIRONMENT_CATEGORIES = {"driver_incompatible", "cuda_arch_unsupported", "cuda_init_failed", "config_error",
                          "model_load_error", "shm_insufficient"}


def acceptance(first: dict[str, Any] | None, oom: OomVerdict, env: dict[str, Any], timeline: Timeline,
               hits: pl.DataFrame) -> dict[str, Any]:
    reasons: list[str] = []
    problems: list[str] = []
    if first is not None and first["category"] in ENVIRONMENT_CATEGORIES:
        problems.append(f"{first['category']} at {first['file']}:{first['line_no']}")
    if problems:
        return {"acceptance": "rebuild_environment", "reasons": problems, "environment_problems": problems}
    if oom.oom_class in ("load_time", "runtime"):
        reasons.append(f"{oom.oom_class} OOM ({oom.subclass or 'subclass unknown'})")
        return {"acceptance": "scale_resources", "reasons": reasons, "environment_problems": []}
    if first is not None:
        return {"acceptance": "unknown", "reasons": [f"{first['category']} must be fixed before acceptance"],
                "environment_problems": []}
    served = timeline.events.filter(pl.col("phase") == "serving").height > 0
    if not served:
        return {"acceptance": "unknown", "reasons": ["no served request in the bundle"], "environment_problems": []}
    return {"acceptance": "limited", "reasons": ["served requests without failure; load evidence not assessed"],
            "environment_problems": []}

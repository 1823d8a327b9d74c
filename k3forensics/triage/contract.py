"""The JSON contract of `k3forensics triage --format json` (PRODUCT.md): keys kept stable."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import polars as pl

from k3forensics.triage.run import TriageResult

SCHEMA = "k3forensics.triage/1"


def _iso(value: object) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def hit_dict(hit: dict[str, Any], caused_by: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "category": hit["category"],
        "signature": hit["signature"],
        "file": hit["file"],
        "line_no": hit["line_no"],
        "line": hit["line"],
        "timestamp": _iso(hit.get("ts")),
        "phase": hit.get("phase"),
        "node": hit.get("node"),
        "role": hit.get("role"),
    }
    if hit.get("captures"):
        import json

        out["captures"] = {k: v for k, v in json.loads(hit["captures"]).items() if v is not None}
    if caused_by:
        out["caused_by"] = caused_by
    return out


def phases(result: TriageResult) -> list[dict[str, Any]]:
    events = result.timeline.events
    firsts = (
        events.filter(pl.col("milestone").is_not_null())
        .sort("ts_order", "seq", nulls_last=True)
        .unique(subset=["node", "milestone"], keep="first", maintain_order=True)
    )
    return [
        {"phase": r["milestone"], "node": r["node"], "file": r["file"], "first_line_no": r["line_no"],
         "timestamp": _iso(r["ts"])}
        for r in firsts.iter_rows(named=True)
    ]


def to_contract(result: TriageResult) -> dict[str, Any]:
    files = result.timeline.files
    return {
        "schema": SCHEMA,
        "bundle": result.bundle,
        "first_failure": hit_dict(result.first) if result.first else None,
        "secondary": [hit_dict(h, "first_failure") for h in result.cascade],
        "later_failures": [hit_dict(h) for h in result.later],
        "oom": {"class": result.oom.oom_class, "subclass": result.oom.subclass, "evidence": result.oom.evidence},
        "next_step": result.next_step.to_dict(),
        "phases": phases(result),
        "environment": result.environment,
        "verdict": {k: v for k, v in result.verdict.items() if k != "environment_problems"},
        "counts": {
            "files": files.height,
            "lines": int(files.get_column("line_count").sum()) if files.height else 0,
            "unparsed": int(files.get_column("unparsed_count").sum()) if files.height else 0,
            "hits": result.hits.height,
        },
        "notes": result.notes,
    }

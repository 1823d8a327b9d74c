"""The reproduction record ("freeze the failure scene"): each item found, with where, or missing.

The checklist is the seed's list of what to save before touching anything: host OS and
kernel, nvidia-smi, the full image tag, vLLM / PyTorch / CUDA runtime versions,
CUDA_VISIBLE_DEVICES, the full launch command, the first abnormal stack, the request used,
and what was changed when. A missing item names the command that collects it, so the
ticket says what to fetch next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import polars as pl

READY_PHASES = ("api_ready", "serving", "shutdown")
STACK_LINES = 40


class Status(StrEnum):
    FOUND = "found"
    MISSING = "missing"
    NOT_NEEDED = "not needed"


@dataclass(frozen=True)
class RecordItem:
    key: str
    label: str
    status: Status
    value: str | None = None
    where: list[str] = field(default_factory=list)
    note: str | None = None
    collect: str | None = None   # how to collect it when missing (or incomplete)


# key, label, fact keys, per-node item, how to collect it
FACT_ITEMS: tuple[tuple[str, str, tuple[str, ...], bool, str], ...] = (
    ("host_os", "Host OS and kernel", ("os", "kernel"), True, "cat /etc/os-release; uname -r (every node)"),
    ("image", "Container image (full tag)", ("image",), False,
     "docker image inspect IMAGE --format '{{index .RepoDigests 0}}'"),
    ("vllm", "vLLM version", ("vllm_version",), False, "python -m vllm.collect_env (inside the container)"),
    ("torch", "PyTorch version", ("torch_version",), False, "python -m vllm.collect_env (inside the container)"),
    ("cuda_runtime", "CUDA runtime version", ("cuda_runtime",), False,
     "python -c 'import torch; print(torch.version.cuda)' (inside the container)"),
    ("cuda_visible_devices", "CUDA_VISIBLE_DEVICES", ("cuda_visible_devices",), True,
     "echo \"$CUDA_VISIBLE_DEVICES\" inside the container (every node)"),
    ("launch_command", "Full launch command", ("launch_command",), True,
     "the exact docker run / vllm serve line, or: docker inspect CONTAINER --format '{{.Config.Cmd}}'"),
)


def reproduction_record(timeline: Any, first: dict[str, Any] | None) -> list[RecordItem]:
    """`timeline` is a `Timeline` (events, facts, files, nodes frames)."""
    facts, files, events = timeline.facts, timeline.files, timeline.events
    nodes = sorted(timeline.nodes.get_column("node").to_list()) if timeline.nodes.height else []
    items = [_fact_item(facts, nodes, *spec) for spec in FACT_ITEMS[:1]]
    items.append(_nvidia_smi(files, facts, nodes))
    items += [_fact_item(facts, nodes, *spec) for spec in FACT_ITEMS[1:]]
    items.append(_first_stack(events, first))
    items.append(_request(files, first))
    items.append(_changes(files))
    return items


def _where(rows: pl.DataFrame) -> list[str]:
    firsts = rows.sort("node", "file", "line_no").unique(subset=["node"], keep="first", maintain_order=True)
    return [f"{f}:{n}" if n is not None else str(f) for f, n in firsts.select("file", "line_no").iter_rows()]


def _fact_item(facts: pl.DataFrame, nodes: list[str], key: str, label: str, names: tuple[str, ...],
               per_node: bool, collect: str) -> RecordItem:
    rows = facts.filter(pl.col("key").is_in(list(names)) & pl.col("value").is_not_null()) if facts.height else facts
    if rows.height == 0:
        return RecordItem(key, label, Status.MISSING, collect=collect)
    value = " ".join(v for v in (_first_value(rows, n) for n in names) if v)
    distinct = rows.filter(pl.col("key") == names[0]).get_column("value").unique(maintain_order=True).to_list()
    note = None
    if len(distinct) > 1:
        value, note = " | ".join(distinct[:4]), "differs across nodes or files"
    absent = [n for n in nodes if n not in set(rows.get_column("node").to_list())] if per_node else []
    if absent and len(nodes) > 1:
        note = _join(note, "missing on " + ", ".join(absent))
    missing_parts = [n for n in names if rows.filter(pl.col("key") == n).height == 0]
    if missing_parts:
        note = _join(note, "no " + ", ".join(missing_parts))
    if key == "image":
        note = _join(note, _image_note(value))
    incomplete = bool(absent and len(nodes) > 1) or bool(missing_parts) or (key == "image" and note is not None)
    return RecordItem(key, label, Status.FOUND, value, _where(rows), note, collect if incomplete else None)


def _first_value(rows: pl.DataFrame, name: str) -> str | None:
    match = rows.filter(pl.col("key") == name)
    return str(match.get_column("value").first()) if match.height else None


def _join(a: str | None, b: str | None) -> str | None:
    return "; ".join(x for x in (a, b) if x) or None


def _image_note(image: str) -> str | None:
    name = image.rsplit("/", 1)[-1]
    if "@sha256:" in image:
        return None
    if ":" not in name:
        return "no tag: record the digest"
    if name.endswith(":latest"):
        return "`latest` is not a version: record the digest"
    return None


def _nvidia_smi(files: pl.DataFrame, facts: pl.DataFrame, nodes: list[str]) -> RecordItem:
    collect = "nvidia-smi; nvidia-smi -q (on every node, and once inside the container)"
    smi = files.filter(pl.col("detected_type") == "nvidia_smi") if files.height else files
    if smi.height == 0:
        return RecordItem("nvidia_smi", "nvidia-smi output", Status.MISSING, collect=collect)
    driver = facts.filter(pl.col("key").is_in(["driver_version", "driver_cuda"])) if facts.height else facts
    value = ", ".join(f"{k} {v}" for k, v in driver.unique(subset=["key"], keep="first", maintain_order=True)
                      .select("key", "value").iter_rows()) or None
    absent = [n for n in nodes if n not in set(smi.get_column("node").to_list())]
    note = "missing on " + ", ".join(absent) if absent and len(nodes) > 1 else None
    return RecordItem("nvidia_smi", "nvidia-smi output", Status.FOUND, value, smi.get_column("file").to_list(),
                      note, collect if note else None)


def _first_stack(events: pl.DataFrame, first: dict[str, Any] | None) -> RecordItem:
    label = "First abnormal stack"
    if first is None:
        return RecordItem("first_stack", label, Status.NOT_NEEDED, note="nothing failed in this bundle")
    lines = stack_lines(events, first)
    if lines.height == 0:
        return RecordItem("first_stack", label, Status.MISSING,
                          note=f"the first failure ({first['file']}:{first['line_no']}) has no traceback with it",
                          collect="the full stderr of the failing process, from its start (docker logs CONTAINER)")
    numbers = lines.get_column("line_no").to_list()
    lo, hi = min(numbers), max(numbers)
    return RecordItem("first_stack", label, Status.FOUND, f"{lines.height} lines", [f"{first['file']}:{lo}-{hi}"])


def stack_lines(events: pl.DataFrame, first: dict[str, Any], limit: int = STACK_LINES) -> pl.DataFrame:
    """The traceback the first failure belongs to (its `tb_group`), at most `limit` lines (the last ones)."""
    group = first.get("tb_group")
    if group is None or "tb_group" not in events.columns:
        return events.clear().select("line_no", "line")
    rows = events.filter((pl.col("tb_group") == group) & (pl.col("file") == first["file"])).sort("line_no")
    return rows.select("line_no", "line").tail(limit)


def _request(files: pl.DataFrame, first: dict[str, Any] | None) -> RecordItem:
    label = "Request used"
    captures = files.filter(pl.col("detected_type") == "api_capture") if files.height else files
    if captures.height:
        count = int(captures.get_column("line_count").sum())
        return RecordItem("request", label, Status.FOUND, f"{count} captured lines",
                          captures.get_column("file").to_list())
    if first is not None and first.get("phase") not in READY_PHASES:
        return RecordItem("request", label, Status.NOT_NEEDED,
                          note="the engine failed before the API server was ready")
    return RecordItem("request", label, Status.MISSING,
                      collect="the request body that triggered it (JSON, with max_tokens), one per line")


def _changes(files: pl.DataFrame) -> RecordItem:
    label = "Changes made (what, when)"
    named = files.filter(pl.col("file").str.to_lowercase().str.contains(r"change|history")) if files.height else files
    if named.height:
        return RecordItem("changes", label, Status.FOUND, None, named.get_column("file").to_list())
    return RecordItem("changes", label, Status.MISSING,
                      collect="a CHANGES.txt: each change (driver, image, flags) with its time, one per line")

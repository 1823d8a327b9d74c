"""The report model: everything a report shows, gathered once from a triage result.

Renderers read only this model, and `privacy.protect` rewrites the whole model before any
renderer sees it, so no renderer can emit a string that skipped redaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from k3forensics import __version__
from k3forensics.library.model import PHASES
from k3forensics.report import series as metric_series
from k3forensics.report.repro import RecordItem, reproduction_record, stack_lines
from k3forensics.timeline.digest import CONTEXT_LINES

if TYPE_CHECKING:
    from k3forensics.triage.run import TriageResult

MAX_TABLE_EVENTS = 2000
MAX_EVIDENCE = 16
MARKS_PER_LANE = 4000
# Document sources have no useful time of their own (metrics are drawn as curves instead).
NO_LANE_TYPES = ("prometheus", "nvidia_smi", "collect_env", "launch")
LANE_GROUP = {"api_capture": "requests", "kubectl": "k8s", "traceback": "vllm", "pytorch": "vllm"}
ERROR_LEVELS = ("ERROR", "CRITICAL", "FATAL", "PANIC")
KIND_RANK = {"first": 0, "cascade": 1, "failure": 2, "milestone": 3, "error": 4, "context": 5, "warning": 6,
             "near": 7}


@dataclass(frozen=True)
class PhaseSpan:
    node: str
    phase: str
    start: datetime | None
    end: datetime | None
    where: str


@dataclass(frozen=True)
class Evidence:
    label: str
    hit: dict[str, Any]
    lines: list[tuple[int, str, bool]]   # (line_no, text, is the hit line)


@dataclass
class Report:
    bundle: str
    contract: dict[str, Any]
    first: dict[str, Any] | None
    cascade: list[dict[str, Any]]
    later: list[dict[str, Any]]
    phases: list[PhaseSpan]
    record: list[RecordItem]
    evidence: list[Evidence]
    stack: list[tuple[int, str]]
    environment: list[tuple[str, str]]
    events: pl.DataFrame     # the event table (at most MAX_TABLE_EVENTS rows)
    marks: pl.DataFrame      # picture: lane, node, t, kind
    series: pl.DataFrame     # picture: panel, series, node, t, value
    version: str = __version__
    privacy: str = "not redacted"
    names: dict[str, list[str]] = field(default_factory=dict)   # hosts/pods to anonymize (never rendered)


def build_report(result: TriageResult) -> Report:
    from k3forensics.triage.contract import to_contract

    timeline = result.timeline
    lanes = _lane_of_files(timeline.files)
    first = _hit(result.first, "first", lanes) if result.first else None
    cascade = [_hit(h, "cascade", lanes) for h in result.cascade]
    later = [_hit(h, "failure", lanes) for h in result.later]
    contract = to_contract(result)
    events = timeline.events
    return Report(
        bundle=result.bundle,
        contract=contract,
        first=first,
        cascade=cascade,
        later=later,
        phases=phase_spans(contract["phases"], timeline.nodes),
        record=reproduction_record(timeline, result.first),
        evidence=_evidence(events, [h for h in [first] if h] + cascade + later),
        stack=list(stack_lines(events, result.first).iter_rows()) if result.first else [],
        environment=environment_rows(contract["environment"]),
        events=event_table(events, result.hits, result.first, result.cascade),
        marks=_marks(events, lanes),
        series=metric_series.curves(timeline.samples, result.hits),
        names=_names(timeline),
    )


def _hit(hit: dict[str, Any], kind: str, lanes: dict[str, str]) -> dict[str, Any]:
    keys = ("category", "signature", "title", "file", "line_no", "line", "phase", "node", "seq", "tb_group")
    out = {k: hit.get(k) for k in keys}
    out["kind"] = kind
    out["t"] = hit.get("ts_order")
    out["timestamp"] = hit["ts"].isoformat() if isinstance(hit.get("ts"), datetime) else None
    out["lane"] = lanes.get(str(hit.get("file")), str(hit.get("node")))
    return out


def _lane_of_files(files: pl.DataFrame) -> dict[str, str]:
    """A lane per node, split by source type when a node has several kinds of timed logs."""
    if files.height == 0:
        return {}
    typed = files.select("file", "node", pl.col("detected_type").replace(LANE_GROUP).alias("group"))
    groups = typed.filter(~pl.col("group").is_in(NO_LANE_TYPES)).group_by("node").agg(pl.col("group").n_unique())
    split = {n for n, count in groups.iter_rows() if count > 1}
    return {f: (f"{n} · {g}" if n in split else n) for f, n, g in typed.iter_rows() if g not in NO_LANE_TYPES}


def phase_spans(phases: list[dict[str, Any]], nodes: pl.DataFrame) -> list[PhaseSpan]:
    """Per node, each phase from its first milestone until the next one (the last until the node's last line).

    Milestones at the same second keep start-up order; an untimed milestone is listed without a span.
    """
    last = {n: t for n, t in nodes.select("node", "last_ts").iter_rows()} if nodes.height else {}
    rank = {p: i for i, p in enumerate(PHASES)}
    spans: list[PhaseSpan] = []
    by_node: dict[str, list[dict[str, Any]]] = {}
    for row in phases:
        by_node.setdefault(row["node"], []).append(row)
    for node, rows in sorted(by_node.items()):
        timed = sorted((r for r in rows if r["timestamp"]),
                       key=lambda r: (r["timestamp"], rank.get(r["phase"], 99), r["first_line_no"]))
        for i, row in enumerate(timed):
            end = _parse(timed[i + 1]["timestamp"]) if i + 1 < len(timed) else last.get(node)
            spans.append(PhaseSpan(node, row["phase"], _parse(row["timestamp"]), end,
                                   f"{row['file']}:{row['first_line_no']}"))
        spans += [PhaseSpan(node, r["phase"], None, None, f"{r['file']}:{r['first_line_no']}")
                  for r in rows if not r["timestamp"]]
    return spans


def _parse(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _evidence(events: pl.DataFrame, hits: list[dict[str, Any]]) -> list[Evidence]:
    out: list[Evidence] = []
    labels = {"first": "first failure", "cascade": "cascade", "failure": "later failure"}
    for hit in hits[:MAX_EVIDENCE]:
        n = int(hit["line_no"])
        rows = events.filter((pl.col("file") == hit["file"]) & pl.col("line_no").is_between(
            n - CONTEXT_LINES, n + CONTEXT_LINES)).sort("line_no")
        lines = [(int(no), str(text), int(no) == n) for no, text in rows.select("line_no", "line").iter_rows()]
        out.append(Evidence(labels[hit["kind"]], hit, lines))
    return out


def environment_rows(env: dict[str, Any]) -> list[tuple[str, str]]:
    labels = {
        "vllm": "vLLM", "torch": "PyTorch", "cuda_runtime": "CUDA runtime", "driver": "Driver",
        "driver_cuda": "Driver CUDA", "nccl": "NCCL", "image": "Image", "os": "OS", "kernel": "Kernel",
        "cuda_visible_devices": "CUDA_VISIBLE_DEVICES",
    }
    rows = [(label, str(env[key])) for key, label in labels.items() if env.get(key)]
    gpus = env.get("gpus") or []
    if gpus:
        counts = pl.Series(gpus).value_counts(sort=True)
        rows.append(("GPUs", ", ".join(f"{c} × {g}" for g, c in counts.iter_rows())))
    args = env.get("args") or {}
    if args:
        rows.append(("Engine args", " ".join(f"{k}={v}" for k, v in sorted(args.items()))))
    rows += _node_differences(env.get("nodes") or {})
    return rows


def _node_differences(nodes: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """Keys whose value differs between nodes: the per-node consistency the baseline asks for."""
    if len(nodes) < 2:
        return []
    watched = ("vllm_version", "torch_version", "cuda_runtime", "driver_version", "image", "nccl_version",
               "gpu_model", "os", "kernel")
    out = []
    for key in watched:
        values = {n: str(v.get(key)) for n, v in nodes.items() if v.get(key) is not None}
        if len(set(values.values())) > 1:
            out.append((f"{key} differs", ", ".join(f"{n}={v}" for n, v in sorted(values.items()))))
    return out


def event_table(events: pl.DataFrame, hits: pl.DataFrame, first: dict[str, Any] | None,
                cascade: list[dict[str, Any]]) -> pl.DataFrame:
    """The relevant events: failures, milestones, errors, warnings, context around the first failure."""
    kind = pl.lit(None, pl.Utf8)
    failure_seqs = hits.filter(pl.col("role").is_in(["primary", "secondary"])).get_column("seq") \
        if hits.height else pl.Series([], dtype=pl.Int64)
    context_seqs = hits.filter(pl.col("role") == "context").get_column("seq") if hits.height else failure_seqs
    level = pl.col("level").str.to_uppercase()
    kind = (
        pl.when(pl.col("seq") == (first["seq"] if first else -1)).then(pl.lit("first"))
        .when(pl.col("seq").is_in([h["seq"] for h in cascade])).then(pl.lit("cascade"))
        .when(pl.col("seq").is_in(failure_seqs.implode())).then(pl.lit("failure"))
        .when(pl.col("milestone").is_not_null()).then(pl.lit("milestone"))
        .when(level.is_in(ERROR_LEVELS)).then(pl.lit("error"))
        .when(pl.col("seq").is_in(context_seqs.implode())).then(pl.lit("context"))
        .when(level.str.starts_with("WARN")).then(pl.lit("warning"))
    )
    if first is not None:
        near = (pl.col("file") == first["file"]) & (pl.col("line_no") - first["line_no"]).abs().le(CONTEXT_LINES)
        kind = pl.when(kind.is_null() & near).then(pl.lit("near")).otherwise(kind)
    anchor = first["seq"] if first else 0
    picked = (
        events.with_columns(kind.alias("kind"))
        .filter(pl.col("kind").is_not_null())
        .with_columns(pl.col("kind").replace_strict(KIND_RANK).alias("_rank"),
                      (pl.col("seq") - anchor).abs().alias("_dist"))
        .sort("_rank", "_dist").head(MAX_TABLE_EVENTS)
        .sort("ts_order", "seq", nulls_last=True)
    )
    return picked.select(
        "seq",
        pl.col("ts").dt.strftime("%Y-%m-%d %H:%M:%S%.3f").fill_null("").alias("time"),
        "node", "source", "file", "line_no",
        pl.col("level").fill_null(""), pl.col("phase").fill_null(""), "kind",
        pl.col("line").fill_null("").alias("text"),
    )


def _marks(events: pl.DataFrame, lanes: dict[str, str]) -> pl.DataFrame:
    """Every timed log line as a tick on its lane (sampled to MARKS_PER_LANE), with its level as kind."""
    level = pl.col("level").str.to_uppercase()
    kind = (pl.when(level.is_in(ERROR_LEVELS)).then(pl.lit("error"))
            .when(level.str.starts_with("WARN")).then(pl.lit("warning"))
            .when(pl.col("milestone").is_not_null()).then(pl.lit("milestone"))
            .otherwise(pl.lit("event")))
    timed = events.filter(pl.col("ts_order").is_not_null() & pl.col("file").is_in(list(lanes))).select(
        pl.col("file").replace_strict(lanes, default=None).alias("lane"), "node",
        pl.col("ts_order").alias("t"), kind.alias("kind"), "seq",
    ).filter(pl.col("lane").is_not_null())
    keep = (pl.col("kind") != "event") | (
        pl.int_range(pl.len()).over("lane") % (pl.len().over("lane") // MARKS_PER_LANE + 1) == 0)
    return timed.filter(keep)


def _names(timeline: Any) -> dict[str, list[str]]:
    """Host and pod names the bundle reveals, for anonymization."""
    facts = timeline.facts
    nodes = timeline.nodes
    hosts: dict[str, list[str]] = {}
    if nodes.height:
        for node, names in nodes.select("node", "hostnames").iter_rows():
            hosts.setdefault(f"node:{node}", []).extend(names or [])
    if facts.height:
        from k3forensics.report.redact import HOST_FACTS, POD_FACTS

        for node, key, value in facts.filter(pl.col("key").is_in([*HOST_FACTS, *POD_FACTS])).select(
                "node", "key", "value").iter_rows():
            bucket = f"node:{node}" if key in HOST_FACTS else "pods"
            hosts.setdefault(bucket, []).append(str(value).split("/")[0])
    return hosts

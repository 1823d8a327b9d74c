"""Compare a bundle's environment facts with its model's baseline.

Each requirement gives findings: `met` (with the line that proves it), `deviation` (one per
node and deviating value, with its line) or `no_evidence` (the bundle does not record the
fact). Environment-kind deviations make the acceptance `rebuild_environment`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import polars as pl

from k3forensics.verdicts.baseline import Baseline, Kind, Requirement, version_tuple

MODEL_FACTS = ("arg.model", "arg.served_model_name", "image")


@dataclass(frozen=True)
class Finding:
    requirement: str
    kind: str
    status: str                 # met | deviation | no_evidence
    text: str
    found: str | None = None
    node: str | None = None
    file: str | None = None
    line_no: int | None = None
    line: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def summary(self) -> str:
        where = f" ({self.file}:{self.line_no})" if self.file else ""
        found = f"{self.found}" if self.found else "not recorded"
        node = f" on {self.node}" if self.node else ""
        return f"{self.requirement}: {found}{node}, expected {self.text}{where}"


def model_names(facts: pl.DataFrame) -> list[str]:
    if facts.height == 0:
        return []
    return facts.filter(pl.col("key").is_in(MODEL_FACTS)).get_column("value").drop_nulls().to_list()


def evaluate(baseline: Baseline, facts: pl.DataFrame, events: pl.DataFrame) -> list[Finding]:
    rows = _with_lines(facts, events)
    nodes = sorted(set(rows.get_column("node").drop_nulls().to_list())) if rows.height else []
    out: list[Finding] = []
    for req in baseline.requirements:
        if req.same_on_every_node:
            out += _same_everywhere(req, rows, nodes)
        elif req.gpu_models:
            out += _gpus(req, rows)
        else:
            out += _fact_check(req, rows)
    return out


def _with_lines(facts: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Facts with the raw line each came from (`line`), for the evidence of a finding."""
    schema = {"node": pl.Utf8, "file": pl.Utf8, "line_no": pl.Int64, "key": pl.Utf8, "value": pl.Utf8}
    if facts.height == 0:
        return pl.DataFrame(schema={**schema, "line": pl.Utf8})
    facts = facts.select(list(schema)).cast(schema)  # type: ignore[arg-type]
    if events.height == 0 or "line" not in events.columns:
        return facts.with_columns(pl.lit(None, pl.Utf8).alias("line"))
    lines = events.select(pl.col("file").cast(pl.Utf8), pl.col("line_no").cast(pl.Int64), "line").unique(
        subset=["file", "line_no"])
    return facts.join(lines, on=["file", "line_no"], how="left")


def _finding(req: Requirement, status: str, row: dict[str, object] | None = None) -> Finding:
    row = row or {}
    return Finding(req.id, req.kind.value, status, req.text, _s(row.get("value")), _s(row.get("node")),
                   _s(row.get("file")), row.get("line_no"), _s(row.get("line")))  # type: ignore[arg-type]


def _s(value: object) -> str | None:
    return None if value is None else str(value)


def _fact_check(req: Requirement, rows: pl.DataFrame) -> list[Finding]:
    candidates = rows.filter(pl.col("key") == req.fact).drop_nulls("value")
    checked = [(r, _passes(req, str(r["value"]))) for r in candidates.iter_rows(named=True)]
    checked = [(r, ok) for r, ok in checked if ok is not None]
    if not checked:
        return [_finding(req, "no_evidence")]
    bad: dict[tuple[object, object], dict[str, object]] = {}
    for row, ok in checked:
        if not ok:
            bad.setdefault((row["node"], row["value"]), row)
    if bad:
        return [_finding(req, "deviation", row) for row in bad.values()]
    return [_finding(req, "met", checked[0][0])]


def _passes(req: Requirement, value: str) -> bool | None:
    """True / False, or None when the value cannot be judged (no version number in it)."""
    if req.matches is not None:
        return re.search(req.matches, value) is not None
    found = version_tuple(value)
    if found is None:
        return None
    low = version_tuple(req.version_at_least) if req.version_at_least else None
    high = version_tuple(req.version_below) if req.version_below else None
    return (low is None or found >= low) and (high is None or found < high)


def _same_everywhere(req: Requirement, rows: pl.DataFrame, nodes: list[str]) -> list[Finding]:
    recorded = rows.filter(pl.col("key") == req.same_on_every_node).drop_nulls("value")
    firsts = recorded.unique(subset=["node", "value"], keep="first", maintain_order=True)
    by_node = firsts.unique(subset=["node"], keep="first", maintain_order=True)
    if firsts.height == 0 or (by_node.height < 2 and len(nodes) > 1):
        return [_finding(req, "no_evidence")]
    if firsts.get_column("value").n_unique() > 1:
        return [_finding(req, "deviation", r) for r in firsts.iter_rows(named=True)]
    return [_finding(req, "met", firsts.row(0, named=True))]


def _gpus(req: Requirement, rows: pl.DataFrame) -> list[Finding]:
    models = rows.filter(pl.col("key") == "gpu_model").drop_nulls("value")
    if models.height == 0:
        return [_finding(req, "no_evidence")]
    allowed = [m.lower() for m in req.gpu_models]
    ok = pl.col("value").str.to_lowercase().map_elements(
        lambda v: any(a in v for a in allowed), return_dtype=pl.Boolean)
    marked = models.with_columns(ok.alias("ok"))
    out = [_finding(req, "deviation", r) for r in
           marked.filter(~pl.col("ok")).unique(subset=["node", "value"], keep="first", maintain_order=True)
           .iter_rows(named=True)]
    good = _count_per_node(marked.filter(pl.col("ok")), rows)
    if req.min_gpus and sum(good.values()) < req.min_gpus and not out:
        first = marked.row(0, named=True)
        out.append(_finding(req, "deviation", {**first, "value": f"{sum(good.values())} x {first['value']}"}))
    return out or [_finding(req, "met", marked.row(0, named=True))]


def _count_per_node(models: pl.DataFrame, rows: pl.DataFrame) -> dict[str, int]:
    """GPUs per node: the `gpu_count` fact, else the most GPU lines one file lists (nvidia-smi
    and collect_env list the same GPUs: they are not added up)."""
    counts: dict[str, int] = {}
    per_file = models.group_by("node", "file").agg(pl.len().alias("n"))
    for node, _file, n in per_file.iter_rows():
        counts[node] = max(counts.get(node, 0), int(n))
    declared = rows.filter(pl.col("key") == "gpu_count").with_columns(
        pl.col("value").cast(pl.Int64, strict=False).alias("n")).drop_nulls("n")
    for node, n in declared.group_by("node").agg(pl.col("n").max()).iter_rows():
        if node in counts:
            counts[node] = max(counts[node], int(n))
    return counts


def environment_problems(findings: list[Finding]) -> list[str]:
    return [f.summary() for f in findings if f.status == "deviation" and f.kind == Kind.ENVIRONMENT.value]


def resource_deviations(findings: list[Finding]) -> list[str]:
    return [f.summary() for f in findings if f.status == "deviation" and f.kind == Kind.RESOURCES.value]

"""The incident ticket: Markdown for GitHub/GitLab issues, and Jira wiki markup.

Short on purpose (well under 150 lines): the first failure with its raw line, the cascade,
the OOM class, the next step, the verdict, phases per node, the environment and the
reproduction record. The HTML report carries everything else.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from k3forensics.library.model import PHASES
from k3forensics.report.markup import Jira, Markdown
from k3forensics.report.model import PhaseSpan, Report
from k3forensics.report.repro import Status

MAX_CASCADE, MAX_LATER, MAX_EVIDENCE, MAX_REASONS = 8, 3, 5, 5
MAX_NODES, MAX_STACK, MAX_ENV = 16, 15, 16


def to_markdown(report: Report) -> str:
    return "\n".join(ticket_lines(report, Markdown())) + "\n"


def to_jira(report: Report) -> str:
    return "\n".join(ticket_lines(report, Jira())) + "\n"


def ticket_lines(report: Report, d: Markdown) -> list[str]:
    out = _header(report, d)
    out += _first(report, d)
    out += _cascade(report, d)
    out += _diagnosis(report, d)
    out += _phases(report.phases, d)
    out += _environment(report, d)
    out += _record(report, d)
    out += ["", d.small(d.esc(f"k3forensics {report.version} · {report.privacy} · "
                              "picture: k3forensics report BUNDLE --format png"))]
    return out


def _header(report: Report, d: Markdown) -> list[str]:
    first = report.first
    if first:
        title = f"First failure: {d.code(first['category'])} on {d.code(first['node'])} (phase {d.code(first['phase'])})"
    else:
        title = "No failure found"
    counts = report.contract.get("counts", {})
    nodes = len({p.node for p in report.phases}) or "?"
    facts = (f"{d.bold('Bundle')} {d.code(report.bundle)} · {counts.get('files', 0)} files · "
             f"{counts.get('lines', 0):,} lines ({counts.get('unparsed', 0):,} unparsed) · {nodes} node(s)")
    return [d.h(2, "k3forensics — " + title), "", facts]


def _where(hit: dict[str, Any], d: Markdown) -> str:
    return d.code(f"{hit['file']}:{hit['line_no']}")


def _first(report: Report, d: Markdown) -> list[str]:
    first = report.first
    if not first:
        return []
    out = ["", d.h(3, "First failure"),
           f"{d.code(first['category'])} — {d.esc(first.get('title') or '')} (signature {d.code(first['signature'])})",
           f"at {_where(first, d)} · node {d.code(first['node'])} · phase {d.code(first['phase'])}"
           + (f" · {d.code(first['timestamp'])}" if first.get("timestamp") else ""), ""]
    out += d.block([str(first["line"])])
    if report.stack:
        lines = [text for _, text in report.stack[-MAX_STACK:]]
        lo, hi = report.stack[0][0], report.stack[-1][0]
        out += ["", *d.details((f"First abnormal stack ({first['file']}:{lo}-{hi}, last {len(lines)} lines)"),
                                lines)]
    return out


def _delta(hit: dict[str, Any], first: dict[str, Any] | None) -> str:
    a, b = hit.get("t"), (first or {}).get("t")
    if isinstance(a, datetime) and isinstance(b, datetime):
        return f", {(a - b).total_seconds():+.1f} s"
    return ""


def _cascade(report: Report, d: Markdown) -> list[str]:
    out: list[str] = []
    if report.cascade:
        out += ["", d.h(3, f"Cascade ({len(report.cascade)}, caused by the first failure)")]
        out += [d.bullet(f"{d.code(h['category'])} at {_where(h, d)} (node {d.code(h['node'])}"
                         f"{_delta(h, report.first)}): {d.code(h['line'], 100)}") for h in report.cascade[:MAX_CASCADE]]
        if len(report.cascade) > MAX_CASCADE:
            out.append(d.bullet(d.esc(f"… {len(report.cascade) - MAX_CASCADE} more in the HTML report")))
    if report.later:
        out += ["", d.bold("Later, unrelated failures:")]
        out += [d.bullet(f"{d.code(h['category'])} at {_where(h, d)}") for h in report.later[:MAX_LATER]]
    return out


def _diagnosis(report: Report, d: Markdown) -> list[str]:
    oom = report.contract["oom"]
    step = report.contract["next_step"]
    verdict = report.contract["verdict"]
    oom_title = oom["class"] + (f" / {oom['subclass']}" if oom.get("subclass") else "")
    out = ["", d.h(3, "OOM class: " + d.code(oom_title))]
    out += [d.bullet(d.esc(e)) for e in oom.get("evidence", [])[:MAX_EVIDENCE]]
    param = f" {d.code(step['parameter'])}" if step.get("parameter") else ""
    out += ["", d.h(3, f"Next step: {d.code(step['action'])}{param}"), d.esc(step.get("text") or "")]
    if step.get("why"):
        out += ["", d.esc("Why: " + step["why"])]
    out += ["", d.h(3, "Acceptance: " + d.code(verdict.get("acceptance", "unknown")))]
    out += [d.bullet(d.esc(r)) for r in verdict.get("reasons", [])[:MAX_REASONS]]
    return out


def _clock(t: datetime | None, with_date: bool) -> str:
    if t is None:
        return "?"
    return t.strftime("%m-%d %H:%M:%S" if with_date else "%H:%M:%S")


def _phases(phases: list[PhaseSpan], d: Markdown) -> list[str]:
    if not phases:
        return ["", d.h(3, "Phase timeline"), d.esc("No start-up milestones were recognised in this bundle.")]
    days = {p.start.date() for p in phases if p.start}
    by_node: dict[str, list[PhaseSpan]] = {}
    for p in phases:
        by_node.setdefault(p.node, []).append(p)
    rank = {p: i for i, p in enumerate(PHASES)}
    rows = [[d.code(node), d.esc(" → ".join(f"{p.phase} {_clock(p.start, len(days) > 1)}" for p in spans)),
             d.code(max((p.phase for p in spans), key=lambda p: rank.get(p, -1)))]
            for node, spans in list(by_node.items())[:MAX_NODES]]
    out = ["", d.h(3, "Phase timeline (UTC)"), *d.table(["node", "phases (start)", "reached"], rows)]
    if len(by_node) > MAX_NODES:
        out.append(d.esc(f"… {len(by_node) - MAX_NODES} more nodes in the HTML report"))
    return out


def _environment(report: Report, d: Markdown) -> list[str]:
    if not report.environment:
        return ["", d.h(3, "Environment"), d.esc("No environment facts found (collect_env, nvidia-smi, launch).")]
    rows = [[d.esc(k), d.code(v, 200)] for k, v in report.environment[:MAX_ENV]]
    return ["", d.h(3, "Environment"), *d.table(["", "value"], rows)]


def _record(report: Report, d: Markdown) -> list[str]:
    rows = []
    for item in report.record:
        if item.status is Status.FOUND:
            status = "found" + (f": {d.code(item.value, 80)}" if item.value else "")
        elif item.status is Status.MISSING:
            status = d.bold("missing from the bundle")
        else:
            status = "not needed"
        where = ", ".join(d.code(w) for w in item.where[:3])
        extra = " · ".join(x for x in (d.esc(item.note) if item.note else "",
                                        ("collect: " + d.code(item.collect)) if item.collect else "") if x)
        rows.append([d.esc(item.label), status, " · ".join(x for x in (where, extra) if x)])
    return ["", d.h(3, "Reproduction record (freeze the failure scene)"),
            *d.table(["item", "status", "where / what to collect next"], rows)]

"""The terminal summary of a triage: short, checkable, safe to paste into a ticket."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from k3forensics.cli.common import safe
from k3forensics.triage.run import TriageResult


def _where(hit: dict[str, object]) -> str:
    ts = hit.get("ts")
    when = f" at {ts.isoformat()}" if hasattr(ts, "isoformat") else ""
    return f"{hit['file']}:{hit['line_no']} (node {hit.get('node')}, phase {hit.get('phase')}{when})"


def render_triage(result: TriageResult, out: Console) -> None:
    files = result.timeline.files
    lines = int(files.get_column("line_count").sum()) if files.height else 0
    out.print(safe(f"bundle: {result.bundle}  ({files.height} files, {lines:,} lines, "
                   f"{result.timeline.nodes.height} node(s))"))
    first = result.first
    if first is None:
        out.print(Text("first failure: none found", style="bold green"))
    else:
        title = Text("first failure: ", style="bold red")
        title.append(safe(f"{first['category']}  [{first['signature']}]"))
        out.print(title)
        out.print(safe(f"  {_where(first)}"))
        out.print(Text("  > ", style="dim") + safe(first["line"]))
    if result.cascade:
        out.print(Text("cascade (caused by the first failure):", style="bold"))
        for hit in result.cascade[:10]:
            out.print(safe(f"  - {hit['category']} [{hit['signature']}] {hit['file']}:{hit['line_no']}"))
        if len(result.cascade) > 10:
            out.print(safe(f"  … {len(result.cascade) - 10} more"))
    oom = result.oom
    out.print(Text("oom: ", style="bold") + safe(f"{oom.oom_class}" + (f" / {oom.subclass}" if oom.subclass else "")))
    for item in oom.evidence:
        out.print(safe(f"  - {item}"))
    step = result.next_step
    out.print(Text("next step: ", style="bold") + safe(step.action + (f" ({step.parameter})" if step.parameter else "")))
    out.print(safe(f"  {step.text}"))
    if step.why:
        out.print(safe(f"  why: {step.why}"))
    verdict = result.verdict
    out.print(Text("acceptance: ", style="bold") + safe(verdict.get("acceptance", "unknown")))
    for reason in verdict.get("reasons", [])[:6]:
        out.print(safe(f"  - {reason}"))

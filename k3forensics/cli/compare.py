"""`k3forensics diff A B` and `k3forensics repro RUN…`: compare runs (seed 001)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from k3forensics.cli.common import console, library_from, reports_errors, safe, signature_options
from k3forensics.compare.diff import RunDiff, diff_runs
from k3forensics.compare.repro import ReproVerdict, reproduce
from k3forensics.compare.summary import RunSummary, summarize
from k3forensics.library.loader import Library
from k3forensics.triage.run import triage


def _summaries(paths: tuple[Path, ...], library: Library) -> list[RunSummary]:
    return [summarize(triage(path, library)) for path in paths]


def _emit_json(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


@click.command("diff")
@click.argument("bundle_a", type=click.Path(path_type=Path))
@click.argument("bundle_b", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@signature_options
@reports_errors
def diff_cmd(bundle_a: Path, bundle_b: Path, fmt: str, signature_dirs: tuple[Path, ...]) -> None:
    """What changed between two runs: environment, arguments, first failure, phase, signatures, errors."""
    a, b = _summaries((bundle_a, bundle_b), library_from(signature_dirs))
    result = diff_runs(a, b)
    if fmt == "json":
        _emit_json(result.to_dict())
    else:
        render_diff(result, console())


@click.command("repro")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@signature_options
@reports_errors
def repro_cmd(runs: tuple[Path, ...], fmt: str, signature_dirs: tuple[Path, ...]) -> None:
    """Over several bundles of one command: same first failure at the same phase?"""
    verdict = reproduce(_summaries(runs, library_from(signature_dirs)))
    if fmt == "json":
        _emit_json(verdict.to_dict())
    else:
        render_repro(verdict, console())


def render_diff(d: RunDiff, out: Console) -> None:
    out.print(safe(f"A: {d.a}\nB: {d.b}"))
    if d.warning:
        out.print(safe(f"warning: {d.warning}"), style="bold yellow")
    for title, rows in (("environment", d.environment), ("arguments", d.arguments)):
        if rows:
            out.print(safe(f"{title}:"), style="bold")
            for key, a, b in rows:
                out.print(safe(f"  {key}: {_v(a)} → {_v(b)}"))
    if d.not_recorded:
        out.print(safe("recorded in one run only (not counted as a change): "
                       + ", ".join(f"{k} ({'A' if a is not None else 'B'})" for k, a, _ in d.not_recorded)))
    for title, pair in (("first failure", d.first_failure), ("phase reached", d.phase_reached),
                        ("acceptance", d.acceptance)):
        if pair:
            out.print(safe(f"{title}: {_failure(pair[0])} → {_failure(pair[1])}"), style="bold")
    for title, added, removed in (("signature hits", d.signatures_added, d.signatures_removed),
                                  ("error templates", d.templates_added, d.templates_removed)):
        if added or removed:
            out.print(safe(f"{title}:"), style="bold")
            for key, n in removed.items():
                out.print(safe(f"  - {key} (×{n})"))
            for key, n in added.items():
                out.print(safe(f"  + {key} (×{n})"))
    if not (d.environment or d.arguments or d.first_failure or d.phase_reached or d.signatures_added
            or d.signatures_removed or d.templates_added or d.templates_removed):
        out.print("no difference in environment, arguments, failure, phase, signatures or error templates")


def render_repro(v: ReproVerdict, out: Console) -> None:
    for row in v.runs:
        failure = f"{row['category']} ({row['signature']}) in {row['phase']} at {row['where']}" if row["category"] \
            else f"no failure (reached {row['phase_reached']})"
        out.print(safe(f"{row['run']}: {failure}"))
    out.print(safe(f"{v.outcome.value}: {v.advice}"), style="bold")
    for note in v.notes:
        out.print(safe(f"note: {note}"), style="yellow")


def _v(value: object) -> str:
    return "—" if value in (None, "") else str(value)


def _failure(value: object) -> str:
    if isinstance(value, dict):
        return f"{value.get('category')} ({value.get('signature')}) in {value.get('phase')}"
    return "none" if value is None else str(value)

"""`k3forensics signatures list|lint|test|explain|suggest`."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from k3forensics.cli.common import console, reports_errors, safe, signature_options
from k3forensics.library.examples import run_examples
from k3forensics.library.loader import default_folders, load_library


@click.group()
def signatures() -> None:
    """Inspect, lint and test signature libraries."""


@signatures.command("list")
@click.option("--role", type=click.Choice(["primary", "secondary", "context", "milestone"]))
@signature_options
@reports_errors
def list_cmd(role: str | None, signature_dirs: tuple[Path, ...]) -> None:
    """List the signatures of the loaded libraries."""
    library = load_library(default_folders(list(signature_dirs)))
    table = Table()
    for column in ("id", "category", "role", "severity", "status", "origin"):
        table.add_column(column)
    for sig in sorted(library.signatures.values(), key=lambda s: s.id):
        if role and sig.role.value != role:
            continue
        table.add_row(*(safe(v) for v in (sig.id, sig.category, sig.role.value, sig.severity.value, sig.status.value,
                                          sig.origin)))
    console().print(table)
    for note in library.notes:
        console().print(safe(f"note: {note}"))
    if library.problems:
        console(stderr=True).print(safe(f"{len(library.problems)} problem(s): run `k3forensics signatures lint`"))


@signatures.command("lint")
@signature_options
@reports_errors
def lint_cmd(signature_dirs: tuple[Path, ...]) -> None:
    """Report every problem of every signature file in one run (exit 1 when any)."""
    library = load_library(default_folders(list(signature_dirs)))
    for problem in library.problems:
        console().print(safe(str(problem)))
    for note in library.notes:
        console().print(safe(f"note: {note}"))
    count = len(library.problems)
    console().print(safe(f"{len(library.signatures)} signatures, {count} problem(s)"))
    sys.exit(1 if count else 0)


@signatures.command("test")
@click.option("--healthy", "healthy", multiple=True, type=click.Path(path_type=Path, exists=True),
              help="A healthy bundle on which no failure may be found (repeatable).")
@signature_options
@reports_errors
def test_cmd(healthy: tuple[Path, ...], signature_dirs: tuple[Path, ...]) -> None:
    """Run every signature's examples; with --healthy, also require silence on healthy bundles."""
    from k3forensics.triage.run import triage

    library = load_library(default_folders(list(signature_dirs)))
    library.raise_problems()
    failures = [str(f) for f in run_examples(library)]
    for bundle in healthy:
        result = triage(bundle, library)
        if result.first is not None:
            failures.append(f"{bundle}: healthy bundle, but {result.first['signature']} hit "
                            f"{result.first['file']}:{result.first['line_no']}")
    for failure in failures:
        console().print(safe(failure))
    examples = sum(len(s.matches) + len(s.no_match) for s in library.signatures.values())
    console().print(safe(f"{examples} examples in {len(library.signatures)} signatures: "
                         f"{examples - len(failures) if not healthy else examples} checked, {len(failures)} failed"))
    sys.exit(1 if failures else 0)


@signatures.command("explain")
@click.argument("signature_id")
@signature_options
@reports_errors
def explain_cmd(signature_id: str, signature_dirs: tuple[Path, ...]) -> None:
    """Show one signature: where it comes from, its condition, remediation and examples."""
    from k3forensics.errors import SignatureError

    library = load_library(default_folders(list(signature_dirs)))
    sig = library.signatures.get(signature_id)
    if sig is None:
        close = [s for s in library.signatures if signature_id.split(".")[-1] in s]
        raise SignatureError(f"no signature {signature_id!r}", hint=f"did you mean: {', '.join(close[:5])}" if close
                             else "see `k3forensics signatures list`")
    out = console()
    out.print(safe(f"{sig.id}: {sig.title}"))
    out.print(safe(f"  from {sig.origin} (library {sig.library}); {sig.role.value}, {sig.category}, "
                   f"severity {sig.severity.value}, {sig.status.value}, priority {sig.priority}"))
    out.print(safe("  match: " + " ".join(sig.match.split())))
    if sig.captures:
        out.print(safe("  captures: " + "; ".join(sig.captures)))
    if sig.caused_by or sig.causes:
        out.print(safe(f"  caused by: {', '.join(sig.caused_by) or '-'}; causes: {', '.join(sig.causes) or '-'}"))
    if sig.remediation:
        param = f" ({sig.remediation.parameter})" if sig.remediation.parameter else ""
        out.print(safe(f"  remediation: {sig.remediation.action.value}{param}: {sig.remediation.text}"))
    for ref in sig.references:
        out.print(safe(f"  see: {ref}"))
    for ex in sig.matches:
        out.print(safe(f"  + {ex.line}"))
    for ex in sig.no_match:
        out.print(safe(f"  - {ex.line}"))

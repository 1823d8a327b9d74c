"""`k3forensics signatures list|lint|test|explain|suggest`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

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
    sigs = sorted((s for s in library.signatures.values() if not role or s.role.value == role), key=lambda s: s.id)
    width = max((len(s.id) for s in sigs), default=10)
    out = console()
    # Plain columns, never truncated: the list is read with grep as often as with eyes.
    out.print(safe(f"{'id':<{width}}  {'category':<26} {'role':<9} {'severity':<8} {'status':<12} origin"))
    for sig in sigs:
        out.print(safe(f"{sig.id:<{width}}  {sig.category:<26} {sig.role.value:<9} {sig.severity.value:<8} "
                       f"{sig.status.value:<12} {sig.origin}"))
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


def shipped_healthy_bundles() -> tuple[Path, ...]:
    """The healthy sample bundles of a source checkout (none in an installed wheel)."""
    from k3forensics.resources import signatures_dir

    samples = signatures_dir().parent / "samples"
    return tuple(sorted(samples.glob("healthy-*/bundle")))


@signatures.command("test")
@click.option("--healthy", "healthy", multiple=True, type=click.Path(path_type=Path, exists=True),
              help="A healthy bundle on which no failure may be found (repeatable).")
@signature_options
@reports_errors
def test_cmd(healthy: tuple[Path, ...], signature_dirs: tuple[Path, ...]) -> None:
    """Run every signature's examples and require silence on healthy bundles (--healthy, or the
    shipped healthy samples when run from a checkout)."""
    from k3forensics.triage.run import triage

    library = load_library(default_folders(list(signature_dirs)))
    library.raise_problems()
    failures = [str(f) for f in run_examples(library)]
    healthy = healthy or shipped_healthy_bundles()
    for bundle in healthy:
        result = triage(bundle, library)
        if result.first is not None:
            failures.append(f"{bundle}: healthy bundle, but {result.first['signature']} hit "
                            f"{result.first['file']}:{result.first['line_no']}")
    for failure in failures:
        console().print(safe(failure))
    examples = sum(len(s.matches) + len(s.no_match) for s in library.signatures.values())
    console().print(safe(f"{examples} examples in {len(library.signatures)} signatures and "
                         f"{len(healthy)} healthy bundle(s) checked, {len(failures)} failed"))
    sys.exit(1 if failures else 0)


@signatures.command("explain")
@click.argument("signature_id")
@signature_options
@reports_errors
def explain_cmd(signature_id: str, signature_dirs: tuple[Path, ...]) -> None:
    """Show one signature: where it comes from, its condition, remediation and examples."""
    from k3forensics.errors import SignatureError
    from k3forensics.library.prefilter import describe, options

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
    choices = len(options(sig.condition))
    out.print(safe(f"  prefilter: {describe(library.literals(sig.id))}"
                   + (f" (1 of {choices} options: the one fewest example lines of the library hold)" if choices > 1 else "")))
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


@signatures.command("suggest")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--limit", type=int, default=20, show_default=True, help="How many templates to show.")
@click.option("--format", "fmt", type=click.Choice(["text", "yaml"]), default="text", show_default=True)
@signature_options
@reports_errors
def suggest_cmd(path: Path, limit: int, fmt: str, signature_dirs: tuple[Path, ...]) -> None:
    """Error-like lines of a bundle (or DB) that no signature explains, as signature skeletons."""
    from k3forensics.cli.common import library_from
    from k3forensics.library.suggest import skeletons_yaml, unexplained
    from k3forensics.triage.run import triage

    library = library_from(signature_dirs)
    result = triage(path, library, digest=False)  # the lines no signature knows are the point here
    templates = unexplained(result.timeline.events, result.hits, limit=limit)
    out = console()
    if fmt == "yaml":
        sys.stdout.write(skeletons_yaml(templates))
        return
    if not templates:
        out.print(safe("every error-like line is explained by a signature"))
        return
    for i, t in enumerate(templates, start=1):
        out.print(safe(f"{i:>2}. {t.count}× in {t.files} file(s): {t.template}"))
        out.print(safe(f"    e.g. {t.example_file}:{t.example_line_no}: {t.example_line[:200]}"))
    out.print(safe("\nready-to-edit skeletons: k3forensics signatures suggest PATH --format yaml > team/new.yaml"))


from k3forensics.cli.profile import profile_cmd  # noqa: E402  (the profile command lives in its own module)

signatures.add_command(profile_cmd)

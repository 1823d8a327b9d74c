"""`k3forensics report`: an incident-ticket report of a bundle or timeline database."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from k3forensics.cli.common import console, library_from, reports_errors, safe, signature_options
from k3forensics.errors import ReportError
from k3forensics.report.render import BINARY, Format, render
from k3forensics.triage.run import triage as run_triage


@click.command("report")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice([f.value for f in Format]), default=Format.MD.value,
              show_default=True, help="md (GitHub/GitLab), jira (wiki markup), html (self-contained), json "
              "(the triage contract), png / svg (the timeline picture).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="File to write (default: standard output; png needs a file or a pipe).")
@click.option("--anonymize", is_flag=True,
              help="Also replace host names, IPs and pod names with stable aliases (host-1, ip-1, pod-1).")
@click.option("--no-redact", is_flag=True, help="Keep tokens, keys and passwords (redacted by default).")
@click.option("--skew", type=float, default=2.0, show_default=True,
              help="Seconds within which hits on different nodes count as one moment (clock-skew tolerance).")
@signature_options
@reports_errors
def report(path: Path, fmt: str, output: Path | None, anonymize: bool, no_redact: bool, skew: float,
           signature_dirs: tuple[Path, ...]) -> None:
    """Write an incident-ticket report of a bundle (or timeline DB): first failure, cascade, OOM class,
    next step, phases, environment, reproduction record, and a timeline picture.

    Secrets (hf_/sk- tokens, Bearer and Authorization values, *_TOKEN= / *_KEY= values, passwords in
    URLs) are redacted in every format unless --no-redact is given. Exit code 0: written; 2: error.
    """
    if fmt in BINARY and output is None and sys.stdout.isatty():
        raise ReportError(f"{fmt} is binary: write it to a file with -o FILE (or pipe it)")
    result = run_triage(path, library_from(signature_dirs), tie_s=skew)
    data = render(result, fmt, redact=not no_redact, anonymize=anonymize)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    output.write_bytes(data)
    console(stderr=True).print(safe(f"report: {output} ({len(data):,} bytes, {fmt})"))

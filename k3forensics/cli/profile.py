"""`k3forensics signatures profile BUNDLE`: where matching time goes, signature by signature.

A shared library grows by contributions; one careless regex (a leading `.*`, nested
repetition, a case-insensitive pattern with no literal in it) can make every triage slow.
This command builds the bundle's timeline once, evaluating each signature on its own
candidate lines as the build goes (`library/profile.py`), and prints the slowest first, with
the prefilter that chose the candidates. A multi-GiB bundle costs the memory its triage costs.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from k3forensics.cli.common import console, library_from, reports_errors, safe, signature_options


@click.command("profile")
@click.argument("bundle", type=click.Path(path_type=Path))
@click.option("--top", type=int, default=25, show_default=True, help="Show this many signatures (0: all).")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@signature_options
@reports_errors
def profile_cmd(bundle: Path, top: int, fmt: str, signature_dirs: tuple[Path, ...]) -> None:
    """Time every signature against a bundle (or timeline DB), slowest first."""
    from k3forensics.cli.tables import print_frame
    from k3forensics.library.model import Role
    from k3forensics.library.profile import Profiler
    from k3forensics.timeline.ingest import build_timeline
    from k3forensics.timeline.store import is_timeline_db
    from k3forensics.triage.run import load_timeline

    library = library_from(signature_dirs)
    profiler = Profiler(library)
    started = time.perf_counter()
    # Large bundles and databases are read through a digest that keeps every candidate line of
    # the signatures measured on it (every role's, not only a triage's findings).
    read = load_timeline if is_timeline_db(bundle) else build_timeline
    timeline = read(bundle, library, digest=None, on_chunk=profiler.chunk, digest_roles=tuple(Role))
    table = profiler.finish(timeline.events)
    built = time.perf_counter() - started - profiler.seconds
    shown = table.head(top) if top > 0 else table
    if fmt != "table":
        print_frame(shown, fmt)
        return
    lines = int(timeline.files.get_column("line_count").sum()) if "line_count" in timeline.files.columns else 0
    out = console()
    out.print(safe(f"bundle: {bundle}  ({lines:,} lines; timeline built in {built:.2f} s)"))
    out.print(safe(f"literal prefilter over all lines: {profiler.pool_seconds:.3f} s; "
                   f"{table.height} signatures: {table.get_column('seconds').sum():.3f} s"))
    every_line = table.filter(table.get_column("prefilter") == "every line").get_column("signature").to_list()
    if every_line:
        out.print(safe(f"no literal prefilter (evaluated on every line): {', '.join(every_line)}"))
    print_frame(shown.with_columns(shown.get_column("seconds").round(4)), "table", max_rows=shown.height)

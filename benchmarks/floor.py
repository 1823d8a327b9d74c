"""What any triage in this stack does at least: every file decoded into polars lines and one
literal scan of every line for the library's strings. No parsing, no matching, no timeline.

    python benchmarks/floor.py BUNDLE

It reads the files as a triage does (`k3forensics.decode`, 16 MiB chunks, as many threads as
a triage has parsing workers) and scans each chunk with one regex alternation of every
signature's prefilter literals (`Literals.loose_mask`, the scan a triage's literal gate makes). It prints
the lines and the lines that hold a literal. `run.py --floor` times it beside the triage and
`rg`: the gap between the floor and `rg` is what decoding into polars costs, the gap between
the triage and the floor is what the parsing and the matching cost.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import polars as pl

from k3forensics.bundle import BundleFile, open_bundle
from k3forensics.decode import iter_decoded_chunks
from k3forensics.library.loader import load_library
from k3forensics.library.prefilter import Literals
from k3forensics.timeline.build import PARSE_WORKERS
from k3forensics.timeline.parse_file import CHUNK_BYTES


def scan(bf: BundleFile, gate: pl.Expr) -> tuple[int, int]:
    """(lines, lines holding a literal) of one file."""
    lines = held = 0
    for decoded in iter_decoded_chunks(bf, CHUNK_BYTES):
        lines += decoded.lines.height
        held += decoded.lines.select(gate.sum()).item()
    return lines, held


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    library = load_library()
    literals = Literals()
    for sig_id in library.signatures:  # the strings `run.py` gives `rg`
        literals = literals | (library.literals(sig_id) or Literals())
    # The text only: a line of a traceback group is found by its shape, not by its text.
    gate = replace(literals, in_traceback=False).loose_mask(pl.col("line"))
    with open_bundle(Path(argv[0])) as bundle, ThreadPoolExecutor(PARSE_WORKERS) as pool:
        counts = list(pool.map(lambda bf: scan(bf, gate), bundle.files))
    print(f"lines {sum(c[0] for c in counts)} holding a literal {sum(c[1] for c in counts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Time `k3forensics triage` against `rg` on the same bundle, in one run.

    python benchmarks/run.py /tmp/k3bench-1g                  # a folder made by generate.py
    python benchmarks/run.py /tmp/k3bench-1g --generate 1GB   # generate it first if missing
    python benchmarks/run.py /tmp/k3bench-1g --ingest --sample samples/oom-weight-load/bundle

For one bundle it prints wall time and peak RSS of:
  * `k3forensics triage BUNDLE --format json` (checked against the buried failure in
    expected.json when there is one);
  * `rg -c -F -f PATTERNS BUNDLE` with the literal prefilters of the signature library (the
    strings `k3forensics/library/prefilter.py` derives): reading every byte and looking for
    the library's literals, the practical lower bound for any triage;
  * optionally `k3forensics ingest` (the DuckDB timeline), a triage of a small sample bundle
    (start-up and import time included), and `floor.py` (`--floor`): every line decoded into
    polars and scanned once for the same literals, the least a triage in this stack does;
and the ratio triage / rg and triage lines per second. Every file is read once before the
timings, so both tools start from a warm page cache. Peak RSS is the child's own maximum
resident set (wait4), in MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Measured:
    name: str
    seconds: float
    peak_mib: float
    exit_code: int
    stdout: str


def measure(name: str, command: list[str]) -> Measured:
    """Run `command`, return its wall time and its own peak RSS."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return Measured(name, seconds, usage.ru_maxrss / 1024, proc.returncode, text)


def warm(bundle: Path) -> tuple[int, int]:
    """Read every file once (page cache); return (files, bytes)."""
    files = size = 0
    for path in sorted(bundle.rglob("*")):
        if path.is_file():
            with path.open("rb") as handle:
                while chunk := handle.read(8 << 20):
                    size += len(chunk)
            files += 1
    return files, size


def library_literals() -> list[str]:
    """Every literal the library's prefilters look for (see the module doc)."""
    from k3forensics.library.loader import load_library
    found: set[str] = set()
    library = load_library()
    for sig in library.signatures.values():
        literals = library.literals(sig.id)
        if literals is not None:
            found |= literals.strings
    return sorted(found)


def k3forensics_command() -> list[str]:
    script = Path(sys.executable).with_name("k3forensics")
    return [str(script)] if script.exists() else [sys.executable, "-m", "k3forensics"]


def machine() -> str:
    cores = os.cpu_count() or 0
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    except (ValueError, OSError):
        mem = 0.0
    import duckdb
    import polars

    rg = shutil.which("rg")
    rg_version = subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.split("\n")[0] if rg else "rg missing"
    return (f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {cores} cores, {mem:.0f} GiB RAM, "
            f"Python {platform.python_version()}, polars {polars.__version__}, duckdb {duckdb.__version__}, {rg_version}; "
            f"load average {os.getloadavg()[0]:.2f} (other work on the machine slows every figure)")


def check_failure(triage: Measured, expected_path: Path) -> str:
    if not expected_path.is_file():
        return "no expected.json: not checked"
    expected = json.loads(expected_path.read_text(encoding="utf-8"))["first_failure"]
    try:
        found = json.loads(triage.stdout)["first_failure"] or {}
    except json.JSONDecodeError:
        return "triage printed no JSON"
    where = f"{found.get('file')}:{found.get('line_no')}"
    if found.get("file") == expected["file"] and found.get("line_no") == expected["line_no"]:
        return f"yes ({found.get('category')} at {where})"
    return f"NO: expected {expected['file']}:{expected['line_no']}, triage named {where}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a folder made by generate.py (bundle/ inside), or a bundle")
    parser.add_argument("--generate", metavar="SIZE", help="generate the bundle first when it is missing")
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--ingest", action="store_true", help="also time `k3forensics ingest` into a DuckDB file")
    parser.add_argument("--sample", type=Path, help="also time `k3forensics triage` on this small bundle")
    parser.add_argument("--floor", action="store_true",
                        help="also time floor.py: decoding every line into polars and one literal scan")
    parser.add_argument("--skip-triage", action="store_true",
                        help="do not run triage on the bundle (with --ingest: time the DuckDB build alone)")
    args = parser.parse_args(argv)

    bundle = args.folder / "bundle" if (args.folder / "bundle").is_dir() else args.folder
    if not bundle.exists():
        if not args.generate:
            parser.error(f"{bundle} does not exist (pass --generate SIZE to make it)")
        sys.path.insert(0, str(HERE))
        from generate import generate, parse_size

        generate(args.folder, parse_size(args.generate), args.nodes, log=lambda _: None)
        bundle = args.folder / "bundle"

    print(f"machine: {machine()}")
    files, size = warm(bundle)
    print(f"bundle: {bundle} ({files} files, {size / (1 << 20):,.0f} MiB, page cache warmed)")
    k3f = k3forensics_command()
    results: list[Measured] = []

    triage = None
    lines = 0
    if not args.skip_triage:
        triage = measure("k3forensics triage", [*k3f, "triage", str(bundle), "--format", "json"])
        results.append(triage)
        try:
            lines = int(json.loads(triage.stdout)["counts"]["lines"])
        except (json.JSONDecodeError, KeyError, TypeError):
            lines = 0

    rg = shutil.which("rg")
    rg_result = None
    if rg is None:
        print("ripgrep (rg) NOT FOUND: the lower bound and the ratio are not measured. "
              "Install it (Debian: apt-get install ripgrep) and run again.")
    else:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as handle:
            handle.write("\n".join(library_literals()) + "\n")
            patterns = handle.name
        try:
            rg_result = measure("rg -c -F -f PATTERNS", [rg, "-c", "-F", "--no-ignore", "--hidden", "-f", patterns,
                                                         str(bundle)])
        finally:
            os.unlink(patterns)
        results.append(rg_result)

    if args.ingest:
        with tempfile.TemporaryDirectory() as tmp:
            results.append(measure("k3forensics ingest", [*k3f, "ingest", str(bundle), "--db", str(Path(tmp) / "b.duckdb")]))
    if args.sample:
        results.append(measure(f"triage {args.sample}", [*k3f, "triage", str(args.sample)]))
    floor = measure("floor: decode + literal scan", [sys.executable, str(HERE / "floor.py"), str(bundle)]) \
        if args.floor else None
    if floor is not None:
        results.append(floor)

    print(f"{'command':<44} {'wall s':>9} {'peak RSS MiB':>13} {'exit':>5}")
    for r in results:
        print(f"{r.name:<44} {r.seconds:>9.2f} {r.peak_mib:>13,.0f} {r.exit_code:>5}")
    if triage is None:
        return 0
    if rg_result is not None and rg_result.seconds > 0:
        print(f"ratio triage / rg: {triage.seconds / rg_result.seconds:.1f}x")
        if floor is not None and floor.exit_code == 0:
            print(f"ratio floor / rg: {floor.seconds / rg_result.seconds:.1f}x; triage / floor: "
                  f"{triage.seconds / floor.seconds:.1f}x")
    if lines:
        print(f"lines: {lines:,}; triage: {lines / triage.seconds:,.0f} lines/s, {size / (1 << 20) / triage.seconds:,.1f} MiB/s")
    print(f"buried failure found: {check_failure(triage, args.folder / 'expected.json')}")
    return 0 if triage.exit_code in (0, 1) else 1


if __name__ == "__main__":
    sys.exit(main())

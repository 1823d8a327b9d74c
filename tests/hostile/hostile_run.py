"""Run the real command line in a subprocess, inside a sandbox folder, and check what it did.

A `Sandbox` is one test's temporary folder split into `in/` (the hostile inputs), `work/` (the
current folder of every run, where outputs go), `home/` and `tmp/` (HOME and TMPDIR of the run).
It snapshots every path under itself and the names beside it before a run, so that a test can
prove that nothing was written anywhere but the outputs it asked for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

TRACEBACK = "Traceback (most recent call last)"
# A Python warning as `warnings` prints it: `path.py:87: UserWarning: …` (our source leaking out).
PYTHON_WARNING = re.compile(r"\.py:\d+: \w*Warning: ")
EXIT_RESULT = (0, 1)
EXIT_REFUSED = 2
EXIT_INTERNAL = 3
WORKERS = max(1, min(4, os.cpu_count() or 1))


@dataclass
class Run:
    args: list[str]
    code: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    def __str__(self) -> str:
        return f"k3forensics {' '.join(self.args)} -> exit {self.code}\nstderr: {self.stderr[-2000:]}"


def check_run(run: Run, allowed: Sequence[int]) -> None:
    """What every run must satisfy, whatever the input: an expected exit code, never an
    internal error, never a traceback or a raw Python warning, never a raw ESC byte on stdout."""
    assert run.code != EXIT_INTERNAL, f"internal error (a bug): {run}"
    assert run.code in allowed, f"unexpected exit code: {run}"
    # stdout may quote a traceback from the logs (a report does): only stderr is ours alone
    assert TRACEBACK not in run.stderr, f"traceback printed: {run}"
    assert not PYTHON_WARNING.search(run.stderr), f"raw Python warning on stderr: {run}"
    assert b"\x1b" not in run.stdout, f"raw ESC byte on stdout: {run}"


def check_refusal(run: Run, *names: str) -> None:
    """Exit 2 with one clear line on stderr that names the archive (and the member)."""
    check_run(run, [EXIT_REFUSED])
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert lines and lines[0].startswith("error: "), run
    for name in names:
        assert name in run.stderr, f"the error does not name {name!r}: {run}"


def _listing(root: Path) -> set[str]:
    out = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath).relative_to(root).as_posix()
        for name in dirnames + filenames:
            out.add(name if base == "." else f"{base}/{name}")
    return out


# The parsed-library cache (k3forensics/library/cache.py) under the sandbox's home.
_LIBRARY_CACHE_FOLDERS = {"home/.cache", "home/.cache/k3forensics"}
_LIBRARY_CACHE_ENTRY = re.compile(r"home/\.cache/k3forensics/library-[0-9a-f]{64}\.pickle")


class Sandbox:
    def __init__(self, root: Path, mpl_config: Path):
        self.root = root
        self.inputs, self.work, self.home, self.tmp = (root / n for n in ("in", "work", "home", "tmp"))
        for folder in (self.inputs, self.work, self.home, self.tmp):
            folder.mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("K3F_", "XDG_", "PYTHON"))}
        self.env.update(HOME=str(self.home), TMPDIR=str(self.tmp), TMP=str(self.tmp), TEMP=str(self.tmp),
                        MPLCONFIGDIR=str(mpl_config), COLUMNS="200", PYTHONUNBUFFERED="1")
        self.env.pop("FORCE_COLOR", None)
        self._before: set[str] | None = None
        self._beside: set[str] | None = None
        self._beside_after: set[str] | None = None

    # -- running --------------------------------------------------------------------------------

    def run(self, *args: str | Path, timeout: float = 300) -> Run:
        argv = [str(a) for a in args]
        proc = subprocess.run([sys.executable, "-m", "k3forensics", *argv], cwd=self.work, env=self.env,
                              capture_output=True, timeout=timeout, check=False)
        return Run(argv, proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))

    def run_all(self, *commands: Sequence[str | Path], timeout: float = 300) -> list[Run]:
        """Independent commands side by side (each one mostly loads the signature library)."""
        with ThreadPoolExecutor(WORKERS) as pool:
            return list(pool.map(lambda c: self.run(*c, timeout=timeout), commands))

    # -- what was written -------------------------------------------------------------------------

    def snapshot(self) -> None:
        """Call once the inputs are in place, before the runs."""
        self._before = _listing(self.root)
        self._beside = set(os.listdir(self.root.parent))
        self._beside_after = None

    def settle(self) -> None:
        """Call when the runs are done: what lies beside the sandbox then is what they left there
        (later tests of the session add their own folders beside it)."""
        self._beside_after = set(os.listdir(self.root.parent))

    def check_writes(self, *outputs: str) -> None:
        """Only the named outputs (paths relative to work/) are new; inputs untouched; the
        private extraction folders removed; nothing new beside the sandbox."""
        assert self._before is not None and self._beside is not None, "snapshot() first"
        new = _listing(self.root) - self._before
        gone = self._before - _listing(self.root)
        allowed = {f"work/{o}" for o in outputs} | _LIBRARY_CACHE_FOLDERS
        # The one write outside the outputs: the parsed signature library, whole entries only.
        new = {p for p in new if not _LIBRARY_CACHE_ENTRY.fullmatch(p)}
        assert new <= allowed, f"unexpected paths written: {sorted(new - allowed)}"
        assert not gone, f"paths removed: {sorted(gone)}"
        assert not any(self.tmp.iterdir()), f"temporary files left: {list(self.tmp.iterdir())}"
        beside = self._beside_after if self._beside_after is not None else set(os.listdir(self.root.parent))
        assert beside == self._beside, f"written beside the sandbox: {sorted(beside ^ self._beside)}"


# -- timeline database ------------------------------------------------------------------------------


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql(sql).fetchall()
    finally:
        con.close()


def line_counts(db: Path) -> dict[str, tuple[int, int]]:
    """file -> (files.line_count, events of that file)."""
    files = dict(query(db, "SELECT file, line_count FROM files"))
    events = dict(query(db, "SELECT file, count(*) FROM events GROUP BY file"))
    return {f: (int(n), int(events.get(f, 0))) for f, n in files.items()}


def check_conserved(db: Path, expected: dict[str, int]) -> None:
    """Every input line is one event: per file, and in total (files.line_count == events)."""
    counts = line_counts(db)
    assert set(counts) == set(expected), (sorted(counts), sorted(expected))
    for file, lines in expected.items():
        assert counts[file] == (lines, lines), f"{file}: (line_count, events) = {counts[file]}, expected {lines}"
    total = query(db, "SELECT (SELECT sum(line_count) FROM files), (SELECT count(*) FROM events)")[0]
    assert total == (sum(expected.values()), sum(expected.values())), total


def warnings_of(db: Path) -> list[str]:
    return [r[0] for r in query(db, "SELECT message FROM warnings")]


def physical_lines(data: bytes) -> int:
    """Lines as the decoder must count them, from first principles: split on LF, a last line
    without LF counts. (UTF-16 inputs: pass the decoded text re-encoded as UTF-8.)"""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


# -- cases run side by side ---------------------------------------------------------------------------


def _pool(jobs: Sequence[tuple[Sandbox, Sequence[str | Path]]], timeout: float = 300) -> list[Run]:
    """Runs of several sandboxes side by side: each command mostly starts up (imports, signature
    library), so independent cases share the cores instead of waiting for each other."""
    with ThreadPoolExecutor(WORKERS) as pool:
        runs = list(pool.map(lambda job: job[0].run(*job[1], timeout=timeout), jobs))
    for sandbox in {id(job[0]): job[0] for job in jobs}.values():
        sandbox.settle()
    return runs


@dataclass
class Case:
    """One bundle to ingest, then triage and report from its database with `options`. Each command
    costs a second of start-up and the suite has to stay fast, so a case may skip what it does not
    exercise: `full=False` skips the text triage and the Markdown report (JSON and HTML render the
    same model), `report=False` skips the HTML report too."""

    sandbox: Sandbox
    bundle: Path
    options: tuple[str, ...] = ()
    report: bool = True
    full: bool = True
    name: str = "case"


@dataclass
class Accepted:
    case: Case
    db: Path
    ingest: Run
    triage_json: Run
    report_html: Run
    triage_text: Run
    report_md: Run

    def check(self) -> None:
        """Every run gave a result, and nothing but the database was written."""
        check_run(self.ingest, [0])
        for run, allowed in ((self.triage_json, EXIT_RESULT), (self.report_html, [0]), (self.triage_text, EXIT_RESULT),
                             (self.report_md, [0])):
            if run.args:  # not skipped
                check_run(run, allowed)
        self.case.sandbox.check_writes(self.db.name)

    @property
    def contract(self) -> dict[str, Any]:
        return dict(json.loads(self.triage_json.stdout))

    @property
    def first_signature(self) -> str | None:
        first = self.contract.get("first_failure")
        return first["signature"] if first else None


def run_cases(cases: dict[str, Case]) -> dict[str, Accepted]:
    """Ingest every case, then triage and report every case, all side by side; nothing is
    asserted here (a test calls `Accepted.check()`), so that one bad case fails only its tests."""
    for case in cases.values():
        case.sandbox.snapshot()
    keys = list(cases)
    ingests = _pool([(cases[k].sandbox, ["ingest", cases[k].bundle, "--db", f"{cases[k].name}.duckdb"]) for k in keys])
    jobs: list[tuple[str, int, Sandbox, list[str | Path]]] = []
    for key, ingest in zip(keys, ingests, strict=True):
        case, db = cases[key], f"{cases[key].name}.duckdb"
        if ingest.code != 0:
            continue  # nothing to read; check() reports the ingest
        commands: list[list[str | Path]] = [["triage", db, "--format", "json", *case.options]]
        commands.append(["report", db, "--format", "html", *case.options] if case.report or case.full else [])
        if case.full:
            commands += [["triage", db, *case.options], ["report", db, "--format", "md", *case.options]]
        jobs += [(key, i, case.sandbox, c) for i, c in enumerate(commands) if c]
    runs = _pool([(sandbox, command) for _, _, sandbox, command in jobs])
    found: dict[tuple[str, int], Run] = {(key, i): run for (key, i, _, _), run in zip(jobs, runs, strict=True)}
    skipped = Run([], 0, b"", "")
    return {key: Accepted(cases[key], cases[key].sandbox.work / f"{cases[key].name}.duckdb", ingest,
                          *(found.get((key, i), skipped) for i in range(4)))
            for key, ingest in zip(keys, ingests, strict=True)}


def accept(sandbox: Sandbox, bundle: Path, *options: str, name: str = "case", report: bool = True,
           full: bool = True) -> Accepted:
    """One case through `run_cases`, checked at once."""
    result = run_cases({name: Case(sandbox, bundle, options, report, full, name)})[name]
    result.check()
    return result


@dataclass
class ZooRun:
    """The shared folder bundle of text, metrics and JSON cases, and its runs."""

    zoo: Any  # make.Zoo
    result: Accepted


def run_refusals(cases: dict[str, tuple[Sandbox, Path, bool]]) -> dict[str, list[Run]]:
    """For each case (sandbox, bundle, every command?): `ingest`, and where asked also `triage`
    and `report` (md to a file, html to stdout), all side by side. Checked by the tests."""
    jobs: list[tuple[str, Sandbox, list[str | Path]]] = []
    for key, (sandbox, bundle, every_command) in cases.items():
        sandbox.snapshot()
        jobs.append((key, sandbox, ["ingest", bundle, "--db", "out.duckdb"]))
        if every_command:
            jobs += [(key, sandbox, c) for c in (["triage", bundle, "--format", "json"],
                                                 ["report", bundle, "--format", "md", "-o", "report.md"],
                                                 ["report", bundle, "--format", "html"])]
    runs = _pool([(sandbox, command) for _, sandbox, command in jobs])
    out: dict[str, list[Run]] = {key: [] for key in cases}
    for (key, _, _), run in zip(jobs, runs, strict=True):
        out[key].append(run)
    return out

"""A triage over the digest of a timeline (what large bundles get) says what a triage over every
line says: same contract, same report evidence; and it keeps far fewer lines when most are noise."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from noisy_bundles import with_nccl_noise

from k3forensics.report.model import build_report
from k3forensics.timeline import digest as digest_module
from k3forensics.timeline import ingest
from k3forensics.timeline.ingest import build_timeline
from k3forensics.triage import run
from k3forensics.triage.contract import to_contract
from k3forensics.triage.run import triage, triage_timeline

ROOT = Path(__file__).resolve().parent.parent
BUNDLES = sorted(ROOT.glob("samples/*/bundle")) + sorted(ROOT.glob("tests/corpus/*/bundle"))
TINY_CHUNKS = 4096  # bytes: context windows and milestone firsts cross many chunk boundaries


def _dump(value: object) -> str:
    return json.dumps(value, default=str, sort_keys=True)


@pytest.mark.parametrize("bundle", BUNDLES, ids=[f"{b.parent.parent.name}/{b.parent.name}" for b in BUNDLES])
def test_digest_triage_equals_full_triage(bundle: Path, library, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_module, "MARK_BATCH_ROWS", 300)  # tiny chunks marked a few together
    full = triage(bundle, library, digest=False)
    digest = build_timeline(bundle, library, chunk_bytes=TINY_CHUNKS, digest=True)
    assert digest.digest
    assert digest.events.height <= full.timeline.events.height
    assert digest.events.get_column("seq").is_sorted()
    assert digest.files.equals(full.timeline.files)
    assert digest.nodes.equals(full.timeline.nodes)  # host names of lines the sieve dropped too
    small = triage_timeline(str(bundle), digest, library)
    assert _dump(to_contract(small)) == _dump(to_contract(full))
    a, b = build_report(full), build_report(small)
    assert (repr(a.evidence), repr(a.stack), repr(a.record)) == (repr(b.evidence), repr(b.stack), repr(b.record))
    assert b.events.join(a.events, on="seq", how="anti").height == 0  # nothing the full table lacks


def test_digest_drops_the_noise_around_a_failure(tmp_path: Path, library) -> None:
    """Thousands of routine NCCL and access lines around one failure: the digest keeps the
    failure, its context, the milestones' first lines, and little else."""
    bundle, _ = with_nccl_noise(tmp_path, 20_000)
    full = triage(bundle, library, digest=False)
    small = triage(bundle, library, digest=True)
    assert small.timeline.digest and not full.timeline.digest
    assert small.timeline.events.height < full.timeline.events.height // 10
    assert _dump(to_contract(small)) == _dump(to_contract(full))
    kept = small.timeline.events.filter(pl.col("seq") == small.first["seq"])  # type: ignore[index]
    assert kept.height == 1


def test_bundles_whose_events_outgrow_the_budget_are_digested(monkeypatch: pytest.MonkeyPatch, library) -> None:
    bundle = ROOT / "samples" / "oom-weight-load" / "bundle"
    assert not triage(bundle, library).timeline.digest  # samples are small
    monkeypatch.setattr(ingest, "DIGEST_MEMORY_BYTES", 1)
    assert triage(bundle, library).timeline.digest
    assert not triage(bundle, library, digest=False).timeline.digest


@pytest.mark.parametrize("name", ["xid79-fallen-off-bus", "oom-weight-load", "nccl-ib-two-node"])
def test_digest_of_a_database_equals_its_full_read(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   library) -> None:
    db = tmp_path / "timeline.duckdb"
    ingest.ingest(ROOT / "samples" / name / "bundle", db, library)
    full = triage(db, library, digest=False)
    monkeypatch.setattr(run, "DB_BATCH_ROWS", 7)  # many batches: context crosses their cuts
    small = triage(db, library, digest=True)
    assert small.timeline.digest and small.timeline.events.height < full.timeline.events.height
    assert small.timeline.events.get_column("seq").is_sorted()
    assert _dump(to_contract(small)) == _dump(to_contract(full))
    from_bundle = to_contract(triage(ROOT / "samples" / name / "bundle", library))
    assert _dump({**to_contract(small), "bundle": None}) == _dump({**from_bundle, "bundle": None})


@pytest.mark.parametrize("scanned", [False, True], ids=["lines", "texts-scanned-while-parsing"])
@pytest.mark.parametrize("share", [0.0, 1.0], ids=["every-line", "distinct-lines"])
def test_the_gate_column_marks_what_literal_lines_marks(share: float, scanned: bool, monkeypatch: pytest.MonkeyPatch,
                                                        library) -> None:
    """The gate a worker thread computes for a chunk, each distinct line once (or from each
    distinct text's scan made while parsing), equals the scan of every line: literals (folded
    ones in any case), ANSI colour and its remnants, traceback lines, nulls."""
    from k3forensics.text import stripped
    from k3forensics.timeline.build import TimelineBuild
    from k3forensics.timeline.sieve import Sieve

    gate = TimelineBuild(ROOT, library, sieve=Sieve(library))._gate
    assert gate is not None and gate.in_traceback and gate.folded
    texts = [line for path in sorted(ROOT.glob("samples/*/bundle/**/*.log"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    folded = sorted(gate.folded)[0]
    # A colour remnant without its ESC: the text holds a literal, the line as matched does not.
    remnant = next(r for r in (f"{s.partition(' ')[0]}[0m {s.partition(' ')[2]}" for s in sorted(gate.exact)
                               if " " in s.strip())
                   if not digest_module.literal_lines(pl.DataFrame({"line": [r], "tb_group": [None]}), gate=gate)["gate"][0])
    texts += [folded.upper(), f"\x1b[31m{folded.swapcase()}\x1b[0m", f"^[[31m{folded}", remnant, remnant, "plain", None]
    lines = texts * 2
    events = pl.DataFrame({"line": lines, "tb_group": [7 if i % 5 == 0 else None for i in range(len(lines))]},
                          schema={"line": pl.Utf8, "tb_group": pl.Int64})
    events = events.with_columns(stripped(events.get_column("line")).alias("text"))
    monkeypatch.setattr("k3forensics.text.REPEATS_SHARE", share)
    scan = digest_module.gate_scan(events.get_column("text").fill_null(""), gate).get_column(digest_module.GATE_SCAN) \
        if scanned else None
    got = digest_module.gate_column(events, gate, scan)
    expected = digest_module.literal_lines(events, gate=gate).get_column("gate")
    assert got.to_list() == expected.to_list()
    assert 0 < got.sum() < got.len()
    at = next(i for i, line in enumerate(lines) if line == remnant and i % 5)  # not a traceback line
    assert not got[at] and (scan is None or scan[at])


@pytest.mark.parametrize("spill", ["from-the-start", "mid-way"])
def test_a_spool_that_spills_while_read_gives_the_full_triage(spill: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch, library) -> None:
    """A bundle whose text outweighs the budget is sieved from its first chunk; one whose events
    outgrow it only while read spills mid-way, and the chunks matched before then are sieved
    from there on. Either way the triage says what a triage over every line says."""
    bundle, _ = with_nccl_noise(tmp_path, 3_000)
    text = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    monkeypatch.setattr(ingest, "DIGEST_MEMORY_BYTES", text // 2 if spill == "from-the-start" else text + 1)
    monkeypatch.setattr(digest_module, "MARK_BATCH_ROWS", 300)
    full = triage(bundle, library, digest=False)
    spilled = build_timeline(bundle, library, chunk_bytes=TINY_CHUNKS, digest=None)
    assert spilled.digest
    assert spilled.events.height < full.timeline.events.height
    assert spilled.files.equals(full.timeline.files)
    assert _dump(to_contract(triage_timeline(str(bundle), spilled, library))) == _dump(to_contract(full))

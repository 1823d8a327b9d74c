"""A triage reports its progress file by file (the CLI shows it on a terminal)."""

from __future__ import annotations

from pathlib import Path

from k3forensics.triage.run import triage

BUNDLE = Path(__file__).resolve().parents[2] / "samples" / "nccl-ib-two-node" / "bundle"


def test_triage_reports_each_file_then_the_end(library) -> None:
    seen: list[tuple[str, int, int]] = []
    triage(BUNDLE, library, progress=lambda file, done, total: seen.append((file, done, total)))
    files = sorted(str(p.relative_to(BUNDLE)) for p in BUNDLE.rglob("*") if p.is_file())
    total = len(files)
    assert [f for f, _, _ in seen[:-1]] == files
    assert [d for _, d, _ in seen] == list(range(total + 1))
    assert {t for _, _, t in seen} == {total} and seen[-1][0] == ""

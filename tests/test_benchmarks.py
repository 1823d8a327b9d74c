"""The benchmark's bundle generator: realistic shapes, and the failure it buries is found."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from k3forensics.library.loader import Library
from k3forensics.triage.contract import to_contract
from k3forensics.triage.run import triage

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from generate import generate, parse_size  # noqa: E402


def test_parse_size() -> None:
    assert parse_size("1GB") == 1 << 30 and parse_size("200MB") == 200 << 20 and parse_size("4G") == 4 << 30


def test_a_small_generated_bundle_is_triaged_to_its_buried_failure(tmp_path: Path, library: Library) -> None:
    expected = generate(tmp_path, 3 << 20, nodes=3, log=lambda _: None)
    bundle = tmp_path / "bundle"
    assert sorted(p.name for p in (bundle / "node-01").iterdir()) == ["dmesg.txt", "launch.sh", "metrics.prom", "vllm.log"]
    assert abs(sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file()) - (3 << 20)) < (3 << 20) // 5
    result = triage(bundle, library)
    assert result.first is not None
    want = expected["first_failure"]
    assert (result.first["file"], result.first["line_no"], result.first["category"]) == \
        (want["file"], want["line_no"], want["category"])
    assert json.loads((tmp_path / "expected.json").read_text())["first_failure"] == want
    # What a large bundle gets: the same answer from a digest of a few per cent of the lines.
    digested = triage(bundle, library, digest=True)
    assert digested.timeline.digest
    assert digested.timeline.events.height * 10 < result.timeline.events.height
    assert json.dumps(to_contract(digested), default=str) == json.dumps(to_contract(result), default=str)


def test_the_runner_reports_the_figures(tmp_path: Path) -> None:
    generate(tmp_path, 1 << 20, nodes=2, log=lambda _: None)
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), str(tmp_path), "--floor"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "k3forensics triage" in out.stdout and "buried failure found: yes" in out.stdout
    assert "ratio triage / rg" in out.stdout or "ripgrep (rg) NOT FOUND" in out.stdout
    floor = next(line for line in out.stdout.splitlines() if line.startswith("floor: decode + literal scan"))
    assert floor.split()[-1] == "0", floor  # its exit code


def test_the_floor_counts_every_line_and_the_lines_holding_a_literal(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    (bundle / "node-0").mkdir(parents=True)
    (bundle / "node-0" / "vllm.log").write_text(
        "INFO 01-01 00:00:00 [a.py:1] nothing to see\n"
        "k3-0:1:1 [0] NCCL WARN NET/IB : Got async event : port error\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", encoding="utf-8")
    (bundle / "node-0" / "plain.txt").write_text("a\nb\n", encoding="utf-8")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "floor.py"), str(bundle)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "lines 5 holding a literal 2"

"""Copies of sample bundles with routine noise added, for the tests of large-bundle paths."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def with_nccl_noise(tmp_path: Path, noise_lines: int) -> tuple[Path, str]:
    """A copy of the two-node NCCL sample with routine NCCL INFO lines after the fifth line of
    its first log holding NCCL output; (the bundle, that log's path inside it)."""
    sample = ROOT / "samples" / "nccl-ib-two-node" / "bundle"
    bundle = tmp_path / "bundle"
    for path in sample.rglob("*"):
        if path.is_file():
            target = bundle / path.relative_to(sample)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    log = next(p for p in sorted(bundle.rglob("*.log")) if "NCCL" in p.read_text(encoding="utf-8", errors="replace"))
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    noise = [f"k3-node:{n}:{n + 1} [{n % 8}] NCCL INFO Channel {n % 24:02d}/24 : via P2P/CUMEM/read\n"
             for n in range(noise_lines)]
    log.write_text("".join(lines[:5] + noise + lines[5:]), encoding="utf-8")
    return bundle, log.relative_to(bundle).as_posix()

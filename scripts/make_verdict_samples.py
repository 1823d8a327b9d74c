"""Derive the verdict and repro sample bundles from `samples/healthy-prefix-cache-tools`.

One command line and environment (the healthy run's), cut at a start-up phase and ended by a
failure, or reduced to one request: so the samples differ only where their verdicts should.
Run from the repository root: `python scripts/make_verdict_samples.py`, then review the diff.
"""

from __future__ import annotations

import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "samples"
SOURCE = ROOT / "healthy-prefix-cache-tools" / "bundle"
COPIED = ("launch.sh", "collect_env.txt", "nvidia-smi.txt")
STAMP = re.compile(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+Z)")
VLLM_STAMP = re.compile(r" (\d\d-\d\d) (\d\d:\d\d:\d\d) ")

# The last line of the healthy log kept before each failure, per phase.
CUT = {"gpu_detect": 16, "dist_init": 32, "weight_load": 55, "startup": 158}
FAILURES = {
    "gpu_detect": [("Worker_TP3_EP3 pid=257", "multiproc_executor.py:597",
                    "RuntimeError: CUDA error: system not yet initialized")],
    "dist_init": [("Worker_TP5_EP5 pid=259", "multiproc_executor.py:671",
                   "RuntimeError: NCCL Error 2: unhandled system error (run with NCCL_DEBUG=INFO for details)")],
    "weight_load": [("Worker_TP2_EP2 pid=256", "multiproc_executor.py:671",
                     "RuntimeError: CUDA error: an illegal memory access was encountered")],
}
ENGINE_DEAD = [("EngineCore pid=181", "core.py:708", "EngineCore failed to start."),
               ("APIServer pid=1", None, "RuntimeError: Engine core initialization failed. See root cause above. "
                                         "Failed core proc(s): {}")]


def shifted(line: str, hours: float) -> str:
    """The line as if logged `hours` later (both the docker and the vLLM time stamps)."""
    def outer(m: re.Match[str]) -> str:
        when = datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}") + timedelta(hours=hours)
        return when.strftime("%Y-%m-%dT%H:%M:%S") + m.group(3)

    def inner(m: re.Match[str]) -> str:
        when = datetime.strptime(f"2026-{m.group(1)} {m.group(2)}", "%Y-%m-%d %H:%M:%S") + timedelta(hours=hours)
        return when.strftime(" %m-%d %H:%M:%S ")

    return VLLM_STAMP.sub(inner, STAMP.sub(outer, line), count=1)


def logged(last: str, process: str, where: str | None, text: str, after_s: float) -> str:
    """A new line `after_s` seconds after `last`, in the same docker + vLLM format."""
    stamp = STAMP.search(last)
    assert stamp
    fraction = stamp.group(3)[1:7]  # microseconds of the nanosecond stamp
    when = datetime.fromisoformat(f"{stamp.group(1)}T{stamp.group(2)}.{fraction}") + timedelta(seconds=after_s)
    prefix = when.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"
    if where is None:
        return f"{prefix} ({process}) {text}"
    return f"{prefix} ({process}) ERROR {when.strftime('%m-%d %H:%M:%S')} [{where}] {text}"


def failed_run(name: str, phase: str, hours: float, readme: str) -> None:
    lines = [shifted(ln, hours) for ln in (SOURCE / "vllm.log").read_text().splitlines()[: CUT[phase]]]
    for i, (process, where, text) in enumerate(FAILURES[phase] + ENGINE_DEAD):
        lines.append(logged(lines[-1], process, where, text, 0.4 + i * 0.3))
    write(name, lines, readme)


def write(name: str, vllm_log: list[str], readme: str, extra: dict[str, str] | None = None) -> None:
    bundle = ROOT / name / "bundle"
    shutil.rmtree(bundle, ignore_errors=True)
    bundle.mkdir(parents=True)
    for file in COPIED:
        shutil.copy(SOURCE / file, bundle / file)
    (bundle / "vllm.log").write_text("\n".join(vllm_log) + "\n")
    for file, text in (extra or {}).items():
        (bundle / file).write_text(text)
    (ROOT / name / "README.md").write_text(readme.strip() + "\n")


def poc_single_request() -> None:
    log = (SOURCE / "vllm.log").read_text().splitlines()
    head = log[: CUT["startup"]]
    serving = [
        (19.1, "APIServer pid=1", "INFO", "[loggers.py:208] Engine 000: Avg prompt throughput: 159.1 tokens/s, Avg "
         "generation throughput: 4.3 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix "
         "cache hit rate: 0.0%"),
        (20.4, "APIServer pid=1", None, 'INFO:     10.20.5.21:47135 - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
        (29.1, "APIServer pid=1", "INFO", "[loggers.py:208] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
         "generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix "
         "cache hit rate: 0.0%"),
    ]
    for after, process, level, text in serving:
        when = datetime.fromisoformat("2026-08-31T08:36:58") + timedelta(seconds=after)
        stamp = when.strftime("%Y-%m-%dT%H:%M:%S") + ".200000000Z"
        body = f"{level} {when.strftime('%m-%d %H:%M:%S')} {text}" if level else text
        head.append(f"{stamp} ({process}) {body}")
    tail = [ln for ln in log if "[shutdown]" in ln or "shutdown" in ln.lower() or "Finished server" in ln]
    capture = (SOURCE / "api-capture.jsonl").read_text().splitlines()[0] + "\n"
    write("poc-single-request", head + tail, POC_README, {"api-capture.jsonl": capture})


POC_README = """
# poc-single-request

The healthy run's node, image, driver and command (official `vllm/vllm-openai:v0.27.1-cu130`, driver
580.95.05, 8x GB300, `--enable-prefix-caching`, `kimi_k2` tool parser), but what a proof of concept
collects: start-up, then one chat request with one tool call (`api-capture.jsonl`, the healthy run's
first exchange), two stats lines (`Running: 1 reqs`, hit rate 0.0 %), a graceful shutdown, and no
`/metrics`. Nothing failed, yet nothing about production capacity is proven: tune-or-scale is
`functional_only_at_low_load`, prefix-cache reuse `inconclusive` (one request: nothing could reuse
the cold prefix), the agent API `no_evidence` (one tool call is a demo, not evidence), acceptance
`limited`. Derived by `scripts/make_verdict_samples.py`.
"""


def main() -> None:
    poc_single_request()
    common = ("The healthy run's command and environment (official v0.27.1-cu130 image, driver 580.95.05, "
              "8x GB300), started again on a shared cluster; `vllm.log` is `docker logs -t`. Derived by "
              "`scripts/make_verdict_samples.py`; `repro` reads it with its sibling runs.")
    for i, (phase, label) in enumerate((("gpu_detect", "CUDA init fails in gpu_detect (`CUDA error: system not "
                                                       "yet initialized`)"),
                                        ("dist_init", "NCCL fails in dist_init (`unhandled system error`)"),
                                        ("weight_load", "an illegal memory access during weight_load"))):
        failed_run(f"repro-unstable-run{i + 1}", phase, 2 + i,
                   f"# repro-unstable-run{i + 1}\n\nRun {i + 1} of 3 of one command: {label}. Each run of the "
                   f"same command fails at a different start-up stage: `repro` says `unstable_stage` (move to "
                   f"an isolated environment). {common}")
    for i in range(2):
        failed_run(f"repro-stable-run{i + 1}", "dist_init", 6 + i,
                   f"# repro-stable-run{i + 1}\n\nRun {i + 1} of 2 of one command: both runs fail in dist_init "
                   f"with `NCCL Error 2: unhandled system error` on Worker_TP5: `repro` says "
                   f"`stable_reproduction`. {common}")


if __name__ == "__main__":
    main()

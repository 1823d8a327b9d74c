"""Helpers for report tests: sample bundles, a bundle with planted secrets, cached triage, Chromium."""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import pytest

from k3forensics.report.model import Report
from k3forensics.report.render import prepare
from k3forensics.triage.run import TriageResult, triage

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_BUNDLES = sorted(p for p in (ROOT / "samples").glob("*/bundle") if p.is_dir())

# Secrets planted in the bundle below; none may survive redaction.
SECRETS = [
    "hf_AbCdEfGhIjKlMnOpQrStUv",
    "sk-live-0123456789abcdefXYZ",
    "sk-proj-ZZZZ1111YYYY2222",
    "9fQx7.Lm2kPz",
    "Zm9vOmJhcg77Qx",
    "S3cretPassw0rd",
    "tok_9a8b7c6d5e",
    "AKIAABCDEFGHIJKLMNOP",
    "hunter2hunter2",
]
HOSTS = {"h200-21": "10.31.4.21", "h200-22": "10.31.4.22"}
POD = "kimi-k3-0"
PWN = "pwned-marker"

NODE_A_LOG = f"""\
INFO 08-25 15:39:58 [__init__.py:225] Automatically detected platform cuda.
(APIServer pid=1) INFO 08-25 15:40:03 [utils.py:299] version 0.27.1
h200-21:341:341 [0] NCCL INFO Bootstrap: Using bond0:10.31.4.21<0>
(APIServer pid=1) INFO 08-25 15:40:04 [api_server.py:100] HF_TOKEN={SECRETS[0]} peer h200-22 at 10.31.4.22
(APIServer pid=1) WARNING 08-25 15:40:05 [api_server.py:101] headers: Authorization: Bearer {SECRETS[1]}
(APIServer pid=1) WARNING 08-25 15:40:05 [api_server.py:101] curl -H 'X-Trace: 1' -H "authorization: Basic Zm9vOmJhcg77Qx" then Bearer 9fQx7.Lm2kPz
(APIServer pid=1) WARNING 08-25 15:40:06 [api_server.py:102] proxy https://admin:{SECRETS[5]}@proxy.internal:3128 OPENAI_API_KEY={SECRETS[2]} X_TOKEN={SECRETS[6]}
(APIServer pid=1) WARNING 08-25 15:40:06 [api_server.py:102] AWS_ACCESS_KEY_ID={SECRETS[7]} db=postgres://svc:{SECRETS[8]}@db:5432/x
(APIServer pid=1) ERROR 08-25 15:40:07 [api_server.py:103] bad input <script>document.title='PWNED';document.body.insertAdjacentHTML('beforeend','<b id={PWN}>x</b>')</script> [bold red]markup[/bold red] <img src=x onerror="document.title='PWNED2'"> \x1b[31mred\x1b[0m
(EngineCore pid=266) ERROR 08-25 15:40:08 [core.py:854] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of 139.80 GiB of which 2.51 GiB is free. token={SECRETS[0]} Bearer {SECRETS[1]} <script>document.title='PWNED3'</script> [bold red]x[/bold red] \x1b[2J
(EngineCore pid=266) ERROR 08-25 15:40:09 [core.py:855] EngineCore failed to start.
"""
NODE_B_LOG = """\
INFO 08-25 15:39:59 [__init__.py:225] Automatically detected platform cuda.
h200-22:512:512 [0] NCCL INFO Bootstrap: Using bond0:10.31.4.22<0>
(Worker pid=3) WARNING 08-25 15:40:02 [worker.py:10] peer h200-21 slow to answer at 10.31.4.21 (pod kimi-k3-0_inference)
"""
DESCRIBE_POD = """\
Name:             kimi-k3-0
Namespace:        inference
Node:             h200-21/10.31.4.21
Start Time:       Tue, 25 Aug 2026 15:39:00 +0000
Status:           Running
Containers:
  vllm:
    Image:         vllm/vllm-openai:v0.27.1-cu130
Events:
  Type     Reason   Age   From     Message
  ----     ------   ----  ----     -------
  Warning  BackOff  5s    kubelet  Back-off restarting failed container vllm in pod kimi-k3-0_inference(5be0d7a2)
"""
LAUNCH = f"""\
docker run --gpus all -e HF_TOKEN={SECRETS[0]} -e MASTER_ADDR=10.31.4.21 vllm/vllm-openai:v0.27.1-cu130 \\
  --model moonshotai/Kimi-K3 --tensor-parallel-size 8 --api-key {SECRETS[1]}
"""


def write_planted_bundle(root: Path) -> Path:
    """Two nodes; secrets in log lines, a file name and the launch command; a `<script>` in a log line."""
    (root / "node-a").mkdir(parents=True)
    (root / "node-b").mkdir()
    (root / "node-a" / f"vllm-{SECRETS[0]}.log").write_text(NODE_A_LOG)
    (root / "node-a" / "launch.sh").write_text(LAUNCH)
    (root / "node-a" / "describe-pod.txt").write_text(DESCRIBE_POD)
    (root / "node-b" / "vllm.log").write_text(NODE_B_LOG)
    return root


@functools.cache
def triaged(path: str) -> TriageResult:
    return triage(Path(path))


@functools.cache
def prepared(path: str, redact: bool = True, anonymize: bool = False) -> Report:
    return prepare(triaged(path), redact=redact, anonymize=anonymize)


def chromium_path() -> str:
    """Chromium, or a skip; under CI (CI=true) a missing browser fails instead."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("chromium is required under CI (apt-get install chromium)")
    pytest.skip("chromium is not installed")
    raise AssertionError("unreachable")

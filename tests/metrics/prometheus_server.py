"""A real Prometheus for the tests: TSDB backfilled from a sample bundle, served on 127.0.0.1.

Needs the `prometheus` and `promtool` binaries (Debian package `prometheus`). Without them
the tests skip, except under CI=true, where a missing binary fails the run.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from k3forensics.sources import prometheus as exposition
from k3forensics.sources.base import ParseContext, lines_frame

READY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class RunningPrometheus:
    url: str
    samples: pl.DataFrame        # what was backfilled (metric, labels, ts, value)
    username: str | None = None
    password: str | None = None
    ca_file: Path | None = None

    @property
    def auth_header(self) -> str:
        token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return f"Basic {token}"


def binaries() -> tuple[str, str]:
    found = shutil.which("prometheus"), shutil.which("promtool")
    if None in found:
        message = "prometheus/promtool not installed (Debian package `prometheus`)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + ": CI must install it")
        pytest.skip(message)
    return found  # type: ignore[return-value]


def exposition_samples(path: Path) -> pl.DataFrame:
    """The samples of a `/metrics` scrape file, parsed by the product's own source."""
    lines = path.read_text(encoding="utf-8").splitlines()
    result = exposition.parse(lines_frame(lines, path.name), ParseContext(path.name))
    assert result.samples is not None
    return result.samples.drop_nulls(["ts", "value"])


def openmetrics(samples: pl.DataFrame) -> str:
    """Samples as an OpenMetrics text for promtool: one `unknown` family per name, time-ordered."""
    out: list[str] = []
    for (metric,), frame in samples.sort("metric", "labels", "ts").group_by("metric", maintain_order=True):
        out.append(f"# TYPE {metric} unknown")
        for labels, ts, value in frame.select("labels", "ts", "value").iter_rows():
            pairs = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(json.loads(labels).items()))
            out.append(f"{metric}{{{pairs}}} {value!r} {ts.timestamp():.3f}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def backfill(samples: pl.DataFrame, workdir: Path) -> Path:
    _, promtool = binaries()
    source, data = workdir / "sample.om", workdir / "data"
    source.write_text(openmetrics(samples), encoding="utf-8")
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
                   check=True, capture_output=True, timeout=120)
    return data


@contextlib.contextmanager
def serve(data: Path, workdir: Path, web_config: Path | None = None, tls: bool = False,
          ca_file: Path | None = None) -> Iterator[str]:
    """Start Prometheus on a free 127.0.0.1 port; yield its URL; stop it at exit."""
    prometheus, _ = binaries()
    port = free_port()
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n", encoding="utf-8")
    cmd = [prometheus, f"--config.file={config}", f"--storage.tsdb.path={data}",
           f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"]
    if web_config:
        cmd.append(f"--web.config.file={web_config}")
    log = (workdir / f"prometheus-{port}.log").open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    try:
        _wait_ready(url, proc, workdir / f"prometheus-{port}.log", tls, ca_file)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, tls: bool, ca_file: Path | None) -> None:
    import ssl

    context = ssl.create_default_context(cafile=str(ca_file)) if tls and ca_file else None
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2, context=context) as response:
                if response.status == 200:
                    return
        except urllib.error.HTTPError as exc:
            if exc.code == 401:  # behind basic auth: it answers, so it is up
                return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"prometheus not ready after {READY_TIMEOUT_S} s: {log.read_text(errors='replace')[-2000:]}")


def tls_web_config(workdir: Path, username: str, password: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and a web config with TLS and basic auth."""
    import crypt  # bcrypt through libxcrypt: Prometheus wants a bcrypt hash

    cert, key = workdir / "server.crt", workdir / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))
    config = workdir / "web.yml"
    config.write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
                      f"basic_auth_users:\n  {username}: '{hashed}'\n", encoding="utf-8")
    return config, cert

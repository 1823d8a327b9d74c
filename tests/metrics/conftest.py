"""Real Prometheus servers for the pull tests (see prometheus_server.py)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import prometheus_server as ps
import pytest

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "healthy-prefix-cache-tools" / "bundle" / "metrics.txt"


@pytest.fixture(scope="session")
def backfilled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    ps.binaries()
    workdir = tmp_path_factory.mktemp("tsdb")
    samples = ps.exposition_samples(SAMPLE)
    return ps.backfill(samples, workdir), samples


@pytest.fixture(scope="session")
def prometheus(backfilled: tuple[Path, object], tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[ps.RunningPrometheus]:
    data, samples = backfilled
    with ps.serve(data, tmp_path_factory.mktemp("prom")) as url:
        yield ps.RunningPrometheus(url, samples)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def prometheus_tls(backfilled: tuple[Path, object], tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[ps.RunningPrometheus]:
    data, samples = backfilled
    workdir = tmp_path_factory.mktemp("prom-tls")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            web, cert = ps.tls_web_config(workdir, "k3", "s3cret-pass")
        except (ImportError, OSError) as exc:
            pytest.skip(f"cannot make a TLS + basic-auth config here: {exc}")
    # a copy of the TSDB: two servers must not share one data folder
    import shutil

    copy = workdir / "data"
    shutil.copytree(data, copy)
    with ps.serve(copy, workdir, web_config=web, tls=True, ca_file=cert) as url:
        yield ps.RunningPrometheus(url, samples, "k3", "s3cret-pass", cert)  # type: ignore[arg-type]

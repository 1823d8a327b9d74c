"""`pull` against a real Prometheus whose TSDB was backfilled from a sample's scrapes."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner

from k3forensics.cli.main import cli
from k3forensics.metrics.histogram import histogram_quantile
from k3forensics.metrics.pull import PullError, PullSpec, choose_step, pull, redact_url
from k3forensics.metrics.store import save_pulled
from k3forensics.timeline.ingest import ingest

BUNDLE = Path(__file__).resolve().parents[2] / "samples" / "healthy-prefix-cache-tools" / "bundle"


def _window(samples: pl.DataFrame) -> tuple:
    """First and last scrape, rounded up to the second: the query API takes whole seconds, and a
    range query's point at t sees the samples at or before t."""
    def up(ts):  # noqa: ANN001, ANN202
        return ts.replace(microsecond=0) + timedelta(seconds=1) if ts.microsecond else ts

    return up(samples.get_column("ts").min()), up(samples.get_column("ts").max())


def _scrape_step(samples: pl.DataFrame) -> float:
    times = samples.get_column("ts").unique().sort()
    return (times[1] - times[0]).total_seconds()


def _db_frame(db: Path, sql: str) -> pl.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return pl.from_arrow(con.sql(sql).to_arrow_table())  # type: ignore[return-value]
    finally:
        con.close()


def test_pull_returns_the_backfilled_points(prometheus) -> None:
    start, end = _window(prometheus.samples)
    spec = PullSpec(prometheus.url, start, end, ('{__name__=~"vllm:prefix_cache_.+"}',),
                    step_s=_scrape_step(prometheus.samples))
    result = pull(spec)
    got = result.samples.filter(pl.col("metric") == "vllm:prefix_cache_hits_total").sort("ts")
    want = prometheus.samples.filter(pl.col("metric") == "vllm:prefix_cache_hits_total").sort("ts")
    assert result.series == 2  # hits and queries, one engine
    assert got.get_column("value").to_list() == want.get_column("value").to_list()
    lag = (got.get_column("ts") - want.get_column("ts")).dt.total_milliseconds()
    assert lag.min() >= 0 and lag.max() < 1000  # the grid point just after each scrape
    assert json.loads(got.get_column("labels")[0]) == {"engine": "0", "model_name": "kimi-k3"}
    assert got.get_column("file")[0] == f"prometheus:{prometheus.url}"


def test_quantile_of_pulled_buckets_matches_promql(prometheus) -> None:
    from prometheus_api_client import PrometheusConnect

    start, end = _window(prometheus.samples)
    base = "vllm:e2e_request_latency_seconds"
    promql = PrometheusConnect(prometheus.url).custom_query(
        f"histogram_quantile(0.9, sum by (le) ({base}_bucket))", params={"time": end.timestamp()})
    pulled = pull(PullSpec(prometheus.url, start, end, (f"{base}_bucket",), step_s=_scrape_step(prometheus.samples)))
    at_end = pulled.samples.filter(pl.col("ts") == pulled.samples.get_column("ts").max())
    ours = histogram_quantile(at_end.with_columns(pl.lit("n").alias("node")), base, 0.9)
    assert ours == pytest.approx(float(promql[0]["value"][1]), rel=1e-9)


def test_pull_into_a_new_database_then_append_and_replace(prometheus, tmp_path: Path) -> None:
    start, end = _window(prometheus.samples)
    spec = PullSpec(prometheus.url, start - timedelta(minutes=1), end + timedelta(minutes=1))
    db = tmp_path / "pulled.duckdb"
    first = pull(spec)
    assert first.step_s == choose_step(spec.start, spec.end)
    assert save_pulled(db, first.samples, spec.source, spec.start, spec.end) == first.samples.height
    again = save_pulled(db, pull(spec).samples, spec.source, spec.start, spec.end)
    rows = _db_frame(db, "SELECT count(*) AS n, count(DISTINCT metric) AS m FROM samples").row(0)
    assert rows == (again, prometheus.samples.get_column("metric").n_unique())
    files = _db_frame(db, "SELECT file, detected_type FROM files")
    assert files.rows() == [(spec.source, "prometheus_pull")]


def test_cli_pull_appends_to_an_ingested_bundle(prometheus, tmp_path: Path) -> None:
    db = tmp_path / "bundle.duckdb"
    ingest(BUNDLE, db)
    before = _db_frame(db, "SELECT count(*) FROM samples").item()
    start, end = _window(prometheus.samples)
    result = CliRunner().invoke(cli, ["pull", "--prometheus", prometheus.url, "--start", start.isoformat(),
                                      "--end", str(end.timestamp()), "--match", "vllm:kv_cache_usage_perc",
                                      "--node", "node0", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "pulled 1 series" in result.output
    pulled = _db_frame(db, "SELECT node, metric FROM samples WHERE file LIKE 'prometheus:%'")
    assert pulled.height > 0 and set(pulled.get_column("node")) == {"node0"}
    assert _db_frame(db, "SELECT count(*) FROM samples").item() == before + pulled.height


def test_cli_pull_reports_an_unreachable_server(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["pull", "--prometheus", "http://127.0.0.1:1", "--start", "now-5m",
                                      "--end", "now", "--db", str(tmp_path / "x.duckdb"), "--timeout", "2"])
    assert result.exit_code == 2
    assert "cannot reach the server" in result.output
    assert not (tmp_path / "x.duckdb").exists()


def test_tls_and_auth_header(prometheus_tls, tmp_path: Path) -> None:
    start, end = _window(prometheus_tls.samples)
    match = ("vllm:num_requests_running",)
    ok = pull(PullSpec(prometheus_tls.url, start, end, match, headers={"Authorization": prometheus_tls.auth_header},
                       ca_file=str(prometheus_tls.ca_file)))
    assert ok.series == 1
    insecure = pull(PullSpec(prometheus_tls.url, start, end, match, insecure=True,
                             headers={"Authorization": prometheus_tls.auth_header}))
    assert insecure.samples.height == ok.samples.height
    with pytest.raises(PullError, match="refused"):
        pull(PullSpec(prometheus_tls.url, start, end, match, ca_file=str(prometheus_tls.ca_file)))
    with pytest.raises(PullError, match="TLS"):
        pull(PullSpec(prometheus_tls.url, start, end, match, headers={"Authorization": prometheus_tls.auth_header}))
    result = CliRunner().invoke(cli, ["pull", "--prometheus", prometheus_tls.url, "--start", start.isoformat(),
                                      "--end", end.isoformat(), "--match", match[0], "--db", str(tmp_path / "t.duckdb"),
                                      "--ca-cert", str(prometheus_tls.ca_file),
                                      "--header", f"Authorization: {prometheus_tls.auth_header}"])
    assert result.exit_code == 0, result.output
    assert prometheus_tls.password not in result.output


@pytest.mark.parametrize(("seconds", "step"), [(600, 1), (3600, 5), (6 * 3600, 30), (7 * 86400, 900)])
def test_step_is_chosen_from_the_window(seconds: int, step: float) -> None:
    from datetime import UTC, datetime

    start = datetime(2026, 8, 31, tzinfo=UTC)
    assert choose_step(start, start + timedelta(seconds=seconds)) == step


def test_credentials_never_reach_the_stored_source_name() -> None:
    assert redact_url("https://user:pw@prom.example:9090/api?token=x") == "https://<redacted>@prom.example:9090/api"

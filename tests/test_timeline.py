"""The timeline database: nothing lost, schema, phases, times, and the query/export commands."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from k3forensics.cli import cli
from k3forensics.timeline.ingest import ingest
from k3forensics.timeline.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent
BUNDLES = sorted([*(ROOT / "samples").glob("*/bundle"), *(ROOT / "tests" / "corpus").glob("*/bundle")])


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.parent.name for b in BUNDLES])
def test_every_line_is_an_event(bundle: Path, tmp_path: Path, library) -> None:
    db = tmp_path / "t.duckdb"
    ingest(bundle, db, library)
    con = duckdb.connect(str(db), read_only=True)
    events = con.execute("SELECT count(*) FROM events").fetchone()[0]
    lines = con.execute("SELECT sum(line_count), sum(parsed_count + unparsed_count) FROM files").fetchone()
    on_disk = sum(_count_lines(p) for p in bundle.rglob("*") if p.is_file())
    assert events == lines[0] == lines[1] == on_disk
    seqs = con.execute("SELECT count(DISTINCT seq), min(seq), max(seq) FROM events").fetchone()
    assert seqs == (events, 0, events - 1)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    assert con.execute("SELECT count(*) FROM events WHERE phase IS NULL").fetchone()[0] == 0


def _count_lines(path: Path) -> int:
    data = path.read_bytes()
    if not data or b"\x00" in data[:8192] and data.count(b"\x00") > len(data) // 10:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def test_phases_and_times_of_a_vllm_start(tmp_path: Path, library) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "docker.log").write_text("\n".join([
        "2026-12-31T23:59:58.000000000Z (APIServer pid=1) INFO 12-31 23:59:58 [api_server.py:1] vLLM API server version 0.27.1",
        "2026-12-31T23:59:59.000000000Z (EngineCore_DP0 pid=7) INFO 12-31 23:59:59 [core.py:1] Initializing a V1 LLM engine (v0.27.1) with config: x",
    ]) + "\n")
    (bundle / "vllm.log").write_text("\n".join([
        "(Worker_TP0 pid=9) INFO 12-31 23:59:59 [gpu_model_runner.py:1] Starting to load model moonshotai/Kimi-K3...",
        "node1:9:9 [0] NCCL INFO Channel 00/02 : 0 1",
        "(Worker_TP0 pid=9) INFO 01-01 00:00:40 [gpu_model_runner.py:2] Model loading took 30.5 GiB and 40.9 seconds",
        "(APIServer pid=1) INFO:     Application startup complete.",
        '(APIServer pid=1) INFO:     10.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    ]) + "\n")
    db = tmp_path / "t.duckdb"
    summary = ingest(bundle, db, library)
    assert summary.year == 2026
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT file, line_no, phase, ts_quality, strftime(ts AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S'), "
                       "strftime(ts_order AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S') FROM events ORDER BY file, line_no").fetchall()
    by_key = {(r[0], r[1]): r[2:] for r in rows}
    assert by_key[("docker.log", 1)] == ("container_init", "exact", "2026-12-31 23:59:58", "2026-12-31 23:59:58")
    assert by_key[("docker.log", 2)][0] == "gpu_detect"
    # Year-less lines take the bundle's year, and a New Year crossing inside a file moves it on.
    assert by_key[("vllm.log", 1)] == ("weight_load", "inferred", "2026-12-31 23:59:59", "2026-12-31 23:59:59")
    assert by_key[("vllm.log", 2)] == ("weight_load", "missing", None, "2026-12-31 23:59:59")
    assert by_key[("vllm.log", 3)][:3] == ("engine_init", "inferred", "2027-01-01 00:00:40")
    assert by_key[("vllm.log", 4)][0] == "api_ready"
    assert by_key[("vllm.log", 5)][0] == "serving"


def test_query_and_export_commands(tmp_path: Path, library) -> None:
    db = tmp_path / "t.duckdb"
    ingest(ROOT / "samples" / "oom-weight-load" / "bundle", db, library)
    runner = CliRunner()
    out = runner.invoke(cli, ["query", str(db), "SELECT source, count(*) AS n FROM events GROUP BY 1 ORDER BY 1",
                              "--format", "json"])
    assert out.exit_code == 0, out.output
    assert {row["source"] for row in json.loads(out.output)} >= {"vllm"}
    bad = runner.invoke(cli, ["query", str(db), "SELECT nope FROM events"])
    assert bad.exit_code == 2 and "query failed" in bad.output and "Traceback" not in bad.output
    export = runner.invoke(cli, ["export", str(db), "--parquet", str(tmp_path / "pq")])
    assert export.exit_code == 0, export.output
    assert (tmp_path / "pq" / "events.parquet").is_file()


def test_ingest_command_prints_a_summary(tmp_path: Path) -> None:
    runner = CliRunner()
    db = tmp_path / "x.duckdb"
    out = runner.invoke(cli, ["ingest", str(ROOT / "samples" / "nccl-ib-two-node" / "bundle"), "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "nodes: 2" in out.output and "unparsed" in out.output and "time span" in out.output


def test_not_a_timeline_is_a_clear_error(tmp_path: Path) -> None:
    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).close()
    out = CliRunner().invoke(cli, ["query", str(other), "SELECT 1"])
    assert out.exit_code == 2 and "not a k3forensics timeline" in out.output

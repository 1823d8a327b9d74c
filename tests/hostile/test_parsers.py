"""Regression tests for the parser crashes the hostile suite found: each input used to end the
whole ingest with an internal error (exit 3); now it parses, or is counted, line by line."""

from __future__ import annotations

import json
import warnings

import make
import polars as pl
import pytest
from hostile_run import ZooRun, query, warnings_of

from k3forensics.cli.common import EXIT_INTERNAL, reports_errors
from k3forensics.sources import api_capture, collect_env, nvidia_smi, prometheus
from k3forensics.sources.base import ParseContext, lines_frame
from k3forensics.sources.logs import parse_log

CTX = ParseContext(file="hostile.txt")


def test_prometheus_query_json_of_any_shape() -> None:
    """`"data": true`, series that are numbers, pairs with text times: counted, never trusted."""
    frame = lines_frame(make.QUERY_JSON_LINES)
    result = prometheus.parse(frame, CTX)
    assert result.events.height == frame.height
    assert result.samples is not None
    assert result.samples.select("metric", "value").rows()[:2] == [("vllm:x", 1.0), ("vllm:x", None)] or \
        result.samples.get_column("metric").to_list()[0] == "vllm:x"
    assert "2 lines are not JSON, first at line 5" in result.warnings
    assert "6 values are not [time, number] pairs, first at line 1; skipped" in result.warnings


@pytest.mark.parametrize("doc", [{"data": True}, {"data": {"resultType": "matrix", "result": [{"values": [["x", 1]]}]}},
                                 {"data": {"resultType": "vector", "result": [{"metric": 5, "value": [1, [2]]}]}},
                                 {"status": "success", "data": {"resultType": "scalar", "result": [10**400, "1"]},
                                  "warnings": 7}])
def test_prometheus_query_json_single_documents(doc: object) -> None:
    frame = lines_frame([json.dumps(doc)])
    assert prometheus.parse(frame, CTX).events.height == 1


def test_api_capture_of_any_shape() -> None:
    frame = lines_frame(make.CAPTURE_LINES)
    result = api_capture.parse(frame, CTX)
    assert result.events.height == frame.height
    assert result.warnings == ["3 capture lines are not JSON objects, first at line 6"]
    assert result.events.get_column("parsed").to_list() == [True] * 5 + [False] * 3
    exchanges = api_capture.load_exchanges(frame)
    assert len(exchanges) == 5
    for exchange in exchanges:  # the shapes the verdicts walk are the documented ones
        request, response = exchange["request"] or {}, exchange["response"] or {}
        assert isinstance(request.get("messages", []), list) and isinstance(request.get("tools", []), list)
        assert all(isinstance(c, dict) and isinstance(c["message"], dict) for c in response.get("choices", []))
        assert isinstance(response.get("usage", {}), dict)
        assert exchange["status"] is None or 100 <= exchange["status"] < 600
        assert exchange["ts"] is None or exchange["ts"].year < 10000


def test_api_capture_streamed_chunks_of_the_wrong_types() -> None:
    merged = api_capture.merge_chunks([{"choices": [{"index": [0], "delta": {"content": 5, "tool_calls": [
        {"index": {}, "function": {"arguments": {"a": 1}}}, 3]}}]}, "junk", {"choices": "x"}])
    message = merged["choices"][0]["message"]
    assert message["content"] == "5" and message["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'


def test_duplicate_series_are_counted_not_dropped() -> None:
    case = make.METRICS_CASES["duplicates"]
    result = prometheus.parse(lines_frame(case.lines), CTX)
    assert result.samples is not None and result.samples.height == 4
    assert result.warnings == ["2 samples repeat a series at the same time, first at line 3; all kept, in file order"]


def test_undated_repeats_are_not_called_duplicates() -> None:
    """Concatenated scrapes without scrape-time comments repeat every series: not a problem."""
    lines = ['vllm:num_requests_running{engine="0"} 1', 'vllm:num_requests_running{engine="0"} 2']
    assert prometheus.parse(lines_frame(lines), CTX).warnings == []


@pytest.mark.parametrize("module", [nvidia_smi, collect_env], ids=lambda m: m.NAME)
def test_topology_with_a_gpu_index_past_int64(module) -> None:  # type: ignore[no-untyped-def]
    lines = make.HUGE_NUMBER_FILES["nvidia-smi-topo.txt"]
    facts = module.parse(lines_frame(lines), CTX).facts
    assert ("topology", "gpus=3 NV18:3") in [(k, v) for k, v, _ in facts.rows()]


def test_nvidia_smi_memory_sizes_past_int64() -> None:
    lines = make.HUGE_NUMBER_FILES["nvidia-smi-query.csv"]
    result = nvidia_smi.parse(lines_frame(lines), CTX)
    assert result.events.height == 3
    assert "gpu_memory_total_mib" not in result.facts.get_column("key").to_list()  # no number to give


def test_nccl_and_traceback_numbers_past_int64() -> None:
    lines = make.HUGE_NUMBER_FILES["huge-numbers.log"]
    events = parse_log(lines_frame(lines), CTX).events
    assert events.get_column("parsed").to_list()[0] is True
    assert json.loads(events.get_column("attrs")[0])["host"] == "gpu-node-7"


def test_process_prefix_pid_past_int64() -> None:
    line = f"(EngineCore pid={make.BIG}) INFO 08-18 14:10:50 [core.py:1] hello"
    assert parse_log(lines_frame([line]), CTX).events.height == 1


def test_huge_numbers_through_ingest(zoo: ZooRun) -> None:
    db = zoo.result.db
    for file, lines in make.HUGE_NUMBER_FILES.items():
        assert query(db, f"SELECT count(*) FROM events WHERE file = '{file}'") == [(len(lines),)]
    assert query(db, "SELECT detected_type FROM files WHERE file = 'nvidia-smi-topo.txt'") == [("nvidia_smi",)]
    assert not any("nvidia-smi" in w for w in warnings_of(db))


# -- the command line's last line of defence --------------------------------------------------------


def test_internal_error_is_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("K3F_DEBUG", raising=False)

    @reports_errors
    def command() -> None:
        raise pl.exceptions.ComputeError("Invalid date components (2027, 2, 29) supplied\n\nThis error occurred "
                                         "in the following expression:\n\tcol('ts')")

    with pytest.raises(SystemExit) as exit_info:
        command()
    assert exit_info.value.code == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: ComputeError: Invalid date components" in err
    assert "Traceback" not in err and "col('ts')" not in err


def test_python_warnings_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a command runs, a warning from inside k3forensics (a library's UserWarning) is
    formatted as one line without our source line; afterwards the format is the caller's again
    (whoever records warnings, such as a test runner, still records them)."""
    monkeypatch.delenv("K3F_DEBUG", raising=False)
    before = warnings.formatwarning
    seen: list[str] = []

    @reports_errors
    def command() -> None:
        seen.append(warnings.formatwarning("Comparisons with None always result in null.\nConsider `.is_null()`.",
                                           UserWarning, "/site-packages/k3forensics/triage/oom.py", 87, "x != None"))

    command()
    assert seen == ["internal warning: UserWarning: Comparisons with None always result in null. (oom.py:87; "
                    "a k3forensics bug, please report it)\n"]
    assert warnings.formatwarning is before

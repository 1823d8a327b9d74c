"""Hostile metrics through ingest (the Prometheus source, samples table): malformed exposition
lines counted, NaN and ±Inf kept as floats, duplicate series kept and counted, counter resets
kept as written (rates handle them), query-API JSON of the wrong shape counted, never fatal."""

from __future__ import annotations

import math

import duckdb
import make
import pytest
from hostile_run import ZooRun, query, warnings_of

from k3forensics.metrics.rates import increase, total_increase
from k3forensics.metrics.series import series


def _samples(zoo: ZooRun, file: str) -> list[tuple[int, str, str, float]]:
    return query(zoo.result.db, f"SELECT line_no, metric, labels, value FROM samples WHERE file = '{file}' "
                 "ORDER BY line_no")


@pytest.mark.parametrize("case", list(make.METRICS_CASES))
def test_every_well_formed_sample_is_kept(zoo: ZooRun, case: str) -> None:
    spec = make.METRICS_CASES[case]
    assert len(_samples(zoo, spec.name)) == spec.samples
    detected = query(zoo.result.db, f"SELECT detected_type, line_count FROM files WHERE file = '{spec.name}'")
    assert detected == [("prometheus", len(spec.lines))]


def test_malformed_exposition_lines_are_counted(zoo: ZooRun) -> None:
    assert "malformed.prom: 5 malformed exposition lines, first at line 4" in warnings_of(zoo.result.db)
    # they stay in the timeline as unparsed events
    assert query(zoo.result.db, "SELECT count(*) FROM events WHERE file = 'malformed.prom' AND NOT parsed") == [(5,)]


def test_nan_and_inf_are_kept_as_floats(zoo: ZooRun) -> None:
    values = [v for *_, v in _samples(zoo, "nan-inf.prom")]
    assert values[0] == 12.0 and math.isnan(values[1])
    assert values[2:] == [math.inf, -math.inf, math.inf]  # 1e400 overflows to +Inf, as Prometheus reads it
    labels = [labels for _, _, labels, _ in _samples(zoo, "nan-inf.prom")]
    assert labels[0] == '{"le":"+Inf"}'


def test_duplicate_series_are_kept_and_counted(zoo: ZooRun) -> None:
    rows = _samples(zoo, "duplicates.prom")
    assert [(n, v) for n, _, _, v in rows] == [(2, 1.0), (3, 2.0), (4, 7.0), (5, 3.0)]
    assert ("duplicates.prom: 2 samples repeat a series at the same time, first at line 3; all kept, in file order"
            in warnings_of(zoo.result.db))


def test_counter_resets_are_kept_and_rates_handle_them(zoo: ZooRun) -> None:
    assert [v for *_, v in _samples(zoo, "counter-reset.prom")] == [1000.0, 2500.0, 40.0, 900.0]
    con = duckdb.connect(str(zoo.result.db), read_only=True)
    try:
        samples = con.sql("SELECT * FROM samples WHERE file = 'counter-reset.prom'").pl()
    finally:
        con.close()
    points = series(samples, "vllm:prompt_tokens_total")
    assert increase(points).get_column("increase").to_list() == [None, 1500.0, 40.0, 860.0]  # never negative
    assert total_increase(points) == 3400.0


def test_query_json_of_the_wrong_shape_is_counted(zoo: ZooRun) -> None:
    warnings = warnings_of(zoo.result.db)
    assert "query-range.json: 2 lines are not JSON, first at line 5" in warnings  # too deep; a 5,000-digit number
    assert "query-range.json: 6 values are not [time, number] pairs, first at line 1; skipped" in warnings
    rows = _samples(zoo, "query-range.json")
    assert [(m, v) for _, m, _, v in rows if not math.isnan(v)] == [("vllm:x", 1.0), ("query-range", math.inf)]


def test_capture_lines_of_the_wrong_shape_are_counted(zoo: ZooRun) -> None:
    db = zoo.result.db
    assert "capture.jsonl: 3 capture lines are not JSON objects, first at line 6" in warnings_of(db)
    parsed = query(db, "SELECT line_no FROM events WHERE file = 'capture.jsonl' AND parsed ORDER BY line_no")
    assert [n for n, in parsed] == [1, 2, 3, 4, 5]

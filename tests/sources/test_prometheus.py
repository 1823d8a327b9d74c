"""Prometheus text exposition and query-API JSON."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
from _docgolden import check, head, inputs, log_heads, other_inputs, run

from k3forensics.sources import prometheus
from k3forensics.sources.base import ParseContext, lines_frame

CASES = inputs("prometheus")


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_golden(path):
    check(prometheus, path)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_detects_its_documents(path):
    assert prometheus.detect(head(path))


@pytest.mark.parametrize("path", log_heads() + other_inputs("prometheus"), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_declines_logs_and_other_documents(path):
    assert not prometheus.detect(head(path))


def _parse(lines: list[str]):
    return prometheus.parse(lines_frame(lines), ParseContext(file="metrics/scrape.prom"))


def test_bare_samples_without_comments_are_detected():
    assert prometheus.detect('vllm:num_requests_running{engine="0"} 3\nvllm:num_requests_waiting{engine="0"} 0\nup 1\n')


def test_scrape_time_comment_dates_following_samples_and_type_facts():
    result = _parse(["# ts=1786702272", "# TYPE vllm:num_requests_running gauge", 'vllm:num_requests_running{engine="0"} 3'])
    row = result.samples.row(0, named=True)
    assert row["ts"].isoformat() == "2026-08-14T10:11:12+00:00"
    assert (row["metric"], row["labels"], row["value"], row["line_no"]) == (
        "vllm:num_requests_running", '{"engine":"0"}', 3.0, 3)
    assert result.facts.rows() == [("metric_type.vllm:num_requests_running", "gauge", 2)]


def test_special_values_and_created_series():
    result = _parse(["a NaN", "b +Inf", "c -Inf", "d_created 1.7e9", "e 2.5e-3 1786702272000"])
    values = dict(result.samples.select("metric", "value").rows())
    assert math.isnan(values["a"]) and values["b"] == math.inf and values["c"] == -math.inf
    assert "d_created" not in values
    assert values["e"] == 0.0025


def test_malformed_lines_are_counted_not_fatal():
    result = _parse(["good 1", "bad{x=y} 1", "also bad", "", "worse 1 2 3"])
    assert result.warnings == ["3 malformed exposition lines, first at line 2"]
    assert result.events.get_column("parsed").to_list() == [True, False, False, False, False]


def test_labels_are_valid_json_with_sorted_keys():
    result = _parse(['m{z="1",a="tab\there",b="back\\\\slash",c="odd\\d"} 1'])
    labels = json.loads(result.samples.get_column("labels")[0])
    assert list(labels) == ["a", "b", "c", "z"]
    assert labels["b"] == "back\\slash" and labels["a"] == "tab\there" and labels["c"] == "odd\\d"


def test_range_query_points_at_the_series_lines():
    result = run(prometheus, next(p for p in CASES if p.stem == "range_matrix"))
    waiting = result.samples.filter(pl.col("metric") == "vllm:num_requests_waiting")
    assert waiting.get_column("value").to_list() == [0.0, 4.0, 17.0]
    assert set(waiting.get_column("line_no").to_list()) == {7}

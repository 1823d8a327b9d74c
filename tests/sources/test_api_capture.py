"""Captured chat-completions traffic (JSON lines)."""

from __future__ import annotations

import json

import pytest
from _docgolden import check, head, inputs, log_heads, other_inputs, read_lines, run

from k3forensics.sources import api_capture
from k3forensics.sources.base import ParseContext, lines_frame

CASES = inputs("api_capture")


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_golden(path):
    check(api_capture, path)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_detects_its_documents(path):
    assert api_capture.detect(head(path))


@pytest.mark.parametrize("path", log_heads() + other_inputs("api_capture"), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_declines_logs_and_other_documents(path):
    assert not api_capture.detect(head(path))


def test_declines_docker_json_and_json_logging():
    assert not api_capture.detect('{"log":"{\\"choices\\": []}\\n","stream":"stdout","time":"2026-08-14T10:11:12Z"}\n')
    assert not api_capture.detect('{"asctime": "2026-08-14 10:11:12,345", "levelname": "INFO", "message": "x"}\n')


def test_attrs_of_a_tool_call_exchange():
    result = run(api_capture, CASES[0])
    attrs = json.loads(result.events.get_column("attrs")[0])
    assert attrs == {
        "cached_tokens": 1536, "completion_tokens": 61, "finish_reason": "tool_calls", "id": "chatcmpl-8f1c2a",
        "latency_s": 2.41, "model": "kimi-k3", "object": "chat.completion", "prompt_tokens": 1832,
        "request_messages": 2, "request_tools": 2, "status": 200, "stream": False, "tool_calls": 2,
    }


def test_load_exchanges_pairs_and_merges_streams():
    exchanges = api_capture.load_exchanges(read_lines(CASES[0]))
    assert [e["line_no"] for e in exchanges] == [1, 2, 3, 5, 6, 7]
    first = exchanges[0]
    assert first["request"]["tools"][0]["function"]["name"] == "get_weather"
    assert first["response"]["choices"][0]["message"]["tool_calls"][1]["function"]["arguments"] == '{"city": "Tokyo"}'
    assert exchanges[1]["request"] is None and exchanges[2]["response"] is None
    streamed = exchanges[3]
    call = streamed["response"]["choices"][0]["message"]["tool_calls"][0]
    assert call == {"id": "call_0", "type": "function", "function": {"name": "search_web",
                                                                     "arguments": '{"q": "vllm nccl timeout"}'}}
    assert streamed["response"]["usage"]["completion_tokens"] == 18
    assert streamed["latency_s"] == 0.812 and streamed["ts"].isoformat() == "2026-08-14T10:11:40.125000+00:00"


def test_sse_lines_and_done_marker():
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1786702272, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}
    lines = ["data: " + json.dumps(chunk), "", "data: [DONE]"]
    assert api_capture.detect("\n".join(lines))
    events = api_capture.parse(lines_frame(lines), ParseContext(file="stream.txt")).events
    assert events.get_column("parsed").to_list() == [True, False, True]
    assert events.get_column("message").to_list()[2] == "stream done"


def test_load_exchanges_from_timeline_columns_only():
    # the verdicts read captures back from the events table: only `line_no` and `line`
    frame = read_lines(CASES[0]).select("line_no", "line")
    assert [e["line_no"] for e in api_capture.load_exchanges(frame)] == [1, 2, 3, 5, 6, 7]

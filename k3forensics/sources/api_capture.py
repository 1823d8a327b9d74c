"""Captured OpenAI chat-completions traffic, one JSON object per line.

Accepted line shapes: an exchange `{"request": {...}, "response": {...}}` with optional
`timestamp`/`ts` (ISO 8601 or unix seconds/milliseconds), `latency_s`/`duration_ms`, `status`
(HTTP code); a bare request (has `messages`); a bare response (`"object": "chat.completion"`,
or an `error` body). A streamed response may be given as a list of `chat.completion.chunk`
objects (under `response` or `chunks`); it is merged into one completion. An SSE `data: `
prefix is dropped. Tool-call validation is not done here: `load_exchanges` hands the parsed
pairs to the checks that do it.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

import polars as pl

from k3forensics.sources import _doc_util as du
from k3forensics.sources.base import ParseContext, ParseResult

NAME = "api_capture"

_SHAPE = re.compile(
    r'"object"\s*:\s*"chat\.completion(?:\.chunk)?"|^\{\s*"(?:request|response|timestamp|ts)"\s*:'
    r'|"messages"\s*:\s*\[\s*\{\s*"role"|"choices"\s*:\s*\[',
    re.MULTILINE,
)
_NOT_CAPTURE = re.compile(r'"resultType"\s*:|^\{\s*"log"\s*:\s*"|"levelname"\s*:', re.MULTILINE)


def detect(head: str) -> bool:
    if du.looks_like_log(head):
        return False
    first = next((ln.strip() for ln in head.splitlines() if ln.strip()), "")
    first = first.removeprefix("data:").strip()
    return first.startswith("{") and bool(_SHAPE.search(head)) and not _NOT_CAPTURE.search(head)


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    records = _records(lines)
    summaries = pl.DataFrame(
        [_summary(r) for r in records],
        schema={"line_no": pl.Int64, "_ok": pl.Boolean, "_t": pl.Utf8, "_level": pl.Utf8, "_msg": pl.Utf8,
                "_attrs": pl.Utf8},
        orient="row",
    )
    work = lines.join(summaries, on="line_no", how="left", maintain_order="left")
    ts, quality = du.parse_time(pl.col("_t"))
    bad = work.filter(pl.col("_ok") == False)  # noqa: E712 (a null is a blank line, not a bad one)
    warnings = []
    if bad.height:
        first = du.first_line_no(bad)
        warnings.append(f"{bad.height} capture lines are not JSON objects, first at line {first}")
    events = du.build_events(
        lines,
        NAME,
        work=work,
        parsed=pl.col("_ok"),
        ts=ts,
        ts_quality=quality,
        level=pl.col("_level"),
        message=pl.coalesce("_msg", "text"),
        attrs=pl.col("_attrs"),
    )
    return ParseResult(events=events, warnings=warnings)


def load_exchanges(lines: pl.DataFrame) -> list[dict[str, Any]]:
    """The request/response pairs of a capture, for the checks that validate them.

    Each item: `line_no`, `ts` (datetime or None), `request` (dict or None), `response`
    (dict or None; streamed chunks merged), `status` (int or None), `latency_s` (float or None).
    Lines that are not JSON objects are left out (parse() counts them).
    """
    return [r for r in _records(lines) if r.get("ok")]


# ---------------------------------------------------------------- decoding


def _records(lines: pl.DataFrame) -> list[dict[str, Any]]:
    """One record per non-blank line. JSON objects have no column shape in common, so each
    line is decoded on its own; `line` (not `text`) because ANSI clean-up would alter content."""
    rows = lines.select("line_no", pl.col("line").fill_null("").str.strip_chars().str.replace(r"^data:\s*", ""))
    out = []
    for line_no, raw in rows.iter_rows():
        if not raw:
            continue
        if raw == "[DONE]":
            out.append({"line_no": line_no, "ok": True, "done": True})
            continue
        try:
            obj = du.loads(raw)
        except ValueError:
            obj = None
        out.append(_exchange(line_no, obj) if isinstance(obj, dict) else {"line_no": line_no, "ok": False})
    return out


def _exchange(line_no: int, obj: dict[str, Any]) -> dict[str, Any]:
    if "request" in obj or "response" in obj or "chunks" in obj:
        request, response = obj.get("request"), obj.get("response", obj.get("chunks"))
    elif "messages" in obj:
        request, response = obj, None
    else:
        request, response = None, obj
    if isinstance(response, list):
        response = merge_chunks(response)
    if isinstance(response, dict) and isinstance(response.get("body"), dict):
        response = response["body"]  # a capture that kept the HTTP envelope
    latency = _number(obj.get("latency_s"))
    if latency is None and (duration := _number(obj.get("duration_ms"))) is not None:
        latency = duration / 1000.0
    return {
        "line_no": line_no,
        "ok": True,
        "ts": _when(obj, response),
        "request": _typed_request(request) if isinstance(request, dict) else None,
        "response": _typed_response(response) if isinstance(response, dict) else None,
        "status": _status(obj.get("status", obj.get("status_code"))),
        "latency_s": latency,
    }


def _status(value: Any) -> int | None:
    """An HTTP status as an int: a JSON integer or a string of ASCII digits (not `"²"`)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1000:
        return value
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,3}", value):
        return int(value)
    return None


def _number(value: Any) -> float | None:
    """A finite float from a JSON number or numeric string; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _epoch(seconds: float | None) -> datetime | None:
    """Unix seconds (milliseconds above 1e11) as UTC; None when out of the calendar's range."""
    if seconds is None:
        return None
    try:
        return datetime.fromtimestamp(seconds / 1000 if seconds > 1e11 else seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _when(obj: dict[str, Any], response: Any) -> datetime | None:
    for value in (obj.get("timestamp"), obj.get("ts")):
        if (seconds := _number(value)) is not None:
            return _epoch(seconds)
        if isinstance(value, str):
            return _iso(value)
    created = response.get("created") if isinstance(response, dict) else None
    return _epoch(_number(created)) if isinstance(created, int | float) else None


def _iso(text: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# ---------------------------------------------------------------- shapes the checks can trust

# A capture is typed by whoever wrote it: the containers that parse() and the verdicts walk are
# brought to their documented JSON types here, once, so that no consumer has to distrust them.


def _objects(value: Any) -> list[dict[str, Any]]:
    """The JSON objects of an array (anything else in it, or a non-array, is dropped)."""
    return [item for item in du.as_list(value) if isinstance(item, dict)]


def _typed_request(request: dict[str, Any]) -> dict[str, Any]:
    out = dict(request)
    for key in ("messages", "tools"):
        if key in request:
            out[key] = _objects(request[key])
    return out


def _typed_response(response: dict[str, Any]) -> dict[str, Any]:
    out = dict(response)
    if "choices" in response:
        out["choices"] = [_typed_choice(c) for c in _objects(response["choices"])]
    if "usage" in response:
        usage = dict(du.as_dict(response.get("usage")))
        if "prompt_tokens_details" in usage:
            usage["prompt_tokens_details"] = du.as_dict(usage["prompt_tokens_details"])
        out["usage"] = usage
    return out


def _typed_choice(choice: dict[str, Any]) -> dict[str, Any]:
    out = dict(choice)
    message = dict(du.as_dict(choice.get("message")))
    if "tool_calls" in message:
        message["tool_calls"] = [_typed_call(c) for c in _objects(message["tool_calls"])]
    out["message"] = message
    return out


def _typed_call(call: dict[str, Any]) -> dict[str, Any]:
    return {**call, "function": du.as_dict(call.get("function"))}


def merge_chunks(chunks: list[Any]) -> dict[str, Any]:
    """Streamed `chat.completion.chunk` objects as one `chat.completion`.

    Content and reasoning are concatenated; tool calls are assembled by their `index`
    (name from the first delta that has one, arguments concatenated); the last
    finish_reason and the last usage win.
    """
    choices: dict[int, dict[str, Any]] = {}
    merged: dict[str, Any] = {"object": "chat.completion", "choices": []}
    for chunk in (c for c in chunks if isinstance(c, dict)):
        for key in ("id", "model", "created"):
            merged.setdefault(key, chunk.get(key))
        if chunk.get("usage"):
            merged["usage"] = chunk["usage"]
        for choice in (c for c in du.as_list(chunk.get("choices")) if isinstance(c, dict)):
            index = _index(choice.get("index"), 0)
            _merge_choice(choices.setdefault(index, _empty_choice(index)), choice)
    merged["choices"] = [_close_choice(choices[i]) for i in sorted(choices)]
    return merged


def _empty_choice(index: int) -> dict[str, Any]:
    return {"index": index, "finish_reason": None, "message": {"role": "assistant", "content": ""}, "_tools": {}}


def _index(value: Any, default: int) -> int:
    """A chunk's `index` (a key of the merge): an integer, else `default`."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _text(value: Any) -> str:
    """A streamed text delta; a non-string one is kept as its JSON text rather than lost."""
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def _merge_choice(into: dict[str, Any], choice: dict[str, Any]) -> None:
    delta = du.as_dict(choice.get("delta"))
    message = into["message"]
    for field in ("content", "reasoning_content", "reasoning"):
        if delta.get(field):
            message[field] = message.get(field, "") + _text(delta[field])
    for call in (c for c in du.as_list(delta.get("tool_calls")) if isinstance(c, dict)):
        slot = into["_tools"].setdefault(_index(call.get("index"), len(into["_tools"])), {
            "id": None, "type": "function", "function": {"name": None, "arguments": ""}})
        slot["id"] = slot["id"] or call.get("id")
        function = du.as_dict(call.get("function"))
        slot["function"]["name"] = slot["function"]["name"] or function.get("name")
        slot["function"]["arguments"] += _text(function.get("arguments"))
    if choice.get("finish_reason"):
        into["finish_reason"] = choice["finish_reason"]


def _close_choice(choice: dict[str, Any]) -> dict[str, Any]:
    tools = choice.pop("_tools")
    if tools:
        choice["message"]["tool_calls"] = [tools[i] for i in sorted(tools)]
    return choice


# ---------------------------------------------------------------- event fields


def _summary(record: dict[str, Any]) -> tuple[Any, ...]:
    """(line_no, ok, time text, level, message, attrs JSON) of one record."""
    line_no = record["line_no"]
    if not record.get("ok"):
        return (line_no, False, None, None, None, None)
    if record.get("done"):
        return (line_no, True, None, None, "stream done", None)
    attrs = _attrs(record)
    when = record["ts"].isoformat() if record.get("ts") else None
    return (line_no, True, when, _level(attrs), _message(record, attrs), json.dumps(attrs, sort_keys=True))


def _attrs(record: dict[str, Any]) -> dict[str, Any]:
    # request and response come typed from _exchange: lists are lists, objects are objects
    request, response = record.get("request") or {}, record.get("response") or {}
    choices = response.get("choices") or []
    first = choices[0] if choices else {}
    calls = sum(len(c["message"].get("tool_calls") or []) for c in choices)
    usage = response.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    error = response.get("error") if isinstance(response.get("error"), dict) else None
    if error is None and response.get("object") == "error":  # vLLM's own error body
        error = response
    values = {
        "id": response.get("id"),
        "object": response.get("object"),
        "model": response.get("model") or request.get("model"),
        "finish_reason": first.get("finish_reason"),
        "tool_calls": calls if response else None,
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "cached_tokens": details.get("cached_tokens"),
        "status": record.get("status") or (error.get("code") if error else None),
        "latency_s": record.get("latency_s"),
        "stream": request.get("stream"),
        "request_messages": len(request.get("messages") or []) if request else None,
        "request_tools": len(request.get("tools") or []) if request else None,
        "error": (error or {}).get("message"),
    }
    return {k: v for k, v in values.items() if v is not None}


def _level(attrs: dict[str, Any]) -> str | None:
    code = _status(attrs.get("status"))
    if code is not None and 400 <= code < 500:  # the client's fault, not the server's
        return "WARNING"
    if attrs.get("error") or (code is not None and code >= 500):
        return "ERROR"
    return "WARNING" if attrs.get("finish_reason") == "length" else "INFO"


def _message(record: dict[str, Any], attrs: dict[str, Any]) -> str:
    if attrs.get("error"):
        return f"error status={attrs.get('status')} {attrs['error']}"[:300]
    if record.get("response"):
        text = f"{attrs.get('object') or 'response'} id={attrs.get('id')} finish_reason={attrs.get('finish_reason')}"
        return text + f" tool_calls={attrs.get('tool_calls')}"
    return f"request model={attrs.get('model')} messages={attrs.get('request_messages')} tools={attrs.get('request_tools')}"

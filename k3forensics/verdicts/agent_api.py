"""Agent API correctness (seed 003, third stage) from captured chat-completions traffic.

Every tool call's `arguments` must parse as a JSON object, name a tool of the request's
`tools`, and conform to that tool's JSON Schema; reasoning, content and tool calls must stay
in their own fields; finish reasons must agree with the message; timeouts should be retried.
vLLM's own tool-parser error lines count as failures too (the client never saw that call).
One successful demo is not evidence: fewer than MIN_TOOL_CALLS calls is `no_evidence`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import polars as pl

MIN_TOOL_CALLS = 5
MAX_EXAMPLES = 10
PARSER_SIGNATURES = ("vllm.tool-parser-error", "vllm.reasoning-parser-error")
TIMEOUT_STATUS = {408, 504}
# Markup of tool-call and reasoning tokens that a parser should have taken out of `content`.
TOOL_MARKUP = re.compile(r"<\|tool_calls?_(?:section_)?begin\|>|<tool_call>|</tool_call>|\bfunctions\.\w+:\d+")
REASONING_MARKUP = re.compile(r"</?think>|◁/?think▷")
TIMEOUT_TEXT = re.compile(r"(?i)time(?:d)?[ _-]?out")


class ApiStatus(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NO_EVIDENCE = "no_evidence"


@dataclass
class Failure:
    kind: str                 # arguments_not_json | unknown_tool | schema_violation | ... (see README)
    file: str
    line_no: int | None
    detail: str
    tool: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass
class AgentApiVerdict:
    status: ApiStatus
    reasons: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    finish_reasons: dict[str, int] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        by_kind = Counter(f.kind for f in self.failures)
        return {"status": self.status.value, "reasons": self.reasons, "counts": self.counts,
                "finish_reasons": self.finish_reasons, "failures_by_kind": dict(by_kind),
                "failing_examples": [f.to_dict() for f in self.failures[:MAX_EXAMPLES]]}


def decide(exchanges: list[dict[str, Any]], hits: pl.DataFrame) -> AgentApiVerdict:
    counts: Counter[str] = Counter()
    finish: Counter[str] = Counter()
    failures: list[Failure] = []
    for exchange in exchanges:
        failures += check_exchange(exchange, counts, finish)
    failures += _parser_failures(hits, counts)
    _retries(exchanges, counts)
    return AgentApiVerdict(*_judge(counts, failures), dict(counts), dict(finish), failures)


def _judge(counts: Counter[str], failures: list[Failure]) -> tuple[ApiStatus, list[str]]:
    calls = counts["tool_calls"]
    if failures:
        kinds = Counter(f.kind for f in failures)
        listed = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
        return ApiStatus.FAIL, [f"{len(failures)} failure(s) in {calls} tool call(s) and "
                                f"{counts['responses']} response(s): {listed}"]
    if counts["responses"] == 0:
        return ApiStatus.NO_EVIDENCE, ["no captured chat-completions responses in the bundle"]
    if calls < MIN_TOOL_CALLS:
        return ApiStatus.NO_EVIDENCE, [f"only {calls} tool call(s) captured (fewer than {MIN_TOOL_CALLS}): "
                                       "a demo that worked once is not evidence"]
    return ApiStatus.PASS, [f"{calls} tool call(s) in {counts['responses']} response(s): every one valid JSON, "
                            f"a declared tool, conforming to its schema; reasoning, content and tool calls separated"]


def check_exchange(exchange: dict[str, Any], counts: Counter[str], finish: Counter[str]) -> list[Failure]:
    response, request = exchange.get("response"), exchange.get("request") or {}
    counts["requests"] += 1 if request else 0
    if request and any(m.get("role") == "tool" for m in request.get("messages") or [] if isinstance(m, dict)):
        counts["requests_with_tool_results"] += 1
    if not isinstance(response, dict) or not response.get("choices"):
        if _is_error(exchange):
            counts["errors"] += 1
        return []
    counts["responses"] += 1
    tools = _tools(request)
    out: list[Failure] = []
    for choice in response["choices"]:
        if not isinstance(choice, dict):
            continue
        message = choice.get("message") or {}
        calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        reason = str(choice.get("finish_reason"))
        finish[reason] += 1
        counts["tool_calls"] += len(calls)
        counts["responses_with_reasoning"] += 1 if _reasoning(message) else 0
        out += [f for call in calls if (f := check_call(call, tools, request, exchange))]
        out += _separation(message, exchange)
        out += _finish_agrees(reason, calls, exchange)
    return out


def check_call(call: dict[str, Any], tools: dict[str, Any] | None, request: dict[str, Any],
               exchange: dict[str, Any]) -> Failure | None:
    function = call.get("function") or {}
    name = function.get("name")

    def fail(kind: str, detail: str) -> Failure:
        return Failure(kind, exchange.get("file", ""), exchange.get("line_no"), detail, name)

    try:
        args = json.loads(function.get("arguments") or "")
    except (json.JSONDecodeError, TypeError) as exc:
        return fail("arguments_not_json", f"{exc.msg if hasattr(exc, 'msg') else exc}: "
                                          f"{str(function.get('arguments'))[:120]}")
    if not isinstance(args, dict):
        return fail("arguments_not_object", f"arguments are a JSON {type(args).__name__}, not an object")
    if not request:
        return None  # the response alone: the schema is not in the bundle
    if tools is None:
        return fail("tool_call_without_tools", "the request declared no tools")
    if name not in tools:
        return fail("unknown_tool", f"{name!r} is not among the request's tools ({', '.join(sorted(tools))})")
    schema = tools[name]
    # Imported here: jsonschema costs ~50 ms at start-up and only bundles with tool calls need it.
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator = validator_for(schema)(schema)
        errors = sorted(validator.iter_errors(args), key=lambda e: list(e.path))
    except SchemaError as exc:
        return fail("tool_schema_invalid", f"the request's schema of {name!r} is invalid: {exc.message}")
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "(root)"
        return fail("schema_violation", f"{where}: {errors[0].message}")
    return None


def _tools(request: dict[str, Any]) -> dict[str, Any] | None:
    declared = request.get("tools")
    if not declared:
        return None
    out = {}
    for tool in declared:
        function = (tool or {}).get("function") or {}
        if function.get("name"):
            out[function["name"]] = function.get("parameters") or {"type": "object"}
    return out


def _reasoning(message: dict[str, Any]) -> str:
    return str(message.get("reasoning_content") or message.get("reasoning") or "")


def _separation(message: dict[str, Any], exchange: dict[str, Any]) -> list[Failure]:
    content = message.get("content") if isinstance(message.get("content"), str) else ""
    where = (exchange.get("file", ""), exchange.get("line_no"))
    out = []
    if content and TOOL_MARKUP.search(content):
        out.append(Failure("tool_markup_in_content", *where, f"content holds tool-call markup: {content[:120]}"))
    if content and REASONING_MARKUP.search(content):
        out.append(Failure("reasoning_in_content", *where, f"content holds reasoning markup: {content[:120]}"))
    if TOOL_MARKUP.search(_reasoning(message)):
        out.append(Failure("tool_markup_in_reasoning", *where, "the reasoning field holds a tool call"))
    return out


def _finish_agrees(reason: str, calls: list[dict[str, Any]], exchange: dict[str, Any]) -> list[Failure]:
    where = (exchange.get("file", ""), exchange.get("line_no"))
    if reason == "tool_calls" and not calls:
        return [Failure("finish_reason_mismatch", *where, "finish_reason tool_calls but no tool call in the message")]
    if reason == "length" and calls:
        return [Failure("truncated_tool_call", *where, "finish_reason length with a tool call: its arguments "
                        "were cut at max_tokens")]
    return []


def _parser_failures(hits: pl.DataFrame, counts: Counter[str]) -> list[Failure]:
    if hits.height == 0 or "signature" not in hits.columns:
        return []
    lines = hits.filter(pl.col("signature").is_in(PARSER_SIGNATURES))
    counts["parser_error_lines"] += lines.height
    return [Failure("parser_error_line", r["file"], r["line_no"], str(r["line"])[:200])
            for r in lines.iter_rows(named=True)]


def _is_error(exchange: dict[str, Any]) -> bool:
    status = exchange.get("status")
    response = exchange.get("response") or {}
    return bool((status and status >= 400) or response.get("error") or response.get("object") == "error")


def _is_timeout(exchange: dict[str, Any]) -> bool:
    if exchange.get("status") in TIMEOUT_STATUS:
        return True
    error = (exchange.get("response") or {}).get("error")
    text = json.dumps(error) if error else str((exchange.get("response") or {}).get("message") or "")
    return bool(TIMEOUT_TEXT.search(text))


def _retries(exchanges: list[dict[str, Any]], counts: Counter[str]) -> None:
    """A timeout is retried when the same request (same messages and tools) comes again later."""
    def key(e: dict[str, Any]) -> str:
        request = e.get("request") or {}
        return json.dumps([request.get("messages"), request.get("tools")], sort_keys=True)

    ordered = sorted(exchanges, key=lambda e: (e.get("ts") is None, e.get("ts") or 0, e.get("file", ""),
                                               e.get("line_no") or 0))
    for i, exchange in enumerate(ordered):
        if not exchange.get("request") or not _is_timeout(exchange):
            continue
        counts["timeouts"] += 1
        again = [e for e in ordered[i + 1:] if e.get("request") and key(e) == key(exchange)]
        if again:
            counts["timeouts_retried"] += 1
            counts["retries_succeeded"] += 1 if any(not _is_error(e) and e.get("response") for e in again) else 0

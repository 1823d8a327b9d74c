"""The captured API exchanges of a timeline, for the prefix-cache and agent-API verdicts.

The capture files' lines are in the `events` table (source `api_capture`), so a timeline
read back from its database gives the same exchanges as the bundle did.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from k3forensics.sources.api_capture import NAME as API_CAPTURE
from k3forensics.sources.api_capture import load_exchanges


def exchanges_of(events: pl.DataFrame) -> list[dict[str, Any]]:
    """Every exchange with its `file`, in file then line order."""
    if events.height == 0 or "source" not in events.columns:
        return []
    rows = events.filter(pl.col("source") == API_CAPTURE).select("file", "line_no", "line").sort("file", "line_no")
    out: list[dict[str, Any]] = []
    for (file,), frame in rows.group_by("file", maintain_order=True):
        for exchange in load_exchanges(frame.select("line_no", "line")):
            out.append({**exchange, "file": file})
    return out


def timed(exchanges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Exchanges in time order (those without a time keep their file order, at the end)."""
    with_ts = sorted((e for e in exchanges if e.get("ts")), key=lambda e: e["ts"])
    return with_ts + [e for e in exchanges if not e.get("ts")]


def cached_tokens(exchange: dict[str, Any]) -> int | None:
    usage = (exchange.get("response") or {}).get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    value = details.get("cached_tokens")
    return int(value) if isinstance(value, (int, float)) else None


def prefix_key(exchange: dict[str, Any]) -> str | None:
    """What a request shares with others when its prefix can be reused: the tool definitions
    and the first message (the fixed system prompt of an agent)."""
    request = exchange.get("request") or {}
    messages = request.get("messages") or []
    if not messages:
        return None
    return json.dumps([request.get("tools") or [], messages[0]], sort_keys=True)


def shares_prefix(exchanges: list[dict[str, Any]]) -> bool | None:
    """True when two requests start alike; None without two requests to compare."""
    keys = [k for k in (prefix_key(e) for e in exchanges) if k is not None]
    if len(keys) < 2:
        return None
    return len(set(keys)) < len(keys)

"""Anything else: lines with a leading date-time are given their time and level; the rest
stay in the timeline as unparsed lines."""

from __future__ import annotations

import polars as pl

from k3forensics.sources.logformat import LineFormat, iso_datetime, normalise_level

NAME = "generic"

# `2024-10-14 01:39:49,286 …`, `[2024-04-11 09:40:32,971] …`, `[2024-10-22 06:31:49 TP0] …` (SGLang),
# `2026-02-24T20:21:58Z …`.
DATED_PATTERN = (
    r"^\[?(?P<date>\d{4}-\d\d-\d\d)[ T](?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?(?P<tz>Z|[+-]\d\d:?\d\d)?"
    r"(?: (?P<tag>[A-Z]+\d+(?: [A-Z]+\d+)*))?\]?:?\s*(?P<msg>.*)$"
)
LEVEL_WORD = r"(?:^|[\s\[|(])(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)(?:[\s\]|:)]|$)"


def _build_dated(g: pl.Expr) -> dict[str, pl.Expr]:
    ts, quality = iso_datetime(g.struct.field("date"), g.struct.field("hms"), g.struct.field("frac"),
                               g.struct.field("tz"))
    msg = g.struct.field("msg")
    return {
        "ts": ts,
        "ts_quality": quality,
        "level": normalise_level(msg.str.slice(0, 48).str.extract(LEVEL_WORD, 1)),
        "message": msg,
        "rank": g.struct.field("tag"),
    }


FORMATS = [LineFormat("dated", NAME, DATED_PATTERN, _build_dated)]


def detect(head: str) -> bool:
    return True

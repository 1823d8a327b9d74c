"""Kernel logs: `dmesg`, `dmesg -T`, `journalctl` (short and short-iso), remote syslog; NVRM/Xid lines."""

from __future__ import annotations

import re

import polars as pl

from k3forensics.sources.logformat import LineFormat, attrs_json, iso_datetime

NAME = "kernel"

DMESG_PATTERN = r"^\[\s*(?P<mono>\d+\.\d+)\]\s?(?P<msg>.*)$"
DMESG_T_PATTERN = (
    r"^\[(?:\w{3} )?(?P<mon>[A-Z][a-z]{2})\s+(?P<day>\d{1,2}) (?P<hms>\d\d:\d\d:\d\d) (?P<year>\d{4})\]\s?(?P<msg>.*)$"
)
JOURNAL_PATTERN = (
    r"^(?P<mon>[A-Z][a-z]{2}) (?P<day>[ \d]\d) (?P<hms>\d\d:\d\d:\d\d) (?P<host>\S+) "
    r"(?P<unit>[^\s:\[]+)(?:\[(?P<upid>\d+)\])?: (?P<msg>.*)$"
)
JOURNAL_ISO_PATTERN = (
    r"^(?P<date>\d{4}-\d\d-\d\d)T(?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?(?P<tz>Z|[+-]\d\d:?\d\d) (?P<host>\S+) "
    r"(?P<unit>[^\s:\[]+)(?:\[(?P<upid>\d+)\])?: (?P<msg>.*)$"
)
# `192.168.11.119: kern: warning: [2026-04-22T21:26:20.599716692Z]: NVRM: …`
SYSLOG_PATTERN = (
    r"^(?P<host>\S+): kern: (?P<sev>\w+): \[(?P<date>\d{4}-\d\d-\d\d)T(?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?"
    r"(?P<tz>Z|[+-]\d\d:?\d\d)?\]:\s?(?P<msg>.*)$"
)

_MONTHS = {m: f"{i:02d}" for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], start=1)}
_SYSLOG_LEVELS = {"emerg": "CRITICAL", "alert": "CRITICAL", "crit": "CRITICAL", "err": "ERROR",
                  "warning": "WARNING", "warn": "WARNING", "notice": "INFO", "info": "INFO", "debug": "DEBUG"}


def _month_day(g: pl.Expr) -> pl.Expr:
    month = g.struct.field("mon").replace_strict(_MONTHS, default=None, return_dtype=pl.Utf8)
    day = g.struct.field("day").str.strip_chars().str.pad_start(2, "0")
    return pl.concat_str([month, day])


def _xid(msg: pl.Expr) -> pl.Expr:
    return msg.str.extract(r"\bS?Xid \([^)]*\): (\d+)", 1).cast(pl.Int64, strict=False)


def _build_dmesg(g: pl.Expr) -> dict[str, pl.Expr]:
    msg = g.struct.field("msg")
    return {"message": msg, "attrs": attrs_json(monotonic_s=g.struct.field("mono").cast(pl.Float64), xid=_xid(msg))}


def _build_dmesg_t(g: pl.Expr) -> dict[str, pl.Expr]:
    msg = g.struct.field("msg")
    date = pl.concat_str([g.struct.field("year"), pl.lit("-"), _month_day(g).str.slice(0, 2), pl.lit("-"),
                          _month_day(g).str.slice(2, 2)])
    ts, _ = iso_datetime(date, g.struct.field("hms"), pl.lit(None, pl.Utf8), pl.lit(None, pl.Utf8))
    return {"ts": ts, "ts_quality": pl.lit("zoneless"), "message": msg, "attrs": attrs_json(xid=_xid(msg))}


def _build_journal(g: pl.Expr) -> dict[str, pl.Expr]:
    from k3forensics.sources.logformat import yearless

    msg = g.struct.field("msg")
    return {
        "ts": yearless(_month_day(g), g.struct.field("hms")),
        "ts_quality": pl.lit("yearless"),
        "message": msg,
        "attrs": attrs_json(host=g.struct.field("host"), unit=g.struct.field("unit"), xid=_xid(msg)),
    }


def _build_journal_iso(g: pl.Expr) -> dict[str, pl.Expr]:
    msg = g.struct.field("msg")
    ts, quality = iso_datetime(g.struct.field("date"), g.struct.field("hms"), g.struct.field("frac"),
                               g.struct.field("tz"))
    return {"ts": ts, "ts_quality": quality, "message": msg,
            "attrs": attrs_json(host=g.struct.field("host"), unit=g.struct.field("unit"), xid=_xid(msg))}


def _build_syslog(g: pl.Expr) -> dict[str, pl.Expr]:
    msg = g.struct.field("msg")
    ts, quality = iso_datetime(g.struct.field("date"), g.struct.field("hms"), g.struct.field("frac"),
                               g.struct.field("tz"))
    level = g.struct.field("sev").replace_strict(_SYSLOG_LEVELS, default=None, return_dtype=pl.Utf8)
    return {"ts": ts, "ts_quality": quality, "level": level, "message": msg,
            "attrs": attrs_json(host=g.struct.field("host"), xid=_xid(msg))}


FORMATS = [
    LineFormat("dmesg", NAME, DMESG_PATTERN, _build_dmesg),
    LineFormat("dmesg_t", NAME, DMESG_T_PATTERN, _build_dmesg_t),
    LineFormat("journal_iso", NAME, JOURNAL_ISO_PATTERN, _build_journal_iso),
    LineFormat("journal", NAME, JOURNAL_PATTERN, _build_journal),
    LineFormat("syslog", NAME, SYSLOG_PATTERN, _build_syslog, prefilter=": kern: "),
]

_HEAD = re.compile(
    r"^\[\s*\d+\.\d{6}\] |^\[\w{3} [A-Z][a-z]{2}\s+\d+ \d\d:\d\d:\d\d \d{4}\] |NVRM: |\bkernel: |: kern: "
    r"|^-- (?:Logs begin|Journal begins)",
    re.MULTILINE,
)


def detect(head: str) -> bool:
    return _HEAD.search(head) is not None

"""PyTorch C++ (c10, glog-style) lines: `[rank0]:[E814 10:11:12.123456789 ProcessGroupNCCL.cpp:1250] msg`.

Also the older `[E ProcessGroupNCCL.cpp:475] msg`, klog `I0121 12:04:24.655909  1 main.go:154] msg`
and torch elastic `W0819 19:29:00.785000 140406652626752 …/api.py:858] msg`.
"""

from __future__ import annotations

import re

import polars as pl

from k3forensics.sources.logformat import LineFormat, attrs_json, normalise_level, yearless

NAME = "pytorch"

GLOG_PATTERN = (
    r"^(?:\[\d+\]\s*)?\[?(?:rank(?P<rank>\d+)\]:)?\[?(?P<glevel>[IWEF])(?:(?P<mmdd>\d{3,4}) (?P<hms>\d\d:\d\d:\d\d)"
    r"(?:\.(?P<frac>\d+))?)?\s+(?:(?P<tid>\d+)\s+)?(?P<src>[\w./-]+\.(?:cpp|cc|h|hpp|py|go):\d+)\]\s?(?P<msg>.*)$"
)


def _build(g: pl.Expr) -> dict[str, pl.Expr]:
    mmdd = g.struct.field("mmdd")
    return {
        "level": normalise_level(g.struct.field("glevel")),
        "ts": yearless(mmdd, g.struct.field("hms"), g.struct.field("frac")),
        "ts_quality": pl.when(mmdd.is_null()).then(pl.lit("missing")).otherwise(pl.lit("yearless")),
        "message": g.struct.field("msg"),
        "rank": pl.concat_str([pl.lit("rank"), g.struct.field("rank")]),
        "attrs": attrs_json(src=g.struct.field("src")),
    }


FORMATS = [LineFormat("glog", NAME, GLOG_PATTERN, _build)]

_HEAD = re.compile(r"\[rank\d+\]:\[[IWEF]\d{4} |ProcessGroupNCCL\.cpp:\d+\]")


def detect(head: str) -> bool:
    return _HEAD.search(head) is not None

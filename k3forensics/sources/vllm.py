"""vLLM server and engine logs (V0 and V1 prefixes), with uvicorn lines of the same stream."""

from __future__ import annotations

import re

import polars as pl

from k3forensics.sources.logformat import LineFormat, attrs_json, normalise_level, yearless

NAME = "vllm"

_LEVEL = r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)"
# `INFO 08-14 10:11:12 [core.py:58] msg` (0.8+) and `INFO 10-17 09:12:01 llm_engine.py:237] msg` (≤0.7).
VLLM_PATTERN = (
    rf"^{_LEVEL}\s+(?P<mmdd>\d\d-\d\d)\s+(?P<hms>\d\d:\d\d:\d\d)(?:[.,]\d+)?\s+"
    r"\[?(?P<src>[\w./-]+(?:/\.\.\./[\w./-]+)?:\d+)\]\s?(?P<msg>.*)$"
)
# uvicorn pads the level with the colon to nine characters.
UVICORN_PATTERN = rf"^{_LEVEL}:\s+(?P<msg>.*)$"
ACCESS_PATTERN = r'^(?P<client>\S+) - "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3})'


def _build_vllm(g: pl.Expr) -> dict[str, pl.Expr]:
    return {
        "level": normalise_level(g.struct.field("level")),
        "ts": yearless(g.struct.field("mmdd"), g.struct.field("hms")),
        "ts_quality": pl.lit("yearless"),
        "message": g.struct.field("msg"),
        "attrs": attrs_json(src=g.struct.field("src")),
    }


def _access(g: pl.Expr) -> dict[str, pl.Expr]:
    return {"access": g.struct.field("msg").str.extract_groups(ACCESS_PATTERN)}


def _build_uvicorn(g: pl.Expr) -> dict[str, pl.Expr]:
    msg = g.struct.field("msg")
    access = g.struct.field("access")
    # An access line has every group of ACCESS_PATTERN, another line none: the access
    # line's members are encoded as one object (`attrs_json` encodes each on its own, to
    # leave out the null ones: twice the cost on the many access lines).
    access_attrs = pl.struct(pl.lit("uvicorn").alias("logger"), access.struct.field("client"),
                             access.struct.field("method"), access.struct.field("path"),
                             access.struct.field("status").cast(pl.Int64)).struct.json_encode()
    return {
        "level": normalise_level(g.struct.field("level")),
        "message": msg,
        "attrs": pl.when(access.struct.field("status").is_not_null())
        .then(access_attrs).otherwise(attrs_json(logger=pl.lit("uvicorn"))),
    }


FORMATS = [
    LineFormat("vllm", NAME, VLLM_PATTERN, _build_vllm),
    LineFormat("uvicorn", NAME, UVICORN_PATTERN, _build_uvicorn, prefilter=":", derive=_access),
]

_HEAD = re.compile(
    r"^(?:\([\w .=-]+ pid=\d+(?:, ip=[\d.]+)?\)\s+)?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d"
    r"|vLLM (?:API )?server version|Initializing an? (?:V[01] )?LLM engine|\(EngineCore(?:_DP?\d+)? pid=\d+\)"
    r"|\((?:VllmWorker|Worker|APIServer)[\w ]*pid=\d+\)",
    re.MULTILINE,
)


def detect(head: str) -> bool:
    return _HEAD.search(head) is not None

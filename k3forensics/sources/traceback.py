"""Python / PyTorch tracebacks anywhere in a log, grouped into one event group each.

Bare traceback lines (printed by Python on stderr) get ``source = "traceback"``; lines of a
traceback logged through vLLM's logger keep their vLLM prefix and source but join the group
too, because grouping runs on ``message`` after every prefix is removed.
"""

from __future__ import annotations

import re

import polars as pl

from k3forensics.sources.logformat import LineFormat, attrs_json

NAME = "traceback"

START = r"^\s*Traceback \(most recent call last\):\s*$"
FRAME = r'^\s+File "(?P<path>[^"]+)", line (?P<lineno>\d+)(?:, in (?P<func>\S+))?'
CHAIN = r"^\s*(?:The above exception was the direct cause of the following exception:|During handling of the above exception, another exception occurred:)\s*$"
# `torch.OutOfMemoryError: CUDA out of memory…`, `vllm.v1.engine.exceptions.EngineDeadError: …`,
# `ValueError`, `AssertionError: …`, `DistBackendError: …`, `ray.exceptions.RayTaskError(ValueError): …`
EXCEPTION = (
    r"^(?:\S+ )?(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning|Fault)"
    r"(?:\([\w.]+\))?)(?::\s?(?P<msg>.*))?$"
)
# Code lines, caret lines (3.11+ `^^^^`, 3.13 `~~~~^^^^`) and `...<5 lines>...` are indented.
INDENTED = r"^(?:\s{2,}\S|\s*[\^~]+\s*$|\s*\.\.\.<\d+ lines>\.\.\.)"


def _build_frame(g: pl.Expr) -> dict[str, pl.Expr]:
    return {
        "level": pl.lit("ERROR"),
        "attrs": attrs_json(path=g.struct.field("path"), lineno=g.struct.field("lineno").cast(pl.Int64, strict=False),
                            func=g.struct.field("func")),
    }


def _build_plain(_: pl.Expr) -> dict[str, pl.Expr]:
    return {"level": pl.lit("ERROR")}


def _build_exception(g: pl.Expr) -> dict[str, pl.Expr]:
    return {"level": pl.lit("ERROR"), "attrs": attrs_json(exception=g.struct.field("exc"))}


FORMATS = [
    LineFormat("tb_start", NAME, START, _build_plain, prefilter="Traceback"),
    LineFormat("tb_frame", NAME, FRAME, _build_frame, prefilter="File \""),
    LineFormat("tb_chain", NAME, CHAIN, _build_plain, prefilter="exception"),
    LineFormat("tb_exception", NAME, EXCEPTION, _build_exception),
]


def annotate(events: pl.LazyFrame) -> pl.LazyFrame:
    """Add tb_group (an id shared by the lines of one traceback), tb_final (the final
    exception line of its group) and exception (the exception type on exception lines).

    Tracebacks of different processes interleave in one file, so lines are grouped per
    process stream (file + process + pid), in file order.
    """
    msg = pl.col("message").fill_null("")
    stream = [pl.col("file"), pl.col("process").fill_null(""), pl.col("pid").fill_null(-1)]
    is_start = msg.str.contains(START)
    exc = msg.str.extract(EXCEPTION, 1)
    belongs = (
        is_start | msg.str.contains(FRAME) | msg.str.contains(CHAIN) | msg.str.contains(INDENTED)
        | exc.is_not_null() | (msg.str.strip_chars() == "")
    )
    out = events.with_columns(
        is_start.alias("_start"), belongs.alias("_belongs"), exc.alias("_exc"),
    ).with_columns(
        # A run of consecutive traceback-shaped lines in one stream.
        (~pl.col("_belongs")).cum_sum().over(stream, order_by="line_no").alias("_run"),
    ).with_columns(
        pl.col("_start").cum_sum().over([*stream, "_run"], order_by="line_no").alias("_nth"),
    ).with_columns(
        pl.when(pl.col("_belongs") & (pl.col("_nth") > 0))
        .then((pl.struct([*stream, "_run", "_nth"]).hash(seed=7) // 2).cast(pl.Int64))
        .otherwise(None)
        .alias("tb_group"),
    )
    # The final exception of a group: its last exception-shaped line.
    last_exc = (
        pl.when(pl.col("_exc").is_not_null()).then(pl.col("line_no")).otherwise(None).max().over("tb_group")
    )
    return out.with_columns(
        (pl.col("tb_group").is_not_null() & (pl.col("line_no") == last_exc)).alias("tb_final"),
        pl.col("_exc").alias("exception"),
    ).drop("_start", "_belongs", "_exc", "_run", "_nth")


_HEAD = re.compile(START, re.MULTILINE)


def detect(head: str) -> bool:
    return _HEAD.search(head) is not None

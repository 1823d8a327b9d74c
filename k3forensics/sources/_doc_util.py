"""Helpers shared by the document sources (nvidia-smi, collect_env, launch, Prometheus, API
captures, kubectl): event assembly, fact and sample frames, timestamp columns, nesting by
indentation, the GPU topology matrix, and the guard that keeps documents apart from logs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from k3forensics.sources.base import EVENT_SCHEMA, FACT_SCHEMA, SAMPLE_SCHEMA, UTC_US

# Lines that mark a *log* (vLLM logger, uvicorn, NCCL, PyTorch c10, kernel ring buffer, syslog).
# A document source declines a head that has a few of them: a log that merely quotes a command
# line or a table belongs to the log pipeline.
_LOG_LINE = re.compile(
    r"^(?:\([^)\n]*pid=\d+[^)\n]*\)\s+)?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d"
    r"|^(?:\([^)\n]*pid=\d+[^)\n]*\)\s+)?(?:INFO|WARNING|ERROR):\s{2,}"
    r"|^(?:\[[^\]\n]*\]\s*)?[\w.-]+:\d+:\d+ \[\d+\] (?:[\w./]+:\d+ )?NCCL (?:INFO|WARN|TRACE)"
    r"|^\[rank\d+\]:\["
    r"|^\[\s*\d+\.\d{6}\] "
    r"|^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ (?:kernel|systemd|containerd|dockerd|kubelet)\b",
    re.MULTILINE,
)

_WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# `Thu Aug 14 10:11:12 2026` (nvidia-smi header, `-q` Timestamp, `date`): local time, no zone.
CTIME_PATTERN = rf"{_WEEKDAY}\s+({_MONTH}\s+\d{{1,2}}\s+\d\d:\d\d:\d\d\s+\d{{4}})"


def looks_like_log(head: str, threshold: int = 2) -> bool:
    """True when the head carries at least `threshold` lines shaped like log lines."""
    count = 0
    for _ in _LOG_LINE.finditer(head):
        count += 1
        if count >= threshold:
            return True
    return False


def first_lines(head: str, n: int = 40) -> list[str]:
    """The first `n` non-blank lines of a head, right-stripped."""
    out: list[str] = []
    for raw in head.splitlines():
        line = raw.rstrip()
        if line:
            out.append(line)
            if len(out) >= n:
                break
    return out


# ---------------------------------------------------------------- events


def build_events(
    lines: pl.DataFrame,
    source: str,
    *,
    parsed: pl.Expr | None = None,
    ts: pl.Expr | None = None,
    ts_quality: pl.Expr | None = None,
    level: pl.Expr | None = None,
    message: pl.Expr | None = None,
    attrs: pl.Expr | None = None,
    process: pl.Expr | None = None,
    work: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The line columns plus every EVENT_SCHEMA column, cast to the contract's types.

    `work` is the frame the expressions run on (the lines plus helper columns); helper
    columns do not leak into the result.
    """
    frame = lines if work is None else work
    own = pl.lit(None, UTC_US) if ts is None else ts.cast(UTC_US)
    # a container envelope's time stands in for a line the document itself does not date
    ts_expr = pl.coalesce(own, pl.col("outer_ts").cast(UTC_US))
    stated = (
        ts_quality
        if ts_quality is not None
        else pl.when(own.is_not_null()).then(pl.lit("exact")).otherwise(pl.lit("missing"))
    )
    quality = pl.when(own.is_null() & pl.col("outer_ts").is_not_null()).then(pl.lit("exact")).otherwise(stated)
    columns = {
        "source": pl.lit(source, pl.Utf8),
        "parsed": pl.lit(False) if parsed is None else parsed.fill_null(False),
        "process": pl.lit(None, pl.Utf8) if process is None else process,
        "pid": pl.lit(None, pl.Int64),
        "rank": pl.lit(None, pl.Utf8),
        "ts": ts_expr,
        "ts_quality": quality,
        "level": pl.lit(None, pl.Utf8) if level is None else level,
        "message": pl.col("text") if message is None else message,
        "attrs": pl.lit(None, pl.Utf8) if attrs is None else attrs,
    }
    exprs = [expr.cast(EVENT_SCHEMA[name]).alias(name) for name, expr in columns.items()]
    return frame.select(*[pl.col(c) for c in lines.columns], *exprs)


def loads(text: str) -> Any:
    """`json.loads` whose every failure is a ValueError: a hostile document can also nest deeper
    than the interpreter's stack (RecursionError), besides the integer-length limit and bad
    syntax that already are ValueErrors. Callers count the line as malformed."""
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one: captures are typed by strangers."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def json_object(fields: Mapping[str, pl.Expr]) -> pl.Expr:
    """A JSON object string per row from named expressions (nulls kept as JSON null)."""
    return pl.struct([expr.alias(name) for name, expr in fields.items()]).struct.json_encode()


# ---------------------------------------------------------------- facts and samples


def empty_facts() -> pl.DataFrame:
    return pl.DataFrame(schema=FACT_SCHEMA)


def empty_samples() -> pl.DataFrame:
    return pl.DataFrame(schema=SAMPLE_SCHEMA)


def facts_from_rows(rows: Iterable[tuple[str, str, int]]) -> pl.DataFrame:
    """Facts from a few (key, value, line_no) tuples (document-level values, not per line)."""
    data = [r for r in rows if r[1] is not None and str(r[1]).strip() != ""]
    if not data:
        return empty_facts()
    keys, values, line_nos = zip(*data, strict=True)
    return pl.DataFrame(
        {"key": list(keys), "value": [str(v).strip() for v in values], "line_no": list(line_nos)},
        schema=FACT_SCHEMA,
    )


def facts_from_frame(frame: pl.DataFrame, key: pl.Expr, value: pl.Expr) -> pl.DataFrame:
    """Facts from a frame with a `line_no` column; rows with an empty value are dropped."""
    out = frame.select(
        key.cast(pl.Utf8).alias("key"),
        value.cast(pl.Utf8).str.strip_chars().alias("value"),
        pl.col("line_no").cast(pl.Int64),
    )
    return out.filter(pl.col("key").is_not_null() & (pl.col("value").fill_null("") != ""))


def concat_facts(parts: Iterable[pl.DataFrame | None]) -> pl.DataFrame:
    frames = [_conform(p, FACT_SCHEMA) for p in parts if p is not None and p.height]
    return pl.concat(frames).sort("line_no", maintain_order=True) if frames else empty_facts()


def dedupe_facts(facts: pl.DataFrame, keys: Iterable[str]) -> pl.DataFrame:
    """Keep only the first fact of each listed key (a version printed twice is one fact)."""
    keyset = list(keys)
    first = facts.filter(pl.col("key").is_in(keyset)).unique("key", keep="first", maintain_order=True)
    rest = facts.filter(~pl.col("key").is_in(keyset))
    return pl.concat([first, rest]).sort("line_no", maintain_order=True)


def concat_samples(parts: Iterable[pl.DataFrame | None]) -> pl.DataFrame:
    frames = [_conform(p, SAMPLE_SCHEMA) for p in parts if p is not None and p.height]
    return pl.concat(frames) if frames else empty_samples()


def _conform(frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return frame.select([pl.col(name).cast(dtype) for name, dtype in schema.items()])


def first_line_no(frame: pl.DataFrame) -> int:
    """The smallest `line_no` of a non-empty frame."""
    return int(frame.get_column("line_no").cast(pl.Int64).min() or 0)  # type: ignore[arg-type]


def labels_json(labels: Mapping[str, object]) -> str:
    """A labels object as stored in `samples.labels`: sorted keys, compact separators."""
    return json.dumps({k: str(v) for k, v in labels.items()}, sort_keys=True, separators=(",", ":"))


def gpu_labels(gpu: pl.Expr) -> pl.Expr:
    """`{"gpu":"<index>"}` per row (one label, so the key order is trivially sorted)."""
    return pl.format('{{"gpu":"{}"}}', gpu.cast(pl.Utf8))


def leading_number(expr: pl.Expr) -> pl.Expr:
    """The number at the start of a value such as `81559 MiB`, `97 %`, `69.20 W`; null if none."""
    return expr.str.extract(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)", 1).cast(pl.Float64, strict=False)


def mib(expr: pl.Expr) -> pl.Expr:
    """A whole number of MiB from a value such as `81559 MiB`; null when there is none or it does
    not fit an Int64 (`1e30 MiB` in a damaged or forged file must not stop the parse)."""
    return leading_number(expr).cast(pl.Int64, strict=False)


def slug(expr: pl.Expr) -> pl.Expr:
    """`FB Memory Usage/Total` -> `fb_memory_usage_total` (metric-name friendly)."""
    return expr.str.to_lowercase().str.replace_all(r"[^a-z0-9]+", "_").str.strip_chars("_")


# ---------------------------------------------------------------- timestamps


def parse_time(expr: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(ts, ts_quality) from a text column holding one of the timestamp shapes documents use.

    Accepted: RFC 3339 / ISO 8601 with `Z` or an offset (exact); ISO without a zone, the
    nvidia-smi CSV form `2026/08/14 10:11:12.123` and ctime `Thu Aug 14 10:11:12 2026`
    (zoneless: stored as if UTC; the weekday is ignored, pasted ones are often wrong);
    RFC 1123 with a numeric zone `Wed, 14 Aug 2024 10:00:03 +0000` (exact); unix seconds
    or milliseconds (exact). Anything else gives null and `missing`.
    """
    text = expr.str.strip_chars()
    iso = text.str.replace(r"^(\d{4}-\d\d-\d\d)[T ]", "$1 ")
    zoned = pl.coalesce(
        iso.str.strptime(UTC_US, "%Y-%m-%d %H:%M:%S%.f%#z", strict=False),
        text.str.replace(rf"^{_WEEKDAY},\s*", "").str.strptime(UTC_US, "%d %b %Y %H:%M:%S %z", strict=False),
        epoch_to_ts(text.str.extract(r"^(\d{9,13}(?:\.\d+)?)$", 1)),
    )
    naive = pl.coalesce(
        iso.str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S%.f", strict=False),
        text.str.strptime(pl.Datetime("us"), "%Y/%m/%d %H:%M:%S%.f", strict=False),
        text.str.extract(CTIME_PATTERN, 1)
        .str.replace_all(r"\s+", " ")
        .str.strptime(pl.Datetime("us"), "%b %d %H:%M:%S %Y", strict=False),
    ).dt.replace_time_zone("UTC")
    ts = pl.coalesce(zoned, naive)
    quality = (
        pl.when(zoned.is_not_null())
        .then(pl.lit("exact"))
        .when(naive.is_not_null())
        .then(pl.lit("zoneless"))
        .otherwise(pl.lit("missing"))
    )
    return ts, quality


def epoch_to_ts(expr: pl.Expr) -> pl.Expr:
    """Unix time (text or number) to UTC; values above 1e11 are taken as milliseconds."""
    seconds = expr.cast(pl.Float64, strict=False)
    micros = pl.when(seconds.abs() > 1e11).then(seconds * 1e3).otherwise(seconds * 1e6)
    return micros.round(0).cast(pl.Int64, strict=False).cast(UTC_US)


# ---------------------------------------------------------------- nesting by indentation


def indent_parents(frame: pl.DataFrame, key: str, level: str, depth: int) -> pl.DataFrame:
    """Add `parent`: the keys of the enclosing lines, joined with `/`.

    For nesting by indentation (`nvidia-smi -q`, `kubectl describe`): the parent at level n of
    a line is the most recent keyed line at level n, unless a shallower line came between.
    Lines with a null `key` (blank, unkeyed) neither open nor close anything.
    """
    keyed = pl.col(key).is_not_null()
    secs = [
        pl.when(keyed & (pl.col(level) == n))
        .then(pl.col(key))
        .when(keyed & (pl.col(level) < n))
        .then(pl.lit(""))
        .forward_fill()
        .fill_null("")
        .alias(f"_sec{n}")
        for n in range(depth)
    ]
    work = frame.with_columns(secs)
    chain = pl.concat_list([f"_sec{n}" for n in range(depth)]).list.slice(0, pl.col(level).clip(0, depth))
    return work.with_columns(chain.list.join("/").alias("parent")).drop([f"_sec{n}" for n in range(depth)])


# ---------------------------------------------------------------- GPU topology matrix

# `nvidia-smi topo -m` (also inside collect_env): a header naming the devices, rows of links.
TOPO_HEADER = r"^\s*(?:GPU|NIC)\d+\s+(?:(?:GPU|NIC)\d+|CPU Affinity)"
TOPO_ROW = r"^(?:GPU|NIC)\d+\s+(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)\b"


def topology_pairs(block: pl.DataFrame) -> pl.DataFrame:
    """GPU/NIC link pairs from the lines of an `nvidia-smi topo -m` matrix.

    `block` holds the matrix lines (header first) with `line_no` and `text`. Cells are split
    on tabs or runs of spaces: pasted copies often lost their tabs, and the device columns
    come before the affinity columns, so only the first n cells of a row are read.
    """
    header = block.filter(pl.col("text").str.contains(TOPO_HEADER))
    if header.height == 0:
        return pl.DataFrame(schema={"a": pl.Utf8, "b": pl.Utf8, "link": pl.Utf8, "line_no": pl.Int64})
    names = header.row(0, named=True)["text"]
    devices = re.findall(r"\b(?:GPU|NIC)\d+\b", names)
    rows = block.filter(pl.col("text").str.contains(TOPO_ROW))
    cells = rows.select(
        pl.col("line_no"),
        pl.col("text").str.extract(r"^((?:GPU|NIC)\d+)", 1).alias("a"),
        pl.col("text").str.strip_chars().str.replace_all(r"\s+", " ").str.split(" ")
        .list.slice(1, len(devices)).alias("cell"),
    ).filter(pl.col("cell").list.len() == len(devices))
    exploded = cells.with_columns(pl.lit(devices).alias("b")).explode("cell", "b")
    return exploded.select("a", "b", pl.col("cell").alias("link"), "line_no").filter(pl.col("a") != pl.col("b"))


def topology_summary(pairs: pl.DataFrame, block: pl.DataFrame | None = None) -> str | None:
    """One line: `gpus=8 NV18:28` (link kind: count of unordered GPU pairs), NICs counted apart.

    With one GPU there are no pairs; `block` (the matrix lines) still gives `gpus=1`.
    """
    gpu = pairs.filter(pl.col("a").str.starts_with("GPU") & pl.col("b").str.starts_with("GPU"))
    if gpu.height == 0:
        rows = 0 if block is None else block.filter(pl.col("text").str.contains(r"^GPU\d+\s")).height
        return f"gpus={rows}" if rows == 1 else None
    # `GPU\d+` has no length bound: an index past Int64 is compared as text rather than crash the parse
    ia, ib = (pl.col(c).str.slice(3).cast(pl.Int64, strict=False) for c in ("a", "b"))
    ordered = gpu.filter(pl.when(ia.is_not_null() & ib.is_not_null()).then(ia < ib).otherwise(pl.col("a") < pl.col("b")))
    count = pl.concat([gpu["a"], gpu["b"]]).n_unique()
    kinds = ordered.group_by("link").len().sort(["len", "link"], descending=[True, False])
    parts = [f"{link}:{n}" for link, n in kinds.iter_rows()]
    nics = pairs.filter(pl.col("a").str.starts_with("NIC"))["a"].n_unique()
    text = f"gpus={count} " + " ".join(parts)
    return text + (f" nics={nics}" if nics else "")

"""Prometheus metrics: text exposition (`/metrics` scrapes) and query-API JSON.

Text exposition: one scrape or many concatenated. A sample's own timestamp (milliseconds;
seconds when it has a decimal point, as in OpenMetrics) wins; otherwise the latest
scrape-time comment above it applies. Accepted scrape-time comments (a comment holding only a
time, optionally after a word such as `ts`, `time`, `timestamp`, `scrape at`, `scraped at`,
`collected at`, with `=` or `:`):

    # ts=1786702272            # ts=2026-08-14T10:11:12Z       # scrape at 2026-08-14T10:11:12Z
    # timestamp: 1786702272.5  # 2026-08-14 10:11:12+00:00

Times are unix seconds (or milliseconds, 13 digits) or ISO 8601; without a zone they are
taken as UTC. `*_created` series (the creation time of a counter or histogram child, which
prometheus_client adds) are not samples. `# TYPE` lines become facts `metric_type.<name>`.

Query-API JSON (`/api/v1/query_range` matrix, `/api/v1/query` vector or scalar), one document
or one per line. The metric name is `__name__`, else the document's `query` field, else the
file name without extension.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

import polars as pl

from k3forensics.sources import _doc_util as du
from k3forensics.sources.base import ParseContext, ParseResult

NAME = "prometheus"

_METRIC = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = rf"^(?P<name>{_METRIC})(?:\{{(?P<labels>.*)\}})?\s+(?P<value>\S+)(?:\s+(?P<ts>-?\d+(?:\.\d+)?))?\s*$"
META = rf"^#\s*(?P<kind>HELP|TYPE)\s+(?P<name>{_METRIC})(?:\s+(?P<rest>.*?))?\s*$"
_WHEN = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?|\d{9,10}(?:\.\d+)?|\d{13}"
SCRAPE_TIME = (
    r"^#\s*(?:(?:ts|time|timestamp|scrape(?:d)?(?: at| time)?|collected(?: at)?)\s*[=:]?\s*)?"
    rf"(?P<when>{_WHEN})\s*$"
)
_PAIR = r'[a-zA-Z_][a-zA-Z0-9_]*\s*=\s*"(?:[^"\\]|\\.)*"'
_NUMBER = r"^[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|Inf|inf|NaN|nan)$"
_DETECT_SAMPLE = re.compile(rf"^{_METRIC}(?:\{{.*\}})?\s+[-+]?(?:\d|\.\d|Inf|NaN)\S*(?:\s+-?\d+)?\s*$")
_QUERY_JSON = re.compile(r'"resultType"\s*:\s*"(?:matrix|vector|scalar|string)"')


def detect(head: str) -> bool:
    if du.looks_like_log(head):
        return False
    stripped = head.lstrip()
    if stripped.startswith("{") and (_QUERY_JSON.search(head) or re.match(r'\{\s*"status"\s*:\s*"error"', stripped)):
        return True
    if re.search(rf"^# (?:HELP|TYPE) {_METRIC} ", head, re.MULTILINE):
        return True
    body = [ln for ln in du.first_lines(head, 40) if not ln.startswith("#")]
    hits = sum(1 for ln in body if _DETECT_SAMPLE.match(ln))
    return len(body) >= 3 and hits >= 0.9 * len(body)


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    first = lines.filter(pl.col("text").str.strip_chars() != "").head(1).get_column("text").to_list()
    if first and first[0].lstrip().startswith("{"):
        return _parse_json(lines, ctx)
    return _parse_text(lines)


# ---------------------------------------------------------------- text exposition


def _parse_text(lines: pl.DataFrame) -> ParseResult:
    work = _classify(lines)
    samples = _samples(work)
    bad = work.filter(pl.col("_malformed"))
    warnings = []
    if bad.height:
        first = du.first_line_no(bad)
        warnings.append(f"{bad.height} malformed exposition lines, first at line {first}")
    warnings += _duplicate_warning(samples)
    events = du.build_events(
        lines,
        NAME,
        work=work,
        parsed=pl.col("_kind").is_not_null(),
        ts=pl.coalesce("_sample_ts", "_scrape_ts"),
        ts_quality=pl.when(pl.coalesce("_sample_ts", "_scrape_ts").is_null()).then(pl.lit("missing"))
        .otherwise(pl.lit("exact")),
    )
    return ParseResult(events=events, samples=samples, facts=_type_facts(work), warnings=warnings)


def _duplicate_warning(samples: pl.DataFrame) -> list[str]:
    """Samples of a series already sampled at the same time (a scrape written twice, two exporters
    behind one name): all are kept, in file order, and counted. Samples without a time are not
    compared: concatenated scrapes without scrape-time comments repeat every series legitimately."""
    timed = samples.filter(pl.col("ts").is_not_null())
    repeats = timed.filter(~pl.struct("metric", "labels", "ts").is_first_distinct())
    if repeats.height == 0:
        return []
    return [f"{repeats.height} samples repeat a series at the same time, first at line "
            f"{du.first_line_no(repeats)}; all kept, in file order"]


def _classify(lines: pl.DataFrame) -> pl.DataFrame:
    """Kind of each line (`scrape_time`, `comment`, `sample`, or null), the sample's parts,
    and the times. Comments and samples are parsed apart: each regex runs only on its lines."""
    # `line`, not `text`: ANSI clean-up would eat `[5m` in a PromQL label value
    base = lines.select("line_no", pl.col("line").fill_null("").str.strip_chars().alias("_t"))
    comments = base.filter(pl.col("_t").str.starts_with("#"))
    when = comments.select("line_no", pl.col("_t").str.extract(SCRAPE_TIME, 1).alias("_when"))
    scrape_ts, _ = du.parse_time(pl.col("_when"))
    comments = when.select(
        "line_no",
        pl.when(pl.col("_when").is_not_null()).then(pl.lit("scrape_time")).otherwise(pl.lit("comment")).alias("_kind"),
        scrape_ts.alias("_scrape_ts"),
    )
    body = base.filter(~pl.col("_t").str.starts_with("#") & (pl.col("_t") != ""))
    body = body.with_columns(pl.col("_t").str.extract_groups(SAMPLE).alias("_s")).select(
        "line_no", "_s", pl.when(_is_sample(pl.col("_s"))).then(pl.lit("sample")).alias("_kind"),
    )
    body = body.with_columns(
        pl.when(pl.col("_kind") == "sample").then(du.epoch_to_ts(pl.col("_s").struct.field("ts"))).alias("_sample_ts")
    )
    found = pl.concat([comments, body], how="diagonal_relaxed")
    work = lines.join(found, on="line_no", how="left", maintain_order="left")
    return work.with_columns(
        pl.col("_scrape_ts").forward_fill(),
        (pl.col("_kind").is_null() & (pl.col("text").fill_null("").str.strip_chars() != "")).alias("_malformed"),
    )


def _is_sample(sample: pl.Expr) -> pl.Expr:
    """A name, a number, and labels that are all `key="value"` pairs."""
    labels = sample.struct.field("labels")
    labels_ok = labels.is_null() | labels.str.contains(rf"^\s*(?:{_PAIR}\s*,\s*)*(?:{_PAIR})?\s*$")
    return sample.struct.field("name").is_not_null() & sample.struct.field("value").str.contains(_NUMBER) & labels_ok


def _samples(work: pl.DataFrame) -> pl.DataFrame:
    rows = work.filter(pl.col("_kind") == "sample").select(
        "line_no",
        pl.col("_s").struct.field("name").alias("metric"),
        pl.col("_s").struct.field("labels").fill_null("").alias("_labels"),
        pl.col("_s").struct.field("value").cast(pl.Float64, strict=False).alias("value"),
        pl.coalesce("_sample_ts", "_scrape_ts").alias("ts"),
    ).filter(~pl.col("metric").str.ends_with("_created"))
    # scrapes repeat the same label sets: convert each distinct one once
    labels = labels_json_column(rows.select("_labels").unique())
    return rows.join(labels, on="_labels", how="left", maintain_order="left").select(
        "metric", pl.col("labels").fill_null("{}"), "ts", "value", "line_no"
    )


def labels_json_column(frame: pl.DataFrame) -> pl.DataFrame:
    """`_labels, labels`: exposition label text (`a="x",b="y"`) and its JSON object, keys sorted.

    Exposition escapes (`\\\\`, `\\"`, `\\n`) are JSON escapes too; other backslashes and
    tabs are escaped so the object stays valid JSON.
    """
    pairs = frame.select("_labels", pl.col("_labels").str.extract_all(_PAIR).alias("pair")).explode("pair")
    pairs = pairs.filter(pl.col("pair").is_not_null()).select(
        "_labels",
        pl.col("pair").str.extract(r"^([a-zA-Z_][a-zA-Z0-9_]*)", 1).alias("k"),
        _json_escaped(pl.col("pair").str.extract(r'"(.*)"$', 1)).alias("v"),
    ).filter(pl.col("k") != "__name__")
    members = pairs.sort(["_labels", "k"]).select("_labels", pl.format('"{}":"{}"', "k", "v").alias("m"))
    return members.group_by("_labels").agg(pl.col("m").str.join(",")).select(
        "_labels", pl.format("{{{}}}", "m").alias("labels")
    )


def _json_escaped(value: pl.Expr) -> pl.Expr:
    """Exposition-escaped label text as JSON string content: the three exposition escapes
    are kept (set aside first so their backslashes are not doubled), any other backslash
    and raw tabs are escaped."""
    escapes = {"\\\\": "\x01", '\\"': "\x02", "\\n": "\x03"}
    for seq, mark in escapes.items():
        value = value.str.replace_all(seq, mark, literal=True)
    value = value.str.replace_all("\\", "\\\\", literal=True).str.replace_all("\t", "\\t", literal=True)
    for seq, mark in escapes.items():
        value = value.str.replace_all(mark, seq, literal=True)
    return value


def _type_facts(work: pl.DataFrame) -> pl.DataFrame:
    comments = work.filter(pl.col("_kind") == "comment")
    meta = comments.with_columns(pl.col("line").str.extract_groups(META).alias("g")).unnest("g")
    types = meta.filter(pl.col("kind") == "TYPE").unique("name", keep="first", maintain_order=True)
    return du.facts_from_frame(types, pl.format("metric_type.{}", "name"), pl.col("rest"))


# ---------------------------------------------------------------- query-API JSON


def _parse_json(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    docs, bad = _load_json(lines)
    warnings = [f"{len(bad)} lines are not JSON, first at line {bad[0]}"] if bad else []
    series_lines = lines.filter(pl.col("line").str.contains(r'"metric"\s*:')).get_column("line_no").to_list()
    rows: list[dict[str, Any]] = []
    errors: list[int] = []
    skipped: list[int] = []  # values of a known document that are not [time, value] pairs
    fallback = PurePosixPath(ctx.file).stem
    for line_no, doc in docs:
        if not isinstance(doc, dict):
            bad.append(line_no)
            continue
        if doc.get("status") == "error":
            errors.append(line_no)
            warnings.append(f"query error at line {line_no}: {doc.get('errorType')}: {doc.get('error')}")
        extra = doc.get("warnings")
        warnings += [f"query warning: {w}" for w in (extra if isinstance(extra, list) else [extra] if extra else [])]
        located = series_lines if len(docs) == 1 else []  # JSON lines: the document's own line
        rows += _json_rows(doc, line_no, str(doc.get("query") or fallback), located, skipped)
    if skipped:
        warnings.append(f"{len(skipped)} values are not [time, number] pairs, first at line {min(skipped)}; skipped")
    samples = pl.DataFrame(
        rows, schema={"metric": pl.Utf8, "labels": pl.Utf8, "_t": pl.Float64, "value": pl.Float64, "line_no": pl.Int64}
    ).select("metric", "labels", du.epoch_to_ts(pl.col("_t")).alias("ts"), "value", "line_no")
    events = du.build_events(
        lines,
        NAME,
        parsed=~pl.col("line_no").is_in(bad) & (pl.col("text").str.strip_chars() != ""),
        level=pl.when(pl.col("line_no").is_in(errors)).then(pl.lit("ERROR")),
    )
    return ParseResult(events=events, samples=samples, facts=du.empty_facts(), warnings=warnings)


def _load_json(lines: pl.DataFrame) -> tuple[list[tuple[int, Any]], list[int]]:
    """The whole file as one JSON document, or else one document per line (line numbers kept)."""
    texts = lines.get_column("line").fill_null("").to_list()  # raw: ANSI clean-up would eat `[5m]`
    first = next((i + 1 for i, t in enumerate(texts) if t.strip()), 1)
    try:
        return [(first, du.loads("\n".join(texts)))], []
    except ValueError:
        pass
    docs: list[tuple[int, Any]] = []
    bad: list[int] = []
    for line_no, text in enumerate(texts, 1):  # JSON lines: one document each
        if not text.strip():
            continue
        try:
            docs.append((line_no, du.loads(text)))
        except ValueError:
            bad.append(line_no)
    return docs, bad


def _json_rows(doc: dict[str, Any], line_no: int, default_name: str, series_lines: list[int],
               skipped: list[int]) -> list[dict[str, Any]]:
    """Sample rows of one query-API document; anything not shaped as the API documents it is
    left out (and counted in `skipped`), never trusted: the file may come from anywhere."""
    data = du.as_dict(doc.get("data"))
    kind, result = data.get("resultType"), data.get("result")
    if kind == "scalar":
        row = _row(default_name, {}, result, line_no)
        if row is None:
            skipped.append(line_no)
        return [row] if row else []
    if kind not in {"matrix", "vector"} or not isinstance(result, list):
        return []
    # a pretty-printed document has one `"metric":` line per series: point samples at it
    located = len(series_lines) == len(result)
    rows = []
    for i, series in enumerate(result):
        where = series_lines[i] if located else line_no
        if not isinstance(series, dict):
            skipped.append(where)
            continue
        metric = dict(du.as_dict(series.get("metric")))
        name = str(metric.pop("__name__", default_name))
        pairs = du.as_list(series.get("values")) or ([series["value"]] if "value" in series else [])
        for pair in pairs:
            row = _row(name, metric, pair, where)
            if row is None:
                skipped.append(where)
            else:
                rows.append(row)
    return rows


def _row(name: str, labels: dict[str, Any], pair: Any, line_no: int) -> dict[str, Any] | None:
    """One sample from a `[unix time, "value"]` pair, or None when the pair is not one."""
    if not isinstance(pair, list) or len(pair) != 2:
        return None
    when = _float(pair[0])
    if when is None:
        return None
    return {"metric": name, "labels": du.labels_json(labels), "_t": when, "value": _float(pair[1]),
            "line_no": line_no}


def _float(value: Any) -> float | None:
    """A JSON number or numeric string (`"NaN"`, `"+Inf"` included) as a float; None otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except (ValueError, OverflowError):  # an integer too large for a float overflows
        return None

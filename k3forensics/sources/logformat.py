"""Line formats as data, applied to a whole column of lines at once.

Lines of many sources interleave in one log file (a vLLM log holds NCCL lines, PyTorch
c10 lines, uvicorn lines and tracebacks), so a log file is parsed by trying every log
format on every line: each format is one regex run over the column with
``str.extract_groups``, and the first format that matches a line wins.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import polars as pl

try:  # the parser behind `re` (same group syntax as the engine's); Python 3.11 names it re._parser
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]

from k3forensics.sources.base import UTC_US

# The process prefix vLLM (and Ray) put in front of lines: `(EngineCore_DP0 pid=260) `,
# nested `(APIServer pid=1) (EngineCore_DP0 pid=68) `, `(RayWorkerWrapper pid=5, ip=10.0.0.1) `.
# The last (innermost) one names the process that wrote the line.
PROCESS_PREFIX = (
    r"^\s*(?:[│|>]\s*)?(?:\((?P<proc>[A-Za-z_][\w .=-]*?) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\d.]+))?\)\s*)+"
)

Builder = Callable[[pl.Expr], dict[str, pl.Expr]]
# Lines → (which of them have the format's usual shape, their groups as `pattern` captures them).
Splitter = Callable[[pl.Series], tuple[np.ndarray, pl.Series]]

FIELDS = ("source", "level", "ts", "ts_quality", "message", "rank", "attrs")


@dataclass(frozen=True)
class LineFormat:
    """One named line shape: a regex with named groups and how groups become event fields.

    ``build`` receives the struct of captured groups and returns expressions for any of
    FIELDS; fields it leaves out stay null. ``prefilter`` is a literal every matching line
    contains, checked before the regex runs. ``split`` optionally finds the lines of the
    format's usual shape and cuts their groups out without the regex engine's captures (which
    cost most of a parse); it must give exactly what ``pattern`` captures there (tested on every
    sample line and on edge cases), and the other lines go through ``pattern``. ``split_build``
    builds the fields of the lines ``split`` cut (``build`` when None): it may rely on what
    their shape rules out, and must give what ``build`` gives on them. ``derive`` adds fields
    to the captured groups before the builders read them: a value a builder reads several
    times (the groups of a second regex, say) is then computed once, not once per reading.
    """

    name: str
    source: str
    pattern: str
    build: Builder
    prefilter: str | None = None
    split: Splitter | None = None
    split_build: Builder | None = None
    derive: Builder | None = None

    def groups_of(self, groups: pl.Expr) -> pl.Expr:
        """The captured groups with the `derive` fields added."""
        return groups.struct.with_fields(**self.derive(groups)) if self.derive is not None else groups


def yearless(mmdd: pl.Expr, hms: pl.Expr, frac: pl.Expr | None = None) -> pl.Expr:
    """`MM-DD` (or `MMDD`) + `HH:MM:SS` → a datetime in the placeholder leap year 2000.

    The timeline replaces the year once the bundle's year is known (see timeline/times.py).
    """
    digits = mmdd.str.replace_all("-", "").str.pad_start(4, "0")
    text = pl.concat_str([pl.lit("2000"), digits, pl.lit(" "), hms])
    out = text.str.to_datetime("%Y%m%d %H:%M:%S", strict=False, time_unit="us")
    if frac is not None:
        micros = frac.str.slice(0, 6).str.pad_end(6, "0").cast(pl.Int64, strict=False).fill_null(0)
        out = out + pl.duration(microseconds=micros)
    return out.dt.replace_time_zone("UTC")


def iso_datetime(date: pl.Expr, hms: pl.Expr, frac: pl.Expr, tz: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """Date, time, fraction and optional zone captures → (UTC datetime, quality)."""
    micros = frac.str.slice(0, 6).str.pad_end(6, "0").fill_null("000000")
    zone = (
        tz.str.replace("^Z$", "+00:00").str.replace(r"^([+-]\d\d)(\d\d)$", "$1:$2").fill_null("+00:00")
    )
    text = pl.concat_str([date, pl.lit("T"), hms, pl.lit("."), micros, zone])
    ts = text.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_unit="us").dt.convert_time_zone(
        "UTC"
    )
    quality = pl.when(ts.is_null()).then(pl.lit("missing")).when(tz.is_null()).then(
        pl.lit("zoneless")
    ).otherwise(pl.lit("exact"))
    return ts, quality


LEVELS = {
    "D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL", "C": "CRITICAL",
    "WARN": "WARNING", "ERR": "ERROR", "FATAL": "CRITICAL", "CRIT": "CRITICAL",
    "NOTICE": "INFO", "INFO": "INFO", "DEBUG": "DEBUG", "WARNING": "WARNING", "ERROR": "ERROR",
    "CRITICAL": "CRITICAL", "TRACE": "DEBUG", "ABORT": "CRITICAL", "EMERG": "CRITICAL", "ALERT": "CRITICAL",
}


def normalise_level(expr: pl.Expr) -> pl.Expr:
    return expr.str.to_uppercase().replace_strict(LEVELS, default=None, return_dtype=pl.Utf8)


def attrs_json(**fields: pl.Expr) -> pl.Expr:
    """A JSON object of the non-null named fields (null when all are null).

    Each member is encoded on its own (`"name":value`, JSON escaping by polars) and the
    non-null ones are joined: null members never get written, so no pass over the text
    has to remove them again (that cleanup regex cost more than all the parsing).
    """
    members = [
        pl.when(expr.is_not_null()).then(pl.struct(expr.alias(name)).struct.json_encode().str.head(-1).str.tail(-1))
        for name, expr in fields.items()
    ]
    return _json_object(members)


def plain_attrs_json(quoted: Collection[str], **fields: pl.Expr) -> pl.Expr:
    """`attrs_json` of members JSON needs no escaping for, written as text in one pass (about
    half the cost): the `quoted` ones are strings their pattern keeps free of quotes,
    backslashes and control characters (`[\\w.-]+`, say), the others integers."""
    members = [
        pl.concat_str([pl.lit(f'"{name}":"'), expr, pl.lit('"')]) if name in quoted
        else pl.concat_str([pl.lit(f'"{name}":'), expr.cast(pl.Int64).cast(pl.Utf8)])
        for name, expr in fields.items()
    ]
    return _json_object(members)


def _json_object(members: list[pl.Expr]) -> pl.Expr:
    """`{…}` of the non-null `"name":value` members, null when all are null."""
    joined = pl.concat_str(members, separator=",", ignore_nulls=True)
    return pl.when(joined == "").then(None).otherwise(pl.concat_str([pl.lit("{"), joined, pl.lit("}")]))


def apply_formats(rest: pl.Expr, formats: Sequence[LineFormat]) -> list[pl.Expr]:
    """Expressions for the event FIELDS plus `format` (the winning format's name).

    ``rest`` is the text after the process prefix. Every format runs once over the column;
    a line takes the fields of the first format that matched it.
    """
    matched: list[pl.Expr] = []
    built: list[dict[str, pl.Expr]] = []
    for fmt in formats:
        # The leading empty group is "" on a match and null otherwise.
        groups = rest.str.extract_groups("(?P<_m>)" + fmt.pattern)
        hit = groups.struct.field("_m").is_not_null()
        groups = fmt.groups_of(groups)
        if fmt.prefilter:
            hit = rest.str.contains(fmt.prefilter, literal=True) & hit
        matched.append(hit)
        fields = {"source": pl.lit(fmt.source)} | fmt.build(groups)
        built.append(fields)
    which = pl.coalesce([pl.when(hit).then(pl.lit(i)) for i, hit in enumerate(matched)])
    out: list[pl.Expr] = []
    for field in FIELDS:
        chain = None
        for i, fields in enumerate(built):
            if field not in fields:
                continue
            chain = (pl.when(which == i) if chain is None else chain.when(which == i)).then(fields[field])
        dtype = UTC_US if field == "ts" else pl.Utf8
        expr = chain.otherwise(None) if chain is not None else pl.lit(None, dtype)
        out.append(expr.cast(dtype).alias(field))
    names = [fmt.name for fmt in formats]
    out.append(which.replace_strict(list(range(len(names))), names, default=None).alias("format"))
    return out



def formats_frame(rest: pl.Series, formats: Sequence[LineFormat]) -> pl.DataFrame:
    """The columns of `apply_formats` (FIELDS + `format`) for a column of texts, computed
    format by format on the rows no earlier format took.

    Same values as `apply_formats`, at a fraction of the cost: each regex runs only on the
    rows still unmatched that contain the format's literal prefilter, and each format's
    field builders (JSON attributes, dates) run only on the rows it matched.
    """
    pending = np.arange(rest.len(), dtype=np.int64)   # row numbers not matched yet, in order
    texts = rest                                       # their texts (copied only when some go)
    parts: list[pl.DataFrame] = []
    for fmt in formats:
        if pending.size == 0:
            break
        candidates, tried = np.arange(pending.size), texts
        if fmt.prefilter:
            holds = texts.str.contains(fmt.prefilter, literal=True).fill_null(False).to_numpy()
            if not holds.any():
                continue
            if not holds.all():
                candidates, tried = np.flatnonzero(holds), texts.filter(pl.Series(holds))
        taken = []  # positions in `pending`
        if fmt.split is not None:
            usual, groups = fmt.split(tried)
            if usual.any():
                taken.append(candidates[usual])
                parts.append(_build_fields(None, fmt, pending[candidates[usual]], groups))
                candidates, tried = candidates[~usual], tried.filter(pl.Series(~usual))
        matched = tried.str.contains(fmt.pattern).fill_null(False).to_numpy()
        if matched.any():
            taken.append(candidates[matched])
            parts.append(_build_fields(tried if matched.all() else tried.filter(pl.Series(matched)), fmt,
                                       pending[candidates[matched]]))
        if not taken:
            continue
        left = np.ones(pending.size, dtype=bool)
        left[np.concatenate(taken)] = False
        pending, texts = pending[left], texts.filter(pl.Series(left))
    parts.append(_build_fields(None, None, pending))
    out = pl.concat(parts, how="vertical")
    if len(parts) > 1:
        out = out.sort("_row")
    return out.drop("_row")


def _build_fields(texts: pl.Series | None, fmt: LineFormat | None, rows: np.ndarray,
                  groups: pl.Series | None = None) -> pl.DataFrame:
    """FIELDS + format for the rows one format matched (or, with no format, all-null rows),
    from their `texts` or from their `groups` already cut out (`LineFormat.split`)."""
    exprs: list[pl.Expr] = []
    fields: dict[str, pl.Expr] = {}
    frame = pl.DataFrame({"_row": pl.Series(rows, dtype=pl.Int64)})
    if fmt is not None:
        build = (fmt.split_build or fmt.build) if groups is not None else fmt.build  # groups given: cut by `split`
        if groups is None:
            assert texts is not None, "a format's rows come with their texts or their groups"
            groups = _captures(texts, fmt.pattern)
        # Captured once (and derived from once); the builders read fields of this struct column.
        frame = frame.with_columns(groups.alias("_g"))
        if fmt.derive is not None:
            frame = frame.with_columns(fmt.groups_of(pl.col("_g")))
        fields = {"source": pl.lit(fmt.source)} | build(pl.col("_g"))
    for name in FIELDS:
        dtype = UTC_US if name == "ts" else pl.Utf8
        exprs.append((fields[name] if name in fields else pl.lit(None, dtype)).cast(dtype).alias(name))
    exprs.append(pl.lit(fmt.name if fmt else None, pl.Utf8).alias("format"))
    return frame.select("_row", *exprs)


_MESSAGE_TAIL = "(?P<msg>.*)$"


def _captures(texts: pl.Series, pattern: str) -> pl.Series:
    """`extract_groups("(?P<_m>)" + pattern)` on lines the pattern matches.

    Most formats end in `(?P<msg>.*)$`, which matches whatever follows the rest of the
    pattern on a line (a line holds no newline). Captures cost in proportion to the length
    they span, so the head is captured on its own and `msg` is the text after it.
    """
    head = _message_head(pattern)
    if head is None:
        return texts.str.extract_groups("(?P<_m>)" + pattern)
    groups = texts.str.extract_groups("(?P<_head>(?P<_m>)" + head + ")")
    message = texts.str.slice(groups.struct.field("_head").str.len_chars())
    return pl.DataFrame({"g": groups}).select(
        pl.col("g").struct.with_fields(message.alias("msg")).struct.field(*_group_order(pattern))
    ).select(pl.struct(pl.all())).to_series()


def as_captures(groups: dict[str, pl.Series], pattern: str) -> pl.Series:
    """Groups cut out of lines as the struct `_captures` gives for `pattern` (its groups in
    order, `_m` empty, the ones not given null)."""
    height = next(iter(groups.values())).len()
    fields = [groups[name].alias(name) if name in groups
              else pl.repeat("" if name == "_m" else None, height, dtype=pl.Utf8, eager=True).alias(name)
              for name in _group_order(pattern)]
    return pl.struct(fields, eager=True).alias("_g")


@cache
def _message_head(pattern: str) -> str | None:
    """The pattern without its trailing `(?P<msg>.*)$`, when that tail sits at the top level
    (checked with Python's parser of the same syntax); else None."""
    if not pattern.endswith(_MESSAGE_TAIL):
        return None
    try:
        parsed = list(sre_parse.parse(pattern))
    except Exception:  # a syntax only the engine knows: keep the plain capture
        return None
    if len(parsed) < 2 or parsed[-1] != (sre_parse.AT, sre_parse.AT_END):
        return None
    op, arg = parsed[-2]
    body = list(arg[3]) if op is sre_parse.SUBPATTERN else []
    if len(body) != 1 or body[0][0] is not sre_parse.MAX_REPEAT:
        return None
    low, high, item = body[0][1]
    if (low, high) != (0, sre_parse.MAXREPEAT) or list(item) != [(sre_parse.ANY, None)]:
        return None
    return pattern[: -len(_MESSAGE_TAIL)]


@cache
def _group_order(pattern: str) -> tuple[str, ...]:
    """The named groups of `(?P<_m>)` + pattern, in order (the struct `extract_groups` gives)."""
    return ("_m", *sre_parse.parse(pattern).state.groupdict)

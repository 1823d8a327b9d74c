"""Line formats as data, applied to a whole column of lines at once.

Lines of many sources interleave in one log file (a vLLM log holds NCCL lines, PyTorch
c10 lines, uvicorn lines and tracebacks), so a log file is parsed by trying every log
format on every line: each format is one regex run over the column with
``str.extract_groups``, and the first format that matches a line wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from k3forensics.sources.base import UTC_US

# The process prefix vLLM (and Ray) put in front of lines: `(EngineCore_DP0 pid=260) `,
# nested `(APIServer pid=1) (EngineCore_DP0 pid=68) `, `(RayWorkerWrapper pid=5, ip=10.0.0.1) `.
# The last (innermost) one names the process that wrote the line.
PROCESS_PREFIX = (
    r"^\s*(?:[│|>]\s*)?(?:\((?P<proc>[A-Za-z_][\w .=-]*?) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\d.]+))?\)\s*)+"
)

Builder = Callable[[pl.Expr], dict[str, pl.Expr]]

FIELDS = ("source", "level", "ts", "ts_quality", "message", "rank", "attrs")


@dataclass(frozen=True)
class LineFormat:
    """One named line shape: a regex with named groups and how groups become event fields.

    ``build`` receives the struct of captured groups and returns expressions for any of
    FIELDS; fields it leaves out stay null. ``prefilter`` is a literal every matching line
    contains, checked before the regex runs.
    """

    name: str
    source: str
    pattern: str
    build: Builder
    prefilter: str | None = None


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
    """A JSON object of the non-null named fields (null when all are null)."""
    struct = pl.struct([expr.alias(name) for name, expr in fields.items()])
    encoded = struct.struct.json_encode()
    # Drop null members so attrs stay small and readable.
    cleaned = encoded.str.replace_all(r'"[^"]+":null,?', "").str.replace(r",\}$", "}")
    return pl.when(cleaned == "{}").then(None).otherwise(cleaned)


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


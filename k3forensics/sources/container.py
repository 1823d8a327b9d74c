"""Container envelopes: recognise the wrapper a log collector put around each line, and remove it.

Kinds (`Envelope`), one per file, found by a vote over the first lines of its head:

* ``docker_json`` — docker json-file: ``{"log":"…\\n","stream":"stderr","time":"…Z"}``
* ``cri`` — Kubernetes CRI (containerd, CRI-O): ``<RFC3339Nano> stdout|stderr P|F <msg>``
* ``docker_ts`` — ``docker logs -t`` / ``kubectl logs --timestamps``: ``<RFC3339Nano> <msg>``
* ``compose`` — ``docker compose logs``: ``vllm-1  | <msg>`` (with ``-t``, a timestamp after the bar)
* ``buildkite`` — ``[2026-02-24T20:21:58Z] <msg>``
* ``gke`` — Cloud Logging export: ``INFO 2025-11-19T20:16:36.096501749Z [resource.labels.containerName: vllm] <msg>``
* ``journald`` — ``journalctl`` short (``May 08 09:32:47 host unit[pid]: <msg>``) or short-iso
  (``2026-05-08T09:32:47+0000 host unit[pid]: <msg>``); lines of the unit ``kernel`` are left
  alone for the kernel source. Only short-iso gives ``outer_ts``: the short form has no year.

`unwrap` keeps the frame's height and order: the inner text goes to ``line`` / ``text``, the
envelope time (UTC, truncated to microseconds, zone offsets honoured) to ``outer_ts``, the
stream to ``stream``. Lines without the envelope are left untouched, so unwrapping twice is
harmless. Split records (CRI ``P`` fragments, docker json-file pieces of lines over 16 KiB
that lack the trailing newline) are joined per stream: the record that ends the line gets
the whole text, the fragments before it keep their own text and ``continued = True``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

import polars as pl

from k3forensics.sources.base import UTC_US
from k3forensics.text import stripped

NAME = "container"
_HEAD_LINES = 20
_VOTE_SHARE = 0.6
_TS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)"
_ANSI = r"(?:\x1b\[[0-9;]*m)*"


class Envelope(StrEnum):
    DOCKER_JSON = "docker_json"
    CRI = "cri"
    JOURNALD = "journald"
    DOCKER_TS = "docker_ts"
    GKE = "gke"
    BUILDKITE = "buildkite"
    COMPOSE = "compose"


# One prefix pattern per kind, tried in this order on each head line (CRI before docker_ts: a
# CRI line is also a timestamp and a message). Patterns stop at the message, which is sliced
# off after `prefix`: a capture running to the end of long lines costs several times more.
_PATTERNS: dict[Envelope, str] = {
    Envelope.DOCKER_JSON: r'^(?P<prefix>\{\s*"log"\s*:\s*")',  # detection only: unwrapped as JSON
    Envelope.CRI: rf"^(?P<prefix>(?P<ts>{_TS}) (?P<stream>stdout|stderr) (?P<tag>[PF])(?::\S+)?(?: |$))",
    Envelope.JOURNALD: (
        rf"^(?P<prefix>(?:(?P<ts>{_TS})|[A-Z][a-z]{{2}} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?) \S+ "
        r"(?P<unit>[^\s\[\]:]+)(?:\[\d+\])?: ?)"
    ),
    Envelope.DOCKER_TS: rf"^(?P<prefix>(?P<ts>{_TS})(?: |$))",
    Envelope.GKE: (
        r"^(?P<prefix>(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY) "
        rf"(?P<ts>{_TS}) \[resource\.labels\.[^\]]*\] ?)"
    ),
    Envelope.BUILDKITE: rf"^(?P<prefix>\[(?P<ts>{_TS})\] ?)",
    Envelope.COMPOSE: rf"^(?P<prefix>{_ANSI}[A-Za-z0-9][\w.-]*\s+\|{_ANSI} ?(?:(?P<ts>{_TS}) )?)",
}
# docker json-file as dockerd writes it; other shapes take the slower JSON path.
_DJ_HEAD = '{"log":"'
_DJ_TAIL = r'^","stream":"(?P<stream>stdout|stderr)",(?:"attrs":\{[^{}]*\},)?"time":"(?P<ts>[^"\\]*)"\}$'
_JSON_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\/": "/", "\\n": "\n", "\\r": "\r", "\\t": "\t",
                 "\\b": "\b", "\\f": "\f"}
_COMPILED = {kind: re.compile(pattern) for kind, pattern in _PATTERNS.items()}


# -- detection ----------------------------------------------------------------------------------


def _line_kind(line: str) -> tuple[Envelope, bool] | None:
    """The first kind whose envelope `line` carries, and whether it is a kernel journal line."""
    for kind, pattern in _COMPILED.items():
        match = pattern.match(line)
        if match:
            return kind, kind is Envelope.JOURNALD and match.group("unit") == "kernel"
    return None


def envelope_kind(head: str) -> str | None:
    """The envelope most of the first lines of `head` carry, or None.

    A journal holding only kernel lines gives None: those are the kernel source's."""
    lines = head.split("\n")
    if len(lines) > 1 and not head.endswith("\n"):
        lines = lines[:-1]  # the head may stop inside a line
    sample = [line.removesuffix("\r") for line in lines if line.strip()][:_HEAD_LINES]
    votes: Counter[Envelope] = Counter()
    kernel = 0
    for found in filter(None, map(_line_kind, sample)):
        votes[found[0]] += 1
        kernel += found[1]
    if not votes:
        return None
    best, count = votes.most_common(1)[0]
    if count < _VOTE_SHARE * len(sample) or (best is Envelope.JOURNALD and count == kernel):
        return None
    return str(best)


def detect(head: str) -> bool:
    return envelope_kind(head) is not None


# -- unwrapping ---------------------------------------------------------------------------------


def _parse_ts(text: pl.Series) -> pl.Series:
    """RFC 3339 with any zone form (Z, +08:00, +0800) to UTC microseconds; bad text gives null.

    The usual stamp (``2026-09-14T06:00:01.110000000Z``: docker, CRI, kubectl) is read in two
    parts: its first 19 characters by polars' fixed-width parser, its fraction as digits (a
    general format with ``%.f`` costs four times as much, most of the envelope's time). What
    is not of that shape takes the general formats (`_parse_rfc3339`)."""
    frame = pl.DataFrame({"t": text})
    fraction = pl.col("t").str.slice(19)
    seconds = pl.col("t").str.slice(0, 19).str.to_datetime("%Y-%m-%dT%H:%M:%S", time_unit="us", strict=False)
    # The fraction truncated to microseconds, as the general parser does.
    micros = fraction.str.strip_suffix("Z").str.slice(1, 6).str.pad_end(6, "0").cast(pl.Int64, strict=False)
    usual = fraction.str.contains(r"^(?:\.[0-9]{1,9})?Z$") & seconds.is_not_null()
    out = frame.select(pl.when(usual).then(seconds + pl.duration(microseconds=micros))
                       .dt.replace_time_zone("UTC").cast(UTC_US)).to_series()
    rest = (out.is_null() & text.is_not_null()).arg_true()
    if rest.len():
        out = out.scatter(rest, _parse_rfc3339(text.gather(rest)))
    return out


def _parse_rfc3339(text: pl.Series) -> pl.Series:
    """`_parse_ts` by general formats. Three strict formats beat normalising the text first;
    the Z form is tried on every line, the other two only on the lines it did not read."""
    def parse(expr: pl.Expr, fmt: str) -> pl.Expr:
        return expr.str.to_datetime(fmt, time_unit="us", time_zone="UTC", strict=False)

    zulu = pl.col("t").str.to_datetime("%Y-%m-%dT%H:%M:%S%.fZ", time_unit="us", strict=False)
    out = pl.DataFrame({"t": text}).select(zulu.dt.replace_time_zone("UTC").cast(UTC_US)).to_series()
    rest = (out.is_null() & text.is_not_null()).arg_true()
    if rest.len():
        other = pl.DataFrame({"t": text.gather(rest)}).select(pl.coalesce(
            parse(pl.col("t"), "%Y-%m-%dT%H:%M:%S%.f%:z"), parse(pl.col("t"), "%Y-%m-%dT%H:%M:%S%.f%z")).cast(UTC_US))
        out = out.scatter(rest, other.to_series())
    return out


def _clean_inner(log: pl.Series) -> pl.Series:
    """The decode rules for text that came out of JSON: the newline dropped, one trailing \\r
    dropped and others turned into spaces, NUL shown as U+2400. Passes run only when needed."""
    log = log.str.strip_suffix("\n")
    if log.str.contains("\r", literal=True).any():
        log = log.str.strip_suffix("\r").str.replace_all("\r", " ", literal=True)
    if log.str.contains("\x00", literal=True).any():
        log = log.str.replace_all("\x00", "\u2400", literal=True)
    return log


def _with_envelope(lines: pl.DataFrame, kind: Envelope) -> pl.DataFrame:
    """Adds _shape (the line has the envelope), _m (unwrap it: not a kernel journal line),
    _msg, _ts, _stream, _final (the record ends its line)."""
    if kind is Envelope.DOCKER_JSON:
        return _with_docker_json(lines)
    names = _COMPILED[kind].groupindex
    frame = lines.with_columns(pl.col("line").str.extract_groups(_PATTERNS[kind]).alias("_g"))
    groups = pl.col("_g")

    def group(name: str, default: pl.Expr) -> pl.Expr:
        return groups.struct.field(name) if name in names else default

    prefix = groups.struct.field("prefix")
    return frame.with_columns(
        prefix.is_not_null().alias("_shape"),
        (prefix.is_not_null() & (group("unit", pl.lit("")) != "kernel")).alias("_m"),
        pl.col("line").str.slice(prefix.str.len_chars()).alias("_msg"),
        group("ts", pl.lit(None, pl.Utf8)).alias("_ts"),
        group("stream", pl.lit(None, pl.Utf8)).alias("_stream"),
        (group("tag", pl.lit("F")) == "F").alias("_final"),
    ).drop("_g")


def _with_docker_json(lines: pl.DataFrame) -> pl.DataFrame:
    """dockerd's own layout is sliced and unescaped directly; anything else (other key order,
    \\u escapes) goes through a JSON parser, and only those rows."""
    line = pl.col("line")
    end = line.str.find('","stream":"', literal=True)  # quotes inside the log value are escaped
    frame = lines.with_columns(
        line.str.slice(len(_DJ_HEAD), end - len(_DJ_HEAD)).alias("_body"),
        line.str.slice(end).str.extract_groups(_DJ_TAIL).alias("_g"),
    ).with_columns(
        (pl.col("line").str.starts_with(_DJ_HEAD) & pl.col("_g").struct.field("ts").is_not_null()
         & ~pl.col("_body").str.contains("\\u", literal=True)).fill_null(False).alias("_fast"),
        pl.col("_body").str.replace_many(list(_JSON_ESCAPES), list(_JSON_ESCAPES.values())).alias("_log"),
        pl.col("_g").struct.field("ts").alias("_ts"),
        pl.col("_g").struct.field("stream").alias("_stream"),
    )
    slow = frame["_fast"].not_().arg_true()
    if slow.len():
        parsed = frame[slow].select(
            *(line.str.json_path_match(f"$.{key}").alias(name)
              for key, name in (("log", "_log"), ("time", "_ts"), ("stream", "_stream")))
        )
        frame = frame.with_columns(frame[name].scatter(slow, parsed[name]) for name in parsed.columns)
    log = pl.col("_log")
    return frame.with_columns(
        log.is_not_null().alias("_shape"),
        log.is_not_null().alias("_m"),
        _clean_inner(frame["_log"]).alias("_msg"),
        log.str.ends_with("\n").alias("_final"),
    ).drop("_body", "_g", "_fast", "_log")


def _join_fragments(frame: pl.DataFrame) -> pl.DataFrame:
    """Give each line-ending record the joined text of its fragments (per stream, in order)."""
    frame = frame.with_columns((pl.col("_final").fill_null(True) | ~pl.col("_m")).alias("_final"))
    joined = frame["_msg"]
    if not frame["_final"].all():  # rare (lines over 16 KiB): group only the split lines
        last_of_stream = pl.int_range(pl.len()).over("_stream") == pl.len().over("_stream") - 1
        group = pl.col("_final").cast(pl.Int64).cum_sum().shift(1, fill_value=0).over("_stream")
        frame = frame.with_columns(pl.col("_final") | last_of_stream).with_row_index("_row")
        frame = frame.with_columns(group.alias("_group"))
        split = frame.filter(~pl.col("_final")).select("_stream", "_group").unique()
        parts = (frame.join(split, on=["_stream", "_group"], how="semi", nulls_equal=True)
                 .group_by("_stream", "_group").agg(pl.col("_msg").str.join(""), pl.col("_row").last()))
        joined = joined.scatter(parts["_row"], parts["_msg"])
        frame = frame.drop("_row", "_group")
    return frame.with_columns(joined.alias("_joined"))


def unwrap_counted(lines: pl.DataFrame, kind: str) -> tuple[pl.DataFrame, BareLines]:
    """`unwrap`, plus the count of lines that do not carry the envelope (for a chunked reader
    to add up over a file and report once, with `BareLines.warning`)."""
    envelope = Envelope(kind)
    frame = _join_fragments(_with_envelope(lines, envelope))
    frame = frame.with_columns(pl.when(pl.col("_final")).then(pl.col("_joined")).otherwise(pl.col("_msg"))
                               .alias("_inner"))
    matched, inner = pl.col("_m"), pl.col("_inner")
    continued = matched & ~pl.col("_final")
    if "continued" in lines.columns:  # unwrapping twice keeps what the first pass found
        continued = continued | pl.col("continued")
    frame = frame.with_columns(stripped(frame.get_column("_inner")).alias("_text"),
                               _parse_ts(frame.get_column("_ts")).alias("_outer_ts"))
    out = frame.with_columns(
        pl.when(matched).then(inner).otherwise(pl.col("line")).alias("line"),
        pl.when(matched).then(pl.col("_text")).otherwise(pl.col("text")).alias("text"),
        pl.when(matched).then(pl.col("_outer_ts")).otherwise(pl.col("outer_ts")).alias("outer_ts"),
        pl.when(matched & pl.col("_stream").is_not_null()).then(pl.col("_stream"))
        .otherwise(pl.col("stream")).alias("stream"),
        continued.alias("continued"),
    )
    columns = [c for c in lines.columns if c != "continued"] + ["continued"]
    return out.select(columns), BareLines.of(out, envelope)


def unwrap_report(lines: pl.DataFrame, kind: str) -> tuple[pl.DataFrame, list[str]]:
    """`unwrap`, plus a counted warning for the lines that do not carry the envelope."""
    out, bare = unwrap_counted(lines, kind)
    return out, bare.warning()


def unwrap(lines: pl.DataFrame, kind: str) -> pl.DataFrame:
    """Remove the `kind` envelope from a LINE_SCHEMA frame; adds the Boolean column `continued`."""
    return unwrap_counted(lines, kind)[0]


@dataclass
class BareLines:
    """Non-blank lines of an enveloped file that lack the envelope (kept as they are)."""

    kind: Envelope
    count: int = 0
    file: str | None = None
    first_line: int | None = None

    @classmethod
    def of(cls, frame: pl.DataFrame, kind: Envelope) -> BareLines:
        # The envelope is missing on few lines: only those are stripped to tell the blank ones.
        bare = frame.filter(~pl.col("_shape").fill_null(False))
        hits = bare.filter(pl.col("line").str.strip_chars() != "")
        if hits.is_empty():
            return cls(kind)
        return cls(kind, hits.height, hits["file"][0], hits["line_no"][0])

    def add(self, other: BareLines) -> None:
        """Count `other` too (a later chunk of the same file)."""
        if other.count and not self.count:
            self.file, self.first_line = other.file, other.first_line
        self.count += other.count

    def warning(self) -> list[str]:
        n = self.count
        if not n:
            return []
        if self.kind is Envelope.DOCKER_JSON:
            what = "malformed JSON record" if n == 1 else "malformed JSON records"
        else:
            what = f"line without the {self.kind} envelope" if n == 1 else f"lines without the {self.kind} envelope"
        return [f"{self.file}: {n} {what} (first at line {self.first_line}), kept as they are"]

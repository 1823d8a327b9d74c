"""Match a library against the events: one pass, one boolean column per signature."""

from __future__ import annotations

import polars as pl

from k3forensics.library.compile import TEXT, Compiler, prepare
from k3forensics.library.loader import Library
from k3forensics.library.model import Role, Signature

HIT_SCHEMA = {"seq": pl.Int64, "signature": pl.Utf8, "captures": pl.Utf8}

# Columns the compiled expressions may read; absent ones are added as nulls.
_NEEDED = {"milestone": pl.Utf8, "phase": pl.Utf8, "tb_group": pl.Int64, "ts_order": pl.Datetime("us", "UTC"),
           "node": pl.Utf8, "exception": pl.Utf8, "format": pl.Utf8, "stream": pl.Utf8, "rank": pl.Utf8,
           "attrs": pl.Utf8, "process": pl.Utf8, "level": pl.Utf8, "source": pl.Utf8}


def signature_exprs(library: Library, signatures: list[Signature]) -> list[pl.Expr]:
    compiler = Compiler(lambda sig_id: library.signatures[sig_id].condition)
    exprs = []
    for sig in signatures:
        expr = compiler.compile(sig.condition)
        if sig.sources:
            expr = expr & pl.col("source").is_in(list(sig.sources))
        exprs.append(expr.fill_null(False).alias(sig.id))
    return exprs


def match_events(events: pl.DataFrame, library: Library, roles: tuple[Role, ...] | None = None) -> pl.DataFrame:
    """Hits as rows (seq, signature, captures JSON) in event order."""
    roles = roles or (Role.PRIMARY, Role.SECONDARY, Role.CONTEXT)
    signatures = library.of_role(*roles)
    if not signatures or events.height == 0:
        return pl.DataFrame(schema=HIT_SCHEMA)
    frame = events.lazy().with_columns(
        [pl.lit(None, dtype).alias(name) for name, dtype in _NEEDED.items() if name not in events.columns]
    )
    flags = prepare(frame).select("seq", *signature_exprs(library, signatures))
    ids = [s.id for s in signatures]
    hits = (
        flags.filter(pl.any_horizontal(ids))
        .unpivot(index="seq", on=ids, variable_name="signature", value_name="hit")
        .filter(pl.col("hit"))
        .select("seq", "signature")
        .collect()
    )
    return _with_captures(hits, events, [s for s in signatures if s.captures]).sort("seq", "signature")


def _with_captures(hits: pl.DataFrame, events: pl.DataFrame, signatures: list[Signature]) -> pl.DataFrame:
    """Run each signature's capture regexes over its own hits only; the first pattern that
    captures a name wins."""
    hits = hits.with_columns(pl.lit(None, pl.Utf8).alias("captures"))
    if not signatures or hits.height == 0:
        return hits
    texts = prepare(hits.lazy().join(events.lazy().select("seq", "line"), on="seq", how="left"))
    with_caps = [s.id for s in signatures]
    pieces = [texts.filter(~pl.col("signature").is_in(with_caps)).select(hits.columns)]
    for sig in signatures:
        names = _group_names(sig.captures)
        groups = [pl.col(TEXT).str.extract_groups(p) for p in sig.captures]
        values = [
            pl.coalesce([g.struct.field(n) for g, p in zip(groups, sig.captures, strict=True) if f"(?P<{n}>" in p])
            .alias(n)
            for n in names
        ]
        encoded = pl.struct(values).struct.json_encode()
        subset = texts.filter(pl.col("signature") == sig.id)
        pieces.append(subset.with_columns(encoded.alias("captures")).select(hits.columns))
    return pl.concat(pieces).collect()


def _group_names(patterns: tuple[str, ...]) -> list[str]:
    import re

    names: list[str] = []
    for pattern in patterns:
        for name in re.findall(r"\(\?P<(\w+)>", pattern):
            if name not in names:
                names.append(name)
    return names

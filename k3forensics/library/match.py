"""Match a library against the events: one boolean per (line, signature), as hit rows.

Two ways to the same hits. `prefilter=False` compiles every signature to one polars
expression and evaluates all of them over every line. The default first finds, for each
signature, the lines that hold one of the literals its condition requires (`prefilter.py`:
one Aho-Corasick pass over all lines for the whole library, then per signature over the few
lines that passed) and evaluates the full expression only there. What depends on other lines
is computed once over all lines: traceback tests per group, first milestones per node, and
other signatures' hits for `within … of hit`, whose window is then evaluated over the
candidate lines together with those hits (the lines in between hold no hit, so they change
nothing). Tests check that both ways give the same hits on every sample bundle.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import polars as pl

from k3forensics.errors import SignatureError
from k3forensics.library.compile import TEXT, Compiler, is_row_local, prepare, text_expr
from k3forensics.library.condition import Node, TracebackTest, WithinHit, walk
from k3forensics.library.loader import Library
from k3forensics.library.model import Role, Signature
from k3forensics.library.prefilter import Literals, describe, literal_hits
from k3forensics.text import strip_ansi

HIT_SCHEMA = {"seq": pl.Int64, "signature": pl.Utf8, "captures": pl.Utf8}
# Up to this many candidate lines, the signatures without windows are evaluated together in one
# pass over all candidates (fewer, larger polars calls); above it each over its own candidates.
BATCH_ROWS = 50_000
DENSE_SHARE = 8  # a signature is batched when its candidates are at least 1/8 of the pool
SMALL_POOL = 5_000  # or when the pool is this small

# Columns the compiled expressions may read; absent ones are added as nulls.
_NEEDED = {"milestone": pl.Utf8, "phase": pl.Utf8, "tb_group": pl.Int64, "ts_order": pl.Datetime("us", "UTC"),
           "node": pl.Utf8, "exception": pl.Utf8, "format": pl.Utf8, "stream": pl.Utf8, "rank": pl.Utf8,
           "attrs": pl.Utf8, "process": pl.Utf8, "level": pl.Utf8, "source": pl.Utf8}

# What a timeline build knows of a line while it is still reading files (see timeline/build.py):
# not its phase, nor the node name of a one-node bundle.
NOT_YET = frozenset({"phase", "node"})


def pass_one_safe(condition: Node) -> bool:
    """Can this condition be matched on a file's lines before the bundle is complete? (Lines
    of traceback groups cut by a chunk boundary are matched again once the file is read.)"""
    return is_row_local(condition, NOT_YET, tracebacks=True)


def signature_exprs(library: Library, signatures: list[Signature]) -> list[pl.Expr]:
    compiler = Compiler(lambda sig_id: library.signatures[sig_id].condition)
    exprs = []
    for sig in signatures:
        expr = compiler.compile(sig.condition)
        if sig.sources:
            expr = expr & pl.col("source").is_in(list(sig.sources))
        exprs.append(expr.fill_null(False).alias(sig.id))
    return exprs


def match_events(events: pl.DataFrame, library: Library, roles: tuple[Role, ...] | None = None, *,
                 prefilter: bool = True) -> pl.DataFrame:
    """Hits as rows (seq, signature, captures JSON) in event order."""
    roles = roles or (Role.PRIMARY, Role.SECONDARY, Role.CONTEXT)
    signatures = library.of_role(*roles)
    if not signatures or events.height == 0:
        return pl.DataFrame(schema=HIT_SCHEMA)
    if prefilter:
        hits = Matcher(events, library).hits(signatures)
    else:
        hits = _match_all_lines(events, library, signatures)
    return _with_captures(hits, events, [s for s in signatures if s.captures]).sort("seq", "signature")


def _with_needed(events: pl.DataFrame) -> pl.DataFrame:
    return events.with_columns(
        [pl.lit(None, dtype).alias(name) for name, dtype in _NEEDED.items() if name not in events.columns]
    )


def _match_all_lines(events: pl.DataFrame, library: Library, signatures: list[Signature]) -> pl.DataFrame:
    """Every signature's expression over every line, in one pass."""
    flags = prepare(_with_needed(events).lazy()).select("seq", *signature_exprs(library, signatures))
    ids = [s.id for s in signatures]
    return (
        flags.filter(pl.any_horizontal(ids))
        .unpivot(index="seq", on=ids, variable_name="signature", value_name="hit")
        .filter(pl.col("hit"))
        .select("seq", "signature")
        .collect()
    )


def text_column(line: pl.Series) -> pl.Series:
    """`prepare`'s `_text` computed eagerly: ANSI colour stripped only where an ESC occurs."""
    if line.null_count():
        line = line.fill_null("")
    rows = line.str.contains("\x1b", literal=True).arg_true()  # else `_text` shares `line`'s buffers
    if rows.len():
        stripped = pl.DataFrame({"t": line.gather(rows)}).select(strip_ansi(pl.col("t"))).to_series()
        line = line.scatter(rows, stripped)
    return line.alias(TEXT)


class PrefilterCompiler(Compiler):
    """The compiler with the relations to other lines read from values computed over all lines."""

    def __init__(self, matcher: Matcher):
        super().__init__(lambda sig_id: matcher.library.signatures[sig_id].condition)
        self.matcher = matcher

    def _grouped(self, node: TracebackTest) -> pl.Expr:
        return pl.col("tb_group").is_in(self.matcher.groups_passing(node).implode())

    def _first_milestone(self, phase: str) -> pl.Expr:
        firsts = self.matcher.first_milestones(phase)
        return pl.col("node").replace_strict(firsts, default=None, return_dtype=pl.Datetime("us", "UTC"))

    def _other_hit(self, signature: str) -> pl.Expr:
        return pl.col(_hit_column(signature))


def _hit_column(signature: str) -> str:
    return f"_hit:{signature}"


@dataclass
class SignatureCost:
    """What matching one signature took (`k3forensics signatures profile`)."""

    signature: str
    seconds: float = 0.0
    candidates: int = 0
    hits: int = 0
    prefilter: str = ""


@lru_cache(maxsize=4096)  # conditions are frozen dataclasses: each is walked once
def refers_to(condition: Node) -> tuple[str, ...]:
    """The signatures a condition's `within … of hit` tests refer to."""
    return tuple(n.signature for n in walk(condition) if isinstance(n, WithinHit))


@dataclass
class Matcher:
    """Prefiltered matching over one events frame (see module doc)."""

    events: pl.DataFrame
    library: Library
    batch_rows: int = BATCH_ROWS       # 0: every signature on its own (what the profile measures)
    clock: Callable[[], float] = time.perf_counter
    costs: dict[str, SignatureCost] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.frame = _with_needed(self.events).with_columns(text_column(self.events.get_column("line")))
        self._pool: pl.DataFrame | None = None
        self._no_lines = self.frame.select("seq", "source").clear()  # the hits of a signature no line can match
        self._candidates: dict[str, pl.Series] = {}  # per signature: the pool rows holding its literals
        self._traceback_lines: pl.DataFrame | None = None
        self._rows: dict[str, pl.Series] = {}
        self._found: dict[str, pl.DataFrame] = {}  # seq, source of the lines where a condition holds
        self._groups: dict[TracebackTest, pl.Series] = {}
        self._firsts: dict[str, dict[str, object]] = {}
        self._stack: list[str] = []
        self.pool_seconds = 0.0

    def hits(self, signatures: list[Signature]) -> pl.DataFrame:
        started = self.clock()
        self._pool = self._candidates_pool(signatures)
        self.pool_seconds = self.clock() - started
        self._batch(self._closure([s.id for s in signatures]))
        seqs: list[pl.Series] = []
        names: list[str] = []
        counts: list[int] = []
        for sig in signatures:
            self.condition_rows(sig.id)
            found = self._found[sig.id]
            if sig.sources and found.height:
                found = found.filter(pl.col("source").is_in(list(sig.sources)))
            self.costs.setdefault(sig.id, SignatureCost(sig.id)).hits = found.height
            if found.height:
                seqs.append(found.get_column("seq"))
                names.append(sig.id)
                counts.append(found.height)
        if not seqs:
            return pl.DataFrame(schema={"seq": pl.Int64, "signature": pl.Utf8})
        return pl.DataFrame({"seq": pl.concat(seqs).cast(pl.Int64),
                             "signature": pl.Series(np.repeat(np.array(names, dtype=object), counts), dtype=pl.Utf8)})

    # -- candidates ------------------------------------------------------------------------------

    def _candidates_pool(self, signatures: list[Signature]) -> pl.DataFrame | None:
        """The lines any needed signature could match, found in one pass for all of them, and
        per signature the pool rows holding its literals (`_candidates`). None when some
        signature requires no literal (then it runs over every line)."""
        needed = self._closure([s.id for s in signatures])
        found: dict[str, Literals] = {}
        union = Literals()
        for sig_id in needed:
            literals = self.library.literals(sig_id)
            if literals is None:
                return None
            found[sig_id], union = literals, union | literals
        pool = _where(self.frame, union.loose_mask(pl.col(TEXT)))
        self._candidates = _candidate_rows(pool, found) if pool.height else {}
        return pool

    def _closure(self, ids: list[str]) -> list[str]:
        """The signatures and every signature their `within … of hit` refers to."""
        out: list[str] = []
        todo = list(ids)
        while todo:
            sig_id = todo.pop()
            if sig_id in out or sig_id not in self.library.signatures:
                continue
            out.append(sig_id)
            todo += refers_to(self.library.signatures[sig_id].condition)
        return out

    # -- evaluation ------------------------------------------------------------------------------

    def _batch(self, ids: list[str]) -> None:
        """Signatures without `within … of hit`, all at once over their candidate lines, when
        those are few: one polars pass instead of one per signature."""
        simple = [i for i in ids if not refers_to(self.library.signatures[i].condition)]
        for scope in (self._dense([i for i in simple if self.library.literals(i) is not None]),
                      [i for i in simple if self.library.literals(i) is None]):
            frame = self._pool if scope and self.library.literals(scope[0]) is not None else self.frame
            if not scope or frame is None or frame.height > self.batch_rows:
                continue
            compiler = PrefilterCompiler(self)
            flags = frame.select("seq", "source", *[compiler.compile(self.library.signatures[i].condition)
                                                     .fill_null(False).alias(i) for i in scope])
            long = flags.unpivot(index=["seq", "source"], on=scope, variable_name="_sig", value_name="_hit")
            found = dict(long.filter(pl.col("_hit")).select("_sig", "seq", "source")
                         .partition_by("_sig", as_dict=True, include_key=False))
            empty = flags.select("seq", "source").clear()
            for sig_id in scope:
                hit = found.get((sig_id,), empty)
                self._rows[sig_id], self._found[sig_id] = hit.get_column("seq"), hit
                cost = self.costs.setdefault(sig_id, SignatureCost(sig_id))
                cost.candidates, cost.prefilter = frame.height, describe(self.library.literals(sig_id))

    def _dense(self, ids: list[str]) -> list[str]:
        """The signatures worth evaluating over the whole pool: those holding a fair share of
        it. One whose candidates are few of many pool lines (every access log line is a pool
        line when the served-request milestone is matched) is cheaper on its own candidates."""
        if self._pool is None or not self._candidates:
            return []
        # A signature without candidates is left out: no line holds its literals, so it has
        # no hits (`condition_rows`), and compiling its expression would cost the most here.
        held = [i for i in ids if i in self._candidates]
        if self._pool.height <= SMALL_POOL:  # few lines: one call beats one per signature
            return held
        return [i for i in held if self._candidates[i].len() * DENSE_SHARE >= self._pool.height]

    def condition_rows(self, sig_id: str) -> pl.Series:
        """The seq of every line where the signature's condition holds (its `sources` aside)."""
        if sig_id in self._rows:
            return self._rows[sig_id]
        if sig_id in self._stack:
            chain = " -> ".join([*self._stack, sig_id])
            raise SignatureError(f"signatures refer to each other in a cycle: {chain}")
        self._stack.append(sig_id)
        try:
            condition = self.library.signatures[sig_id].condition
            others = {other: self.condition_rows(other) for other in refers_to(condition)}
            started = self.clock()
            if self._pool is not None and self.library.literals(sig_id) is not None and not others \
                    and sig_id not in self._candidates:
                found = self._no_lines  # no line holds its literals
                candidates = 0
            else:
                expr = PrefilterCompiler(self).compile(condition).fill_null(False)
                # Only the columns the condition reads travel with its candidate lines (one
                # signature may have most of a large pool: every access line is a served request).
                read = set(expr.meta.root_names()) - {_hit_column(other) for other in others} - {"seq", "source"}
                frame = self._frame_for(sig_id, others, ["seq", "source", *sorted(read)])
                found = frame.filter(expr).select("seq", "source") if frame.height else frame.select("seq", "source")
                candidates = frame.height
            rows = found.get_column("seq")
            cost = self.costs.setdefault(sig_id, SignatureCost(sig_id))
            cost.seconds += self.clock() - started
            cost.candidates = candidates
            cost.prefilter = describe(self.library.literals(sig_id))
        finally:
            self._stack.pop()
        self._rows[sig_id], self._found[sig_id] = rows, found
        return rows

    def _frame_for(self, sig_id: str, others: dict[str, pl.Series], columns: list[str]) -> pl.DataFrame:
        """These columns of the candidate lines of one signature, with the hits of the
        signatures it refers to."""
        literals = self.library.literals(sig_id)
        if literals is None:
            frame = self.frame.select(columns)
        elif self._pool is not None:
            if sig_id not in self._candidates:
                frame = self._pool.select(columns).clear()
            else:
                frame = self._pool.select(columns).gather(self._candidates[sig_id])
        else:
            frame = _where(self.frame, literals.mask(pl.col(TEXT)), columns)
        if not others:
            return frame
        hit_seqs = pl.concat(list(others.values())).unique()
        if literals is not None:
            extra = _where(self.frame, pl.col("seq").is_in(hit_seqs.implode())
                           & ~pl.col("seq").is_in(frame.get_column("seq").implode()), columns)
            frame = pl.concat([frame, extra])
        return frame.with_columns(pl.col("seq").is_in(rows.implode()).alias(_hit_column(other)) for other, rows in others.items())

    def groups_passing(self, node: TracebackTest) -> pl.Series:
        """The traceback groups in which some line passes the test."""
        if node not in self._groups:
            if self._traceback_lines is None:
                self._traceback_lines = _where(self.frame.select("tb_group", TEXT), pl.col("tb_group").is_not_null())
            passing = self._traceback_lines.filter(text_expr(pl.col(TEXT), node.op, node.value))
            self._groups[node] = passing.get_column("tb_group").unique()
        return self._groups[node]

    def first_milestones(self, phase: str) -> dict[str, object]:
        if phase not in self._firsts:
            milestones = _where(self.frame.select("milestone", "node", "ts_order"), pl.col("milestone") == phase)
            firsts = milestones.group_by("node").agg(pl.col("ts_order").min())
            self._firsts[phase] = {n: t for n, t in firsts.iter_rows() if n is not None}
        return self._firsts[phase]


def _where(frame: pl.DataFrame, predicate: pl.Expr, columns: list[str] | None = None) -> pl.DataFrame:
    """`frame.filter(predicate)` (of these columns only, when given) through a computed mask:
    filtering a large frame by an expression holds a transient copy of its columns (measured:
    most of the frame again)."""
    mask = frame.select(predicate.fill_null(False)).to_series()
    return (frame if columns is None else frame.select(columns)).filter(mask)


def _candidate_rows(pool: pl.DataFrame, literals: dict[str, Literals]) -> dict[str, pl.Series]:
    """Per signature, the rows of the pool holding one of its literals (or in a traceback group,
    when that is one of them), in order; signatures without any are left out. One pass finds
    every literal at once (`Literals.mask` per signature costs a pass each)."""
    text = pool.get_column(TEXT)
    pairs: list[pl.DataFrame] = []
    for folded in (False, True):
        owners: dict[str, list[str]] = {}  # literal (in lower case when folded) -> signatures
        for sig_id, found in literals.items():
            for s in found.folded if folded else found.exact:
                owners.setdefault(s.lower() if folded else s, []).append(sig_id)
        if owners:
            table = pl.DataFrame({"_lit": list(owners), "_sig": list(owners.values())}).explode("_sig")
            pairs.append(literal_hits(text, owners, folded).join(table, on="_lit").select("_row", "_sig"))
    traced = [sig_id for sig_id, found in literals.items() if found.in_traceback]
    if traced:
        rows = pool.get_column("tb_group").is_not_null().arg_true().cast(pl.UInt32).alias("_row")
        pairs.append(rows.to_frame().join(pl.DataFrame({"_sig": traced}), how="cross"))
    if not pairs:
        return {}
    found_rows = pl.concat(pairs).unique().sort("_row")
    return {sig_id: part.get_column("_row")
            for (sig_id,), part in found_rows.partition_by("_sig", as_dict=True, include_key=False).items()}


def _with_captures(hits: pl.DataFrame, events: pl.DataFrame, signatures: list[Signature]) -> pl.DataFrame:
    """Run each signature's capture regexes over its own hits only; the first pattern that
    captures a name wins."""
    hits = hits.with_columns(pl.lit(None, pl.Utf8).alias("captures"))
    if not signatures or hits.height == 0:
        return hits
    # Only the hit lines' text is needed: select them before the join (a join against every
    # line would hash every line's seq).
    lines = _where(events.select("seq", "line"), pl.col("seq").is_in(hits.get_column("seq").unique().implode()))
    texts = prepare(hits.lazy().join(lines.lazy(), on="seq", how="left"))
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

"""Compile condition ASTs to polars expressions over the events frame.

All signatures of a library become boolean columns computed in one pass over the events;
relations to milestones and to other signatures' hits are window expressions, so nothing
loops per line or per signature in Python.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import polars as pl

from k3forensics.errors import SignatureError
from k3forensics.library.condition import (
    And,
    AnyOf,
    Compare,
    IsNull,
    Member,
    Milestone,
    Node,
    Not,
    Or,
    TextTest,
    TracebackTest,
    WithinHit,
)
from k3forensics.text import strip_ansi

TEXT = "_text"  # the line with ANSI colour removed: what text tests run on

EVENT_FIELDS = {"source", "level", "phase", "process", "node", "file", "exception", "format", "stream",
                "message", "rank"}


# Nodes whose value on a line depends on other lines (a group, a node's milestones, other hits).
WINDOW_NODES = (TracebackTest, Milestone, WithinHit)


def fields_read(node: Node) -> set[str]:
    """The event fields a condition reads directly (not through a window)."""
    match node:
        case TextTest(_, _, field) | Compare(field, _, _) | Member(field, _) | IsNull(field, _):
            return {field}
        case AnyOf():
            return {"text"}
        case And(items) | Or(items):
            return set().union(*(fields_read(i) for i in items))
        case Not(item):
            return fields_read(item)
    return set()


def is_row_local(node: Node, unavailable: frozenset[str] = frozenset(), tracebacks: bool = False) -> bool:
    """True when the condition decides a line from that line alone (with `tracebacks`: or from
    the lines of its traceback group), reading none of the `unavailable` fields."""
    match node:
        case And(items) | Or(items):
            return all(is_row_local(i, unavailable, tracebacks) for i in items)
        case Not(item):
            return is_row_local(item, unavailable, tracebacks)
        case TracebackTest():
            return tracebacks
        case Milestone() | WithinHit():
            return False
    return not (fields_read(node) & unavailable)


def uses_tracebacks(node: Node) -> bool:
    match node:
        case And(items) | Or(items):
            return any(uses_tracebacks(i) for i in items)
        case Not(item):
            return uses_tracebacks(item)
    return isinstance(node, TracebackTest)


def prepare(events: pl.LazyFrame) -> pl.LazyFrame:
    """Add the `_text` column the compiled expressions read."""
    line = pl.col("line").fill_null("")
    return events.with_columns(
        pl.when(line.str.contains("\x1b", literal=True)).then(strip_ansi(line)).otherwise(line).alias(TEXT)
    )


def field_expr(name: str) -> pl.Expr:
    if name == "text":
        return pl.col(TEXT)
    if name.startswith("attr."):
        return pl.col("attrs").str.json_path_match(f"$.{name[5:]}")
    if name in EVENT_FIELDS:
        return pl.col(name)
    raise SignatureError(f"unknown field {name!r}; known: {', '.join(sorted(EVENT_FIELDS | {'attr.NAME'}))}")


def text_expr(target: pl.Expr, op: str, value: str) -> pl.Expr:
    target = target.fill_null("")
    if op == "contains":
        return target.str.contains(value, literal=True)
    if op == "icontains":
        return target.str.contains("(?i)" + re.escape(value))
    if op == "matches":
        return target.str.contains(value)
    if op == "imatches":
        return target.str.contains("(?i)" + value)
    if op == "startswith":
        return target.str.starts_with(value)
    if op == "endswith":
        return target.str.ends_with(value)
    raise SignatureError(f"unknown text operator {op!r}")


def _compare(field: str, op: str, value: str | float) -> pl.Expr:
    target = field_expr(field)
    if isinstance(value, float):
        target = target.cast(pl.Float64, strict=False)
    lit = pl.lit(value)
    ops: dict[str, Callable[[pl.Expr, pl.Expr], pl.Expr]] = {
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    }
    return ops[op](target, lit).fill_null(False)


class Compiler:
    """Compiles conditions; `resolve` returns the condition of another signature by id."""

    def __init__(self, resolve: Callable[[str], Node]):
        self._resolve = resolve
        self._stack: list[str] = []

    def compile(self, node: Node) -> pl.Expr:
        match node:
            case TextTest(op, value, field):
                return text_expr(field_expr(field), op, value)
            case AnyOf(values):
                return pl.col(TEXT).fill_null("").str.contains_any(list(values))
            case Compare(field, op, value):
                return _compare(field, op, value)
            case Member(field, values):
                target = field_expr(field)
                if all(isinstance(v, float) for v in values):
                    target = target.cast(pl.Float64, strict=False)
                return target.is_in(list(values)).fill_null(False)
            case IsNull(field, negate):
                expr = field_expr(field).is_null()
                return ~expr if negate else expr
            case TracebackTest():
                return (pl.col("tb_group").is_not_null() & self._grouped(node)).fill_null(False)
            case Milestone(when, phase):
                first = self._first_milestone(phase)
                if when == "after":
                    return (pl.col("ts_order") >= first).fill_null(False)
                return (first.is_null() | (pl.col("ts_order") < first)).fill_null(True)
            case WithinHit():
                return self._within(node)
            case And(items):
                return pl.all_horizontal([self.compile(i) for i in items])
            case Or(items):
                return pl.any_horizontal([self.compile(i) for i in items])
            case Not(item):
                return ~self.compile(item)
        raise SignatureError(f"cannot compile condition node {node!r}")

    # The three relations to other lines; `PrefilterCompiler` (match.py) replaces the first and
    # the third with columns computed once over all lines.

    def _grouped(self, node: TracebackTest) -> pl.Expr:
        """Some line of this line's traceback group passes the test."""
        return text_expr(pl.col(TEXT), node.op, node.value).any().over("tb_group")

    def _first_milestone(self, phase: str) -> pl.Expr:
        """The time of the first milestone of `phase` on this line's node."""
        return pl.when(pl.col("milestone") == phase).then(pl.col("ts_order")).min().over("node")

    def _other_hit(self, signature: str) -> pl.Expr:
        """Where the condition of another signature holds (compiled inline)."""
        if signature in self._stack:
            chain = " -> ".join([*self._stack, signature])
            raise SignatureError(f"signatures refer to each other in a cycle: {chain}")
        self._stack.append(signature)
        try:
            return self.compile(self._resolve(signature))
        finally:
            self._stack.pop()

    def _within(self, node: WithinHit) -> pl.Expr:
        other = self._other_hit(node.signature)
        t = pl.col("ts_order")
        hit_time = pl.when(other).then(t)
        order = ["ts_order", "seq"]
        fill = (lambda e: e.forward_fill()) if node.when == "after" else (lambda e: e.backward_fill())
        window = pl.duration(microseconds=int(node.seconds * 1_000_000))
        if node.scope == "same":
            near = fill(hit_time).over("node", order_by=order)
            node_ok = pl.lit(True)
        else:
            near = fill(hit_time).over(pl.lit(1), order_by=order)
            hit_node = fill(pl.when(other).then(pl.col("node"))).over(pl.lit(1), order_by=order)
            node_ok = (hit_node != pl.col("node")) if node.scope == "other" else pl.lit(True)
        gap = (t - near) if node.when == "after" else (near - t)
        return (near.is_not_null() & (gap <= window) & node_ok).fill_null(False)

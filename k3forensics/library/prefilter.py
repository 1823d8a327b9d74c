"""Literal prefilters: the text a line must hold for a condition to be able to match it.

`required(condition)` gives a `Literals` (one of its strings must occur in the line's text) or
None when the condition implies no text at all. Rules: `contains "x"` requires x (also
`startswith`, `endswith`, `any of [...]`); `icontains` and `(?i)` regexes require their text
in any ASCII case; a regex requires a literal run it cannot match without (found with Python's
regex parser; a pattern it cannot read requires nothing); `and` requires what any one of its
items requires (the most selective is kept); `or` requires one of its branches' literals, and
nothing if one branch requires nothing; `traceback contains` requires the line to be in a
traceback group (a cheap column test, not text); `not`, field comparisons, milestones and
windows require nothing.

Soundness over selectivity: a prefilter may let through lines that do not match, never drop
one that does. Case-insensitive regexes fold Unicode case (`k` also matches the Kelvin sign),
while the literal search folds only ASCII case, so such literals keep only their runs of ASCII
characters without a non-ASCII case twin.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import polars as pl

from k3forensics.library.condition import And, AnyOf, Node, Not, Or, TextTest, TracebackTest

try:  # the parser behind `re`; Python 3.11 names it re._parser
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older layouts
    import sre_parse  # type: ignore[no-redef]

_LITERAL = sre_parse.LITERAL
_SUBPATTERN = sre_parse.SUBPATTERN
_BRANCH = sre_parse.BRANCH
_REPEATS = (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None))
_ATOMIC = getattr(sre_parse, "ATOMIC_GROUP", None)
_IN = sre_parse.IN
# ASCII letters whose Unicode case folding reaches beyond ASCII (K: Kelvin sign, S: long s).
_UNFOLDABLE = re.compile(r"[^\x00-\x7f]|[kKsS]")
_MIN_LENGTH = 2  # a one-character literal would let nearly every line through


_MAX_ALTERNATIVES = 64  # a regex's literal alternatives are multiplied out up to this many


@dataclass(frozen=True)
class Literals:
    """Every line the condition matches holds one of these strings (or, with `in_traceback`,
    is a line of a traceback group)."""

    exact: frozenset[str] = frozenset()
    folded: frozenset[str] = frozenset()   # compared ignoring ASCII case
    in_traceback: bool = False

    def __or__(self, other: Literals) -> Literals:
        return Literals(self.exact | other.exact, self.folded | other.folded, self.in_traceback or other.in_traceback)

    @property
    def strings(self) -> frozenset[str]:
        return self.exact | self.folded

    @property
    def strength(self) -> tuple[int, int]:
        """Higher is more selective: text before the traceback test (traceback lines are few,
        but a literal is checked in the same pass as all others), then the shortest
        alternative's length, then fewer alternatives."""
        if not self.strings:
            return 0, 0
        shortest = min(len(s) for s in self.strings)
        return shortest + (0 if self.in_traceback else 1000), -len(self.strings)

    def loose_mask(self, text: pl.Expr) -> pl.Expr:
        """A superset of `mask` in one regex pass: the folded literals in Unicode case-
        insensitive form (the engine's literal search is faster than many-pattern
        Aho-Corasick). For the bundle-wide pass; `mask` then decides per signature."""
        parts = []
        if self.exact:
            parts.append("|".join(re.escape(s) for s in sorted(self.exact)))
        if self.folded:
            parts.append("(?i:" + "|".join(re.escape(s) for s in sorted(self.folded)) + ")")
        out = [text.str.contains("|".join(parts))] if parts else []
        if self.in_traceback:
            out.append(pl.col("tb_group").is_not_null())
        return pl.any_horizontal(out).fill_null(False)

    def mask(self, text: pl.Expr, tb_group: pl.Expr | None = None) -> pl.Expr:
        parts = []
        if self.exact:
            parts.append(text.str.contains_any(sorted(self.exact)))
        if self.folded:
            parts.append(text.str.contains_any(sorted(self.folded), ascii_case_insensitive=True))
        if self.in_traceback:
            parts.append((tb_group if tb_group is not None else pl.col("tb_group")).is_not_null())
        return pl.any_horizontal(parts).fill_null(False)


def required_by_all(conditions: Iterable[Node]) -> Literals | None:
    """The literals one of which every line any of these conditions matches holds (None when
    one condition requires none: then no line can be ruled out)."""
    out = Literals()
    for condition in conditions:
        found = required(condition)
        if found is None:
            return None
        out = out | found
    return out


@lru_cache(maxsize=4096)  # conditions are frozen dataclasses: a library is analysed once
def required(node: Node) -> Literals | None:
    match node:
        case TextTest(op, value, "text"):
            return _text_test(op, value)
        case AnyOf(values):
            return _usable(frozenset(values), folded=False)
        case And(items):
            found = [r for r in map(required, items) if r is not None]
            return max(found, key=lambda r: r.strength) if found else None
        case Or(items):
            found = [required(i) for i in items]
            if not found or any(r is None for r in found):
                return None
            out = Literals()
            for r in found:
                out = out | r  # type: ignore[operator]
            return out
        case TracebackTest():
            return Literals(in_traceback=True)
        case Not():
            return None
    return None


def _text_test(op: str, value: str) -> Literals | None:
    if op in ("contains", "startswith", "endswith"):
        return _usable(frozenset([value]), folded=False)
    if op == "icontains":
        return _usable(frozenset(_foldable_runs(value)), folded=True)
    if op in ("matches", "imatches"):
        return regex_literals(value, ignore_case=op == "imatches")
    return None


def _usable(values: frozenset[str], folded: bool) -> Literals | None:
    """None when any alternative is too short to filter (it would pass every line)."""
    if not values or any(len(v) < _MIN_LENGTH for v in values):
        return None
    return Literals(folded=values) if folded else Literals(exact=values)


def _foldable_runs(value: str) -> list[str]:
    """The longest piece of `value` that ASCII case folding finds exactly where Unicode case
    folding would (possibly empty)."""
    runs = [r for r in _UNFOLDABLE.split(value) if r]
    return [max(runs, key=len)] if runs else []


def regex_literals(pattern: str, ignore_case: bool = False) -> Literals | None:
    """The literals a regex cannot match without, or None."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    if parsed.state.flags & re.VERBOSE:  # whitespace and comments: leave to the regex
        return None
    folded = ignore_case or bool(parsed.state.flags & re.IGNORECASE)
    alternatives = _sequence(list(parsed))
    if alternatives is None:
        return None
    if folded:
        pieces = set()
        for alt in alternatives:
            runs = _foldable_runs(alt)
            if not runs:
                return None
            pieces.add(runs[0])
        alternatives = frozenset(pieces)
    return _usable(alternatives, folded)


@dataclass(frozen=True)
class _Piece:
    strings: frozenset[str]
    exact: bool   # the item matches exactly one of `strings`; else it holds one of them


def _sequence(items: list[tuple[object, object]]) -> frozenset[str] | None:
    """The best requirement of a sequence of regex items (see `_pieces`)."""
    piece = _pieces(items)
    return piece.strings if piece is not None else None


def _pieces(items: list[tuple[object, object]]) -> _Piece | None:
    """What a sequence of regex items requires: runs of items that each match one of a few
    exact strings are multiplied out (`NCCL INFO (?:Bootstrap|Using network)` requires one of
    two strings, not just `NCCL INFO `); the most selective requirement wins."""
    candidates: list[frozenset[str]] = []
    run: frozenset[str] | None = None   # the exact strings of the run of exact items so far
    all_exact = True

    def flush() -> None:
        nonlocal run
        if run is not None:
            candidates.append(run)
            run = None

    for op, arg in items:
        piece = _item(op, arg)
        if piece is not None and piece.exact:
            product = frozenset(a + b for a in (run or {""}) for b in piece.strings)
            if len(product) <= _MAX_ALTERNATIVES:
                run = product
                continue
            flush()
            run = piece.strings
            all_exact = False
            continue
        all_exact = False
        flush()
        if piece is not None:
            candidates.append(piece.strings)
    if all_exact:
        return _Piece(run or frozenset([""]), exact=True)
    flush()
    usable = [c for c in candidates if c and all(len(s) >= _MIN_LENGTH for s in c)]
    if not usable:
        return None
    return _Piece(max(usable, key=lambda c: (min(len(s) for s in c), -len(c))), exact=False)


def _item(op: object, arg: object) -> _Piece | None:
    if op is _LITERAL:
        return _Piece(frozenset([chr(arg)]), exact=True)  # type: ignore[arg-type]
    if op is _IN:  # [abc] (or a|b, which the parser turns into a set): a few exact characters
        members = list(arg)  # type: ignore[call-overload]
        if 0 < len(members) <= 8 and all(kind is _LITERAL for kind, _ in members):
            return _Piece(frozenset(chr(code) for _, code in members), exact=True)
        return None
    if op is _SUBPATTERN:
        _, add_flags, del_flags, body = arg  # type: ignore[misc]
        if add_flags or del_flags:  # (?i:...) and friends: not worth the care
            return None
        return _pieces(list(body))
    if _ATOMIC is not None and op is _ATOMIC:
        return _pieces(list(arg))  # type: ignore[arg-type]
    if op is _BRANCH:
        branches = [_pieces(list(b)) for b in arg[1]]  # type: ignore[index]
        if any(b is None for b in branches):
            return None
        strings = frozenset().union(*(b.strings for b in branches))  # type: ignore[union-attr]
        if len(strings) > _MAX_ALTERNATIVES:
            return None
        return _Piece(strings, exact=all(b.exact for b in branches))  # type: ignore[union-attr]
    if op in _REPEATS:
        low, high, body = arg  # type: ignore[misc]
        inner = _pieces(list(body))
        if inner is None or low < 1:
            return None
        return _Piece(inner.strings, exact=inner.exact and low == high == 1)
    return None

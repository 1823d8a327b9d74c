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

A condition often requires several things at once (`and`, a regex's fixed runs): each is
sound alone (`options`). Length says little about how rare a string is (` HTTP/` is on every
access-log line, `" 500` on its errors only), so a signature's prefilter is the option the
library's example lines hold least often (`chosen_literals`), then the most selective by
length.

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
from k3forensics.library.model import Signature

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


@lru_cache(maxsize=4096)  # conditions are frozen dataclasses: a library is analysed once
def required(node: Node) -> Literals | None:
    """The most selective of `options(node)` by length, or None when it has none."""
    found = options(node)
    return max(found, key=lambda r: r.strength) if found else None


@lru_cache(maxsize=4096)
def options(node: Node) -> tuple[Literals, ...]:
    """Every requirement of the condition that is sound alone: the items of an `and`, the fixed
    runs of a regex; one (or none) for the other nodes."""
    match node:
        case TextTest(op, value, "text") if op in ("matches", "imatches"):
            return regex_options(value, ignore_case=op == "imatches")
        case And(items):
            return tuple(option for item in items for option in options(item))
    found = _single(node)
    return (found,) if found is not None else ()


def chosen_literals(signatures: Iterable[Signature]) -> dict[str, Literals | None]:
    """Each signature's prefilter: of its `options`, the one the library's example lines hold
    least often, counted in powers of two (a line or two more is noise), then the most selective
    by length. The examples are real lines of many kinds of logs, near misses included: a
    string on every access-log line or in every traceback frame shows up in many of them."""
    signatures = list(signatures)
    found = {s.id: options(s.condition) for s in signatures}
    choices = [option for option in found.values() if len(option) > 1]
    lines = pl.Series([example.line for s in signatures for example in (*s.matches, *s.no_match)], dtype=pl.Utf8)
    exact = _lines_holding(lines, {s for option in choices for r in option for s in r.exact}, folded=False)
    folded = _lines_holding(lines, {s for option in choices for r in option for s in r.folded}, folded=True)

    def rank(literals: Literals) -> tuple[bool, int, tuple[int, int]]:
        """Text before the traceback test alone (as `Literals.strength` has it), then rarity."""
        held = set().union(*(exact[s] for s in literals.exact), *(folded[s.lower()] for s in literals.folded))
        return bool(literals.strings), -(len(held) + 1).bit_length(), literals.strength

    chosen: dict[str, Literals | None] = {}
    for sig_id, option in found.items():
        if len(option) > 1:  # `max` keeps the first of equals, as `required` does
            chosen[sig_id] = max(option, key=rank)
        else:
            chosen[sig_id] = option[0] if option else None
    return chosen


def _lines_holding(lines: pl.Series, strings: set[str], folded: bool) -> dict[str, set[int]]:
    """Per string (in lower case when `folded`), the numbers of the lines holding it."""
    out: dict[str, set[int]] = {(s.lower() if folded else s): set() for s in strings}
    held = literal_hits(lines, strings, folded).group_by("_lit").agg(pl.col("_row"))
    out.update({found: set(rows) for found, rows in held.iter_rows()})  # one row per string
    return out


def literal_hits(lines: pl.Series, strings: Iterable[str], folded: bool) -> pl.DataFrame:
    """(`_row`, `_lit`) for every line holding one of these strings, once per string held (in
    lower case when `folded`: matched ignoring ASCII case, which is all folded literals have).
    One Aho-Corasick pass for all of them; every match is reported, overlapping ones too, so
    each line's set of strings is complete."""
    strings = sorted(strings)
    if not strings or lines.is_empty():
        return pl.DataFrame(schema={"_row": pl.UInt32, "_lit": pl.Utf8})
    found = (pl.DataFrame({"_lit": lines.str.extract_many(strings, ascii_case_insensitive=folded, overlapping=True)})
             .with_row_index("_row").explode("_lit").drop_nulls())
    if folded:
        found = found.with_columns(pl.col("_lit").str.to_lowercase())
    return found.unique(maintain_order=True)


def _single(node: Node) -> Literals | None:
    match node:
        case TextTest(op, value, "text"):
            return _text_test(op, value)
        case AnyOf(values):
            return _usable(frozenset(values), folded=False)
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
    """The most selective by length of the literals a regex cannot match without, or None."""
    found = regex_options(pattern, ignore_case)
    return max(found, key=lambda r: r.strength) if found else None


@lru_cache(maxsize=4096)
def regex_options(pattern: str, ignore_case: bool = False) -> tuple[Literals, ...]:
    """Each set of literals the regex cannot match without (one of the set must occur): one per
    fixed run of its top-level sequence (`_pieces`), in pattern order."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return ()
    if parsed.state.flags & re.VERBOSE:  # whitespace and comments: leave to the regex
        return ()
    folded = ignore_case or bool(parsed.state.flags & re.IGNORECASE)
    found = []
    for alternatives in _candidates(list(parsed)):
        if folded:
            runs = [_foldable_runs(alt) for alt in alternatives]
            if not all(runs):
                continue
            alternatives = frozenset(r[0] for r in runs)
        usable = _usable(alternatives, folded)
        if usable is not None:
            found.append(usable)
    return tuple(found)


@dataclass(frozen=True)
class _Piece:
    strings: frozenset[str]
    exact: bool   # the item matches exactly one of `strings`; else it holds one of them


def _candidates(items: list[tuple[object, object]]) -> list[frozenset[str]]:
    """Every requirement of a top-level sequence of regex items (see `_pieces`)."""
    piece, found = _pieces_and_candidates(items)
    if piece is not None and piece.exact:  # the whole pattern is a few exact strings
        return [piece.strings]
    return found


def _pieces(items: list[tuple[object, object]]) -> _Piece | None:
    """What a sequence of regex items requires: runs of items that each match one of a few
    exact strings are multiplied out (`NCCL INFO (?:Bootstrap|Using network)` requires one of
    two strings, not just `NCCL INFO `); the most selective requirement wins."""
    return _pieces_and_candidates(items)[0]


def _pieces_and_candidates(items: list[tuple[object, object]]) -> tuple[_Piece | None, list[frozenset[str]]]:
    """`_pieces`, with the usable requirements it chose from."""
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
        return _Piece(run or frozenset([""]), exact=True), []
    flush()
    usable = [c for c in candidates if c and all(len(s) >= _MIN_LENGTH for s in c)]
    if not usable:
        return None, []
    return _Piece(max(usable, key=lambda c: (min(len(s) for s in c), -len(c))), exact=False), usable


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


def describe(literals: Literals | None) -> str:
    """A prefilter in a few words (the first strings of each kind)."""
    if literals is None:
        return "every line"
    parts = [repr(s) for s in sorted(literals.exact)[:3]] + [f"i{s!r}" for s in sorted(literals.folded)[:3]]
    more = len(literals.strings) - len(parts)
    text = " | ".join(parts) + (f" | … {more} more" if more > 0 else "")
    if literals.in_traceback:
        text = (text + " | " if text else "") + "traceback lines"
    return text

"""Parsing the condition language: grammars/condition.lark with lark into `condition.py`'s
AST nodes. A module of its own so that lark is imported only when a condition is parsed (a
library read from the cache, `cache.py`, has its conditions parsed already)."""

from __future__ import annotations

import re
from functools import cache, lru_cache

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from k3forensics.errors import Location, SignatureError
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
from k3forensics.resources import grammars_dir

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@v_args(inline=True)
class _ToAst(Transformer):
    def string(self, token: Token) -> str:
        # Only the quote and the backslash itself are escapes; any other backslash stays,
        # so regexes read naturally: matches "Xid \(PCI:[0-9a-f:]+\): \d+".
        text = str(token)
        quote = text[0]
        return re.sub(r"\\([\\" + quote + "])", r"\1", text[1:-1])

    def value(self, item: str | Token) -> str | float:
        if isinstance(item, Token):
            return float(item)
        return item

    def string_list(self, *items: str) -> tuple[str, ...]:
        return tuple(items)

    def value_list(self, *items: str | float) -> tuple[str | float, ...]:
        return tuple(items)

    def field(self, token: Token) -> str:
        return str(token)

    def attr_field(self, name: Token) -> str:
        return f"attr.{name}"

    def text_test(self, op: Token, value: str) -> TextTest:
        return TextTest(str(op), value)

    def any_of(self, values: tuple[str, ...]) -> AnyOf:
        return AnyOf(values)

    def compare(self, field: str, op: Token, value: str | float) -> Compare:
        return Compare(field, str(op), value)

    def member(self, field: str, values: tuple[str | float, ...]) -> Member:
        return Member(field, values)

    def field_text(self, field: str, op: Token, value: str) -> TextTest:
        return TextTest(str(op), value, field)

    def is_null(self, field: str) -> IsNull:
        return IsNull(field, False)

    def is_not_null(self, field: str) -> IsNull:
        return IsNull(field, True)

    def traceback_test(self, op: Token, value: str) -> TracebackTest:
        return TracebackTest(str(op), value)

    def milestone(self, when: Token, phase: str) -> Milestone:
        return Milestone(str(when), phase)

    def scope(self, token: Token) -> str:
        return str(token)

    def within_hit(self, duration: Token, when: Token, signature: str, scope: str = "same") -> WithinHit:
        text = str(duration)
        unit = "ms" if text.endswith("ms") else text[-1]
        number = float(text[: -len(unit)])
        return WithinHit(number * _UNITS[unit], str(when), signature, scope)

    def negation(self, item: Node) -> Not:
        return Not(item)

    def and_expr(self, *items: Node) -> And:
        return And(tuple(items))

    def or_expr(self, *items: Node) -> Or:
        return Or(tuple(items))


@cache
def _parser() -> Lark:
    grammar = (grammars_dir() / "condition.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=False, maybe_placeholders=False)


def parse(text: str, where: Location | None = None) -> Node:
    """Parse a condition; a syntax error names file:line:column and shows a caret."""
    try:
        return _parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc, where) from None
    except RecursionError:
        raise SignatureError("condition nests too deeply (simplify the not/and/or chain)", where) from None


@lru_cache(maxsize=4096)
def _parse(text: str) -> Node:
    """The AST of a condition; cached (nodes are immutable) so the loader's regex pre-pass and
    the signature build parse each condition once. Errors are not cached."""
    return _ToAst().transform(_parser().parse(text))


def _syntax_error(text: str, exc: UnexpectedInput, where: Location | None) -> SignatureError:
    line = getattr(exc, "line", None) or 1
    column = getattr(exc, "column", None) or 1
    if isinstance(exc, UnexpectedEOF) or line < 1:
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
    source_line = text.splitlines()[line - 1] if text.splitlines() else ""
    if isinstance(exc, UnexpectedToken):
        expected = ", ".join(sorted(_pretty(t) for t in exc.accepts or exc.expected))
        what = f"unexpected {exc.token!r}; expected one of: {expected}"
    elif isinstance(exc, UnexpectedCharacters):
        what = f"unexpected character {exc.char!r}"
    else:
        what = "condition ends too early"
    caret = f"\n    {source_line}\n    {' ' * (column - 1)}^"
    loc = None
    if where is not None:
        loc = Location(where.file, (where.line or 1) + line - 1, column if line > 1 or where.column is None
                       else (where.column or 1) + column - 1)
    return SignatureError(f"condition syntax error: {what}{caret}", loc)


_TOKEN_NAMES = {"LPAR": "(", "RPAR": ")", "LSQB": "[", "RSQB": "]", "COMMA": ",", "DOT": ".",
                "ESCAPED_STRING": "a \"string\"", "SINGLE_QUOTED": "a 'string'", "NUMBER": "a number"}


def _pretty(token_name: str) -> str:
    return _TOKEN_NAMES.get(token_name, token_name.lower().strip("_"))

"""The condition language's typed AST nodes (`condition_parser.py` reads conditions into them)."""

from __future__ import annotations

from dataclasses import dataclass

from k3forensics.errors import Location


@dataclass(frozen=True)
class TextTest:
    op: str            # contains | icontains | matches | imatches | startswith | endswith
    value: str
    field: str = "text"  # "text" is the whole line; otherwise an event field or attr.NAME


@dataclass(frozen=True)
class AnyOf:
    values: tuple[str, ...]


@dataclass(frozen=True)
class Compare:
    field: str
    op: str
    value: str | float


@dataclass(frozen=True)
class Member:
    field: str
    values: tuple[str | float, ...]


@dataclass(frozen=True)
class IsNull:
    field: str
    negate: bool


@dataclass(frozen=True)
class TracebackTest:
    op: str
    value: str


@dataclass(frozen=True)
class Milestone:
    when: str          # after | before
    phase: str


@dataclass(frozen=True)
class WithinHit:
    seconds: float
    when: str          # after | before
    signature: str
    scope: str         # same | other | any


@dataclass(frozen=True)
class And:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    item: Node


Node = TextTest | AnyOf | Compare | Member | IsNull | TracebackTest | Milestone | WithinHit | And | Or | Not

def parse_condition(text: str, where: Location | None = None) -> Node:
    """Parse a condition; a syntax error names file:line:column and shows a caret."""
    from k3forensics.library.condition_parser import parse  # lark only when something is parsed

    return parse(text, where)


def walk(node: Node):  # type: ignore[no-untyped-def]
    """Every node of a condition, depth first."""
    yield node
    if isinstance(node, And | Or):
        for item in node.items:
            yield from walk(item)
    elif isinstance(node, Not):
        yield from walk(node.item)

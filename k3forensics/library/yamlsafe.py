"""YAML loading for shared libraries: safe types only, no anchors/aliases (no YAML bombs),
duplicate keys rejected, and the line of every mapping kept for error messages.

Events come from libyaml's C parser when PyYAML has it (about ten times faster than the
pure-Python scanner); the composer stays Python so the checks below see every event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from k3forensics.errors import Location, SignatureError

LINE_KEY = "__line__"
MARKS_KEY = "__marks__"  # key -> (line, column) where its value's text starts


def _value_start(key: yaml.Node, value: yaml.Node) -> tuple[int, int]:
    mark = value.start_mark
    if isinstance(value, yaml.ScalarNode) and value.style in (">", "|"):
        # A block scalar's text starts on the next line, indented past its key.
        return mark.line + 2, key.start_mark.column + 3
    if isinstance(value, yaml.ScalarNode) and value.style in ("'", '"'):
        return mark.line + 1, mark.column + 2
    return mark.line + 1, mark.column + 1


class _Strict(Composer, SafeConstructor):
    """The checks, shared by the C-parser and the pure-Python loaders."""

    name: str

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise SignatureError(
                "YAML aliases are not allowed in signature files",
                Location(str(self.name), event.start_mark.line + 1, event.start_mark.column + 1),
                "write the value out in full",
            )
        anchor = getattr(event, "anchor", None)
        if anchor:
            raise SignatureError(
                f"YAML anchors are not allowed in signature files (&{anchor})",
                Location(str(self.name), event.start_mark.line + 1, event.start_mark.column + 1),
                "write the value out in full",
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise SignatureError(
                    f"duplicate key {key!r} (first at line {seen[key]})",
                    Location(str(self.name), key_node.start_mark.line + 1, key_node.start_mark.column + 1),
                )
            seen[key] = key_node.start_mark.line + 1
        mapping = super().construct_mapping(node, deep=True)
        mapping[LINE_KEY] = node.start_mark.line + 1
        mapping[MARKS_KEY] = {
            self.construct_object(k, deep=True): _value_start(k, v) for k, v in node.value
        }
        return mapping


class _PyStrictLoader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _Strict, Resolver):
    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


try:
    from yaml.cyaml import CParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    CParser = None

if CParser is not None:
    # _Strict comes first in the MRO: its Python composer replaces CParser's C composer, which
    # would resolve aliases without showing them; CParser only supplies the events.
    class _CStrictLoader(_Strict, CParser, Resolver):  # type: ignore[misc,valid-type]
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    _Loader: type[_Strict] = _CStrictLoader
else:  # pragma: no cover
    _Loader = _PyStrictLoader


def load_yaml(path: Path, display: str | None = None) -> Any:
    """Parse one YAML file; every problem becomes a SignatureError with file:line:column."""
    name = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SignatureError(f"not UTF-8 ({exc.reason} at byte {exc.start})", Location(name)) from None
    except OSError as exc:
        raise SignatureError(f"cannot read: {exc.strerror}", Location(name)) from None
    return parse_yaml(text, name)


def parse_yaml(text: str, name: str, loader_class: type[_Strict] | None = None) -> Any:
    """Parse YAML text shown as `name` in messages (`loader_class`: tests compare both loaders)."""
    try:
        loader = (loader_class or _Loader)(text)  # the pure-Python reader checks characters here
    except yaml.YAMLError as exc:
        raise SignatureError(f"invalid YAML: {exc}", Location(name)) from None
    loader.name = name
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        raise SignatureError(f"invalid YAML: {exc.problem}", Location(name, line, col)) from None
    except yaml.YAMLError as exc:
        raise SignatureError(f"invalid YAML: {exc}", Location(name)) from None
    finally:
        loader.dispose()

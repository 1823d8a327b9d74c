"""YAML loading for shared libraries: safe types only, no anchors/aliases (no YAML bombs),
duplicate keys rejected, and the line of every mapping kept for error messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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


class _StrictLoader(yaml.SafeLoader):
    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise SignatureError(
                "YAML aliases are not allowed in signature files",
                Location(str(self.name), event.start_mark.line + 1, event.start_mark.column + 1),
                "write the value out in full",
            )
        event = self.peek_event()
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


def load_yaml(path: Path, display: str | None = None) -> Any:
    """Parse one YAML file; every problem becomes a SignatureError with file:line:column."""
    name = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SignatureError(f"not UTF-8 ({exc.reason} at byte {exc.start})", Location(name)) from None
    except OSError as exc:
        raise SignatureError(f"cannot read: {exc.strerror}", Location(name)) from None
    loader = _StrictLoader(text)
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

"""Compatibility baselines as reviewed data: `baselines/*.yaml` in each signature library.

One file per model family (`kimi-k3.yaml`), plus `default.yaml` for any other model. A later
library folder overrides a baseline of the same id, as signatures do. Every problem of every
file is collected in one pass, with file:line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from k3forensics.errors import Location, SignatureError
from k3forensics.library.loader import default_folders
from k3forensics.library.yamlsafe import LINE_KEY, MARKS_KEY, load_yaml

BASELINE_DIR = "baselines"
REQUIREMENT_KEYS = {"id", "kind", "text", "fact", "version_at_least", "version_below", "matches",
                    "same_on_every_node", "gpu_models", "min_gpus"}
CHECK_KEYS = ("version_at_least", "version_below", "matches", "same_on_every_node", "gpu_models")


class Kind(StrEnum):
    ENVIRONMENT = "environment"   # a deviation → rebuild the environment
    RESOURCES = "resources"       # hardware outside the recipe's boundary → capacity unproven


@dataclass(frozen=True)
class Requirement:
    id: str
    kind: Kind
    text: str
    fact: str | None = None
    version_at_least: str | None = None
    version_below: str | None = None
    matches: str | None = None
    same_on_every_node: str | None = None
    gpu_models: tuple[str, ...] = ()
    min_gpus: int = 0


@dataclass(frozen=True)
class Baseline:
    id: str
    title: str
    origin: str
    models: tuple[str, ...] = ()
    default: bool = False
    references: tuple[str, ...] = ()
    requirements: tuple[Requirement, ...] = ()

    def applies_to(self, names: list[str]) -> bool:
        return any(re.search(pattern, name) for pattern in self.models for name in names)


@dataclass
class BaselineSet:
    baselines: dict[str, Baseline] = field(default_factory=dict)
    problems: list[SignatureError] = field(default_factory=list)

    def raise_problems(self) -> None:
        if self.problems:
            body = "\n".join(f"  {p}" for p in self.problems)
            raise SignatureError(f"{len(self.problems)} problem(s) in the baselines:\n{body}")

    def choose(self, names: list[str]) -> Baseline | None:
        """The model's own baseline (the last-loaded that matches), else the default one."""
        matching = [b for b in self.baselines.values() if b.applies_to(names)]
        if matching:
            return matching[-1]
        return next((b for b in reversed(self.baselines.values()) if b.default), None)


def load_baselines(folders: list[Path] | None = None) -> BaselineSet:
    out = BaselineSet()
    for folder in folders or default_folders():
        for path in sorted((folder / BASELINE_DIR).glob("*.y*ml")):
            display = f"{folder.name}/{BASELINE_DIR}/{path.name}"
            try:
                baseline = _baseline(load_yaml(path, display), display)
            except SignatureError as exc:
                out.problems.append(exc)
                continue
            out.baselines.pop(baseline.id, None)  # re-insert: the override is the latest
            out.baselines[baseline.id] = baseline
    return out


def _baseline(data: Any, display: str) -> Baseline:
    if not isinstance(data, dict) or not isinstance(data.get("baseline"), dict):
        raise SignatureError("a baseline file holds one mapping `baseline:`", Location(display, 1))
    entry = data["baseline"]
    where = Location(display, entry.get(LINE_KEY))
    for key in ("id", "title", "requirements"):
        if key not in entry:
            raise SignatureError(f"baseline lacks `{key}`", where)
    applies = entry.get("applies_to") or {}
    models = tuple(str(m) for m in applies.get("models", []))
    for pattern in models:
        _regex(pattern, display, applies.get(LINE_KEY))
    requirements = tuple(_requirement(r, display) for r in entry["requirements"])
    return Baseline(str(entry["id"]), str(entry["title"]), str(where), models, bool(applies.get("default")),
                    tuple(str(r) for r in entry.get("references", [])), requirements)


def _requirement(entry: Any, display: str) -> Requirement:
    if not isinstance(entry, dict):
        raise SignatureError("a requirement is a mapping", Location(display))
    where = Location(display, entry.get(LINE_KEY))
    unknown = set(entry) - REQUIREMENT_KEYS - {LINE_KEY, MARKS_KEY}
    if unknown:
        raise SignatureError(f"unknown requirement key(s): {', '.join(sorted(unknown))}", where,
                             f"known: {', '.join(sorted(REQUIREMENT_KEYS))}")
    if "id" not in entry or "text" not in entry:
        raise SignatureError("a requirement needs `id` and `text`", where)
    if not any(k in entry for k in CHECK_KEYS):
        raise SignatureError(f"requirement {entry['id']!r} checks nothing", where, f"add one of {', '.join(CHECK_KEYS)}")
    if any(k in entry for k in ("version_at_least", "version_below", "matches")) and "fact" not in entry:
        raise SignatureError(f"requirement {entry['id']!r} needs `fact` (the fact key it reads)", where)
    try:
        kind = Kind(entry.get("kind", "environment"))
    except ValueError:
        raise SignatureError(f"kind must be one of {', '.join(k.value for k in Kind)}", where) from None
    if entry.get("matches"):
        _regex(str(entry["matches"]), display, entry.get(LINE_KEY))
    return Requirement(
        str(entry["id"]), kind, str(entry["text"]), entry.get("fact"),
        _text(entry.get("version_at_least")), _text(entry.get("version_below")), _text(entry.get("matches")),
        entry.get("same_on_every_node"), tuple(str(m) for m in entry.get("gpu_models", [])),
        int(entry.get("min_gpus", 0)),
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _regex(pattern: str, display: str, line: int | None) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise SignatureError(f"invalid regular expression {pattern!r}: {exc}", Location(display, line)) from None


def version_tuple(text: str) -> tuple[int, ...] | None:
    """`580.65.06` → (580, 65, 6); `0.27.1rc2+cu130` → (0, 27, 1); None without a leading number."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    return tuple(int(p) for p in match.group(1).split(".")) if match else None

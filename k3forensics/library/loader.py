"""Load signature libraries: every problem of every file is collected in one pass."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from k3forensics.errors import Location, SignatureError
from k3forensics.library import cache
from k3forensics.library.condition import Milestone, Node, TextTest, WithinHit, parse_condition, walk
from k3forensics.library.model import (
    PHASES,
    STEPS,
    Action,
    Example,
    Remediation,
    Role,
    Severity,
    Signature,
    Status,
)
from k3forensics.library.prefilter import Literals, chosen_literals
from k3forensics.library.yamlsafe import LINE_KEY, MARKS_KEY, load_yaml
from k3forensics.resources import signatures_dir

ENV_VAR = "K3F_SIGNATURES"
ID_PATTERN = re.compile(r"^[a-z0-9_]+(?:\.[a-z0-9_-]+)+$")
CATEGORY_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
KNOWN_KEYS = {
    "id", "title", "category", "role", "severity", "status", "sources", "match", "captures", "phase", "step",
    "causes", "caused_by", "causal_window_s", "priority", "remediation", "references", "examples", "description",
}
# Folders of a library that hold other data (baselines), not signatures.
SKIP_DIRS = {"baselines"}


@dataclass
class Library:
    signatures: dict[str, Signature] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)          # e.g. overrides
    problems: list[SignatureError] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    _prefilters: dict[str, Literals | None] | None = field(default=None, repr=False, compare=False)

    def of_role(self, *roles: Role) -> list[Signature]:
        return [s for s in self.signatures.values() if s.role in roles and s.status != Status.DEPRECATED]

    def literals(self, sig_id: str) -> Literals | None:
        """The literals one of which every line the signature matches holds (its prefilter,
        `prefilter.chosen_literals`), or None when it requires none."""
        return self.prefilters()[sig_id]

    def prefilters(self) -> dict[str, Literals | None]:
        if self._prefilters is None:
            self._prefilters = chosen_literals(self.signatures.values())
        return self._prefilters

    def literals_of(self, signatures: Iterable[Signature]) -> Literals | None:
        """The literals of all these signatures together (None when one requires none: then no
        line can be ruled out)."""
        out = Literals()
        for signature in signatures:
            found = self.literals(signature.id)
            if found is None:
                return None
            out = out | found
        return out

    def raise_problems(self) -> None:
        if self.problems:
            body = "\n".join(f"  {p}" for p in self.problems)
            raise SignatureError(f"{len(self.problems)} problem(s) in the signature library:\n{body}")


def default_folders(extra: list[Path] | None = None) -> list[Path]:
    """The shipped library, then folders from $K3F_SIGNATURES, then --signatures folders."""
    folders = [signatures_dir()]
    env = os.environ.get(ENV_VAR, "")
    folders += [Path(p) for p in env.split(os.pathsep) if p]
    folders += list(extra or [])
    return folders


def load_library(folders: list[Path] | None = None) -> Library:
    """The library of these folders (the default ones without), as parsed by an earlier run
    when nothing it depends on has changed (`cache.py`)."""
    folders = list(folders or default_folders())
    found = _library_files(folders)
    key = cache.library_key(folders, found)
    cached = cache.load(key)
    if isinstance(cached, Library):
        return cached
    library = _parse_library(folders, found)
    library.prefilters()  # cached with the rest: a later run skips the conditions' analysis
    cache.store(key, library)
    return library


def _parse_library(folders: list[Path], found: list[tuple[Path, Path | None]]) -> Library:
    library = Library(folders=folders)
    files = [_read_file(folder, path) for folder, path in found]
    # One engine call for every regex of the library; building then finds them known valid.
    _validate_regexes(_patterns(file.data for file in files))
    for file in files:
        _add_file(library, file)
    _check_references(library)
    return library


@dataclass
class _File:
    folder: Path
    display: str
    data: Any = None
    error: SignatureError | None = None


def _library_files(folders: list[Path]) -> list[tuple[Path, Path | None]]:
    """Every signature file in load order; a missing folder as (folder, None)."""
    out: list[tuple[Path, Path | None]] = []
    for folder in folders:
        if not folder.is_dir():
            out.append((folder, None))
            continue
        out += [(folder, path) for path in sorted(folder.rglob("*.y*ml"))
                if not SKIP_DIRS & set(path.relative_to(folder).parts[:-1])]
    return out


def _read_file(folder: Path, path: Path | None) -> _File:
    if path is None:
        return _File(folder, str(folder), error=SignatureError("signature folder does not exist",
                                                               Location(str(folder))))
    display = f"{folder.name}/{path.relative_to(folder).as_posix()}"
    try:
        return _File(folder, display, load_yaml(path, display))
    except SignatureError as exc:
        return _File(folder, display, error=exc)


def _entries(data: Any) -> list[Any] | None:
    """A file's signature entries: a `signatures:` list, a list, or one mapping."""
    entries = data.get("signatures") if isinstance(data, dict) and "signatures" in data else data
    if isinstance(entries, dict):
        entries = [entries]
    return entries if isinstance(entries, list) else None


def _add_file(library: Library, file: _File) -> None:
    if file.error is not None:
        library.problems.append(file.error)
        return
    display, folder = file.display, file.folder
    entries = _entries(file.data)
    if entries is None:
        library.problems.append(SignatureError("expected a signature mapping or a `signatures:` list",
                                               Location(display, 1)))
        return
    for entry in entries:
        try:
            sig = build_signature(entry, display, folder.name)
        except SignatureError as exc:
            library.problems.append(exc)
            continue
        previous = library.signatures.get(sig.id)
        if previous is not None:
            if previous.library == sig.library:
                library.problems.append(SignatureError(f"duplicate signature id {sig.id!r} (also at {previous.origin})",
                                                       _loc(sig.origin)))
                continue
            library.notes.append(f"{sig.id}: {sig.origin} overrides {previous.origin}")
        library.signatures[sig.id] = sig


def _loc(origin: str) -> Location:
    file, _, line = origin.rpartition(":")
    return Location(file, int(line)) if line.isdigit() else Location(origin)


def _problem(message: str, where: Location, hint: str | None = None) -> SignatureError:
    return SignatureError(message, where, hint)


def build_signature(entry: Any, display: str, library: str) -> Signature:
    if not isinstance(entry, dict):
        raise _problem("each signature must be a mapping", Location(display))
    line = entry.get(LINE_KEY, 1)
    where = Location(display, line)
    errors: list[str] = []
    unknown = set(entry) - KNOWN_KEYS - {LINE_KEY, MARKS_KEY}
    if unknown:
        marks = entry.get(MARKS_KEY, {})
        first = min(unknown, key=lambda k: marks.get(k, (line, 1)))
        key_line, key_col = marks.get(first, (line, 1))
        raise _problem(f"unknown field(s): {', '.join(sorted(map(str, unknown)))}",
                       Location(display, key_line, max(1, key_col - len(str(first)) - 2)))
    for key in ("id", "title", "category", "role", "match"):
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            errors.append(f"`{key}` is required and must be a non-empty string")
    if errors:
        raise _problem("; ".join(errors), where)
    sig_id = entry["id"]
    if not ID_PATTERN.match(sig_id):
        errors.append(f"id {sig_id!r} must look like family.name (lower case, dots, dashes)")
    if not CATEGORY_PATTERN.match(entry["category"]):
        errors.append(f"category {entry['category']!r} must be snake_case")
    role = _enum(Role, entry.get("role"), "role", errors)
    severity = _enum(Severity, entry.get("severity", "error"), "severity", errors)
    status = _enum(Status, entry.get("status", "experimental"), "status", errors)
    phase, step = entry.get("phase"), entry.get("step")
    if phase is not None and phase not in PHASES:
        errors.append(f"phase {phase!r} is not one of {', '.join(PHASES)}")
    if step is not None and step not in STEPS:
        errors.append(f"step {step!r} is not one of {', '.join(STEPS)}")
    if role == Role.MILESTONE and phase is None:
        errors.append("a milestone needs `phase`")
    marks = entry.get(MARKS_KEY, {})
    match_where = Location(display, *marks.get("match", (line, 1)))
    condition = parse_condition(entry["match"], match_where)
    errors += _check_condition(condition, role, match_where)
    captures = _str_list(entry.get("captures", []), "captures", errors)
    for pattern in captures:
        if "(?P<" not in pattern:
            errors.append(f"capture {pattern!r} has no named group (?P<name>…)")
        errors += _regex_problem(pattern, Location(display, *marks.get("captures", (line, 1))))
    remediation = _remediation(entry.get("remediation"), errors)
    examples = entry.get("examples") or {}
    if not isinstance(examples, dict):
        errors.append("`examples` must be a mapping with `match` and `no_match` lists")
        examples = {}
    matches = _examples(examples.get("match", []), "examples.match", errors)
    no_match = _examples(examples.get("no_match", []), "examples.no_match", errors)
    if role != Role.MILESTONE and not matches:
        errors.append("at least one `examples.match` line is required")
    window = entry.get("causal_window_s", 600.0)
    if not isinstance(window, int | float) or window < 0:
        errors.append("causal_window_s must be a non-negative number")
        window = 600.0
    priority = entry.get("priority", 0)
    if not isinstance(priority, int):
        errors.append("priority must be an integer")
        priority = 0
    if errors:
        raise _problem(f"signature {sig_id!r}: " + "; ".join(errors), where)
    return Signature(
        id=sig_id, title=entry["title"], category=entry["category"], role=role, severity=severity,  # type: ignore[arg-type]
        status=status, match=entry["match"], condition=condition, origin=f"{display}:{line}",  # type: ignore[arg-type]
        library=library, sources=tuple(_str_list(entry.get("sources", []), "sources", errors)),
        captures=tuple(captures), phase=phase, step=step,
        causes=tuple(_str_list(entry.get("causes", []), "causes", errors)),
        caused_by=tuple(_str_list(entry.get("caused_by", []), "caused_by", errors)),
        causal_window_s=float(window), priority=priority, remediation=remediation,
        references=tuple(_str_list(entry.get("references", []), "references", errors)),
        matches=tuple(matches), no_match=tuple(no_match), description=str(entry.get("description", "")),
    )


def _enum(kind: Any, value: Any, name: str, errors: list[str]) -> Any:
    try:
        return kind(value)
    except ValueError:
        errors.append(f"{name} {value!r} is not one of {', '.join(m.value for m in kind)}")
        return None


def _str_list(value: Any, name: str, errors: list[str]) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(f"`{name}` must be a list of strings")
        return []
    return value


# Patterns the engine compiled in this process: validity depends on the pattern alone.
_VALID_REGEXES: set[str] = set()


def _regex_problem(pattern: str, where: Location | None = None) -> list[str]:
    """Patterns run in polars' Rust regex engine (linear time: no catastrophic backtracking);
    what it cannot compile (look-around, back-references) is rejected here, with the engine's
    reason and where the pattern is written."""
    if pattern in _VALID_REGEXES:
        return []
    try:
        pl.Series([""]).str.contains(pattern)
    except Exception as exc:  # polars raises ComputeError with the engine's message
        at = f" (at {where})" if where is not None else ""
        return [f"regex {pattern!r} is not valid for the matching engine: {_engine_reason(exc)}{at}"]
    _VALID_REGEXES.add(pattern)
    return []


def _engine_reason(exc: Exception) -> str:
    """The engine's `error: …` line (its first line only says `regex parse error:`)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    reason = next((ln for ln in lines if ln.startswith("error: ")), None)
    if reason is not None:
        return reason.removeprefix("error: ")
    return lines[0].removeprefix("regex error: ") if lines else type(exc).__name__


def _validate_regexes(patterns: Iterable[str]) -> None:
    """Compile all patterns in one engine call (one call per pattern costs half as much
    again). When any is invalid none is marked valid: the per-pattern check where each is
    used then names the bad one."""
    todo = list(dict.fromkeys(p for p in patterns if p not in _VALID_REGEXES))
    if not todo:
        return
    frame = pl.DataFrame({"s": []}, schema={"s": pl.Utf8})
    try:
        frame.select([pl.col("s").str.contains(p).alias(f"r{i}") for i, p in enumerate(todo)])
    except Exception:  # located one by one in build_signature
        return
    _VALID_REGEXES.update(todo)


def _patterns(files: Iterable[Any]) -> Iterator[str]:
    """The regexes of every well-formed entry (conditions and captures); the rest is left
    to build_signature, which reports it."""
    for data in files:
        for entry in _entries(data) or []:
            if not isinstance(entry, dict):
                continue
            captures = entry.get("captures", [])
            captures = [captures] if isinstance(captures, str) else captures
            if isinstance(captures, list):
                yield from (c for c in captures if isinstance(c, str))
            if isinstance(entry.get("match"), str):
                yield from _condition_patterns(entry["match"])


def _condition_patterns(text: str) -> list[str]:
    try:
        condition = parse_condition(text)  # cached: build_signature parses it again for free
    except SignatureError:
        return []
    return [n.value for n in walk(condition) if isinstance(n, TextTest) and n.op in ("matches", "imatches")]


def _check_condition(condition: Node, role: Role | None, where: Location | None = None) -> list[str]:
    errors: list[str] = []
    for node in walk(condition):
        if isinstance(node, TextTest) and node.op in ("matches", "imatches"):
            errors += _regex_problem(node.value, where)
        if isinstance(node, Milestone) and node.phase not in PHASES:
            errors.append(f"milestone {node.phase!r} is not a phase")
        if role == Role.MILESTONE and isinstance(node, Milestone | WithinHit):
            errors.append("a milestone cannot depend on milestones or hits")
    return errors


def _remediation(value: Any, errors: list[str]) -> Remediation | None:
    if value is None:
        return None
    if not isinstance(value, dict) or "action" not in value or "text" not in value:
        errors.append("`remediation` needs `action` and `text`")
        return None
    action = _enum(Action, value["action"], "remediation.action", errors)
    extra = set(value) - {"action", "text", "parameter", LINE_KEY, MARKS_KEY}
    if extra:
        errors.append(f"unknown remediation field(s): {', '.join(sorted(extra))}")
    if action is None:
        return None
    return Remediation(action, str(value["text"]).strip(), value.get("parameter"))


def _examples(value: Any, name: str, errors: list[str]) -> list[Example]:
    if not isinstance(value, list):
        errors.append(f"`{name}` must be a list")
        return []
    out: list[Example] = []
    for item in value:
        if isinstance(item, str):
            out.append(Example(item))
        elif isinstance(item, dict) and isinstance(item.get("line"), str):
            out.append(Example(item["line"], {k: v for k, v in item.items()
                                              if k not in ("line", LINE_KEY, MARKS_KEY)}))
        else:
            errors.append(f"`{name}` entries are lines, or mappings with `line` and event fields")
    return out


def _check_references(library: Library) -> None:
    for sig in library.signatures.values():
        for node in walk(sig.condition):
            if isinstance(node, WithinHit) and node.signature not in library.signatures:
                library.problems.append(_problem(f"signature {sig.id!r} refers to unknown signature "
                                                 f"{node.signature!r}", _loc(sig.origin)))

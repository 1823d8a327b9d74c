"""What changed between two runs: environment, arguments, first failure, phase reached,
signature hits and error templates. Seed 001: change one thing at a time — when the
environment and the arguments both changed, the diff says so first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from k3forensics.compare.summary import RunSummary

# Dimensions a person changes on purpose; two of them at once make a comparison ambiguous.
CONTROLLED = ("environment", "arguments")


@dataclass
class RunDiff:
    a: str
    b: str
    environment: list[tuple[str, Any, Any]] = field(default_factory=list)
    arguments: list[tuple[str, Any, Any]] = field(default_factory=list)
    # recorded in one run only (no collect_env, no launch command in the other): not a change
    not_recorded: list[tuple[str, Any, Any]] = field(default_factory=list)
    first_failure: tuple[dict[str, Any] | None, dict[str, Any] | None] | None = None
    phase_reached: tuple[str | None, str | None] | None = None
    acceptance: tuple[str | None, str | None] | None = None
    signatures_added: dict[str, int] = field(default_factory=dict)
    signatures_removed: dict[str, int] = field(default_factory=dict)
    templates_added: dict[str, int] = field(default_factory=dict)
    templates_removed: dict[str, int] = field(default_factory=dict)

    @property
    def changed_at_once(self) -> list[str]:
        return [name for name in CONTROLLED if getattr(self, name)]

    @property
    def warning(self) -> str | None:
        if len(self.changed_at_once) < 2:
            return None
        return ("the environment and the launch arguments changed at once: the outcome cannot be credited to "
                "either; change one thing at a time from the last stable baseline")

    def to_dict(self) -> dict[str, Any]:
        def changes(rows: list[tuple[str, Any, Any]]) -> list[dict[str, Any]]:
            return [{"key": k, "a": a, "b": b} for k, a, b in rows]

        return {
            "a": self.a, "b": self.b, "changed_at_once": self.changed_at_once, "warning": self.warning,
            "environment": changes(self.environment), "arguments": changes(self.arguments),
            "recorded_in_one_run_only": changes(self.not_recorded),
            "first_failure": _pair(self.first_failure), "phase_reached": _pair(self.phase_reached),
            "acceptance": _pair(self.acceptance),
            "signatures": {"added": self.signatures_added, "removed": self.signatures_removed},
            "error_templates": {"added": self.templates_added, "removed": self.templates_removed},
        }


def _pair(value: tuple[Any, Any] | None) -> dict[str, Any] | None:
    return None if value is None else {"a": value[0], "b": value[1]}


def diff_runs(a: RunSummary, b: RunSummary) -> RunDiff:
    out = RunDiff(a.name, b.name)
    out.environment, unknown_env = _split(_changes(a.environment, b.environment))
    if a.args and b.args:  # a flag only one command has is a change; no command at all is not
        out.arguments = _changes(a.args, b.args)
        unknown_args: list[tuple[str, Any, Any]] = []
    else:
        unknown_args = [(f"arg.{k}", x, y) for k, x, y in _changes(a.args, b.args)]
    out.not_recorded = unknown_env + unknown_args
    if a.failure_key != b.failure_key or _phase(a) != _phase(b):
        out.first_failure = (_brief(a.first_failure), _brief(b.first_failure))
    if a.phase_reached != b.phase_reached:
        out.phase_reached = (a.phase_reached, b.phase_reached)
    if a.acceptance != b.acceptance:
        out.acceptance = (a.acceptance, b.acceptance)
    out.signatures_added = {k: n for k, n in b.signatures.items() if k not in a.signatures}
    out.signatures_removed = {k: n for k, n in a.signatures.items() if k not in b.signatures}
    out.templates_added = {k: n for k, n in b.templates.items() if k not in a.templates}
    out.templates_removed = {k: n for k, n in a.templates.items() if k not in b.templates}
    return out


def _changes(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _split(rows: list[tuple[str, Any, Any]]) -> tuple[list[tuple[str, Any, Any]], list[tuple[str, Any, Any]]]:
    """(changed: known on both sides, recorded on one side only)."""
    known = [r for r in rows if r[1] is not None and r[2] is not None]
    return known, [r for r in rows if r[1] is None or r[2] is None]


def _phase(run: RunSummary) -> str | None:
    return run.first_failure.get("phase") if run.first_failure else None


def _brief(first: dict[str, Any] | None) -> dict[str, Any] | None:
    if first is None:
        return None
    return {k: first.get(k) for k in ("category", "signature", "phase", "file", "line_no")}

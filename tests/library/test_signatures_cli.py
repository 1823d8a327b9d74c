"""`k3forensics signatures list|lint|test|explain` on the shipped library and a team library."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from k3forensics.cli import cli

TEAM = """\
signatures:
  - id: cuda.illegal-memory-access
    title: Our own take on illegal memory access
    category: cuda_illegal_access
    role: primary
    match: contains "an illegal memory access was encountered"
    remediation: {action: investigate, text: "Page the kernel team."}
    examples:
      match: ["RuntimeError: CUDA error: an illegal memory access was encountered"]
"""


def run(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, list(args))
    return out.exit_code, out.output


def test_lint_and_test_are_clean() -> None:
    code, output = run("signatures", "lint")
    assert code == 0 and "0 problem(s)" in output
    code, output = run("signatures", "test")
    assert code == 0 and "0 failed" in output and "healthy bundle" in output


def test_list_and_explain() -> None:
    code, output = run("signatures", "list", "--role", "milestone")
    assert code == 0 and "milestone.api-ready" in output and "oom." not in output
    code, output = run("signatures", "explain", "milestone.api-ready")
    assert code == 0 and "Application startup complete." in output and "milestones.yaml" in output
    code, output = run("signatures", "explain", "vllm.http-500")  # the status, not ` HTTP/` on every access line
    assert code == 0 and "prefilter: '\" 500' (1 of 3 options" in output
    code, output = run("signatures", "explain", "no.such-thing")
    assert code == 2 and "no signature 'no.such-thing'" in output


def test_team_library_overrides_visibly(tmp_path: Path) -> None:
    (tmp_path / "cuda.yaml").write_text(TEAM, encoding="utf-8")
    code, output = run("signatures", "explain", "cuda.illegal-memory-access", "--signatures", str(tmp_path))
    assert code == 0 and "Page the kernel team." in output
    code, output = run("signatures", "lint", "--signatures", str(tmp_path))
    assert code == 0 and "overrides" in output


def test_lint_reports_problems_with_exit_1(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(TEAM.replace('contains "an', 'contains and "an'), encoding="utf-8")
    code, output = run("signatures", "lint", "--signatures", str(tmp_path))
    assert code == 1 and "bad.yaml:6:21:" in output and "^" in output

"""`k3forensics report`: formats, output file, redaction flags, errors; log text stays inert."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from report_helpers import HOSTS, SECRETS

from k3forensics.cli.main import cli


def _run(*args: str) -> tuple[int, bytes]:
    result = CliRunner().invoke(cli, ["report", *args])
    return result.exit_code, result.stdout_bytes


def test_markdown_to_stdout_is_redacted_and_inert(planted_bundle: Path) -> None:
    code, out = _run(str(planted_bundle), "--format", "md")
    text = out.decode()
    assert code == 0, text
    assert "REDACTED" in text and not any(s in text for s in SECRETS)
    assert "[bold red]x[/bold red]" in text          # rich markup shown as written
    assert "\x1b" not in text                        # no terminal escape reaches the terminal


def test_png_to_file(planted_bundle: Path, tmp_path: Path) -> None:
    target = tmp_path / "timeline.png"
    code, _ = _run(str(planted_bundle), "--format", "png", "-o", str(target))
    assert code == 0 and target.read_bytes().startswith(b"\x89PNG")


def test_json_anonymized(planted_bundle: Path) -> None:
    code, out = _run(str(planted_bundle), "--format", "json", "--anonymize")
    assert code == 0
    text = out.decode()
    doc = json.loads(text)
    assert doc["first_failure"]["category"].startswith("oom")
    assert not any(h in text for h in HOSTS) and not any(ip in text for ip in HOSTS.values())


def test_no_redact_keeps_secrets(planted_bundle: Path) -> None:
    code, out = _run(str(planted_bundle), "--format", "md", "--no-redact")
    assert code == 0 and SECRETS[0] in out.decode()


def test_missing_bundle_is_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "nope"), "--format", "md"])
    assert result.exit_code == 2 and "error:" in result.output


def test_help_documents_formats() -> None:
    result = CliRunner().invoke(cli, ["report", "--help"])
    assert result.exit_code == 0
    for word in ("md", "jira", "html", "json", "png", "svg", "--anonymize", "--no-redact"):
        assert word in result.output


def test_report_from_a_timeline_db(planted_bundle: Path, tmp_path: Path) -> None:
    db = tmp_path / "planted.duckdb"
    assert CliRunner().invoke(cli, ["ingest", str(planted_bundle), "--db", str(db)]).exit_code == 0
    code, out = _run(str(db), "--format", "md")
    assert code == 0 and "REDACTED" in out.decode() and SECRETS[0] not in out.decode()

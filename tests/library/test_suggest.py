"""`signatures suggest`: unexplained error-like lines, grouped into masked templates."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from k3forensics.cli import cli
from k3forensics.library.suggest import longest_literal, template_regex, unexplained
from k3forensics.triage.run import triage


def make_bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    lines = [
        "(APIServer pid=1) INFO 08-14 10:00:00 [api_server.py:1] vLLM API server version 0.27.1",
        *[f"(Worker_TP{i} pid={100 + i}) ERROR 08-14 10:00:0{i} [fabric.py:77] FabricManager handshake failed on "
          f"rank {i} at 0x7f{i}a0 after {i * 3} retries" for i in range(5)],
        "(Worker_TP0 pid=100) ERROR 08-14 10:00:09 [x.py:1] quota server refused token refresh for /var/run/k3/token",
        "(Worker_TP0 pid=100) ERROR 08-14 10:00:10 [core.py:1] RuntimeError: CUDA error: an illegal memory access was encountered",
        "(Worker_TP0 pid=100) INFO 08-14 10:00:11 [core.py:1] all good here",
    ]
    (bundle / "vllm.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return bundle


def test_unexplained_lines_are_grouped_into_templates(tmp_path: Path, library) -> None:
    result = triage(make_bundle(tmp_path), library)
    templates = unexplained(result.timeline.events, result.hits)
    assert templates[0].count == 5
    assert templates[0].template == "FabricManager handshake failed on rank <N> at <HEX> after <N> retries"
    assert templates[0].example_line_no == 2
    texts = [t.template for t in templates]
    assert "quota server refused token refresh for <PATH>" in texts
    # Explained by a shipped signature, and not error-like: neither is suggested.
    assert not any("illegal memory access" in t for t in texts)
    assert not any("all good" in t for t in texts)


def test_skeleton_is_a_loadable_signature(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["signatures", "suggest", str(make_bundle(tmp_path)), "--format", "yaml"])
    assert out.exit_code == 0, out.output
    team = tmp_path / "team"
    team.mkdir()
    (team / "new.yaml").write_text(out.output, encoding="utf-8")
    lint = CliRunner().invoke(cli, ["signatures", "lint", "--signatures", str(team)])
    assert lint.exit_code == 0, lint.output
    data = yaml.safe_load(out.output)
    assert data["signatures"][0]["match"] == 'contains "FabricManager handshake failed on rank"'
    test = CliRunner().invoke(cli, ["signatures", "test", "--signatures", str(team)])
    assert test.exit_code == 0, test.output


def test_template_helpers() -> None:
    assert longest_literal("a <N> bbbbbb <HEX> cc") == "bbbbbb"
    assert template_regex("rank <N> failed.") == r"rank\ \S+\ failed\."

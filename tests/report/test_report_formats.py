"""Every format renders for every sample bundle (folders found at test time, none skipped)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from report_helpers import ROOT, SAMPLE_BUNDLES, prepared

from k3forensics.report.render import Format, render_report

IDS = [p.parent.name for p in SAMPLE_BUNDLES]
CONTRACT_KEYS = {"bundle", "first_failure", "secondary", "oom", "phases", "environment", "verdict"}


def test_samples_exist() -> None:
    assert SAMPLE_BUNDLES, f"no sample bundles under {ROOT.name}/samples/*/bundle"


@pytest.mark.parametrize("bundle", SAMPLE_BUNDLES, ids=IDS)
@pytest.mark.parametrize("fmt", list(Format), ids=[f.value for f in Format])
def test_every_format_renders(bundle: Path, fmt: Format) -> None:
    report = prepared(str(bundle))
    data = render_report(report, fmt.value)
    assert data
    if fmt is Format.PNG:
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        return
    text = data.decode()
    if fmt is Format.MD:
        assert len(text.splitlines()) < 150
        if report.first:
            assert f"{report.first['file']}:{report.first['line_no']}" in text
            assert report.first["line"] in text   # the raw line, in a code block
        assert "Reproduction record" in text
    elif fmt is Format.JIRA:
        assert len(text.splitlines()) < 150
        assert ("{noformat}" in text) == bool(report.first)
    elif fmt is Format.JSON:
        doc = json.loads(text)
        assert CONTRACT_KEYS <= doc.keys()
        assert {i["item"] for i in doc["reproduction_record"]} >= {"host_os", "nvidia_smi", "launch_command"}
    elif fmt is Format.SVG:
        assert ET.fromstring(text).tag.endswith("svg")
    elif fmt is Format.HTML:
        assert text.startswith("<!doctype html>") and "<svg" in text
        assert 'id="first-failure"' in text
        assert "http://" not in _outside_text(text) and "https://" not in _outside_text(text)


def _outside_text(html: str) -> str:
    """Tag markup only (attributes included): where a fetched URL would have to be."""
    import re

    tags = re.findall(r"<[^>]+>", html)
    # The SVG namespace declarations are identifiers, not fetches.
    return " ".join(t for t in tags if "xmlns" not in t and "DOCTYPE" not in t)


def test_markdown_shape_for_a_failure() -> None:
    bundle = next(p for p in SAMPLE_BUNDLES if prepared(str(p)).first)
    text = render_report(prepared(str(bundle)), "md").decode()
    for heading in ("### First failure", "### OOM class", "### Next step", "### Phase timeline",
                    "### Environment", "### Reproduction record"):
        assert heading in text
    assert "```text" in text


def test_unknown_format_is_a_report_error() -> None:
    from k3forensics.errors import ReportError

    with pytest.raises(ReportError):
        render_report(prepared(str(SAMPLE_BUNDLES[0])), "pdf")


def test_picture_is_deterministic_and_text_literal() -> None:
    import dataclasses

    from k3forensics.report.timeline_plot import render_texts

    report = next(prepared(str(p)) for p in SAMPLE_BUNDLES if prepared(str(p)).first)
    assert render_report(report, "svg") == render_report(report, "svg")
    assert render_report(report, "png") == render_report(report, "png")
    first = dict(report.first or {}, category="cost $x^2$ [bold]")
    texts = "\n".join(render_texts(dataclasses.replace(report, first=first)))
    assert "cost $x^2$ [bold]" in texts   # never mathtext, never markup

"""Dispatch by format: a triage result → the bytes of one report."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from k3forensics.errors import ReportError
from k3forensics.report.model import Report, build_report
from k3forensics.report.privacy import protect

if TYPE_CHECKING:
    from k3forensics.triage.run import TriageResult


class Format(StrEnum):
    MD = "md"
    JIRA = "jira"
    HTML = "html"
    JSON = "json"
    PNG = "png"
    SVG = "svg"


SUFFIX = {Format.MD: ".md", Format.JIRA: ".jira.txt", Format.HTML: ".html", Format.JSON: ".json",
          Format.PNG: ".png", Format.SVG: ".svg"}
BINARY = (Format.PNG,)


def prepare(result: TriageResult, redact: bool = True, anonymize: bool = False) -> Report:
    """The report model, redacted (and anonymized) once for every format."""
    return protect(build_report(result), redact=redact, anonymize=anonymize)


def render(result: TriageResult, fmt: str, redact: bool = True, anonymize: bool = False) -> bytes:
    return render_report(prepare(result, redact, anonymize), fmt)


def render_report(report: Report, fmt: str) -> bytes:
    try:
        kind = Format(fmt)
    except ValueError:
        raise ReportError(f"unknown report format {fmt!r}",
                          hint="use one of: " + ", ".join(f.value for f in Format)) from None
    if kind is Format.MD:
        from k3forensics.report.markdown import to_markdown

        return to_markdown(report).encode()
    if kind is Format.JIRA:
        from k3forensics.report.markdown import to_jira

        return to_jira(report).encode()
    if kind is Format.JSON:
        return (json.dumps(report_json(report), indent=2, ensure_ascii=False, default=str) + "\n").encode()
    if kind is Format.HTML:
        from k3forensics.report.html import to_html

        return to_html(report).encode()
    from k3forensics.report.timeline_plot import to_png, to_svg

    return to_png(report) if kind is Format.PNG else to_svg(report).encode()


def report_json(report: Report) -> dict[str, Any]:
    """The triage contract (already redacted in the model) plus the reproduction record."""
    out = dict(report.contract)
    out["reproduction_record"] = [
        {"item": i.key, "label": i.label, "status": i.status.value, "value": i.value, "where": i.where,
         "note": i.note, "collect": i.collect} for i in report.record
    ]
    out["redaction"] = report.privacy
    return out

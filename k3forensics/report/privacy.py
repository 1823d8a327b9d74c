"""Redaction (and optional anonymization) of a whole report model, before any renderer runs."""

from __future__ import annotations

import dataclasses
from typing import Any

import polars as pl

from k3forensics.report.model import Report
from k3forensics.report.redact import Redactor, build_aliases, find_ips


def protect(report: Report, redact: bool = True, anonymize: bool = False) -> Report:
    """The report with secrets masked (unless `redact` is False) and, with `anonymize`, host
    names, IPs and pod names replaced by stable aliases (`host-1`, `ip-1`, `pod-1`)."""
    aliases = _aliases(report) if anonymize else {}
    redactor = Redactor(secrets=redact, aliases=aliases)
    privacy = "secrets redacted" if redact else "NOT redacted (--no-redact)"
    if anonymize:
        privacy += "; hosts, IPs and pods anonymized"
    out = _apply(report, redactor)
    return dataclasses.replace(out, privacy=privacy, names={})


def _apply(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, pl.DataFrame):
        return redactor.frame(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _apply(getattr(value, f.name), redactor) for f in dataclasses.fields(value)
                   if f.name not in ("names", "version")}
        return dataclasses.replace(value, **changes)
    if isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
        return [_apply(v, redactor) for v in value]
    return redactor.obj(value)


def _aliases(report: Report) -> dict[str, str]:
    hosts_by_node = {k.removeprefix("node:"): v for k, v in report.names.items() if k.startswith("node:")}
    nodes = sorted(set(hosts_by_node) | {p.node for p in report.phases})
    return build_aliases(nodes, hosts_by_node, [], report.names.get("pods", []), find_ips(_text_columns(report)))


def _text_columns(report: Report) -> list[pl.Series]:
    """Every string in the report, as Series, to find the IP addresses it shows."""
    columns = [frame.get_column(c) for frame in (report.events, report.marks, report.series)
               for c, t in frame.schema.items() if t == pl.Utf8]
    loose: list[str] = []
    _strings(dataclasses.replace(report, events=pl.DataFrame(), marks=pl.DataFrame(), series=pl.DataFrame()), loose)
    return [*columns, pl.Series(loose, dtype=pl.Utf8)]


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _strings(k, out)
            _strings(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _strings(v, out)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _strings(getattr(value, f.name), out)

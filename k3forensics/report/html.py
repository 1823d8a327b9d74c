"""The HTML report: one self-contained file (inline CSS, JS and SVG; nothing fetched).

Every string from the bundle goes through `e()` (HTML escaping, quotes included), the
picture is the SVG of `timeline_plot` inlined, evidence is collapsible, and the event table
has a small text / node / kind filter.
"""

from __future__ import annotations

import re
from datetime import datetime
from html import escape
from typing import Any

import polars as pl

from k3forensics.report.html_assets import CSS, SCRIPT, content_security_policy
from k3forensics.report.model import Evidence, Report
from k3forensics.report.repro import Status
from k3forensics.report.timeline_plot import to_svg


def e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def to_html(report: Report) -> str:
    title = (f"{report.first['category']} on {report.first['node']}" if report.first else "no failure found")
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(content_security_policy())}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>k3forensics: {e(title)}</title>",
        f"<style>{CSS}</style></head><body><main>",
        _header(report, title),
        _first(report),
        _cards(report),
        _picture(report),
        _cascade(report),
        _phases(report),
        _environment(report),
        _record(report),
        _evidence(report.evidence),
        _events(report.events),
        f"<footer>k3forensics {e(report.version)} · {e(report.privacy)} · generated offline from "
        f"{e(report.bundle)}</footer>",
        f"</main><script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _header(report: Report, title: str) -> str:
    counts = report.contract.get("counts", {})
    nodes = len({p.node for p in report.phases})
    return (f"<header><h1>k3forensics — {e(title)}</h1><div class=\"sub\">bundle <code>{e(report.bundle)}</code>"
            f" · {counts.get('files', 0)} files · {counts.get('lines', 0):,} lines "
            f"({counts.get('unparsed', 0):,} unparsed) · {nodes} node(s) · {e(report.privacy)}</div></header>")


def _where(hit: dict[str, Any]) -> str:
    return f"<code>{e(hit['file'])}:{e(hit['line_no'])}</code>"


def _first(report: Report) -> str:
    first = report.first
    if not first:
        return ('<section id="first-failure" class="failure ok"><h2>No failure found</h2>'
                "<p>No primary or secondary failure signature matched this bundle.</p></section>")
    when = f" · <code>{e(first['timestamp'])}</code>" if first.get("timestamp") else ""
    stack = ""
    if report.stack:
        lines = "\n".join(e(t) for _, t in report.stack)
        stack = (f"<details><summary>First abnormal stack ({len(report.stack)} lines, "
                 f"{e(first['file'])}:{report.stack[0][0]}-{report.stack[-1][0]})</summary>"
                 f"<pre>{lines}</pre></details>")
    return (f'<section id="first-failure" class="failure"><h2>First failure: {e(first["category"])}</h2>'
            f"<div>{e(first.get('title') or '')} — signature <code>{e(first['signature'])}</code></div>"
            f"<div>at {_where(first)} · node <code>{e(first['node'])}</code> · phase "
            f"<code>{e(first['phase'])}</code>{when}</div>"
            f'<pre class="line">{e(first["line"])}</pre>{stack}</section>')


def _cards(report: Report) -> str:
    oom, step, verdict = report.contract["oom"], report.contract["next_step"], report.contract["verdict"]
    oom_title = oom["class"] + (f" / {oom['subclass']}" if oom.get("subclass") else "")
    param = f" <code>{e(step['parameter'])}</code>" if step.get("parameter") else ""
    why = f"<ul><li>why: {e(step['why'])}</li></ul>" if step.get("why") else ""
    return (
        '<section class="cards">'
        f'<div class="card"><h3>OOM class</h3><div class="big">{e(oom_title)}</div>{_ul(oom.get("evidence", []))}</div>'
        f'<div class="card"><h3>Next step</h3><div class="big">{e(step["action"])}{param}</div>'
        f"<div>{e(step.get('text'))}</div>{why}</div>"
        f'<div class="card"><h3>Acceptance</h3><div class="big">{e(verdict.get("acceptance", "unknown"))}</div>'
        f"{_ul(verdict.get('reasons', []))}</div></section>"
    )


def _ul(items: list[str], limit: int = 6) -> str:
    return "<ul>" + "".join(f"<li>{e(i)}</li>" for i in items[:limit]) + "</ul>" if items else ""


def _picture(report: Report) -> str:
    svg = to_svg(report)
    svg = re.sub(r"^\s*<\?xml[^>]*\?>\s*", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>\s*", "", svg, count=1)
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, count=1, flags=re.S)   # RDF boilerplate
    return ('<section id="timeline"><h2>Timeline</h2><figure>' + svg +
            "<figcaption>A lane per node (and source); phase bands; ★ the first failure, ◆ the cascade; "
            "metric curves where the bundle has them. Times in UTC.</figcaption></figure></section>")


def _delta(hit: dict[str, Any], first: dict[str, Any] | None) -> str:
    a, b = hit.get("t"), (first or {}).get("t")
    return f"{(a - b).total_seconds():+.1f} s" if isinstance(a, datetime) and isinstance(b, datetime) else ""


def _cascade(report: Report) -> str:
    if not report.cascade and not report.later:
        return ""
    rows = "".join(
        f"<tr><td>{e(kind)}</td><td>{e(h['category'])}</td><td><code>{e(h['signature'])}</code></td>"
        f'<td class="nw">{_where(h)}</td><td class="nw">{e(h["node"])}</td>'
        f'<td class="nw">{e(_delta(h, report.first))}</td>'
        f'<td class="wrap mono">{e(h["line"])}</td></tr>'
        for kind, hits in (("cascade", report.cascade), ("later", report.later)) for h in hits)
    later = " and later failures" if report.later else ""
    return (f"<section id=\"cascade\"><h2>Cascade ({len(report.cascade)}){later}"
            "</h2><table><thead><tr><th></th><th>category</th><th>signature</th><th>where</th><th>node</th>"
            f"<th>after first</th><th>line</th></tr></thead><tbody>{rows}</tbody></table></section>")


def _phases(report: Report) -> str:
    if not report.phases:
        return '<section id="phases"><h2>Phases</h2><p>No start-up milestones were recognised.</p></section>'
    rows = "".join(
        f"<tr><td>{e(p.node)}</td><td>{e(p.phase)}</td><td>{e(_iso(p.start))}</td><td>{e(_iso(p.end))}</td>"
        f"<td><code>{e(p.where)}</code></td></tr>" for p in report.phases)
    return ('<section id="phases"><h2>Phases per node</h2><table><thead><tr><th>node</th><th>phase</th>'
            f"<th>start</th><th>until</th><th>first line</th></tr></thead><tbody>{rows}</tbody></table></section>")


def _iso(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S") if t else ""


def _environment(report: Report) -> str:
    rows = "".join(f'<tr><th>{e(k)}</th><td class="wrap"><code>{e(v)}</code></td></tr>'
                   for k, v in report.environment)
    body = f"<table><tbody>{rows}</tbody></table>" if rows else "<p>No environment facts found.</p>"
    return f'<section id="environment"><h2>Environment fingerprint</h2>{body}</section>'


def _record(report: Report) -> str:
    rows = []
    for item in report.record:
        if item.status is Status.FOUND:
            status = '<span class="found">found</span>' + (f" <code>{e(item.value)}</code>" if item.value else "")
        elif item.status is Status.MISSING:
            status = '<span class="missing">missing from the bundle</span>'
        else:
            status = "not needed"
        where = ", ".join(f"<code>{e(w)}</code>" for w in item.where[:6])
        note = e(item.note) if item.note else ""
        collect = f"collect: <code>{e(item.collect)}</code>" if item.collect else ""
        rows.append(f"<tr><td>{e(item.label)}</td><td>{status}</td><td>{where}</td>"
                    f"<td>{' · '.join(x for x in (note, collect) if x)}</td></tr>")
    return ('<section id="record"><h2>Reproduction record (freeze the failure scene)</h2><table><thead><tr>'
            "<th>item</th><th>status</th><th>where</th><th>note / what to collect next</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></section>")


def _evidence(items: list[Evidence]) -> str:
    if not items:
        return ""
    blocks = []
    for i, item in enumerate(items):
        hit = item.hit
        lines = "\n".join(
            f'<span class="{"hit" if is_hit else "ctx"}"><span class="no">{no:>6}  </span>{e(text)}</span>'
            for no, text, is_hit in item.lines)
        blocks.append(f"<details{' open' if i == 0 else ''}><summary>{e(item.label)}: "
                      f"<b>{e(hit['category'])}</b> at {_where(hit)} (node {e(hit['node'])})</summary>"
                      f'<pre class="ctx">{lines}</pre></details>')
    return '<section id="evidence"><h2>Evidence (±5 lines around each hit)</h2>' + "".join(blocks) + "</section>"


def _events(events: pl.DataFrame) -> str:
    nodes = sorted(set(events.get_column("node").drop_nulls().to_list())) if events.height else []
    kinds = sorted(set(events.get_column("kind").drop_nulls().to_list())) if events.height else []
    rows = "".join(
        f'<tr class="k-{e(r["kind"])}" data-node="{e(r["node"])}" data-kind="{e(r["kind"])}">'
        f'<td class="nw">{e(r["time"])}</td><td class="nw">{e(r["node"])}</td><td>{e(r["source"])}</td>'
        f'<td class="nw"><code>{e(r["file"])}:{e(r["line_no"])}</code></td><td>{e(r["level"])}</td>'
        f'<td>{e(r["phase"])}</td>'
        f'<td class="kind">{e(r["kind"])}</td><td class="text">{e(r["text"])}</td></tr>'
        for r in events.iter_rows(named=True))
    return (
        '<section id="event-table"><h2>Events</h2>'
        '<div class="filters"><input id="f-text" type="search" placeholder="filter the events (text)" '
        'aria-label="filter text">'
        f'<select id="f-node" aria-label="node"><option value="">all nodes</option>{_options(nodes)}</select>'
        f'<select id="f-kind" aria-label="kind"><option value="">all kinds</option>{_options(kinds)}</select>'
        f'<span class="sub"><span id="f-shown">{events.height}</span> of {events.height} shown '
        "(failures, milestones, errors, warnings, context)</span></div>"
        '<div id="events-wrap"><table id="events"><thead><tr><th>time (UTC)</th><th>node</th><th>source</th>'
        "<th>where</th><th>level</th><th>phase</th><th>kind</th><th>line</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div></section>"
    )


def _options(values: list[str]) -> str:
    return "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in values)

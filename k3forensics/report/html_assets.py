"""The inline CSS and JavaScript of the HTML report (no network, no CDN).

The script is allowed by its SHA-256 in the page's Content-Security-Policy, so a `<script>`
that slipped through escaping would still not run.
"""

from __future__ import annotations

import base64
import hashlib

CSS = """
:root { --fail: #c00018; --warn: #b26a00; --ok: #1b7f3b; --muted: #666; --line: #e3e3e3; --bg2: #f6f7f9; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0;
       color: #1d1d1f; background: #fff; }
main { max-width: 1180px; margin: 0 auto; padding: 18px 22px 40px; }
h1 { font-size: 21px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 26px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 3px; }
.sub { color: var(--muted); font-size: 12.5px; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
                   font-size: 12.5px; }
pre { background: var(--bg2); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
      overflow-x: auto; white-space: pre; margin: 6px 0; }
.failure { border: 2px solid var(--fail); border-left-width: 8px; border-radius: 8px; padding: 10px 14px;
           background: #fff5f6; margin-top: 14px; }
.failure h2 { color: var(--fail); border: 0; margin: 0 0 4px; font-size: 18px; }
.ok { border-color: var(--ok); background: #f3fbf5; }
.ok h2 { color: var(--ok); }
.cards { display: grid; grid-template-columns: repeat(3, 1fr); gap: 12px; margin-top: 14px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; }
.card h3 { margin: 0 0 4px; font-size: 13px; color: var(--muted); font-weight: 600; }
.card .big { font-size: 16px; font-weight: 600; }
.card ul { margin: 4px 0 0; padding-left: 18px; font-size: 12.5px; }
figure { margin: 8px 0; }
#timeline svg { width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: var(--bg2); position: sticky; top: 0; }
td.wrap { word-break: break-all; }
td.nw { white-space: nowrap; }
pre.line { white-space: pre-wrap; word-break: break-all; font-size: 13px; }
.missing { color: var(--fail); font-weight: 600; }
.found { color: var(--ok); }
details { border: 1px solid var(--line); border-radius: 6px; padding: 4px 10px; margin: 6px 0; }
details > summary { cursor: pointer; font-size: 13px; }
pre.ctx span.hit { background: #ffe0e4; display: inline-block; min-width: 100%; }
pre.ctx span.no { color: #999; user-select: none; }
.filters { display: flex; gap: 8px; align-items: center; margin: 6px 0; flex-wrap: wrap; }
.filters input { flex: 1; min-width: 240px; padding: 4px 8px; }
#events-wrap { max-height: 640px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
#events td.text { font-family: ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace; white-space: pre-wrap;
                  word-break: break-all; }
tr.k-first td { background: #ffe0e4; }
tr.k-cascade td { background: #fff1e0; }
tr.k-error td.kind { color: var(--fail); }
tr.k-warning td.kind { color: var(--warn); }
footer { margin-top: 30px; color: var(--muted); font-size: 12px; }
@media print { #events-wrap { max-height: none; } .filters { display: none; } }
"""

SCRIPT = """(function () {
  document.documentElement.setAttribute("data-js", "ready");
  var q = document.getElementById("f-text"), node = document.getElementById("f-node"),
      kind = document.getElementById("f-kind"), shown = document.getElementById("f-shown");
  if (!q) { return; }
  var rows = Array.prototype.slice.call(document.querySelectorAll("#events tbody tr"));
  var text = rows.map(function (r) { return r.textContent.toLowerCase(); });
  function apply() {
    var s = q.value.toLowerCase(), n = node.value, k = kind.value, count = 0;
    rows.forEach(function (r, i) {
      var ok = (!s || text[i].indexOf(s) >= 0) && (!n || r.getAttribute("data-node") === n) &&
               (!k || r.getAttribute("data-kind") === k);
      r.hidden = !ok;
      if (ok) { count += 1; }
    });
    shown.textContent = String(count);
  }
  q.addEventListener("input", apply);
  node.addEventListener("change", apply);
  kind.addEventListener("change", apply);
  apply();
})();"""


def script_hash(script: str = SCRIPT) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


def content_security_policy() -> str:
    """Nothing loads from anywhere; only our own inline script runs."""
    return (f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src '{script_hash()}'; "
            "base-uri 'none'; form-action 'none'")

"""Regenerate the README pictures: docs/timeline.png and docs/report-screenshot.png.

    python scripts/report_docs.py [SAMPLE]      (default: oom-runtime-concurrency; needs chromium)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from k3forensics.report.render import prepare, render_report
from k3forensics.triage.run import triage

ROOT = Path(__file__).resolve().parents[1]


def main(sample: str = "oom-runtime-concurrency") -> None:
    # A relative bundle path, so the pictures show no path of the machine that made them.
    bundle = Path("samples") / sample / "bundle"
    report = prepare(triage(ROOT / bundle))
    report.bundle = str(bundle)
    docs = ROOT / "docs"
    (docs / "timeline.png").write_bytes(render_report(report, "png"))
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("chromium is needed for the screenshot")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_bytes(render_report(report, "html"))
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp}/profile", f"--screenshot={docs / 'report-screenshot.png'}",
                        "--window-size=1280,1700", "--hide-scrollbars", page.as_uri()],
                       check=True, capture_output=True, timeout=120)
    print("wrote docs/timeline.png and docs/report-screenshot.png")


if __name__ == "__main__":
    main(*sys.argv[1:2])

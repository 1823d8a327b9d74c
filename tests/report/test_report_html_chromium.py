"""The HTML report in real headless Chromium: it loads offline with no console errors, the first
failure and the picture are on screen, and a `<script>` planted in a log line does not run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from report_helpers import PWN, SAMPLE_BUNDLES, chromium_path, prepared

from k3forensics.report.render import render_report
from k3forensics.report.timeline_plot import PHASE_COLORS

WIDTH, HEIGHT = 1280, 2000
FAIL_RGB = (0xC0, 0x00, 0x18)


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        chromium_path(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr", "--v=0", *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _write_html(tmp: Path, bundle: Path) -> Path:
    page = tmp / "report.html"
    page.write_bytes(render_report(prepared(str(bundle)), "html"))
    return page


def test_console_detector_sees_errors(tmp_path: Path) -> None:
    """The check below can fail: a page with a broken script does log to the console."""
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><html><body><script>undefinedFunction()</script></body></html>")
    result = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert _console(result.stderr), result.stderr[-2000:]


def test_planted_script_does_not_run(tmp_path: Path, planted_bundle: Path) -> None:
    page = _write_html(tmp_path, planted_bundle)
    result = _chromium(tmp_path, "--dump-dom", page.as_uri())
    dom = result.stdout
    assert result.returncode == 0 and "</html>" in dom, result.stderr[-2000:]
    assert 'data-js="ready"' in dom                    # our own script ran (its CSP hash matches)
    assert f'id="{PWN}"' not in dom                     # the planted one did not
    assert "PWNED" not in dom.split("</title>")[0]
    assert "&lt;script&gt;document.title=" in dom      # shown as text instead
    assert "[bold red]markup[/bold red]" in dom         # not interpreted as markup either
    assert not _console(result.stderr), _console(result.stderr)


def test_first_failure_and_picture_are_visible(tmp_path: Path, planted_bundle: Path) -> None:
    page = _write_html(tmp_path, planted_bundle)
    shot = tmp_path / "shot.png"
    result = _chromium(tmp_path, f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", page.as_uri())
    assert shot.exists(), result.stderr[-2000:]
    pixels = (imread(shot)[:, :, :3] * 255).round().astype(int)
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    top = pixels[:700]
    fail = np.all(np.abs(top - FAIL_RGB) <= 12, axis=-1).sum()
    assert fail > 1500, "the first-failure box (red border) is not in the first screen"
    bands = sum(np.all(np.abs(pixels - _rgb(c)) <= 3, axis=-1).sum() for c in PHASE_COLORS.values())
    assert bands > 2000, "no phase bands of the timeline picture on screen"
    assert not _console(result.stderr), _console(result.stderr)


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


@pytest.mark.parametrize("bundle", SAMPLE_BUNDLES, ids=[p.parent.name for p in SAMPLE_BUNDLES])
def test_sample_reports_open_without_console_errors(tmp_path: Path, bundle: Path) -> None:
    page = _write_html(tmp_path, bundle)
    result = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert 'data-js="ready"' in result.stdout, result.stderr[-2000:]
    assert 'id="first-failure"' in result.stdout and "<svg" in result.stdout
    assert not _console(result.stderr), _console(result.stderr)

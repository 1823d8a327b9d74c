"""Hostile text: encodings, control bytes, line ends, giant lines, terminal and markup payloads.
Every input line stays one event; damage is counted; nothing in a line is ever acted upon."""

from __future__ import annotations

import re

import make
import pytest
from hostile_run import Accepted, Sandbox, ZooRun, accept, check_conserved, query, warnings_of


def test_zoo_loses_no_line(zoo: ZooRun) -> None:
    """sum(files.line_count) == count(events) == the physical lines of the inputs, file by file."""
    check_conserved(zoo.result.db, zoo.zoo.lines)


def _lines(db, file: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [r[0] for r in query(db, f"SELECT line FROM events WHERE file = '{file}' ORDER BY line_no")]


def _encoding(db, file: str) -> str:  # type: ignore[no-untyped-def]
    return query(db, f"SELECT encoding FROM files WHERE file = '{file}'")[0][0]


def test_invalid_utf8_is_replaced_and_counted(zoo: ZooRun) -> None:
    db = zoo.result.db
    assert _encoding(db, "invalid-utf8.log") == "utf-8"
    lines = _lines(db, "invalid-utf8.log")
    assert "\ufffd" in lines[0] and "✓" in lines[0] and "\ufffd" in lines[1]
    assert "invalid-utf8.log: 2 lines with invalid UTF-8 (first at line 1), shown with U+FFFD" in warnings_of(db)
    assert "invalid-utf8.log: 2 lines with invalid UTF-8" in zoo.result.ingest.stderr


def test_latin1_file_falls_back_and_is_reported(zoo: ZooRun) -> None:
    db = zoo.result.db
    assert _encoding(db, "latin1.log") == "latin-1 fallback"
    assert "Modèle chargé" in _lines(db, "latin1.log")[2]
    assert any(w.startswith("latin1.log: not valid UTF-8, decoded as Latin-1") for w in warnings_of(db))


def test_utf16_with_bom_is_transcoded(zoo: ZooRun) -> None:
    db = zoo.result.db
    assert _encoding(db, "utf16.log") == "utf-16-le"
    lines = _lines(db, "utf16.log")
    assert lines[-1] == "ünïcödé ✓" and lines[0] == make.FAILING_LOG[0]
    assert not any("\x00" in line or "\ufeff" in line for line in lines)


def test_nul_bytes_are_shown_and_counted(zoo: ZooRun) -> None:
    db = zoo.result.db
    lines = _lines(db, "nul.log")
    assert "\u2400\u2400" in lines[1] and lines[2].endswith("\u2400")
    assert "nul.log: 3 NUL bytes in 2 lines (first at line 2), shown as \u2400" in warnings_of(db)


def test_crlf_and_lone_cr(zoo: ZooRun) -> None:
    lines = _lines(zoo.result.db, "crlf.log")
    assert not any("\r" in line for line in lines)
    assert lines[0] == make.FAILING_LOG[0]  # the CR of CRLF is dropped, nothing else
    assert lines[2] == "Loading safetensors: 10% Loading safetensors: 50% Loading safetensors: 100%"


@pytest.mark.parametrize("file", ["every-source.log", "polyglot.txt"])
def test_lines_that_look_like_every_source(zoo: ZooRun, file: str) -> None:
    db = zoo.result.db
    lines = _lines(db, file)
    data = next(data for name, data, _ in zoo.zoo.text.values() if name == file)
    assert lines == data.decode().split("\n")[:-1]  # as written: nothing dropped, nothing rewritten
    detected = query(db, f"SELECT detected_type FROM files WHERE file = '{file}'")[0][0]
    assert detected in {"vllm", "nccl", "pytorch", "kernel", "generic", "traceback", "prometheus", "nvidia_smi",
                        "collect_env", "launch", "kubectl", "api_capture"}


def test_every_source_file_still_triages(zoo: ZooRun) -> None:
    assert zoo.result.contract["first_failure"] is not None
    assert zoo.result.contract["first_failure"]["file"] in zoo.zoo.lines


# -- payloads in the failure line ---------------------------------------------------------------------


def test_payload_failure_is_still_named(payload: Accepted) -> None:
    assert payload.first_signature == make.FAILURE_SIGNATURE
    check_conserved(payload.db, {"vllm.log": 4})


def test_ansi_sequences_never_reach_the_terminal(payload: Accepted) -> None:
    for run in (payload.triage_text, payload.triage_json, payload.report_md, payload.report_html):
        assert b"\x1b" not in run.stdout and b"\x07" not in run.stdout and b"\x9b" not in run.stdout, run
    # the sequences go, their visible text stays
    assert "torch.OutOfMemoryError" in payload.triage_text.text and " red " in payload.triage_text.text
    # the database keeps the line as it was written: no data loss
    assert query(payload.db, "SELECT count(*) FROM events WHERE contains(line, chr(27) || ']0;owned-title')") == [(1,)]


def test_rich_markup_is_printed_literally(payload: Accepted) -> None:
    out = payload.triage_text.text
    assert make.RICH_PAYLOAD in out  # as written: not bold, not red, not a link
    assert "FAKE-VERDICT[/bold red]" in out


def test_html_report_escapes_planted_markup(payload: Accepted) -> None:
    html = payload.report_html.text
    assert make.HTML_PAYLOAD not in html
    assert "alert(&quot;k3f&quot;)" in html or "alert(&#x27;k3f&#x27;)" in html or 'alert("k3f")' not in html
    assert "&lt;script&gt;alert(" in html
    assert "onerror=alert(1)>" not in html and 'href="javascript:' not in html.lower()
    # the report's own scripts are the only script elements: the payload added none
    assert len(re.findall(r"<script\b", html)) == len(re.findall(r"<script\b", html.replace(make.HTML_PAYLOAD, "")))


def test_markdown_report_keeps_log_text_in_code(payload: Accepted) -> None:
    """Outside code spans and blocks a Markdown renderer would act on `<script>` or a link."""
    fence: str | None = None
    for line in payload.report_md.text.splitlines():
        marker = re.match(r"^(`{3,})", line)
        if marker and (fence is None or marker.group(1) == fence):
            fence = None if fence else marker.group(1)
            continue
        if fence or "<script>" not in line:
            continue
        before = line[: line.index("<script>")]
        assert len(re.findall(r"`+", before)) % 2 == 1, f"payload outside a code span: {line}"


def test_hundred_megabyte_single_line(sandbox: Sandbox) -> None:
    """Kept as one line (cut at 1 MiB and marked), counted, and the failure around it named."""
    path, lines = make.long_line(sandbox.inputs, mib=100)
    result = accept(sandbox, path, name="long", full=False, report=False)
    path.unlink()  # checked: 100 MB need not outlive the test
    check_conserved(result.db, {path.name: lines})
    line, = query(result.db, f"SELECT line FROM events WHERE file = '{path.name}' AND line_no = 3")[0]
    assert line.endswith(f" …[truncated {100 * 2**20 - 2**20} bytes]") and len(line) < 2**20 + 100
    assert any("1 line longer than 1048576 bytes (first at line 3)" in w for w in warnings_of(result.db))
    assert result.first_signature == make.FAILURE_SIGNATURE


def test_cut_container_record_is_kept(zoo: ZooRun) -> None:
    db = zoo.result.db
    assert query(db, "SELECT envelope FROM files WHERE file = 'container-cut.log'") == [("docker_json",)]
    lines = _lines(db, "container-cut.log")
    assert lines[0] == "INFO 08-18 14:10:40 [api_server.py:1885] vLLM API server version 0.11.0"  # unwrapped
    assert lines[2] == make.DOCKER_JSON_LINES[2]  # the cut record, as written


def test_cut_container_record_is_counted(zoo: ZooRun) -> None:
    assert any(w.startswith("container-cut.log: 1 malformed JSON record (first at line 3)")
               for w in warnings_of(zoo.result.db))

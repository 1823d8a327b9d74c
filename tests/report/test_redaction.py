"""Redaction is on by default in every format; --anonymize maps hosts, IPs and pods to stable aliases."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from report_helpers import HOSTS, POD, SECRETS, prepared

from k3forensics.report.redact import Redactor, build_aliases, find_ips
from k3forensics.report.render import render_report
from k3forensics.report.timeline_plot import render_texts

TEXT_FORMATS = ("md", "jira", "html", "json", "svg")


@pytest.mark.parametrize(("line", "secret"), [
    ("export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456", "hf_abcdefghijklmnopqrstuvwxyz123456"),
    ("token hf_AbCdEf0123456789xyz in line", "hf_AbCdEf0123456789xyz"),
    ("OPENAI_API_KEY=sk-proj-abc123def456ghi789 next", "sk-proj-abc123def456ghi789"),
    ('curl -H "Authorization: Bearer abcdef.1234567890xyz" http://x', "abcdef.1234567890xyz"),
    ('{"headers": {"Authorization": "Basic dXNlcjpwYXNz"}}', "dXNlcjpwYXNz"),
    ("MY_SECRET_KEY=supersecretvalue123 other=1", "supersecretvalue123"),
    ("X_TOKEN=abc123", "abc123"),
    ("postgres://admin:hunter2@db.internal:5432/x", "hunter2"),
    ("--api-key mykey123 --model x", "mykey123"),
    ("https://u:p%40ss@host/path?token=qwerty9", "qwerty9"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdefghijklmnopqrstuvwxyz0123"),
])
def test_secret_rules(line: str, secret: str) -> None:
    out = Redactor().text(line)
    assert secret not in out and "REDACTED" in out


@pytest.mark.parametrize("line", [
    "skip_tokenizer_init=False, tokenizer='moonshotai/Kimi-K3', max_num_batched_tokens=8192",
    "GPU KV cache usage: 99.6%, Running: 243 reqs, kv_cache_usage=0.9962",
    "Bearer authentication is required",
    "max_tokens=1024 prompt_tokens: 300",
])
def test_ordinary_text_survives(line: str) -> None:
    assert Redactor().text(line) == line


def test_no_redact_keeps_secrets_but_strips_terminal_escapes() -> None:
    out = Redactor(secrets=False).text("HF_TOKEN=hf_abcdefghijklmnop \x1b[31mred\x1b[0m")
    assert out == "HF_TOKEN=hf_abcdefghijklmnop red"


def test_frames_are_redacted_column_wise() -> None:
    frame = pl.DataFrame({"line": ["a X_TOKEN=abc", None, "plain"], "n": [1, 2, 3]})
    out = Redactor().frame(frame)
    assert out.get_column("line").to_list() == ["a X_TOKEN=REDACTED", None, "plain"]
    assert out.get_column("n").to_list() == [1, 2, 3]


def test_nested_objects_keys_included() -> None:
    out = Redactor(aliases={"h200-21": "host-1"}).obj({"h200-21": ["X_TOKEN=abc", 3, None]})
    assert out == {"host-1": ["X_TOKEN=REDACTED", 3, None]}


def _outputs(bundle: Path, **options: bool) -> dict[str, str]:
    report = prepared(str(bundle), **options)
    out = {fmt: render_report(report, fmt).decode() for fmt in TEXT_FORMATS}
    out["png-text"] = "\n".join(render_texts(report))
    return out


def test_planted_secrets_never_leave_the_tool(planted_bundle: Path) -> None:
    outputs = _outputs(planted_bundle)
    assert "REDACTED" in outputs["md"] and "REDACTED" in outputs["png-text"]   # the file name in the title
    for fmt, text in outputs.items():
        for secret in SECRETS:
            assert secret not in text, f"{secret} survived in {fmt}"


def test_planted_secrets_reach_the_outputs_without_redaction(planted_bundle: Path) -> None:
    """The check above is only meaningful if the secrets would otherwise be there."""
    outputs = _outputs(planted_bundle, redact=False)
    assert SECRETS[0] in outputs["png-text"]
    for fmt in ("md", "html", "json"):
        assert SECRETS[0] in outputs[fmt]
    assert "NOT redacted" in outputs["md"]


def test_anonymize_maps_each_host_to_one_alias_everywhere(planted_bundle: Path) -> None:
    outputs = _outputs(planted_bundle, anonymize=True)
    for fmt, text in outputs.items():
        for host, ip in HOSTS.items():
            assert host not in text, f"{host} survived in {fmt}"
            assert ip not in text, f"{ip} survived in {fmt}"
        assert POD not in text, f"{POD} survived in {fmt}"
    events = prepared(str(planted_bundle), anonymize=True).events
    # node-b's warning names node-a's host (h200-21, known from node-a's NCCL line): one alias for both.
    peer = events.filter(pl.col("text").str.contains("slow to answer")).row(0, named=True)
    node_a = events.filter(pl.col("text").str.contains("bad input")).row(0, named=True)
    assert node_a["node"].startswith("host-") and peer["node"].startswith("host-")
    assert node_a["node"] != peer["node"]
    assert f"peer {node_a['node']} slow to answer at ip-" in peer["text"]
    assert "(pod pod-1_inference)" in peer["text"]
    assert node_a["file"].startswith(node_a["node"] + "/")
    doc = json.loads(outputs["json"])
    assert doc["redaction"].endswith("anonymized")


def test_aliases_are_stable() -> None:
    ips = find_ips([pl.Series(["to 10.0.0.12 and 10.0.0.1", "libcudnn.so.9.10.2.21", "pkg==1.2.3.4",
                               "bind 0.0.0.0 127.0.0.1"])])
    assert ips == ["10.0.0.1", "10.0.0.12"]
    first = build_aliases(["node-b", "node-a"], {"node-a": ["h200-21.example.com"]}, [], ["k3-serve-abc12"], ips)
    again = build_aliases(["node-a", "node-b"], {"node-a": ["h200-21.example.com"]}, [], ["k3-serve-abc12"], ips)
    assert first == again
    assert first["node-a"] == first["h200-21.example.com"] == first["h200-21"] == "host-1"
    assert first["10.0.0.1"] == "ip-1" and first["k3-serve-abc12"] == "pod-1"
    out = Redactor(aliases=first).text("10.0.0.12 then 10.0.0.1 on h200-21 (node-a/vllm.log)")
    assert out == "ip-2 then ip-1 on host-1 (host-1/vllm.log)"


def test_aliases_never_chain() -> None:
    """A real host named like an alias is not confused with the alias another name received."""
    redactor = Redactor(aliases={"node-a": "host-1", "host-1": "host-2"})
    assert redactor.text("node-a talks to host-1") == "host-1 talks to host-2"

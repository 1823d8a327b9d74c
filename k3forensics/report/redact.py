"""Redaction of secrets and anonymization of hosts, IPs and pods in everything a report emits.

Every rule is a Rust-regex replacement applied with polars `str.replace_all` over whole
columns; single strings and nested JSON go through the same expressions (collected into one
Series), so a string cannot escape redaction because it took another code path.
Aliases match whole names only, so `10.0.0.1` never rewrites part of `10.0.0.12`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import polars as pl

from k3forensics.text import ANSI_PATTERN

MASK = "REDACTED"

# (name, pattern, replacement). `${1}` keeps the label in front of the secret so the reader
# still sees *what* was removed. Order matters: URL passwords and bearer tokens before the
# generic `KEY=value` rule, which would otherwise eat the `://user:` prefix.
SECRET_RULES: tuple[tuple[str, str, str], ...] = (
    ("url_password", r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@\"'<>]+:)[^@\s/\"'<>]+@", "${1}" + MASK + "@"),
    ("hf_token", r"\bhf_[A-Za-z0-9]{10,}", "hf_" + MASK),
    ("sk_key", r"\bsk-[A-Za-z0-9_\-]{10,}", "sk-" + MASK),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})", "gh_" + MASK),
    ("slack_token", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}", "xox-" + MASK),
    ("aws_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "AKIA" + MASK),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", "jwt-" + MASK),
    # A bearer token holds a digit or punctuation, so prose ("Bearer authentication") survives.
    ("bearer", r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]*[0-9._~+/=\-][A-Za-z0-9._~+/=\-]*", "${1}" + MASK),
    ("authorization", r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)[^\"'\r\n,}]+", "${1}" + MASK),
    ("secret_assignment",
     r"(?i)(\b[A-Za-z0-9_.\-]*(?:token|api[_\-]?key|[_\-]key|secret|password|passwd|pwd)[\"']?\s*[=:]\s*[\"']?)"
     r"[^\s\"',;&}]+", "${1}" + MASK),
    ("secret_flag", r"(?i)(--(?:api-key|hf-token|token|password|secret)(?:=|\s+))[^\s\"']+", "${1}" + MASK),
)
# Terminal escapes and C0/C1 controls (tab and newline kept): log text is data, never a command.
CONTROL_PATTERN = ANSI_PATTERN + r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
IPV4 = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}"
# An IP is not preceded by a word character, a dot or `==` (`libcudnn.so.9.10.2.21`, `pkg==1.2.3.4`).
IP_CANDIDATE = r"(?:^|[^\w.=]|[^=]=)(" + IPV4 + r")\b"
NAME_EDGE_LEFT, NAME_EDGE_RIGHT = r"(^|[^A-Za-z0-9\-])", r"($|[^A-Za-z0-9\-])"


@dataclass
class Redactor:
    """What to remove from text that leaves the tool. `Redactor(secrets=False)` only strips controls."""

    secrets: bool = True
    aliases: dict[str, str] = field(default_factory=dict)

    def expr(self, column: pl.Expr) -> pl.Expr:
        out = column.str.replace_all(CONTROL_PATTERN, "")
        if self.secrets:
            for _, pattern, replacement in SECRET_RULES:
                out = out.str.replace_all(pattern, replacement)
        # Longest first (the FQDN `gpu1.example.com` before `gpu1`), each to a placeholder first, so an
        # alias written by one rule (`host-2`) is never rewritten by another (a real host named `host-2`).
        originals = sorted(self.aliases, key=len, reverse=True)
        for i, original in enumerate(originals):
            # A name ends where a character that cannot be part of it begins: `kimi-k3-0_inference` names
            # the pod `kimi-k3-0`; `10.0.0.12` does not contain `10.0.0.1`. Rust regex has no lookaround,
            # so the edges are captured, and a second pass takes names only one character apart.
            pattern = NAME_EDGE_LEFT + pl.escape_regex(original) + NAME_EDGE_RIGHT
            for _ in range(2):
                out = out.str.replace_all(pattern, "${1}" + _placeholder(i) + "${2}")
        for i, original in enumerate(originals):
            out = out.str.replace_all(_placeholder(i), self.aliases[original], literal=True)
        return out

    def texts(self, values: Iterable[str | None]) -> list[str | None]:
        series = pl.Series("t", list(values), dtype=pl.Utf8)
        if series.len() == 0:
            return []
        return pl.select(self.expr(pl.lit(series))).to_series().to_list()

    def text(self, value: str) -> str:
        return str(self.texts([value])[0])

    def frame(self, frame: pl.DataFrame, columns: Iterable[str] | None = None) -> pl.DataFrame:
        names = list(columns) if columns is not None else [c for c, t in frame.schema.items() if t == pl.Utf8]
        return frame.with_columns(*(self.expr(pl.col(c)).alias(c) for c in names if c in frame.columns))

    def obj(self, value: Any) -> Any:
        """A nested dict/list/tuple with every string (keys too) redacted; other values unchanged."""
        strings: list[str] = []
        _collect(value, strings)
        done = dict(zip(strings, self.texts(strings), strict=True))
        return _rebuild(value, done)


def _placeholder(i: int) -> str:
    """NUL and private-use characters (one per digit): never in the text (controls are stripped
    first), never part of a word."""
    return "\x00" + "".join(chr(0xE000 + int(d)) for d in str(i)) + "\x00"


def _collect(value: Any, out: list[str]) -> None:
    if isinstance(value, Enum):
        return
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(key, out)
            _collect(item, out)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, out)


def _rebuild(value: Any, done: dict[str, str | None]) -> Any:
    if isinstance(value, Enum):
        return value
    if isinstance(value, str):
        return done[value]
    if isinstance(value, dict):
        return {_rebuild(k, done): _rebuild(v, done) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebuild(v, done) for v in value]
    if isinstance(value, tuple):
        return tuple(_rebuild(v, done) for v in value)
    return value


# --- anonymization vocabulary ------------------------------------------------------------

HOST_FACTS = ("hostname", "k8s_node", "node_name", "host")
POD_FACTS = ("pod", "pod_name", "k8s_pod")


def _host_like(name: str) -> bool:
    """A node name worth hiding: has a digit, dash or dot (`h200-07`, `node-a`), not a bare word (`vllm`)."""
    return len(name) >= 3 and any(ch.isdigit() or ch in "-." for ch in name)


def _public_ip(text: str) -> bool:
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified or ip.is_multicast or str(ip) == "255.255.255.255")


def find_ips(columns: Iterable[pl.Series]) -> list[str]:
    """Every routable-looking IPv4 address in the given text columns, in numeric order."""
    found: set[str] = set()
    for series in columns:
        matches = series.drop_nulls().str.extract_all(IP_CANDIDATE).explode().drop_nulls()
        found |= set(matches.str.extract("(" + IPV4 + ")", 1).drop_nulls().to_list())
    return sorted((ip for ip in found if _public_ip(ip)), key=lambda s: tuple(int(p) for p in s.split(".")))


def build_aliases(nodes: list[str], hosts_by_node: dict[str, list[str]], extra_hosts: list[str],
                  pods: list[str], ips: list[str]) -> dict[str, str]:
    """Stable aliases: a node and every host name seen for it share `host-N` (N by node order)."""
    aliases: dict[str, str] = {}
    counter = 0
    for node in sorted(set(nodes) | set(hosts_by_node)):
        names = [n for n in [node, *hosts_by_node.get(node, [])] if n and _host_like(n) and n not in aliases]
        if not names:
            continue
        counter += 1
        for name in names:
            aliases[name] = f"host-{counter}"
            if "." in name and not _is_ip(name):
                aliases.setdefault(name.split(".", 1)[0], f"host-{counter}")
    for name in sorted(set(extra_hosts)):
        if name and _host_like(name) and name not in aliases and not _is_ip(name):
            counter += 1
            aliases[name] = f"host-{counter}"
    for i, pod in enumerate(sorted(p for p in set(pods) if p and len(p) >= 3 and p not in aliases), 1):
        aliases[pod] = f"pod-{i}"
    for i, ip in enumerate(ips, 1):
        aliases.setdefault(ip, f"ip-{i}")
    return aliases


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True

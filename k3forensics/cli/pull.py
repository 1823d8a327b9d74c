"""`k3forensics pull`: an incident window from a running Prometheus into a timeline database."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from k3forensics.cli.common import console, reports_errors, safe
from k3forensics.metrics.pull import DEFAULT_MATCH, PullError, PullSpec, pull
from k3forensics.metrics.store import save_pulled

_RELATIVE = re.compile(r"^now(?:-(\d+(?:\.\d+)?)([smhd]))?$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_when(text: str) -> datetime:
    """Unix seconds, ISO 8601 (no zone: UTC), `now` or `now-30m` / `now-2h`."""
    text = text.strip()
    relative = _RELATIVE.match(text)
    if relative:
        back = float(relative.group(1) or 0) * _UNITS[relative.group(2) or "s"]
        return datetime.now(UTC) - timedelta(seconds=back)
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return datetime.fromtimestamp(float(text), UTC)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise PullError(f"not a time: {text!r}", hint="use ISO 8601, unix seconds, now or now-30m") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _headers(values: tuple[str, ...], bearer_file: Path | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise PullError("a --header is NAME: VALUE", hint="e.g. --header 'Authorization: Bearer …'")
        out[name.strip()] = content.strip()
    if bearer_file:
        out["Authorization"] = f"Bearer {bearer_file.read_text(encoding='utf-8').strip()}"
    if "K3F_PROMETHEUS_AUTH" in os.environ and "Authorization" not in out:
        out["Authorization"] = os.environ["K3F_PROMETHEUS_AUTH"]
    return out


@click.command("pull")
@click.option("--prometheus", "url", required=True, help="Prometheus base URL, e.g. http://127.0.0.1:9090.")
@click.option("--start", required=True, help="Window start: ISO 8601, unix seconds, or now-2h.")
@click.option("--end", required=True, help="Window end: ISO 8601, unix seconds, or now.")
@click.option("--match", "matchers", multiple=True, help=f"Series selector (repeatable; default {DEFAULT_MATCH}).")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="Timeline database: appended to if it exists, created otherwise.")
@click.option("--step", type=float, help="Seconds between points (default: from the window, <= 1000 points).")
@click.option("--node", help="File the series under this node name (default: each series' `instance`).")
@click.option("--header", "headers", multiple=True, help="Extra HTTP header 'Name: value' (repeatable), "
              "e.g. Authorization. $K3F_PROMETHEUS_AUTH is the Authorization header when none is given.")
@click.option("--bearer-token-file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A file holding a bearer token.")
@click.option("--ca-cert", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="CA bundle to verify the server's TLS certificate.")
@click.option("--client-cert", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Client certificate (PEM) for mutual TLS.")
@click.option("--client-key", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Key of the client certificate.")
@click.option("--insecure", is_flag=True, help="Do not verify the server's TLS certificate.")
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds per query.")
@reports_errors
def pull_cmd(url: str, start: str, end: str, matchers: tuple[str, ...], db: Path, step: float | None,
             node: str | None, headers: tuple[str, ...], bearer_token_file: Path | None, ca_cert: Path | None,
             client_cert: Path | None, client_key: Path | None, insecure: bool, timeout: float) -> None:
    """Pull the incident window's metrics from a running Prometheus into a timeline database."""
    spec = PullSpec(url, parse_when(start), parse_when(end), matchers or (DEFAULT_MATCH,), step,
                    _headers(headers, bearer_token_file), str(ca_cert) if ca_cert else None, insecure,
                    str(client_cert) if client_cert else None, str(client_key) if client_key else None, timeout,
                    node)
    result = pull(spec)
    written = save_pulled(db, result.samples, spec.source, spec.start, spec.end)
    metrics = result.samples.get_column("metric").n_unique() if result.samples.height else 0
    console().print(safe(f"pulled {result.series} series ({metrics} metrics), {written:,} samples at a "
                         f"{result.step_s:g} s step from {spec.source} into {db}"))
    if written == 0:
        console(stderr=True).print(safe("warning: no samples in that window; check --start/--end and --match"))

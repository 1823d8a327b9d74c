"""Pull an incident window from a running Prometheus (range queries) into a timeline database.

Each `--match` selector is one range query over [start, end] at a step chosen from the
window (at most MAX_POINTS points per series, rounded up to a familiar step). The result
goes into the `samples` table of the database, as ingested scrapes do: a new database gets
the timeline schema, an existing one is appended to (a re-pull of the same window and
server replaces its earlier rows). Credentials (headers, a password in the URL) are sent,
never stored or printed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import polars as pl

from k3forensics.errors import K3Error, Location
from k3forensics.sources._doc_util import labels_json

DEFAULT_MATCH = '{__name__=~"vllm:.+"}'
MAX_POINTS = 1000
NICE_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)
UTC_US = pl.Datetime("us", "UTC")
SAMPLE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {"node": pl.Utf8, "file": pl.Utf8, "line_no": pl.Int64, "metric": pl.Utf8, "labels": pl.Utf8,
                 "ts": UTC_US, "value": pl.Float64}


class PullError(K3Error):
    """The Prometheus server cannot be queried (unreachable, refused, bad query, bad TLS)."""


class RangeClient(Protocol):
    def custom_query_range(self, query: str, start_time: datetime, end_time: datetime, step: str,
                           params: dict[str, Any] | None = None) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class PullSpec:
    url: str
    start: datetime
    end: datetime
    matchers: tuple[str, ...] = (DEFAULT_MATCH,)
    step_s: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    ca_file: str | None = None          # a CA bundle to verify the server with
    insecure: bool = False              # no certificate verification at all
    client_cert: str | None = None
    client_key: str | None = None
    timeout_s: float = 60.0
    node: str | None = None             # the node name to file the series under (default: `instance`)

    @property
    def step(self) -> float:
        return self.step_s or choose_step(self.start, self.end)

    @property
    def source(self) -> str:
        """The `file` value of the pulled rows: the server, without credentials."""
        return f"prometheus:{redact_url(self.url)}"


@dataclass
class Pulled:
    samples: pl.DataFrame
    series: int
    step_s: float
    queries: list[str]


def choose_step(start: datetime, end: datetime, max_points: int = MAX_POINTS) -> float:
    """The smallest familiar step that keeps a series within `max_points` over the window."""
    window = (end - start).total_seconds()
    if window <= 0:
        raise PullError("the window is empty: --end must be after --start")
    wanted = window / max_points
    return float(next((s for s in NICE_STEPS_S if s >= wanted), math.ceil(wanted)))


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"<redacted>@{host}" + (f":{parts.port}" if parts.port else "")
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts._replace(query="", fragment=""))


def connect(spec: PullSpec) -> RangeClient:
    import requests
    from prometheus_api_client import PrometheusConnect

    session = requests.Session()
    session.verify = False if spec.insecure else (spec.ca_file or True)
    if spec.client_cert:
        session.cert = (spec.client_cert, spec.client_key) if spec.client_key else spec.client_cert
    return PrometheusConnect(url=spec.url.rstrip("/"), headers=dict(spec.headers) or None, session=session,
                             timeout=int(math.ceil(spec.timeout_s)))


def pull(spec: PullSpec, client: RangeClient | None = None) -> Pulled:
    if spec.end <= spec.start:
        raise PullError("the window is empty: --end must be after --start")
    client = client or connect(spec)
    step = spec.step
    rows: list[dict[str, Any]] = []
    series = 0
    for query in spec.matchers:
        result = _query(client, spec, query, step)
        series += len(result)
        for item in result:
            rows += _rows(item, query, spec)
    frame = pl.DataFrame(rows, schema=SAMPLE_SCHEMA) if rows else pl.DataFrame(schema=SAMPLE_SCHEMA)
    return Pulled(frame.sort("metric", "labels", "ts"), series, step, list(spec.matchers))


def _query(client: RangeClient, spec: PullSpec, query: str, step: float) -> list[dict[str, Any]]:
    import requests
    from prometheus_api_client.exceptions import PrometheusApiClientException

    where = Location(redact_url(spec.url))
    try:
        return client.custom_query_range(query, start_time=spec.start, end_time=spec.end, step=f"{step:g}s")
    except PrometheusApiClientException as exc:
        raise PullError(f"query {query!r} refused: {_short(exc)}", where,
                        "check the selector and the auth header") from None
    except requests.exceptions.SSLError as exc:
        raise PullError(f"TLS failed: {_short(exc)}", where, "pass --ca-cert FILE, or --insecure to skip "
                        "verification") from None
    except requests.exceptions.RequestException as exc:
        raise PullError(f"cannot reach the server: {_short(exc)}", where) from None


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:300]


def _rows(item: dict[str, Any], query: str, spec: PullSpec) -> list[dict[str, Any]]:
    labels = dict(item.get("metric") or {})
    name = str(labels.pop("__name__", query))
    node = spec.node or str(labels.get("instance") or urlsplit(spec.url).hostname or "prometheus")
    text = labels_json(labels)
    out = []
    for ts, value in item.get("values") or []:
        out.append({"node": node, "file": spec.source, "line_no": None, "metric": name, "labels": text,
                    "ts": datetime.fromtimestamp(float(ts), UTC), "value": _float(value)})
    return out


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None

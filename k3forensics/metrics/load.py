"""The load a bundle shows: from the metrics when scraped, else from vLLM's periodic stats lines.

It answers "was there load, and did the server keep headroom under it": requests served,
peak running / waiting, KV-cache usage (peak and how long it stayed high), preemptions and
latency quantiles. Thresholds are module constants, documented in docs/VERDICTS.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

import polars as pl

from k3forensics.metrics.histogram import histogram_quantile
from k3forensics.metrics.rates import total_increase
from k3forensics.metrics.series import first_present, series

KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")   # fractions 0-1
RUNNING = ("vllm:num_requests_running",)
WAITING = ("vllm:num_requests_waiting",)
PREEMPTIONS = ("vllm:num_preemptions_total",)
REQUESTS = ("vllm:request_success_total",)
E2E = "vllm:e2e_request_latency_seconds"
TTFT = "vllm:time_to_first_token_seconds"
QUEUE = "vllm:request_queue_time_seconds"

HIGH_KV = 0.90            # KV-cache usage fraction counted as pressure
PRESSURE_SHARE = 0.25     # pressure for at least this share of the points is "persistent"
QUEUE_POINTS = 3          # a queue at this many consecutive points is a standing queue
QUEUE_MIN = 5             # a queue: at least this many waiting, and at least
QUEUE_SHARE = 0.25        # this share of the running count (a few waiting between batches is normal)
STATS_LINE = "vllm.stats-line"


@dataclass
class LoadEvidence:
    source: str | None = None             # metrics | stats_lines | None (nothing in the bundle)
    points: int = 0
    requests: float | None = None
    peak_running: float | None = None
    peak_waiting: float | None = None
    peak_kv_usage: float | None = None    # fraction 0-1
    high_kv_share: float | None = None    # share of points with usage >= HIGH_KV
    standing_queue: bool = False
    preemptions: float | None = None
    latency_s: dict[str, float] = field(default_factory=dict)   # e2e_p50, e2e_p99, ttft_p99, queue_p99

    @property
    def persistent_pressure(self) -> bool:
        """KV cache near full for a good share of the run, or a standing queue (preemptions
        alone are not: a few happen on any busy server)."""
        return bool((self.high_kv_share or 0) >= PRESSURE_SHARE or self.standing_queue)

    @property
    def has_load(self) -> bool:
        return self.source is not None

    def pressure_reasons(self) -> list[str]:
        out = []
        if (self.high_kv_share or 0) >= PRESSURE_SHARE:
            out.append(f"KV-cache usage >= {HIGH_KV:.0%} at {self.high_kv_share:.0%} of the {self.source} points "
                       f"(peak {self.peak_kv_usage:.1%})")
        if self.standing_queue:
            out.append(f"a standing queue (peak {self.peak_waiting:g} waiting) at {QUEUE_POINTS}+ points in a row")
        if (self.preemptions or 0) > 0:
            out.append(f"{self.preemptions:g} preemptions")
        return out

    def to_dict(self) -> dict[str, object]:
        return {**{k: v for k, v in asdict(self).items() if v not in (None, {}, [])},
                "persistent_pressure": self.persistent_pressure}


def load_evidence(samples: pl.DataFrame, hits: pl.DataFrame | None = None) -> LoadEvidence:
    """Metrics and stats lines together: scrapes are often sparse (minutes apart) where the
    stats lines come every 10 s, so a pressure either shows counts."""
    metrics = _from_metrics(samples) if first_present(samples, KV_USAGE + RUNNING) else None
    stats = None
    if hits is not None and hits.height and "signature" in hits.columns:
        lines = hits.filter(pl.col("signature") == STATS_LINE)
        stats = _from_stats(lines) if lines.height else None
    if metrics and stats:
        return _merge(metrics, stats)
    return metrics or stats or LoadEvidence()


def _merge(metrics: LoadEvidence, stats: LoadEvidence) -> LoadEvidence:
    def peak(a: float | None, b: float | None) -> float | None:
        return max(v for v in (a, b) if v is not None) if a is not None or b is not None else None

    return LoadEvidence(
        "metrics+stats_lines", metrics.points + stats.points, metrics.requests,
        peak(metrics.peak_running, stats.peak_running), peak(metrics.peak_waiting, stats.peak_waiting),
        peak(metrics.peak_kv_usage, stats.peak_kv_usage), peak(metrics.high_kv_share, stats.high_kv_share),
        metrics.standing_queue or stats.standing_queue, peak(metrics.preemptions, stats.preemptions),
        metrics.latency_s,
    )


def _gauge(samples: pl.DataFrame, names: tuple[str, ...]) -> pl.DataFrame:
    name = first_present(samples, names)
    return series(samples, name) if name else series(samples, "")


def _from_metrics(samples: pl.DataFrame) -> LoadEvidence:
    kv, running, waiting = (_gauge(samples, n) for n in (KV_USAGE, RUNNING, WAITING))
    ev = LoadEvidence("metrics", points=max(kv.height, running.height))
    ev.peak_running = _max(running)
    ev.peak_waiting = _max(waiting)
    ev.peak_kv_usage = _max(kv)
    ev.high_kv_share = _share(kv.get_column("value"), HIGH_KV) if kv.height else None
    ev.standing_queue = _standing(waiting, running)
    preempt = first_present(samples, PREEMPTIONS)
    ev.preemptions = total_increase(series(samples, preempt)) if preempt else None
    requests = first_present(samples, REQUESTS)
    ev.requests = total_increase(series(samples, requests)) if requests else None
    for key, base, q in (("e2e_p50", E2E, 0.5), ("e2e_p99", E2E, 0.99), ("ttft_p99", TTFT, 0.99),
                         ("queue_p99", QUEUE, 0.99)):
        value = histogram_quantile(samples, base, q)
        if value is not None:
            ev.latency_s[key] = round(value, 3)
    return ev


_STATS_FIELDS = {"kv_usage_pct": 0.01, "running": 1.0, "waiting": 1.0, "preemptions": 1.0}  # capture: scale


def stats_points(stats: pl.DataFrame, names: Iterable[str]) -> pl.DataFrame:
    """The stats lines' numeric captures (JSON of text values), one row per line in time
    order, a column per capture name (null where a line lacks it or it is no number)."""
    names = list(names)
    captures = pl.col("captures").replace("", None).str.json_decode(pl.Struct(dict.fromkeys(names, pl.Utf8)))
    return stats.sort("ts_order", "seq", nulls_last=True).select(
        captures.struct.field(name).cast(pl.Float64, strict=False).alias(name) for name in names)


def _from_stats(stats: pl.DataFrame) -> LoadEvidence:
    points = stats_points(stats, _STATS_FIELDS).select(pl.col(n) * scale for n, scale in _STATS_FIELDS.items())
    kv, running, waiting, preempt = (points.get_column(name).drop_nulls() for name in _STATS_FIELDS)
    ev = LoadEvidence("stats_lines", points=points.height)
    ev.peak_running = float(running.max()) if running.len() else None  # type: ignore[arg-type]
    ev.peak_waiting = float(waiting.max()) if waiting.len() else None  # type: ignore[arg-type]
    ev.peak_kv_usage = float(kv.max()) if kv.len() else None  # type: ignore[arg-type]
    ev.high_kv_share = _share(kv, HIGH_KV) if kv.len() else None
    ev.standing_queue = _standing_run(points.get_column("waiting"), points.get_column("running"))
    ev.preemptions = float(preempt.max()) if preempt.len() else None  # type: ignore[arg-type]
    return ev


def _max(frame: pl.DataFrame) -> float | None:
    return float(frame.get_column("value").max()) if frame.height else None  # type: ignore[arg-type]


def _share(values: pl.Series, threshold: float) -> float:
    return float((values >= threshold).sum()) / values.len() if values.len() else 0.0


def _standing(waiting: pl.DataFrame, running: pl.DataFrame) -> bool:
    if waiting.height == 0:
        return False
    joined = waiting.join(running.select("node", "ts", pl.col("value").alias("running")), on=["node", "ts"],
                          how="left").sort("node", "labels", "ts")
    return any(_standing_run(s.get_column("value"), s.get_column("running"))
               for s in joined.partition_by("node", "labels"))  # a loop over series, not points


def _standing_run(waiting: pl.Series, running: pl.Series) -> bool:
    """Waiting and running counts per point, in time order: a queue (at least QUEUE_MIN
    waiting, and QUEUE_SHARE of the running count) that holds for QUEUE_POINTS points in a
    row. A point without a waiting count breaks the run."""
    needed = pl.max_horizontal(pl.lit(float(QUEUE_MIN)), QUEUE_SHARE * pl.col("r").fill_null(0.0))
    queued = pl.DataFrame({"w": waiting, "r": running}).select((pl.col("w") >= needed).fill_null(False)).to_series()
    runs = queued.rle().struct.unnest().filter(pl.col("value"))
    return runs.height > 0 and int(runs.get_column("len").max()) >= QUEUE_POINTS  # type: ignore[arg-type]

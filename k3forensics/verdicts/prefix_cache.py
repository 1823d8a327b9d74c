"""Is prefix-cache reuse effective (seed 003)? Decided from reuse, not from the flag.

Effective: hits grow after the cold request, cached prompt tokens are recorded, and prefill
time falls where the bundle measures it. Sources, best first: the metrics (queries, hits,
cached tokens, prefill time and computed tokens, KV usage), else the periodic stats lines
(`Prefix cache hit rate`), with the captured responses' `cached_tokens` as extra evidence.
Inconclusive when the bundle cannot show reuse: one request, no shared prefix, hits under
cache pressure, no evidence at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import polars as pl

from k3forensics.metrics.histogram import histogram_mean
from k3forensics.metrics.load import STATS_LINE, LoadEvidence, stats_points
from k3forensics.metrics.rates import total_increase
from k3forensics.metrics.series import first_present, series
from k3forensics.verdicts.exchanges import cached_tokens, shares_prefix, timed

HITS = ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
QUERIES = ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")
HIT_RATE_GAUGE = ("vllm:gpu_prefix_cache_hit_rate",)   # V0
CACHED = ("vllm:prompt_tokens_cached_total",)
BY_SOURCE = "vllm:prompt_tokens_by_source_total"
REQUESTS = ("vllm:request_success_total",)
PREFILL_TIME = "vllm:request_prefill_time_seconds"
PREFILL_COMPUTED = "vllm:request_prefill_kv_computed_tokens"
E2E = "vllm:e2e_request_latency_seconds"
FLAG = "arg.enable_prefix_caching"
ENGINE_CONFIG = ("vllm.engine-config", "vllm.cache-config")

MIN_HIT_RATE = 0.05   # share of queried tokens that hit after the cold request


class Reuse(StrEnum):
    EFFECTIVE = "effective"
    NOT_EFFECTIVE = "not_effective"
    INCONCLUSIVE = "inconclusive"


@dataclass
class Observed:
    source: str | None = None
    requests: float | None = None
    hit_rate: float | None = None          # after the cold request
    cached_tokens: float | None = None
    prefill_cold_s: float | None = None
    prefill_warm_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def prefill_fell(self) -> bool | None:
        if self.prefill_cold_s is None or self.prefill_warm_s is None:
            return None
        return self.prefill_warm_s < self.prefill_cold_s


@dataclass
class PrefixCacheVerdict:
    status: Reuse
    reasons: list[str]
    flag: str | None
    observed: Observed

    def to_dict(self) -> dict[str, Any]:
        seen = {k: v for k, v in vars(self.observed).items() if v not in (None, {}) and k != "extra"}
        return {"status": self.status.value, "reasons": self.reasons, "flag": self.flag,
                "evidence": {**seen, **self.observed.extra}}


def flag_state(facts: pl.DataFrame) -> str | None:
    """`true` / `false` as the launch command states it, None when it does not."""
    if facts.height == 0:
        return None
    values = facts.filter(pl.col("key") == FLAG).get_column("value").drop_nulls().to_list()
    return str(values[-1]).lower() if values else None


def engine_state(hits: pl.DataFrame) -> str | None:
    """`true` / `false` as the engine's own configuration line says, None when not logged."""
    if hits.height == 0 or "signature" not in hits.columns:
        return None
    lines = hits.filter(pl.col("signature").is_in(ENGINE_CONFIG)).sort("ts_order", "seq", nulls_last=True)
    states = [json.loads(c or "{}").get("enable_prefix_caching") for c in lines.get_column("captures").to_list()]
    states = [s for s in states if s in ("True", "False")]
    return states[-1].lower() if states else None


def decide(samples: pl.DataFrame, facts: pl.DataFrame, hits: pl.DataFrame, exchanges: list[dict[str, Any]],
           load: LoadEvidence) -> PrefixCacheVerdict:
    flag = flag_state(facts)
    observed = from_metrics(samples) or from_stats_lines(hits) or Observed()
    _add_captures(observed, exchanges)
    engine = engine_state(hits)
    if engine:
        observed.extra["engine_config"] = engine
    status, reasons = _judge(observed, flag, engine, load, shares_prefix(exchanges))
    return PrefixCacheVerdict(status, reasons, flag, observed)


def _judge(seen: Observed, flag: str | None, engine: str | None, load: LoadEvidence,
           shared: bool | None) -> tuple[Reuse, list[str]]:
    absent = "--enable-prefix-caching is absent from the launch command"
    if flag == "false":
        return Reuse.NOT_EFFECTIVE, ["prefix caching is disabled in the launch command"]
    if seen.source is None:
        return Reuse.INCONCLUSIVE, ["no prefix-cache metrics, stats lines or cached_tokens in the bundle"] + (
            [absent] if flag is None else [])
    if seen.requests is not None and seen.requests <= 1:
        return Reuse.INCONCLUSIVE, ["only one request: nothing could reuse the cold request's prefix"]
    pressure = (load.high_kv_share or 0) > 0
    if (seen.hit_rate or 0) >= MIN_HIT_RATE or (seen.cached_tokens or 0) > 0:
        return _with_hits(seen, flag, pressure, load, absent)
    reasons = [f"no prefix-cache hits after the cold request (hit rate {seen.hit_rate or 0:.1%}, {seen.source})"]
    if flag is None:
        reasons.append(absent)
    if engine == "false":
        reasons.append("the engine's configuration line says enable_prefix_caching=False")
    if pressure:
        reasons.append(f"the KV cache was under pressure (peak {load.peak_kv_usage:.0%}): cached blocks are "
                       "evicted before reuse")
    if shared is False:
        reasons.append("no shared prefix between the captured requests (system prompt or tools differ each "
                       "time): this request set cannot show reuse")
    if flag is None or engine == "false" or pressure:
        return Reuse.NOT_EFFECTIVE, reasons
    if shared is False:
        return Reuse.INCONCLUSIVE, reasons
    return Reuse.NOT_EFFECTIVE, reasons + (["although the captured requests share a prefix"] if shared else [])


def _with_hits(seen: Observed, flag: str | None, pressure: bool, load: LoadEvidence,
               absent: str) -> tuple[Reuse, list[str]]:
    reasons = []
    if seen.hit_rate is not None:
        reasons.append(f"hit rate {seen.hit_rate:.1%} of queried tokens after the cold request ({seen.source})")
    if seen.cached_tokens:
        reasons.append(f"{seen.cached_tokens:,.0f} cached prompt tokens recorded")
    if seen.prefill_fell is False:
        return Reuse.INCONCLUSIVE, reasons + [f"but prefill time did not fall (cold {seen.prefill_cold_s:.3f} s, "
                                              f"warm {seen.prefill_warm_s:.3f} s)"]
    if pressure:
        return Reuse.INCONCLUSIVE, reasons + [f"but the KV cache was under pressure (peak {load.peak_kv_usage:.0%}): "
                                              "hits under pressure are not counted as a gain"]
    if seen.prefill_fell:
        reasons.append(f"prefill time fell from {seen.prefill_cold_s:.3f} s (cold) to {seen.prefill_warm_s:.3f} s")
    else:
        reasons.append("prefill time is not in the bundle (no vllm:request_prefill_time_seconds)")
    if flag is None:
        reasons.append(f"note: {absent}; the reuse comes from this version's default, state the flag explicitly")
    return Reuse.EFFECTIVE, reasons


# ---------------------------------------------------------------- evidence sources


def from_metrics(samples: pl.DataFrame) -> Observed | None:
    hits_name, queries_name = first_present(samples, HITS), first_present(samples, QUERIES)
    gauge = first_present(samples, HIT_RATE_GAUGE)
    if not (hits_name and queries_name) and not gauge:
        return None
    seen = Observed("metrics")
    requests = _requests(samples)
    cold = _cold_time(requests)
    seen.requests = total_increase(requests) if requests.height else None
    if hits_name and queries_name:
        hits, queries = series(samples, hits_name), series(samples, queries_name)
        gained, asked = _after(hits, cold), _after(queries, cold)
        seen.hit_rate = gained / asked if gained is not None and asked else None
        seen.extra["hits_after_cold"] = gained
    else:
        rates = series(samples, gauge).get_column("value")  # type: ignore[arg-type]
        seen.hit_rate = float(rates.max()) if rates.len() > 1 else None  # type: ignore[arg-type]
    seen.cached_tokens = _cached(samples)
    if cold is not None:
        seen.prefill_cold_s = histogram_mean(samples, PREFILL_TIME, None, cold)
        seen.prefill_warm_s = histogram_mean(samples, PREFILL_TIME, cold, None)
        computed = (histogram_mean(samples, PREFILL_COMPUTED, None, cold),
                    histogram_mean(samples, PREFILL_COMPUTED, cold, None))
        if None not in computed:
            seen.extra["prefill_computed_tokens"] = {"cold": computed[0], "warm": computed[1]}
        # end-to-end latency varies with output length too: shown as context, never decisive
        e2e = (histogram_mean(samples, E2E, None, cold), histogram_mean(samples, E2E, cold, None))
        if None not in e2e:
            seen.extra["e2e_latency_s"] = {"cold": e2e[0], "warm": e2e[1]}
    return seen


def _requests(samples: pl.DataFrame) -> pl.DataFrame:
    name = first_present(samples, REQUESTS)
    if name:
        return series(samples, name)
    return series(samples, f"{PREFILL_TIME}_count")


def _cold_time(requests: pl.DataFrame) -> object | None:
    """The first scrape that counts a finished request: the cold request is behind it."""
    if requests.height == 0:
        return None
    totals = requests.group_by("ts").agg(pl.col("value").sum()).sort("ts").filter(pl.col("value") >= 1)
    return totals.get_column("ts")[0] if totals.height else None


def _after(frame: pl.DataFrame, cold: object | None) -> float | None:
    if cold is None:
        return total_increase(frame)
    return total_increase(frame, cold, None)


def _cached(samples: pl.DataFrame) -> float | None:
    name = first_present(samples, CACHED)
    if name:
        return total_increase(series(samples, name))
    by_source = series(samples, BY_SOURCE, {"source": "local_cache_hit"})
    return total_increase(by_source) if by_source.height else None


def from_stats_lines(hits: pl.DataFrame) -> Observed | None:
    """`Prefix cache hit rate: X%` of the stats lines after the first one (the cold request's)."""
    if hits.height == 0 or "signature" not in hits.columns:
        return None
    stats = hits.filter(pl.col("signature") == STATS_LINE)
    values = (stats_points(stats, ["prefix_hit_pct"]).to_series() / 100).drop_nulls()
    if values.len() == 0:
        return None
    seen = Observed("stats_lines", hit_rate=float(values.slice(1).max()) if values.len() > 1 else None)  # type: ignore[arg-type]
    seen.extra["stats_lines"] = values.len()
    return seen


def _add_captures(seen: Observed, exchanges: list[dict[str, Any]]) -> None:
    """Responses' `cached_tokens` (needs --enable-prompt-tokens-details): the cold request's
    and the later ones'."""
    ordered = [e for e in timed(exchanges) if e.get("response")]
    tokens = [cached_tokens(e) for e in ordered]
    if not any(t is not None for t in tokens):
        if ordered and seen.requests is None:
            seen.requests = float(len(ordered))
        return
    warm = [t for t in tokens[1:] if t]
    seen.extra["captured_requests"] = len(ordered)
    seen.extra["captured_requests_with_cached_tokens"] = len(warm)
    if seen.source is None:
        seen.source = "api_capture"
    if seen.cached_tokens is None:
        seen.cached_tokens = float(sum(warm))
    if seen.requests is None:
        seen.requests = float(len(ordered))

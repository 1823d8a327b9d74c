"""Metric curves for the timeline picture: KV-cache usage, running / waiting requests, GPU memory.

Prometheus scrapes and nvidia-smi samples come first; a node without them falls back to the
figures its own log prints (vLLM stats lines and scheduler dumps, captured by context
signatures as `running`, `waiting`, `kv_usage_pct`).
"""

from __future__ import annotations

from typing import Any

import polars as pl

PANELS = {
    "kv": "KV cache %",
    "requests": "requests",
    "gpu_mem": "GPU mem GiB",
}
# metric → (panel, series name, scale, how several label sets combine at one time)
METRICS: dict[str, tuple[str, str, float, str]] = {
    "vllm:kv_cache_usage_perc": ("kv", "KV cache", 100.0, "max"),
    "vllm:gpu_cache_usage_perc": ("kv", "KV cache", 100.0, "max"),
    "vllm:num_requests_running": ("requests", "running", 1.0, "sum"),
    "vllm:num_requests_waiting": ("requests", "waiting", 1.0, "sum"),
    "nvidia_smi_memory_used_mib": ("gpu_mem", "used (busiest GPU)", 1 / 1024, "max"),
    "nvidia_smi_memory_total_mib": ("gpu_mem", "total", 1 / 1024, "max"),
}
CAPTURES = {"kv_usage_pct": ("kv", "KV cache", 1.0), "running": ("requests", "running", 1.0),
            "waiting": ("requests", "waiting", 1.0)}
SCHEMA: dict[str, Any] = {"panel": pl.Utf8, "series": pl.Utf8, "node": pl.Utf8, "t": pl.Datetime("us", "UTC"), "value": pl.Float64,
          "origin": pl.Utf8}


def curves(samples: pl.DataFrame, hits: pl.DataFrame) -> pl.DataFrame:
    from_metrics = _from_samples(samples)
    from_logs = _from_captures(hits)
    if from_logs.height and from_metrics.height:
        covered = from_metrics.select("panel", "node").unique()
        from_logs = from_logs.join(covered, on=["panel", "node"], how="anti")
    out = pl.concat([from_metrics, from_logs], how="vertical_relaxed")
    # A panel is a curve: one snapshot (a single nvidia-smi table) is not drawn.
    curve = pl.len().over("panel", "node", "series") >= 2
    drawn = out.filter(curve.any().over("panel"))
    return drawn.sort("panel", "node", "series", "t")


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def _from_samples(samples: pl.DataFrame) -> pl.DataFrame:
    if samples.height == 0 or "metric" not in samples.columns:
        return _empty()
    rows = samples.filter(pl.col("metric").is_in(list(METRICS)) & pl.col("ts").is_not_null()
                          & pl.col("value").is_not_null())
    if rows.height == 0:
        return _empty()
    spec = pl.col("metric")
    rows = rows.with_columns(
        spec.replace_strict({m: v[0] for m, v in METRICS.items()}).alias("panel"),
        spec.replace_strict({m: v[1] for m, v in METRICS.items()}).alias("series"),
        (pl.col("value") * spec.replace_strict({m: v[2] for m, v in METRICS.items()}, return_dtype=pl.Float64)),
        spec.replace_strict({m: v[3] for m, v in METRICS.items()}).alias("how"),
    )
    grouped = rows.group_by("panel", "series", "node", "ts", "how").agg(
        pl.col("value").sum().alias("_sum"), pl.col("value").max().alias("_max"))
    return grouped.select(
        "panel", "series", "node", pl.col("ts").dt.convert_time_zone("UTC").cast(SCHEMA["t"]).alias("t"),
        pl.when(pl.col("how") == "sum").then(pl.col("_sum")).otherwise(pl.col("_max")).alias("value"),
        pl.lit("metrics").alias("origin"),
    )


def _from_captures(hits: pl.DataFrame) -> pl.DataFrame:
    if hits.height == 0 or "captures" not in hits.columns:
        return _empty()
    timed = hits.filter(pl.col("captures").is_not_null() & pl.col("ts_order").is_not_null())
    parts = []
    for name, (panel, series, scale) in CAPTURES.items():
        value = pl.col("captures").str.json_path_match(f"$.{name}").str.replace_all(",", "").cast(pl.Float64,
                                                                                                 strict=False)
        parts.append(timed.select(
            pl.lit(panel).alias("panel"), pl.lit(series).alias("series"), "node",
            pl.col("ts_order").dt.convert_time_zone("UTC").cast(SCHEMA["t"]).alias("t"),
            (value * scale).alias("value"), pl.lit("log").alias("origin"),
        ).filter(pl.col("value").is_not_null()))
    out = pl.concat(parts, how="vertical_relaxed") if parts else _empty()
    return out.unique(subset=["panel", "series", "node", "t"], keep="first", maintain_order=True)

"""The environment fingerprint of a bundle, per node and merged, from the `facts` table."""

from __future__ import annotations

import polars as pl

# Contract keys (PRODUCT.md) → fact keys, first found wins.
CONTRACT_KEYS = {
    "vllm": ("vllm_version",),
    "torch": ("torch_version",),
    "cuda_runtime": ("cuda_runtime",),
    "driver": ("driver_version",),
    "driver_cuda": ("driver_cuda",),
    "image": ("image",),
    "nccl": ("nccl_version",),
    "os": ("os",),
    "kernel": ("kernel",),
    "cuda_visible_devices": ("cuda_visible_devices",),
    "launch_command": ("launch_command",),
}


def facts_by_node(facts: pl.DataFrame) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    if facts.height == 0:
        return out
    grouped = facts.group_by("node", "key", maintain_order=True).agg(pl.col("value").unique(maintain_order=True))
    for node, key, values in grouped.iter_rows():
        out.setdefault(node, {})[key] = [v for v in values if v is not None]
    return out


def fingerprint(facts: pl.DataFrame) -> dict[str, object]:
    """The merged fingerprint: each contract key's first value, `gpus`, `args`, and per-node detail."""
    per_node = facts_by_node(facts)
    merged: dict[str, object] = {}
    for key, names in CONTRACT_KEYS.items():
        merged[key] = next((vals[0] for node in per_node.values() for n in names for vals in [node.get(n, [])]
                            if vals), None)
    gpus: list[str] = []
    for node in per_node.values():
        gpus += node.get("gpu_model", [])
    merged["gpus"] = gpus
    args: dict[str, str] = {}
    for node in per_node.values():
        for key, values in node.items():
            if key.startswith("arg.") and values:
                args.setdefault(key[4:], values[0])
    merged["args"] = args
    merged["nodes"] = {
        node: {k: (v[0] if len(v) == 1 else v) for k, v in sorted(values.items()) if not k.startswith("metric_type.")}
        for node, values in sorted(per_node.items())
    }
    return merged

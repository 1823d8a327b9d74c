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
    "topology": ("topology",),
    "nccl_transport": ("nccl_transport",),
}
# The per-node fingerprint (seed 001's "environment fingerprint"): what must match across nodes and runs.
NODE_KEYS = {
    "image": "image", "vllm": "vllm_version", "torch": "torch_version", "cuda_runtime": "cuda_runtime",
    "driver": "driver_version", "gpu_model": "gpu_model", "topology": "topology", "nccl": "nccl_version",
    "nccl_transport": "nccl_transport",
}
NODE_ARGS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "max_model_len",
             "gpu_memory_utilization", "enable_prefix_caching", "enforce_eager", "load_format", "max_num_seqs")


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
    merged["gpu_count"] = sum(_gpu_count(facts, node) for node in per_node) or None
    merged["per_node"] = {node: _node_fingerprint(facts, node, values) for node, values in sorted(per_node.items())}
    merged["nodes"] = {
        node: {k: (v[0] if len(v) == 1 else v) for k, v in sorted(values.items()) if not k.startswith("metric_type.")}
        for node, values in sorted(per_node.items())
    }
    return merged


def _gpu_count(facts: pl.DataFrame, node: str) -> int:
    """A node's GPUs: its `gpu_count` fact, else the most GPU lines one file lists (nvidia-smi and
    collect_env list the same GPUs, so they are not added up)."""
    mine = facts.filter(pl.col("node") == node)
    declared = mine.filter(pl.col("key") == "gpu_count").get_column("value").cast(pl.Int64, strict=False).drop_nulls()
    listed = mine.filter(pl.col("key") == "gpu_model").group_by("file").len().get_column("len")
    return max([int(v) for v in declared.to_list()] + [int(v) for v in listed.to_list()] + [0])


def _node_fingerprint(facts: pl.DataFrame, node: str, values: dict[str, list[str]]) -> dict[str, object]:
    out: dict[str, object] = {k: values[f][0] for k, f in NODE_KEYS.items() if values.get(f)}
    count = _gpu_count(facts, node)
    if count:
        out["gpu_count"] = count
    args = {a: values[f"arg.{a}"][0] for a in NODE_ARGS if values.get(f"arg.{a}")}
    if args:
        out["args"] = args
    return out

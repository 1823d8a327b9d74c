"""Which node each file belongs to.

A folder per node is the common layout (`node-a/vllm.log`, `node-b/dmesg.txt`): when a
bundle's files sit in two or more top-level folders, the folder names the node. Otherwise
the bundle is one node, named after a host name found in it (collect_env, NCCL lines), or
`node0`.
"""

from __future__ import annotations

import polars as pl

DEFAULT_NODE = "node0"


def node_of_paths(paths: list[str]) -> dict[str, str]:
    tops = {p.split("/", 1)[0] for p in paths if "/" in p}
    if len(tops) >= 2:
        return {p: (p.split("/", 1)[0] if "/" in p else DEFAULT_NODE) for p in paths}
    return {p: DEFAULT_NODE for p in paths}


def host_names(attrs: pl.Series) -> set[str]:
    """The host names an `attrs` column names (one node's lines: `hosts_named` without the
    node). Its distinct values are searched: an NCCL-heavy chunk holds few."""
    distinct = attrs.unique()
    hosted = distinct.filter(distinct.str.contains('"host":', literal=True))
    return set(hosted.str.json_path_match("$.host").drop_nulls().to_list())


def hosts_named(events: pl.DataFrame) -> set[tuple[str, str]]:
    """The (node, host name) pairs the lines' `attrs` name (NCCL lines carry their host)."""
    hosted = events.filter(pl.col("attrs").str.contains('"host":', literal=True))
    if hosted.height == 0:
        return set()
    distinct = hosted.select("node", "attrs").unique()  # the JSON of each distinct attrs read once
    found = distinct.select("node", pl.col("attrs").str.json_path_match("$.host").alias("host")).drop_nulls()
    return set(found.iter_rows())


def single_node_name(events: pl.DataFrame, facts: pl.DataFrame) -> str | None:
    """A host name for a one-node bundle: a `hostname` fact, else the commonest NCCL host."""
    named = facts.filter(pl.col("key") == "hostname")
    if named.height:
        return str(named.get_column("value").first())
    hosts = (
        events.filter(pl.col("source") == "nccl")
        .select(pl.col("attrs").str.json_path_match("$.host").alias("host"))
        .drop_nulls()
    )
    if hosts.height:
        return str(hosts.get_column("host").mode().sort().first())
    return None

"""`python -m vllm.collect_env` / `vllm collect-env` / `torch.utils.collect_env` output.

Both layouts: the flat PyTorch one (`PyTorch version: 2.4.0+cu121`) and the sectioned one of
vLLM >= 0.10 (`=====` banners, `Label<padded> : value`). Pasted excerpts are common (only the
package list survives), so the pip/conda lines alone are enough to detect and to give versions.
"""

from __future__ import annotations

import re

import polars as pl

from k3forensics.sources import _doc_util as du
from k3forensics.sources.base import ParseContext, ParseResult

NAME = "collect_env"

_TITLES = (
    r"System Info|PyTorch Info|Python Environment|CUDA / GPU Info|Intel XPU / GPU Info|CPU Info"
    r"|Versions of relevant libraries|vLLM Info|Environment Variables"
)

# Line formats, first match wins.
FORMATS: dict[str, str] = {
    "banner": r"^={10,}\s*$",
    "title": rf"^\s*(?:{_TITLES})\s*$",
    "pip": r"^\[pip\d?\]\s+(?P<pkg>[A-Za-z0-9_.\-]+)==(?P<ver>\S+)",
    "conda": r"^\[conda\]\s+(?P<pkg>[A-Za-z0-9_.\-]+)\s+(?P<ver>\d\S*)",
    "gpu": r"^GPU (?P<idx>\d+): (?P<model>.+?)(?: \(UUID: [^)]*\))?\s*$",
    "env": r"^(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>.*)$",
    "topo": du.TOPO_HEADER + "|" + du.TOPO_ROW,
    "nccl": r"vLLM is using nccl==(?P<ver>\S+)",
    "kv": r"^(?P<key>[A-Za-z][A-Za-z0-9 _./()+#-]{0,60}?)\s*:(?:\s+(?P<val>.*?))?\s*$",
}

# Header lines that only collect_env prints (either layout).
_MARKER = re.compile(
    r"^(?:Collecting environment information|PyTorch version\s*:|Is debug build\s*:|CUDA used to build PyTorch\s*:"
    r"|ROCM used to build PyTorch\s*:|vLLM Version\s*:|vLLM Build Flags\s*:|Versions of relevant libraries\s*:"
    r"|GPU models and configuration\s*:|Nvidia driver version\s*:|Is CUDA available\s*:"
    rf"|\s*(?:{_TITLES})\s*$)",
    re.MULTILINE,
)
_PACKAGE = re.compile(r"^\[(?:pip\d?|conda)\] \S", re.MULTILINE)

# `key` (lower-cased) of a `key: value` line -> fact key.
FACT_KEYS = {
    "pytorch version": "torch_version",
    "cuda used to build pytorch": "cuda_runtime",
    "nvidia driver version": "driver_version",
    "vllm version": "vllm_version",
    "os": "os",
    "python version": "python_version",
    "kernel version": "kernel",
    "is cuda available": "cuda_available",
}
_MISSING = ["Could not collect", "N/A", "None", "No CUDA", ""]
# Packages whose listed version stands in for a missing `key: value` line.
_FROM_PACKAGES = {"torch": "torch_version", "vllm": "vllm_version"}
_SINGLE = ["torch_version", "cuda_runtime", "driver_version", "vllm_version", "os", "python_version",
           "kernel", "cuda_available", "nccl_version", "gpu_count", "topology"]


def detect(head: str) -> bool:
    if du.looks_like_log(head):
        return False
    markers = len({m.group(0).strip() for m in _MARKER.finditer(head)})
    packages = len(_PACKAGE.findall(head))
    return markers >= 2 or packages >= 3 or (markers >= 1 and packages >= 1)


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    work = _classify(lines)
    listed, versions = _package_facts(work)
    stated = du.concat_facts([_kv_facts(work), listed, _gpu_facts(work), _env_facts(work), _topology_facts(work)])
    # a stated `PyTorch version:` beats `[pip3] torch==…`; the package list fills what is missing
    fallback = versions.filter(~pl.col("key").is_in(stated["key"].implode()))
    facts = du.dedupe_facts(du.concat_facts([stated, fallback]), _SINGLE)
    events = du.build_events(
        lines,
        NAME,
        work=work,
        parsed=pl.col("_kind").is_in(["pip", "conda", "gpu", "env", "topo", "nccl", "kv"]),
        attrs=pl.when(pl.col("_kind") == "kv").then(du.json_object({"key": pl.col("_key"), "value": pl.col("_val")})),
    )
    return ParseResult(events=events, facts=facts)


def _classify(lines: pl.DataFrame) -> pl.DataFrame:
    kind = pl.lit(None, pl.Utf8)
    for name, pattern in reversed(FORMATS.items()):
        kind = pl.when(pl.col("text").str.contains(pattern)).then(pl.lit(name)).otherwise(kind)
    work = lines.with_columns(kind.alias("_kind"))
    kv = pl.col("text").str.extract_groups(FORMATS["kv"])
    return work.with_columns(
        pl.when(pl.col("_kind") == "kv").then(kv.struct.field("key").str.strip_chars()).alias("_key"),
        pl.when(pl.col("_kind") == "kv").then(kv.struct.field("val")).alias("_val"),
    )


def _kv_facts(work: pl.DataFrame) -> pl.DataFrame:
    kv = work.filter((pl.col("_kind") == "kv") & ~pl.col("_val").fill_null("").is_in(_MISSING))
    key = pl.col("_key").str.to_lowercase().replace_strict(FACT_KEYS, default=None)
    value = (
        pl.when(key.is_in(["python_version", "vllm_version"]) & pl.col("_val").str.contains(r"^\d+\.\d+"))
        .then(pl.col("_val").str.extract(r"^(\S+)", 1))
        .otherwise(pl.col("_val"))
    )
    platform = kv.filter(pl.col("_key").str.to_lowercase() == "python platform")
    kernel = pl.col("_val").str.extract(r"^Linux-(.+?)-(?:x86_64|aarch64|arm64|ppc64le|s390x)\b", 1)
    return du.concat_facts([
        du.facts_from_frame(kv, key, value),
        du.facts_from_frame(platform, pl.lit("kernel"), kernel),
    ])


def _package_facts(work: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(`pip.<name>` for each listed package and nccl_version, torch/vllm versions from the list)."""
    rows = work.filter(pl.col("_kind").is_in(["pip", "conda"])).with_columns(
        pl.coalesce(
            pl.col("text").str.extract_groups(FORMATS["pip"]).struct.field("pkg"),
            pl.col("text").str.extract_groups(FORMATS["conda"]).struct.field("pkg"),
        ).str.to_lowercase().alias("pkg"),
        pl.coalesce(
            pl.col("text").str.extract(FORMATS["pip"], 2), pl.col("text").str.extract(FORMATS["conda"], 2)
        ).alias("ver"),
    )
    component = pl.col("pkg").replace_strict(_FROM_PACKAGES, default=None)
    nccl = rows.filter(pl.col("pkg").str.contains(r"^nvidia-nccl-cu\d+$"))
    used = work.filter(pl.col("_kind") == "nccl").with_columns(pl.col("text").str.extract(FORMATS["nccl"], 1).alias("ver"))
    listed = du.concat_facts([
        du.facts_from_frame(used, pl.lit("nccl_version"), pl.col("ver")),
        du.facts_from_frame(nccl, pl.lit("nccl_version"), pl.col("ver")),
        du.facts_from_frame(rows, pl.format("pip.{}", "pkg"), pl.col("ver")),
    ])
    return listed, du.facts_from_frame(rows, component, pl.col("ver"))


def _gpu_facts(work: pl.DataFrame) -> pl.DataFrame:
    """One gpu_model per `GPU n:` line (own line, or on the `GPU models…:` line for one GPU)."""
    own = work.filter(pl.col("_kind") == "gpu").with_columns(
        pl.col("text").str.extract_groups(FORMATS["gpu"]).alias("g")
    ).unnest("g")
    inline = work.filter(pl.col("_key").str.to_lowercase() == "gpu models and configuration").with_columns(
        pl.col("_val").fill_null("").str.extract_groups(FORMATS["gpu"]).alias("g")
    ).unnest("g")
    gpus = pl.concat([own.select("idx", "model", "line_no"), inline.select("idx", "model", "line_no")])
    gpus = gpus.filter(pl.col("model").is_not_null()).unique("idx", keep="first", maintain_order=True)
    if gpus.height == 0:
        return du.empty_facts()
    count = du.facts_from_rows([("gpu_count", str(gpus.height), du.first_line_no(gpus))])
    return du.concat_facts([du.facts_from_frame(gpus, pl.lit("gpu_model"), pl.col("model")), count])


def _env_facts(work: pl.DataFrame) -> pl.DataFrame:
    env = work.filter(pl.col("_kind") == "env").with_columns(
        pl.col("text").str.extract_groups(FORMATS["env"]).alias("g")
    ).unnest("g")
    visible = env.filter(pl.col("name") == "CUDA_VISIBLE_DEVICES")
    return du.concat_facts([
        du.facts_from_frame(env, pl.format("env.{}", "name"), pl.col("value")),
        du.facts_from_frame(visible, pl.lit("cuda_visible_devices"), pl.col("value")),
    ])


def _topology_facts(work: pl.DataFrame) -> pl.DataFrame:
    block = work.filter(pl.col("_kind") == "topo")
    summary = du.topology_summary(du.topology_pairs(block), block)
    if summary is None:
        return du.empty_facts()
    return du.facts_from_rows([("topology", summary, du.first_line_no(block))])

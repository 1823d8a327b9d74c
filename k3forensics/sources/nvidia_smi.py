"""nvidia-smi output: the default table, `-q`, `--query-gpu … --format=csv`, `topo -m`, `-L`.

One file may hold several of these (a collection script often runs them in a row) and several
snapshots of one (`nvidia-smi -l`, `watch`). A snapshot time (the table's date line, `-q`
Timestamp) applies to the lines below it until the next one; it is local time without a zone.
"""

from __future__ import annotations

import re

import polars as pl

from k3forensics.sources import _doc_util as du
from k3forensics.sources import collect_env
from k3forensics.sources.base import ParseContext, ParseResult

NAME = "nvidia_smi"

# Line formats, first match wins (order matters: a table row also contains `:`).
FORMATS: dict[str, str] = {
    "date": rf"^\s*{du.CTIME_PATTERN}\s*$",
    "header": r"NVIDIA-SMI\s+(?P<smi>\S+)\s+Driver Version:\s*(?P<driver>\S+)\s+CUDA Version:\s*(?P<cuda>[^\s|]+)",
    "gpu_row": r"^\|\s*(?P<idx>\d+)\s+(?P<name>.+?)\s+(?:On|Off|N/A|WDDM|TCC)\s*\|\s*"
    r"(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+\S+\s*\|\s*(?P<ecc>\S+)\s*\|",
    "gpu_stats": r"^\|\s*(?P<fan>\d+%|N/A|ERR!)\s+(?P<temp>\d+C|N/A|ERR!)\s+(?P<perf>P\d+|N/A|ERR!)\s+"
    r"(?:(?P<pwr>\S+?)\s*/\s*\S+)?\s*\|\s*(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB\s*\|\s*"
    r"(?P<util>\d+%|N/A|ERR!)\s+.*\|",
    "process": r"^\|\s+(?P<gpu>\d+|N/A)\s+(?:\S+\s+\S+\s+)?(?P<pid>\d+)\s+(?:C\+G|C|G|M\+C|M)\s+"
    r"(?P<pname>.+?)\s+(?P<mem>\d+)MiB\s*\|",
    "no_process": r"^\|\s+No running processes found\s*\|",
    "failure": r"^\s*(?:NVIDIA-SMI has failed|Failed to initialize NVML|Unable to determine the device handle"
    r"|No devices were found|GPU is lost)",
    "gpu_list": r"^GPU (?P<idx>\d+): (?P<name>.+?) \(UUID: (?P<uuid>GPU-[0-9a-fA-F-]+)\)",
    "topo": du.TOPO_HEADER + "|" + du.TOPO_ROW,
    "q_banner": r"^=+NVSMI LOG=+\s*$",
    "table_line": r"^[|+]",
}

_CSV_FIELD = r"[a-z_]+(?:\.[a-z_]+)*(?: \[[^\]]*\])?"
_CSV_HEADER = rf"^\s*{_CSV_FIELD}(?:\s*,\s*{_CSV_FIELD})+\s*$"
# Query names that make a comma-separated header an nvidia-smi one.
_CSV_KNOWN = r"\b(?:memory\.used|memory\.total|utilization\.gpu|pci\.bus_id|driver_version|temperature\.gpu|power\.draw|gpu_bus_id|used_gpu_memory|index, name)\b"
_CSV_NOHEADER_ROW = r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}, "
# `-q` pads keys, so the separator always has a space before the colon; a key without one is a
# section header (`FB Memory Usage`, `GPU 00000000:18:00.0`).
_Q_KV = r"^(?P<indent> *)(?P<key>[A-Za-z].*?)(?:\s+:(?:\s+(?P<val>.*?))?)?\s*$"

# Columns of a CSV query that are identities (labels or facts), never samples.
_CSV_IDENTITY = {"index", "name", "uuid", "pci.bus_id", "driver_version", "timestamp", "serial", "gpu_name",
                 "gpu_bus_id", "gpu_uuid", "pid", "process_name", "vbios_version", "pstate", "compute_mode"}
_UNITS = {"%": "pct", "MiB": "mib", "W": "w", "MHz": "mhz", "C": "c"}

# `-q` fields kept as samples under the names the table and CSV use.
_Q_SAMPLES = {
    "fb memory usage/total": "nvidia_smi_memory_total_mib",
    "fb memory usage/used": "nvidia_smi_memory_used_mib",
    "utilization/gpu": "nvidia_smi_utilization_gpu_pct",
    "temperature/gpu current temp": "nvidia_smi_temperature_gpu",
    "gpu power readings/power draw": "nvidia_smi_power_draw_w",
    "gpu power readings/instantaneous power draw": "nvidia_smi_power_draw_w",
    "power readings/power draw": "nvidia_smi_power_draw_w",
}
_Q_COUNTERS = r"^(?:ecc errors|retired pages|remapped rows)/"


def detect(head: str) -> bool:
    head = re.sub(r"\x1b\[[0-9;]*m", "", head)  # `topo -m` underlines its header on a terminal
    if du.looks_like_log(head) or collect_env.detect(head):
        return False
    flags = re.MULTILINE
    if re.search(r"^\|\s*NVIDIA-SMI \S+\s+Driver Version:|^=+NVSMI LOG=+\s*$", head, flags):
        return True
    if re.search(r"^GPU \d+: .+\(UUID: GPU-|^\s*GPU0\s+(?:GPU1|NIC0|CPU Affinity)", head, flags):
        return True
    lines = du.first_lines(head, 3)
    if not lines:
        return False
    first = lines[0]
    if re.search(FORMATS["failure"], first) or re.search(_CSV_NOHEADER_ROW, first):
        return True
    return bool(re.search(_CSV_HEADER, first) and re.search(_CSV_KNOWN, first))


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    work = _classify(lines)
    work = work.with_columns(_snapshot_time().alias("_ts"))
    q_facts, q_samples, work = _query_section(work)
    csv_facts, csv_samples, csv_ts, warnings = _csv_blocks(work)
    work = work.join(csv_ts, on="line_no", how="left", maintain_order="left")
    facts = du.concat_facts([_table_facts(work), q_facts, csv_facts, _list_facts(work), _topo_facts(work)])
    facts = du.dedupe_facts(facts, ["driver_version", "driver_cuda", "gpu_count"])
    samples = du.concat_samples([_table_samples(work), q_samples, csv_samples])
    ts = pl.coalesce("_csv_ts", "_ts")
    quality = pl.when(ts.is_null()).then(pl.lit("missing")).otherwise(pl.lit("zoneless"))
    events = du.build_events(
        lines,
        NAME,
        work=work,
        # table borders and headings are furniture, not records
        parsed=(pl.col("_kind").is_not_null() & (pl.col("_kind") != "table_line")) | pl.col("_csv") | pl.col("_qkv"),
        ts=ts,
        ts_quality=quality,
        level=pl.when(pl.col("_kind") == "failure").then(pl.lit("ERROR")),
    )
    return ParseResult(events=events, samples=samples, facts=facts, warnings=warnings)


def _classify(lines: pl.DataFrame) -> pl.DataFrame:
    kind = pl.lit(None, pl.Utf8)
    for name, pattern in reversed(FORMATS.items()):
        kind = pl.when(pl.col("text").str.contains(pattern)).then(pl.lit(name)).otherwise(kind)
    return lines.with_columns(kind.alias("_kind"))


def _snapshot_time() -> pl.Expr:
    """The latest date line / `-q` Timestamp above each line; a new `-q` banner clears it."""
    stamp = (
        pl.when(pl.col("_kind") == "date").then(pl.col("text"))
        .when(pl.col("text").str.contains(r"^Timestamp\s*:")).then(pl.col("text").str.extract(r":\s*(.*)$", 1))
        .when(pl.col("_kind") == "q_banner").then(pl.lit(""))
    )
    ts, _ = du.parse_time(stamp.forward_fill())  # local time without a zone: always zoneless
    return ts


def _table_facts(work: pl.DataFrame) -> pl.DataFrame:
    header = work.filter(pl.col("_kind") == "header").with_columns(
        pl.col("text").str.extract_groups(FORMATS["header"]).alias("g")
    ).unnest("g")
    gpus = _gpu_rows(work).unique("idx", keep="first", maintain_order=True)
    count = du.facts_from_frame(gpus.head(1), pl.lit("gpu_count"), pl.lit(str(gpus.height)))
    procs = work.filter(pl.col("_kind") == "process").with_columns(
        pl.col("text").str.extract_groups(FORMATS["process"]).alias("g")
    ).unnest("g")
    return du.concat_facts([
        du.facts_from_frame(header, pl.lit("driver_version"), pl.col("driver")),
        du.facts_from_frame(header, pl.lit("driver_cuda"), pl.col("cuda")),
        du.facts_from_frame(gpus, pl.lit("gpu_model"), pl.col("name")),
        count,
        du.facts_from_frame(gpus, pl.lit("gpu_bus_id"), pl.format("gpu={} bus_id={}", "idx", "bus")),
        du.facts_from_frame(
            _gpu_stats(work).unique("total", keep="first", maintain_order=True),
            pl.lit("gpu_memory_total_mib"), pl.col("total"),
        ),
        du.facts_from_frame(
            procs, pl.lit("gpu_process"), pl.format("gpu={} pid={} name={} used_mib={}", "gpu", "pid", "pname", "mem")
        ),
        du.facts_from_frame(work.filter(pl.col("_kind") == "failure"), pl.lit("nvidia_smi_error"), pl.col("text")),
    ])


def _gpu_rows(work: pl.DataFrame) -> pl.DataFrame:
    rows = work.filter(pl.col("_kind") == "gpu_row")
    return rows.with_columns(pl.col("text").str.extract_groups(FORMATS["gpu_row"]).alias("g")).unnest("g")


def _gpu_stats(work: pl.DataFrame) -> pl.DataFrame:
    """Second table row of each GPU, with the index of the first row just above it."""
    idx = pl.when(pl.col("_kind") == "gpu_row").then(pl.col("text").str.extract(FORMATS["gpu_row"], 1))
    with_idx = work.with_columns(idx.forward_fill().alias("idx"))
    stats = with_idx.filter((pl.col("_kind") == "gpu_stats") & pl.col("idx").is_not_null())
    return stats.with_columns(pl.col("text").str.extract_groups(FORMATS["gpu_stats"]).alias("g")).unnest("g")


def _table_samples(work: pl.DataFrame) -> pl.DataFrame:
    stats = _gpu_stats(work)
    values = {
        "nvidia_smi_memory_used_mib": pl.col("used"),
        "nvidia_smi_memory_total_mib": pl.col("total"),
        "nvidia_smi_utilization_gpu_pct": pl.col("util"),
        "nvidia_smi_temperature_gpu": pl.col("temp"),
        "nvidia_smi_power_draw_w": pl.col("pwr"),
    }
    parts = [
        stats.select(
            pl.lit(metric).alias("metric"),
            du.gpu_labels(pl.col("idx")).alias("labels"),
            pl.col("_ts").alias("ts"),
            du.leading_number(value).alias("value"),
            "line_no",
        ).filter(pl.col("value").is_not_null())
        for metric, value in values.items()
    ]
    return du.concat_samples(parts)


def _query_section(work: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """`nvidia-smi -q`: facts and samples; marks its `Key : Value` lines as parsed (`_qkv`)."""
    has_q = work.select((pl.col("_kind") == "q_banner").any() | pl.col("text").str.contains(r"^Attached GPUs\s*:").any())
    if not has_q.item():
        return du.empty_facts(), du.empty_samples(), work.with_columns(pl.lit(False).alias("_qkv"))
    kv = pl.col("text").str.extract_groups(_Q_KV)
    q = work.with_columns(
        pl.when(pl.col("_kind").is_null()).then(kv).alias("g")
    ).unnest("g").with_columns((pl.col("indent").str.len_chars() // 4).alias("level"))
    q = du.indent_parents(q, "key", "level", 4)
    gpu_head = pl.col("key").str.contains(r"^GPU [0-9A-Fa-f]{4,8}:") & (pl.col("level") == 0)
    q = q.with_columns(
        pl.when(pl.col("_kind") == "q_banner").then(pl.lit(0)).when(gpu_head).then(pl.lit(1)).otherwise(0).alias("_g"),
        (pl.col("_kind") == "q_banner").cum_sum().alias("_snap"),
    ).with_columns(
        (pl.col("_g").cum_sum().over("_snap") - 1).alias("gpu"),
        pl.col("parent").str.replace(r"^GPU [^/]*/?", "").alias("rel"),
        pl.col("parent").str.starts_with("GPU ").alias("in_gpu"),
    ).with_columns(
        pl.when(pl.col("rel") == "").then(pl.col("key")).otherwise(pl.format("{}/{}", "rel", "key"))
        .str.to_lowercase().alias("path")
    )
    facts = du.concat_facts([_q_top_facts(q), _q_gpu_facts(q.filter(pl.col("in_gpu")))])
    samples = _q_samples(q.filter(pl.col("in_gpu")))
    return facts, samples, work.with_columns(q.get_column("key").is_not_null().alias("_qkv"))


def _q_top_facts(q: pl.DataFrame) -> pl.DataFrame:
    top = q.filter((pl.col("parent") == "") & pl.col("val").is_not_null())
    names = {"driver version": "driver_version", "cuda version": "driver_cuda", "attached gpus": "gpu_count"}
    key = pl.col("key").str.to_lowercase().replace_strict(names, default=None)
    return du.facts_from_frame(top.filter(~pl.col("val").is_in(["Not Found", "N/A"])), key, pl.col("val"))


def _q_gpu_facts(q: pl.DataFrame) -> pl.DataFrame:
    def field(path: str) -> pl.DataFrame:
        return q.filter((pl.col("path") == path) & pl.col("val").is_not_null())

    flagged = q.filter(
        pl.col("path").is_in(["remapped rows/pending", "remapped rows/remapping failure occurred"])
        & (pl.col("val") == "Yes")
    )
    fabric = q.filter(pl.col("path").is_in(["fabric/state", "fabric/status"]) & (pl.col("val") != "N/A"))
    return du.concat_facts([
        du.facts_from_frame(field("product name"), pl.lit("gpu_model"), pl.col("val")),
        du.facts_from_frame(field("gpu uuid"), pl.lit("gpu_uuid"), pl.format("gpu={} uuid={}", "gpu", "val")),
        du.facts_from_frame(field("fb memory usage/total").unique("val", keep="first", maintain_order=True),
                            pl.lit("gpu_memory_total_mib"), du.mib(pl.col("val"))),
        du.facts_from_frame(field("pci/bus id"), pl.lit("gpu_bus_id"), pl.format("gpu={} bus_id={}", "gpu", "val")),
        du.facts_from_frame(flagged, pl.lit("gpu_remap_pending"), pl.format("gpu={} {}={}", "gpu", "key", "val")),
        du.facts_from_frame(fabric, pl.lit("gpu_fabric"), pl.format("gpu={} {}={}", "gpu", "key", "val")),
    ])


def _q_samples(q: pl.DataFrame) -> pl.DataFrame:
    value = du.leading_number(pl.col("val"))
    named = pl.col("path").replace_strict(_Q_SAMPLES, default=None)
    counter = pl.when(pl.col("path").str.contains(_Q_COUNTERS)).then(pl.format("nvidia_smi_{}", du.slug(pl.col("path"))))
    metric = pl.coalesce(named, counter)
    rows = q.filter(pl.col("val").is_not_null()).select(
        metric.alias("metric"), du.gpu_labels(pl.col("gpu")).alias("labels"), pl.col("_ts").alias("ts"),
        value.alias("value"), "line_no",
    )
    return rows.filter(pl.col("metric").is_not_null() & pl.col("value").is_not_null())


def _list_facts(work: pl.DataFrame) -> pl.DataFrame:
    rows = work.filter(pl.col("_kind") == "gpu_list").with_columns(
        pl.col("text").str.extract_groups(FORMATS["gpu_list"]).alias("g")
    ).unnest("g").unique("idx", keep="first", maintain_order=True)
    return du.concat_facts([
        du.facts_from_frame(rows, pl.lit("gpu_model"), pl.col("name")),
        du.facts_from_frame(rows.head(1), pl.lit("gpu_count"), pl.lit(str(rows.height))),
        du.facts_from_frame(rows, pl.lit("gpu_uuid"), pl.format("gpu={} uuid={}", "idx", "uuid")),
    ])


def _topo_facts(work: pl.DataFrame) -> pl.DataFrame:
    block = work.filter(pl.col("_kind") == "topo")
    pairs = du.topology_pairs(block)
    summary = du.topology_summary(pairs, block)
    if summary is None:
        return du.empty_facts()
    line_no = du.first_line_no(block.filter(pl.col("text").str.contains(du.TOPO_ROW)))
    gpu_pairs = pairs.filter(pl.col("b").str.starts_with("GPU") & (pl.col("a") < pl.col("b")))
    return du.concat_facts([
        du.facts_from_rows([("topology", summary, line_no)]),
        du.facts_from_frame(gpu_pairs, pl.lit("topology_link"), pl.format("{}-{}={}", "a", "b", "link")),
    ])


# ---------------------------------------------------------------- CSV queries


def _csv_blocks(work: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, list[str]]:
    """`--query-gpu` / `--query-compute-apps` CSV: a header line opens a block of rows."""
    header = pl.col("text").str.contains(_CSV_HEADER) & pl.col("text").str.contains(_CSV_KNOWN)
    nohead = pl.col("text").str.contains(_CSV_NOHEADER_ROW)
    blocks = work.with_columns(
        header.alias("_hdr"),
        pl.when(header).then(pl.col("line_no")).when(pl.col("_kind").is_not_null() & ~nohead).then(pl.lit(0))
        .forward_fill().alias("_blk"),
    )
    facts, samples, stamps, warnings = [], [], [], []
    for (blk,), rows in blocks.filter(pl.col("_kind").is_null() | nohead).group_by("_blk", maintain_order=True):
        names = _csv_names(rows, blk)
        if names is None:
            continue
        split = rows.with_columns(pl.col("text").str.split(",").alias("_cells"))
        data = split.filter(~pl.col("_hdr") & (pl.col("_cells").list.len() == len(names)))
        if data.height == 0:
            continue
        if blk is None:
            warnings.append(f"nvidia-smi CSV without a header line: {len(names)} columns named by position")
        cells = data.with_columns(
            [pl.col("_cells").list.get(i).str.strip_chars().alias(f"c{i}") for i in range(len(names))]
        )
        f, s, t = _csv_frames(cells, names)
        facts.append(f)
        samples.append(s)
        stamps.append(t)
    marked = pl.concat(stamps) if stamps else pl.DataFrame(schema={"line_no": pl.Int64, "_csv_ts": du.UTC_US})
    headers = blocks.filter(pl.col("_hdr")).select("line_no", pl.lit(None, du.UTC_US).alias("_csv_ts"))
    marked = pl.concat([marked, headers]).with_columns(pl.lit(True).alias("_csv"))
    marked = work.select("line_no").join(marked, on="line_no", how="left", maintain_order="left")
    marked = marked.with_columns(pl.col("_csv").fill_null(False))
    return du.concat_facts(facts), du.concat_samples(samples), marked, warnings


def _csv_names(rows: pl.DataFrame, blk: int | None) -> list[str] | None:
    """Column names of a block: from its header, or by position when it has none."""
    if blk is not None and blk > 0:
        header = rows.filter(pl.col("line_no") == blk)["text"].to_list()
        return [h.strip() for h in header[0].split(",")] if header else None
    if blk == 0:
        return None
    first = rows["text"].to_list()[:1]
    if not first or not re.search(_CSV_NOHEADER_ROW, first[0]):
        return None
    cells = [c.strip() for c in first[0].split(",")]
    names = ["timestamp"]
    for i, cell in enumerate(cells[1:], start=1):
        unit = re.match(r"^[-+\d.]+\s*(\S*)$", cell)
        if i == 1 and re.match(r"^\d{1,2}$", cell):
            names.append("index")  # queries put the GPU index right after the time
        elif re.match(r"^(?:NVIDIA|Tesla|Quadro)\b", cell):
            names.append("name")
        else:
            names.append(f"col{i}" + (f" [{unit.group(1)}]" if unit and unit.group(1) else ""))
    return names


def _csv_frames(cells: pl.DataFrame, names: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    base = [re.sub(r"\s*\[.*\]$", "", n) for n in names]
    col = {b: f"c{i}" for i, b in enumerate(base)}
    ts_expr, _ = du.parse_time(pl.col(col["timestamp"])) if "timestamp" in col else (pl.lit(None, du.UTC_US), None)
    gpu = pl.col(col["index"]) if "index" in col else pl.lit(None, pl.Utf8)
    cells = cells.with_columns(ts_expr.alias("_row_ts"), gpu.alias("_gpu"))
    samples = []
    for i, (name, b) in enumerate(zip(names, base, strict=True)):
        if b in _CSV_IDENTITY or "pid" in col:  # a process list has no per-GPU series
            continue
        unit = re.search(r"\[(.*)\]$", name)
        metric = "nvidia_smi_" + re.sub(r"[^a-z0-9]+", "_", b.lower()).strip("_")
        if unit:
            metric += "_" + _UNITS.get(unit.group(1), re.sub(r"[^a-z0-9]+", "_", unit.group(1).lower()))
        labels = pl.when(pl.col("_gpu").is_not_null()).then(du.gpu_labels(pl.col("_gpu"))).otherwise(pl.lit("{}"))
        samples.append(cells.select(
            pl.lit(metric).alias("metric"), labels.alias("labels"), pl.col("_row_ts").alias("ts"),
            du.leading_number(pl.col(f"c{i}")).alias("value"), "line_no",
        ).filter(pl.col("value").is_not_null()))
    stamps = cells.select("line_no", pl.col("_row_ts").alias("_csv_ts"))
    return _csv_facts(cells, col), du.concat_samples(samples), stamps


def _csv_facts(cells: pl.DataFrame, col: dict[str, str]) -> pl.DataFrame:
    parts = []
    by_gpu = cells.unique("_gpu", keep="first", maintain_order=True) if "index" in col else cells.head(1)
    if "index" in col:
        parts.append(du.facts_from_frame(by_gpu.head(1), pl.lit("gpu_count"), pl.lit(str(by_gpu.height))))
    for field, key in (("name", "gpu_model"), ("driver_version", "driver_version")):
        if field in col:
            parts.append(du.facts_from_frame(by_gpu, pl.lit(key), pl.col(col[field])))
    if "memory.total" in col:
        totals = cells.with_columns(du.mib(pl.col(col["memory.total"])).alias("_t"))
        parts.append(du.facts_from_frame(totals.unique("_t", keep="first", maintain_order=True),
                                         pl.lit("gpu_memory_total_mib"), pl.col("_t")))
    if "pid" in col:
        gpu_col = col.get("gpu_bus_id", col.get("gpu_uuid"))
        gpu = pl.col(gpu_col) if gpu_col else pl.lit("?")
        name = pl.col(col["process_name"]) if "process_name" in col else pl.lit("?")
        used = du.mib(pl.col(col["used_gpu_memory"])) if "used_gpu_memory" in col else pl.lit("?")
        parts.append(du.facts_from_frame(
            cells, pl.lit("gpu_process"), pl.format("gpu={} pid={} name={} used_mib={}", gpu, pl.col(col["pid"]), name, used)
        ))
    return du.concat_facts(parts)

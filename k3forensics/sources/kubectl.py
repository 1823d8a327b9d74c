"""kubectl output: `describe pod`, `get events`, `get pods`.

Relative ages (`4m43s`, `2m (x15 over 10m)`) are not timestamps; absolute times
(`Started: Wed, 14 Aug 2024 10:00:03 +0000`, ISO columns of custom output) are.
Facts (describe): pod, k8s_namespace, k8s_node, pod_phase, image, termination_reason,
waiting_reason, exit_code, restart_count, terminated_at, k8s_limit.<resource>,
k8s_request.<resource>, env.<NAME>, and launch_command / arg.<name> read from the container's
Command and Args. Facts (get pods): pod_status `<pod> <STATUS> restarts=<n>`.
"""

from __future__ import annotations

import re

import polars as pl

from k3forensics.sources import _doc_util as du
from k3forensics.sources import launch
from k3forensics.sources.base import ParseContext, ParseResult

NAME = "kubectl"

# `Key:   value` with two-space nesting; a key ends at the first colon followed by a space.
DESCRIBE_KV = r"^(?P<indent> *)(?P<key>[A-Za-z][\w .\-/()]*?):(?:\s+(?P<val>.*?))?\s*$"
EVENT_ROW = r"^\s+(?P<type>Normal|Warning)\s{2,}(?P<reason>\S+)\s{2,}(?P<age>.+?)\s{2,}(?P<from>\S.*?)\s{2,}(?P<msg>.*)$"
EVENTS_HEADER = r"^(?:NAMESPACE\s+)?LAST SEEN\s+(?:TYPE\s+REASON\s+OBJECT|FIRST SEEN\s+COUNT\s+NAME)\b"
PODS_HEADER = r"^(?:NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\b"

_FAILED = ["OOMKilled", "Error", "ContainerCannotRun", "StartError", "Evicted", "DeadlineExceeded"]
_STUCK = ["CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "RunContainerError",
          "Init:CrashLoopBackOff", "Init:Error", "Pending"]


def detect(head: str) -> bool:
    if du.looks_like_log(head):
        return False
    lines = du.first_lines(head, 3)
    if lines and (re.search(EVENTS_HEADER, lines[0]) or re.search(PODS_HEADER, lines[0])):
        return True
    has = [re.search(p, head, re.MULTILINE) is not None
           for p in (r"^Name:\s+\S", r"^Namespace:\s+\S", r"^(?:Node|Containers|Start Time|Status):")]
    return all(has)


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    describe = _describe(lines)
    tables, table_facts = _tables(lines)
    work = describe.join(tables, on="line_no", how="left", maintain_order="left")
    facts = du.concat_facts([_describe_facts(describe), table_facts])
    ts, quality = du.parse_time(pl.coalesce("_table_time", "_time"))
    events = du.build_events(
        lines,
        NAME,
        work=work,
        parsed=pl.col("_event").is_not_null() | pl.col("_table_row").fill_null(False) | pl.col("key").is_not_null()
        | pl.col("parent").str.contains(r"/(?:Command|Args)$"),
        ts=ts,
        ts_quality=quality,
        level=pl.coalesce("_table_level", "_level"),
        message=pl.coalesce("_table_msg", "_event_msg", "text"),
        process=pl.coalesce("_table_process", "_container", "_pod"),
        attrs=pl.coalesce("_table_attrs", "_event_attrs"),
    )
    return ParseResult(events=events, facts=facts)


# ---------------------------------------------------------------- describe pod


def _describe(lines: pl.DataFrame) -> pl.DataFrame:
    event = pl.col("text").str.extract_groups(EVENT_ROW)
    work = lines.with_columns(
        pl.when(event.struct.field("type").is_not_null()).then(event).alias("_event"),
    ).with_columns(
        pl.when(pl.col("_event").is_null() & ~pl.col("text").str.contains(EVENTS_HEADER + "|" + PODS_HEADER))
        .then(pl.col("text").str.extract_groups(DESCRIBE_KV)).alias("g")
    ).unnest("g").with_columns((pl.col("text").str.extract(r"^( *)", 1).str.len_chars() // 2).alias("level"))
    work = du.indent_parents(work, "key", "level", 5)
    parts = pl.col("parent").str.split("/")
    in_container = parts.list.get(0, null_on_oob=True).is_in(["Containers", "Init Containers"])
    state = pl.when(pl.col("key").is_in(["State", "Last State"]) & in_container).then(
        pl.format("{}={}", "key", "val")
    ).when(pl.col("key").is_not_null() & (pl.col("level") <= 2)).then(pl.lit(""))
    return work.with_columns(
        pl.when(in_container).then(parts.list.get(1, null_on_oob=True)).alias("_container"),
        pl.when((pl.col("key") == "Name") & (pl.col("level") == 0)).then(pl.col("val")).forward_fill().alias("_pod"),
        state.forward_fill().alias("_state"),
        pl.when(pl.col("val").str.contains(r"^\w{3}, \d{1,2} \w{3} \d{4} \d\d:\d\d:\d\d [+-]\d{4}$"))
        .then(pl.col("val")).alias("_time"),
    ).with_columns(_describe_level().alias("_level"), *_event_columns())


def _describe_level() -> pl.Expr:
    reason = pl.col("key") == "Reason"
    exit_code = (pl.col("key") == "Exit Code") & (pl.col("val") != "0")
    event_type = pl.col("_event").struct.field("type")
    return (
        pl.when(event_type == "Warning").then(pl.lit("WARNING"))
        .when(event_type == "Normal").then(pl.lit("INFO"))
        .when(reason & pl.col("val").is_in(_FAILED)).then(pl.lit("ERROR"))
        .when(reason & pl.col("val").is_in(_STUCK)).then(pl.lit("WARNING"))
        .when(exit_code).then(pl.lit("ERROR"))
    )


def _event_columns() -> list[pl.Expr]:
    ev = pl.col("_event")
    return [
        pl.when(ev.is_not_null()).then(
            pl.format("{}: {}", ev.struct.field("reason"), ev.struct.field("msg"))
        ).alias("_event_msg"),
        pl.when(ev.is_not_null()).then(du.json_object({
            "reason": ev.struct.field("reason"), "age": ev.struct.field("age"), "from": ev.struct.field("from"),
        })).alias("_event_attrs"),
    ]


def _describe_facts(work: pl.DataFrame) -> pl.DataFrame:
    kv = work.filter(pl.col("key").is_not_null() & pl.col("val").is_not_null())
    top = kv.filter(pl.col("level") == 0)

    def top_fact(key: str, fact: str, value: pl.Expr | None = None) -> pl.DataFrame:
        rows = top.filter(pl.col("key") == key).head(1)
        return du.facts_from_frame(rows, pl.lit(fact), pl.col("val") if value is None else value)

    boxed = kv.filter(pl.col("_container").is_not_null())
    main = boxed.filter(pl.col("parent").str.starts_with("Containers/"))
    # an init container that completed is the normal case, not a termination worth a fact
    failed_init = pl.col("parent").str.starts_with("Init Containers/") & ~pl.col("val").is_in(["Completed", "0"])
    ended = boxed.filter(pl.col("parent").str.starts_with("Containers/") | failed_init)
    reasons = ended.filter((pl.col("key") == "Reason") & (pl.col("level") == 3))
    terminated = pl.col("_state").str.ends_with("=Terminated")
    limits = boxed.filter(pl.col("parent").str.contains(r"/(?:Limits|Requests)$"))
    env = main.filter(pl.col("parent").str.ends_with("/Environment"))
    return du.concat_facts([
        top_fact("Name", "pod"),
        top_fact("Namespace", "k8s_namespace"),
        top_fact("Node", "k8s_node", pl.col("val").str.replace(r"/.*$", "")),
        top_fact("Status", "pod_phase"),
        du.facts_from_frame(top.filter(pl.col("key") == "Reason"), pl.lit("termination_reason"), pl.col("val")),
        du.facts_from_frame(main.filter(pl.col("key") == "Image"), pl.lit("image"), pl.col("val")),
        du.facts_from_frame(reasons.filter(terminated), pl.lit("termination_reason"), pl.col("val")),
        du.facts_from_frame(reasons.filter(pl.col("_state").str.ends_with("=Waiting")), pl.lit("waiting_reason"),
                            pl.col("val")),
        du.facts_from_frame(ended.filter(pl.col("key") == "Exit Code"), pl.lit("exit_code"), pl.col("val")),
        du.facts_from_frame(main.filter((pl.col("key") == "Finished") & terminated), pl.lit("terminated_at"),
                            pl.col("val")),
        du.facts_from_frame(env, pl.format("env.{}", "key"), pl.col("val")),
        _launch_facts(work),
        du.facts_from_frame(main.filter(pl.col("key") == "Restart Count"), pl.lit("restart_count"), pl.col("val")),
        du.facts_from_frame(
            limits,
            pl.format("k8s_{}.{}", pl.col("parent").str.extract(r"/(Limits|Requests)$", 1).str.to_lowercase()
                      .replace_strict({"limits": "limit", "requests": "request"}), "key"),
            pl.col("val"),
        ),
    ])


def _launch_facts(work: pl.DataFrame) -> pl.DataFrame:
    """`Command:` / `Args:` lists of each container, read as the launch command they are."""
    words = work.filter(
        pl.col("parent").str.contains(r"^Containers/[^/]+/(?:Command|Args)$") & pl.col("key").is_null()
    ).with_columns(pl.col("text").str.strip_chars().alias("word"))
    parts = []
    for _, rows in words.group_by("_container", maintain_order=True):  # one group per container
        tokens = rows.get_column("word").to_list()
        found = launch.parse_command(tokens) or launch.Launch(tokens, args=launch.vllm_args(tokens, positional_model=True))
        if found.args:
            parts.append(launch.launch_facts(found, du.first_line_no(rows), launch.flag_lines(rows)))
    return du.concat_facts(parts)


# ---------------------------------------------------------------- get events / get pods tables


def _tables(lines: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows of `get events` / `get pods` tables, cut at the header's column positions."""
    headers = lines.filter(pl.col("text").str.contains(EVENTS_HEADER + "|" + PODS_HEADER))
    blank = lines.select("line_no").with_columns(
        pl.lit(None, pl.Boolean).alias("_table_row"), pl.lit(None, pl.Utf8).alias("_table_time"),
        pl.lit(None, pl.Utf8).alias("_table_level"), pl.lit(None, pl.Utf8).alias("_table_msg"),
        pl.lit(None, pl.Utf8).alias("_table_process"), pl.lit(None, pl.Utf8).alias("_table_attrs"),
    )
    if headers.height == 0:
        return blank, du.empty_facts()
    block = (
        pl.when(pl.col("text").str.contains(EVENTS_HEADER + "|" + PODS_HEADER)).then(pl.col("line_no"))
        .when(pl.col("text").str.strip_chars() == "").then(pl.lit(0))
    )
    grouped = lines.with_columns(block.forward_fill().alias("_block"))
    parts, facts = [], []
    for line_no, header in headers.select("line_no", "text").iter_rows():  # one header per table
        rows = grouped.filter((pl.col("_block") == line_no) & (pl.col("line_no") != line_no))
        cells = _cut(rows, header)
        needed = {"LAST SEEN", "TYPE", "REASON", "MESSAGE"} if re.search(EVENTS_HEADER, header) else {"NAME", "STATUS"}
        if not needed <= set(cells.columns):  # titles run together: not a table kubectl printed
            continue
        if "TYPE" in needed:
            parts.append(_event_rows(cells))
        else:
            part, fact = _pod_rows(cells)
            parts.append(part)
            facts.append(fact)
    header_rows = headers.select("line_no", pl.lit(True).alias("_table_row"))
    found = pl.concat([blank.head(0), header_rows, *parts], how="diagonal_relaxed")
    table = blank.select("line_no").join(found, on="line_no", how="left", maintain_order="left")
    return table.with_columns(pl.col("_table_row").fill_null(False)), du.concat_facts(facts)


def _cut(rows: pl.DataFrame, header: str) -> pl.DataFrame:
    """One column per header title, sliced at the title's offset (kubectl pads with spaces)."""
    spans = [(m.group(0), m.start()) for m in re.finditer(r"\S+(?: \S+)*", header)]
    cols = []
    for i, (title, start) in enumerate(spans):
        length = spans[i + 1][1] - start if i + 1 < len(spans) else None
        cols.append(pl.col("text").str.slice(start, length).str.strip_chars().alias(title))
    return rows.select("line_no", *cols)


def _event_rows(cells: pl.DataFrame) -> pl.DataFrame:
    obj = "OBJECT" if "OBJECT" in cells.columns else "NAME"
    time_cols = [c for c in ("LAST SEEN", "FIRST SEEN") if c in cells.columns]
    message = pl.format("{}: {}", pl.col("REASON"), pl.col("MESSAGE"))
    attrs = {"reason": pl.col("REASON"), "object": pl.col(obj), "last_seen": pl.col("LAST SEEN")}
    return cells.filter(pl.col("TYPE").is_in(["Normal", "Warning"])).select(
        "line_no",
        pl.lit(True).alias("_table_row"),
        pl.coalesce([pl.col(c).str.extract(r"^(\d{4}-\d\d-\d\dT\S+)$", 1) for c in time_cols]).alias("_table_time"),
        pl.when(pl.col("TYPE") == "Warning").then(pl.lit("WARNING")).otherwise(pl.lit("INFO")).alias("_table_level"),
        message.alias("_table_msg"),
        pl.col(obj).str.replace(r"^[\w.]+/", "").alias("_table_process"),
        du.json_object(attrs).alias("_table_attrs"),
    )


def _pod_rows(cells: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = cells.filter(pl.col("NAME") != "")
    restarts = pl.col("RESTARTS").str.extract(r"^(\d+)", 1) if "RESTARTS" in cells.columns else pl.lit("?")
    bad = pl.col("STATUS").is_in(_FAILED) | pl.col("STATUS").is_in(_STUCK)
    events = rows.select(
        "line_no",
        pl.lit(True).alias("_table_row"),
        pl.when(bad).then(pl.lit("WARNING")).otherwise(pl.lit("INFO")).alias("_table_level"),
        pl.format("pod {} {} restarts={}", "NAME", "STATUS", restarts).alias("_table_msg"),
        pl.col("NAME").alias("_table_process"),
    )
    facts = du.facts_from_frame(rows, pl.lit("pod_status"), pl.format("{} {} restarts={}", "NAME", "STATUS", restarts))
    return events, facts

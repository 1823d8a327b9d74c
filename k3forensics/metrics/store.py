"""Samples from a live pull into a timeline database: a new one, or appended to an existing one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from k3forensics import __version__
from k3forensics.timeline.schema import EVENT_COLUMNS
from k3forensics.timeline.store import FACT_COLUMNS, SAMPLE_COLUMNS, open_timeline, write_timeline

PULL_TYPE = "prometheus_pull"


def save_pulled(db: Path, samples: pl.DataFrame, source: str, start: datetime, end: datetime) -> int:
    """Write `samples` (rows of one pull, `file` = `source`) into `db`; returns the rows written."""
    if not db.exists():
        _create(db, samples, source, start)
        return samples.height
    con = open_timeline(db, read_only=False)
    try:
        con.execute("BEGIN TRANSACTION")
        # a re-pull of the same server and window replaces the earlier rows
        con.execute("DELETE FROM samples WHERE file = ? AND ts BETWEEN ? AND ?", [source, start, end])
        if samples.height:
            arrow = samples.select(SAMPLE_COLUMNS).to_arrow()  # noqa: F841 - read by name below
            con.execute(f"INSERT INTO samples ({', '.join(SAMPLE_COLUMNS)}) SELECT {', '.join(SAMPLE_COLUMNS)} "
                        "FROM arrow")
        con.execute("DELETE FROM files WHERE file = ?", [source])
        con.execute("INSERT INTO files (file, node, detected_type, line_count, parsed_count, unparsed_count, "
                    "first_ts, last_ts) SELECT ?, NULL, ?, 0, 0, 0, min(ts), max(ts) FROM samples WHERE file = ?",
                    [source, PULL_TYPE, source])
        known = {r[0] for r in con.execute("SELECT node FROM nodes").fetchall()}
        for node, first, last in _node_spans(samples).iter_rows():
            if node not in known:
                con.execute("INSERT INTO nodes VALUES (?, 1, 0, ?, ?, [])", [node, first, last])
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [f"pulled:{source}", _now()])
        con.execute("COMMIT")
    finally:
        con.close()
    return samples.height


def _create(db: Path, samples: pl.DataFrame, source: str, start: datetime) -> None:
    spans = _node_spans(samples)
    files = pl.DataFrame({
        "file": [source], "node": [None], "detected_type": [PULL_TYPE], "line_count": [0], "parsed_count": [0],
        "unparsed_count": [0],
        "first_ts": [samples.get_column("ts").min() if samples.height else None],
        "last_ts": [samples.get_column("ts").max() if samples.height else None],
    }, schema_overrides={"node": pl.Utf8, "first_ts": pl.Datetime("us", "UTC"), "last_ts": pl.Datetime("us", "UTC")})
    nodes = spans.select("node", pl.lit(1).alias("file_count"), pl.lit(0).alias("line_count"), "first_ts", "last_ts")
    write_timeline(
        db, events=pl.DataFrame(schema={c: pl.Utf8 for c in EVENT_COLUMNS}), samples=samples,
        facts=pl.DataFrame(schema={c: pl.Utf8 for c in FACT_COLUMNS}), files=files, nodes=nodes,
        warnings=pl.DataFrame(schema={"file": pl.Utf8, "line_no": pl.Int64, "message": pl.Utf8}),
        meta={"bundle": source, "k3forensics_version": __version__, "reference_year": str(start.year),
              "ingested_at": _now(), f"pulled:{source}": _now()},
    )


def _node_spans(samples: pl.DataFrame) -> pl.DataFrame:
    if samples.height == 0:
        return pl.DataFrame(schema={"node": pl.Utf8, "first_ts": pl.Datetime("us", "UTC"),
                                    "last_ts": pl.Datetime("us", "UTC")})
    return samples.group_by("node").agg(pl.col("ts").min().alias("first_ts"), pl.col("ts").max().alias("last_ts"))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")

"""The `files` manifest and the `nodes` table of a timeline."""

from __future__ import annotations

import polars as pl

from k3forensics.decode import DecodedFile

# (file, node, decoded file, detected type, envelope) for each file of the bundle, in order.
FileRow = tuple[str, str, DecodedFile, str, str | None]


def files_manifest(rows: list[FileRow], per_file: pl.DataFrame) -> pl.DataFrame:
    """One row per file; `per_file` holds file, line_count, parsed_count, first_ts, last_ts."""
    frame = pl.DataFrame({
        "file": [r[0] for r in rows],
        "node": [r[1] for r in rows],
        "sha256": [r[2].sha256 for r in rows],
        "size_bytes": [r[2].size for r in rows],
        "detected_type": [r[3] for r in rows],
        "envelope": [r[4] for r in rows],
        "encoding": [r[2].encoding for r in rows],
        "encoding_problems": [list(r[2].problems) for r in rows],
    }, schema_overrides={"envelope": pl.Utf8, "encoding_problems": pl.List(pl.Utf8)})
    out = frame.join(per_file, on="file", how="left") if per_file.height else frame
    return out.with_columns(
        pl.col("line_count").fill_null(0).cast(pl.Int64) if "line_count" in out.columns else pl.lit(0, pl.Int64).alias("line_count"),
        pl.col("parsed_count").fill_null(0).cast(pl.Int64) if "parsed_count" in out.columns else pl.lit(0, pl.Int64).alias("parsed_count"),
    ).with_columns(
        (pl.col("line_count") - pl.col("parsed_count")).alias("unparsed_count"),
        *[pl.lit(None, pl.Datetime("us", "UTC")).alias(c) for c in ("first_ts", "last_ts") if c not in out.columns],
    ).select("file", "node", "sha256", "size_bytes", "detected_type", "envelope", "encoding", "encoding_problems",
             "line_count", "parsed_count", "unparsed_count", "first_ts", "last_ts")


def nodes_table(files: pl.DataFrame, hosts: pl.DataFrame) -> pl.DataFrame:
    """One row per node; `hosts` holds node, hostnames (sorted host names seen in its lines)."""
    table = files.group_by("node").agg(
        pl.len().alias("file_count"), pl.col("line_count").sum(),
        pl.col("first_ts").min(), pl.col("last_ts").max(),
    )
    return table.join(hosts, on="node", how="left").select(
        "node", pl.col("file_count").cast(pl.Int64), pl.col("line_count").cast(pl.Int64), "first_ts", "last_ts",
        pl.col("hostnames").fill_null([]),
    ).sort("node")

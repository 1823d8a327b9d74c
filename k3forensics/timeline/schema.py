"""DuckDB schema of the timeline; SCHEMA_VERSION is stored in `meta` and checked on open."""

from __future__ import annotations

SCHEMA_VERSION = 1

TIMELINE_TABLES = ("meta", "files", "nodes", "events", "samples", "facts", "warnings")

DDL = [
    "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    """CREATE TABLE files (
        file VARCHAR PRIMARY KEY, node VARCHAR, sha256 VARCHAR, size_bytes BIGINT, detected_type VARCHAR,
        envelope VARCHAR, encoding VARCHAR, encoding_problems VARCHAR[], line_count BIGINT,
        parsed_count BIGINT, unparsed_count BIGINT, first_ts TIMESTAMPTZ, last_ts TIMESTAMPTZ)""",
    "CREATE TABLE nodes (node VARCHAR PRIMARY KEY, file_count BIGINT, line_count BIGINT, first_ts TIMESTAMPTZ, last_ts TIMESTAMPTZ, hostnames VARCHAR[])",
    """CREATE TABLE events (
        seq BIGINT, file VARCHAR, line_no BIGINT, byte_offset BIGINT, node VARCHAR, source VARCHAR,
        format VARCHAR, parsed BOOLEAN, process VARCHAR, pid BIGINT, rank VARCHAR, ts TIMESTAMPTZ,
        ts_quality VARCHAR, ts_order TIMESTAMPTZ, level VARCHAR, phase VARCHAR, milestone VARCHAR, step VARCHAR,
        message VARCHAR, line VARCHAR,
        attrs JSON, tb_group BIGINT, tb_final BOOLEAN, exception VARCHAR, stream VARCHAR)""",
    "CREATE TABLE samples (node VARCHAR, file VARCHAR, line_no BIGINT, metric VARCHAR, labels JSON, ts TIMESTAMPTZ, value DOUBLE)",
    "CREATE TABLE facts (node VARCHAR, file VARCHAR, line_no BIGINT, key VARCHAR, value VARCHAR)",
    "CREATE TABLE warnings (file VARCHAR, line_no BIGINT, message VARCHAR)",
]

EVENT_COLUMNS = [
    "seq", "file", "line_no", "byte_offset", "node", "source", "format", "parsed", "process", "pid", "rank",
    "ts", "ts_quality", "ts_order", "level", "phase", "milestone", "step", "message", "line", "attrs", "tb_group", "tb_final",
    "exception", "stream",
]

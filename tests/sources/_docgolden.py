"""Golden cases of the document sources.

Each input `cases/<source>/<case>.txt` has `<case>.expected.json`:

    {"detect": true,
     "facts": [[key, value, line_no], ...],          every fact, in order
     "samples_count": 40,
     "samples": [{metric, labels, ts, value, line_no}], rows that must be present
     "events_parsed": 25,
     "events": [{line_no, parsed, level, ts, ts_quality, process, message}], rows checked field by field
     "warnings": [...]}

`ts` is ISO 8601 (`2026-08-14T10:11:12+00:00`) or null; a NaN value is the string "NaN".
Regenerate after a deliberate change with `python tests/sources/_docgolden.py <source>`, then
read the diff: a golden file is only as good as the review of its first version.
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl

from k3forensics.sources.base import (
    EVENT_SCHEMA,
    FACT_SCHEMA,
    SAMPLE_SCHEMA,
    ParseContext,
    ParseResult,
    lines_frame,
)

CASES = Path(__file__).parent / "cases"
HEADS = CASES / "_heads"
EVENT_FIELDS = ("line_no", "parsed", "level", "ts", "ts_quality", "process", "message", "attrs")
DOCUMENT_SOURCES = ("nvidia_smi", "collect_env", "launch", "prometheus", "api_capture", "kubectl")


def inputs(source: str) -> list[Path]:
    return sorted(p for p in (CASES / source).glob("*.txt") if not p.name.endswith(".expected.json"))


def read_lines(path: Path) -> pl.DataFrame:
    """The file as the decoder gives it: split on `\\n`, no empty last line, `\\r` dropped."""
    parts = path.read_text(encoding="utf-8").split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return lines_frame([p.removesuffix("\r") for p in parts], file=f"{path.parent.name}/{path.name}")


def log_heads() -> list[Path]:
    """Heads of vLLM, NCCL and kernel logs: no document source may claim them."""
    return sorted(HEADS.glob("*.log"))


def other_inputs(source: str) -> list[Path]:
    """Inputs of the other document sources: a detector claims its own documents only."""
    return [p for name in DOCUMENT_SOURCES if name != source for p in inputs(name)]


def head(path: Path, size: int = 8192) -> str:
    return path.read_text(encoding="utf-8")[:size]


def run(module: ModuleType, path: Path) -> ParseResult:
    lines = read_lines(path)
    return module.parse(lines, ParseContext(file=f"{path.parent.name}/{path.name}"))


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return value


def _rows(frame: pl.DataFrame, fields: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in row.items()} for row in frame.select(list(fields)).iter_rows(named=True)]


def check_contract(result: ParseResult, lines: pl.DataFrame) -> None:
    """Same height and order as the lines, every contract column with its type."""
    events = result.events
    assert events.height == lines.height
    assert events.get_column("line_no").to_list() == lines.get_column("line_no").to_list()
    for name, dtype in EVENT_SCHEMA.items():
        assert events.schema[name] == dtype, (name, events.schema[name])
    for frame, schema in ((result.samples, SAMPLE_SCHEMA), (result.facts, FACT_SCHEMA)):
        if frame is not None:
            for name, dtype in schema.items():
                assert frame.schema[name] == dtype, (name, frame.schema[name])
    if result.samples is not None:
        for labels in result.samples.get_column("labels").to_list():
            parsed = json.loads(labels)
            assert list(parsed) == sorted(parsed), labels


def check(module: ModuleType, path: Path) -> None:
    expected = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
    result = run(module, path)
    check_contract(result, read_lines(path))
    assert module.detect(head(path)) is expected["detect"]
    facts = result.facts if result.facts is not None else pl.DataFrame(schema=FACT_SCHEMA)
    assert [list(r) for r in facts.select("key", "value", "line_no").iter_rows()] == expected["facts"]
    samples = result.samples if result.samples is not None else pl.DataFrame(schema=SAMPLE_SCHEMA)
    assert samples.height == expected["samples_count"]
    got_samples = _rows(samples, list(SAMPLE_SCHEMA))
    for row in expected["samples"]:
        assert row in got_samples, row
    events = result.events
    assert int(events.get_column("parsed").sum()) == expected["events_parsed"]
    by_line = {r["line_no"]: r for r in _rows(events, EVENT_FIELDS)}
    for row in expected["events"]:
        got = by_line[row["line_no"]]
        for key, value in row.items():
            assert got[key] == value, (row["line_no"], key, got[key], value)
    assert result.warnings == expected["warnings"]


def snapshot(module: ModuleType, path: Path) -> dict[str, Any]:
    """What `check` compares, taken from the current parser (for a reviewed regeneration)."""
    result = run(module, path)
    facts = result.facts if result.facts is not None else pl.DataFrame(schema=FACT_SCHEMA)
    samples = result.samples if result.samples is not None else pl.DataFrame(schema=SAMPLE_SCHEMA)
    events = result.events
    leveled = events.filter(pl.col("level").is_not_null()).head(6)
    dated = events.filter(pl.col("ts").is_not_null()).head(1)
    named = events.filter(pl.col("process").is_not_null()).head(1)
    picked = pl.concat([events.head(1), dated, named, leveled, events.tail(1)]).unique("line_no", maintain_order=True)
    picked = picked.sort("line_no")
    odd = samples.filter(pl.col("value").is_nan() | pl.col("value").is_infinite())
    sample_rows = pl.concat([samples.head(2), odd, samples.tail(1)]).unique(maintain_order=True)
    return {
        "detect": module.detect(head(path)),
        "facts": [list(r) for r in facts.select("key", "value", "line_no").iter_rows()],
        "samples_count": samples.height,
        "samples": _rows(sample_rows, list(SAMPLE_SCHEMA)),
        "events_parsed": int(events.get_column("parsed").sum()),
        "events": _rows(picked, EVENT_FIELDS),
        "warnings": result.warnings,
    }


def dumps(snap: dict[str, Any]) -> str:
    """One fact, sample or event per line, so that a diff reads row by row."""
    out = ["{"]
    items = list(snap.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(value, list) and value:
            rows = [json.dumps(v, ensure_ascii=False) for v in value]
            out.append(f" {json.dumps(key)}: [\n  " + ",\n  ".join(rows) + f"\n ]{comma}")
        else:
            out.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}{comma}")
    return "\n".join(out) + "\n}\n"


if __name__ == "__main__":
    for name in sys.argv[1:]:
        mod = importlib.import_module(f"k3forensics.sources.{name}")
        for case in inputs(name):
            out = case.with_suffix(".expected.json")
            out.write_text(dumps(snapshot(mod, case)), encoding="utf-8")
            print(out.relative_to(CASES))

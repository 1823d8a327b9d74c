"""The condition language: parsing, error locations, compilation to polars."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3forensics.errors import Location, SignatureError
from k3forensics.library.compile import Compiler, prepare
from k3forensics.library.condition import (
    And,
    AnyOf,
    Compare,
    IsNull,
    Member,
    Milestone,
    Not,
    Or,
    TextTest,
    TracebackTest,
    WithinHit,
    parse_condition,
)


@pytest.mark.parametrize(("text", "expected"), [
    ('contains "x"', TextTest("contains", "x")),
    ("icontains 'It''s'".replace("''", "\\'"), TextTest("icontains", "It's")),
    ('matches "Xid \\\\(PCI"', TextTest("matches", "Xid \\(PCI")),
    ('any of ["a", "b",]', AnyOf(("a", "b"))),
    ('level == "ERROR"', Compare("level", "==", "ERROR")),
    ("attr.xid >= 79", Compare("attr.xid", ">=", 79.0)),
    ('phase in ["serving", "api_ready"]', Member("phase", ("serving", "api_ready"))),
    ('message startswith "x"', TextTest("startswith", "x", "message")),
    ("process is not null", IsNull("process", True)),
    ('traceback contains "capture_model"', TracebackTest("contains", "capture_model")),
    ('after milestone "api_ready"', Milestone("after", "api_ready")),
    ('within 1.5m after hit "a.b" on other node', WithinHit(90.0, "after", "a.b", "other")),
    ('within 500ms before hit "a.b"', WithinHit(0.5, "before", "a.b", "same")),
    ('contains "a" and not contains "b" or contains "c"',
     Or((And((TextTest("contains", "a"), Not(TextTest("contains", "b")))), TextTest("contains", "c")))),
    ('contains "a" # a comment\n and contains "b"', And((TextTest("contains", "a"), TextTest("contains", "b")))),
])
def test_parse(text: str, expected: object) -> None:
    assert parse_condition(text) == expected


@pytest.mark.parametrize(("text", "line", "column"), [
    ('contains "x" and and', 7, 18),
    ('contains "x"\nand foo', 8, 5),
    ('contains "x" and (', 7, 18),
    ('level ~ "x"', 7, 7),
])
def test_syntax_error_points_at_file_line_column(text: str, line: int, column: int) -> None:
    with pytest.raises(SignatureError) as info:
        parse_condition(text, Location("team/cuda.yaml", 7, 1))
    error = info.value
    assert error.location is not None
    assert (error.location.file, error.location.line) == ("team/cuda.yaml", line)
    assert "^" in error.message


T0 = datetime(2026, 8, 14, 10, 0, 0, tzinfo=UTC)


def frame() -> pl.DataFrame:
    rows = [
        # seq, node, line, ts offset s, milestone, tb_group, level, attrs
        (0, "a", "INFO Application startup complete.", 0, "api_ready", None, "INFO", None),
        (1, "a", "Traceback (most recent call last):", 5, None, 1, "ERROR", None),
        (2, "a", '  File "x.py", line 1, in capture_model', 5, None, 1, "ERROR", None),
        (3, "a", "torch.OutOfMemoryError: CUDA out of memory.", 5, None, 1, "ERROR", None),
        (4, "b", "NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.", 3, None, None, None, '{"xid": 79}'),
        (5, "b", "EngineDeadError", 10, None, None, "ERROR", None),
        (6, "a", "EngineDeadError", 200, None, None, "ERROR", None),
    ]
    return pl.DataFrame(
        {"seq": [r[0] for r in rows], "node": [r[1] for r in rows], "line": [r[2] for r in rows],
         "ts_order": [T0 + timedelta(seconds=r[3]) for r in rows], "milestone": [r[4] for r in rows],
         "tb_group": [r[5] for r in rows], "level": [r[6] for r in rows], "attrs": [r[7] for r in rows],
         "source": ["vllm"] * len(rows)},
        schema_overrides={"tb_group": pl.Int64, "ts_order": pl.Datetime("us", "UTC")},
    )


SIGS = {"xid.fatal": parse_condition("attr.xid == 79")}


def evaluate(text: str) -> list[int]:
    compiler = Compiler(lambda sig_id: SIGS[sig_id])
    expr = compiler.compile(parse_condition(text))
    out = prepare(frame().lazy()).filter(expr).collect()
    return out.get_column("seq").to_list()


@pytest.mark.parametrize(("text", "seqs"), [
    ('contains "CUDA out of memory"', [3]),
    ('icontains "cuda OUT of memory"', [3]),
    ('matches "Xid \\\\(PCI:[0-9a-f:]+\\\\): (79|74),"', [4]),
    ('any of ["Xid", "EngineDead"]', [4, 5, 6]),
    ("attr.xid >= 79", [4]),
    ('level in ["ERROR"] and not contains "File"', [1, 3, 5, 6]),
    ("level is null", [4]),
    ('contains "CUDA out of memory" and traceback contains "capture_model"', [3]),
    ('contains "EngineDeadError" and after milestone "api_ready"', [6]),
    ('contains "Traceback" and before milestone "api_ready"', []),
    ('contains "EngineDeadError" and within 60s after hit "xid.fatal"', [5]),
    ('contains "EngineDeadError" and within 600s after hit "xid.fatal" on other node', [6]),
    ('contains "EngineDeadError" and within 600s after hit "xid.fatal" on any node', [5, 6]),
    ('contains "OutOfMemory" and within 10s before hit "xid.fatal" on any node', []),
])
def test_compiled_semantics(text: str, seqs: list[int]) -> None:
    assert evaluate(text) == seqs


def test_cycle_between_signatures_is_an_error() -> None:
    sigs = {"a.x": parse_condition('within 5s after hit "a.y"'), "a.y": parse_condition('within 5s after hit "a.x"')}
    with pytest.raises(SignatureError, match="cycle"):
        Compiler(lambda s: sigs[s]).compile(sigs["a.x"])


words = st.sampled_from(["contains", "and", "or", "not", "(", ")", '"x"', "level", "==", "in", "[", "]", ",",
                         "after", "milestone", "within", "5s", "hit", "attr", ".", "xid", "79", "@", "'y'"])


@settings(max_examples=300, deadline=None)
@given(st.lists(words, max_size=12))
def test_any_input_parses_or_gives_a_located_error(tokens: list[str]) -> None:
    text = " ".join(tokens)
    try:
        parse_condition(text)
    except SignatureError as exc:
        assert "condition syntax error" in exc.message

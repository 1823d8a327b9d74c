"""Property tests over random and adversarial lines: every parser either parses a line or leaves
it unparsed, never raises, and gives back exactly one event per input line in the input order
with its line number; every detector answers; the condition grammar parses or says where not."""

from __future__ import annotations

import importlib
import json
from types import ModuleType

import make
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3forensics.errors import Location, SignatureError
from k3forensics.library.condition import parse_condition
from k3forensics.library.loader import load_library
from k3forensics.resources import signatures_dir
from k3forensics.sources import container
from k3forensics.sources.base import EVENT_SCHEMA, LINE_SCHEMA, ParseContext, lines_frame
from k3forensics.sources.logs import parse_log

DOCUMENTS = ("nvidia_smi", "collect_env", "launch", "prometheus", "api_capture", "kubectl")
MODULES: list[ModuleType] = [importlib.import_module(f"k3forensics.sources.{n}") for n in DOCUMENTS]
QUALITIES = {"exact", "yearless", "zoneless", "missing"}
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _example_lines() -> list[str]:
    """Real lines of every source: the shipped signatures' examples."""
    library = load_library([signatures_dir()])
    lines = {ex.line for sig in library.signatures.values() for ex in (*sig.matches, *sig.no_match)}
    return sorted(line for line in lines if "\n" not in line)


REAL = _example_lines()
ENVELOPES = [
    "2026-08-18T14:10:50.120549983Z stdout F ", "2026-08-18T14:10:50.120549983Z stderr P ",
    '{"log":"', '","stream":"stdout","time":"2026-08-18T14:10:50Z"}', "Aug 18 14:10:50 node-7 vllm[121]: ",
    "2026-08-18T14:10:50Z ", "vllm-1  | ", "\x1b[36mvllm-1  |\x1b[0m ", "[2026-08-18T14:10:50Z] ",
    "ERROR 2026-08-18T14:10:50Z [resource.labels.pod_name: x] ", "(EngineCore_DP0 pid=121) ", "[rank3]:",
]
ODD = [
    "\x1b[31m", "\x1b]0;title\x07", "\x1b[2J", "\u2400", "\ufffd", "\u202e", "\u200b", "e\u0301", "\t", "\r", "\\",
    '"', "'", "{", "}", "[", "]", "|", "#", "<script>", "[bold red]", "[/]", "%s", "{0}", "${HOME}", "$(id)",
    "`id`", "NaN", "+Inf", "-0", "1e999", "9" * 40, "GPU99999999999999999999", "PCI:0000:01:00", "pid=", ": ",
]
FRAGMENTS = st.sampled_from(REAL + make.EVERY_SOURCE_LINES + make.CAPTURE_LINES[:5] + make.QUERY_JSON_LINES[:4]
                            + [line for case in make.METRICS_CASES.values() for line in case.lines]
                            + [line for lines in make.HUGE_NUMBER_FILES.values() for line in lines])
TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\n"), max_size=60)
PIECE = st.one_of(FRAGMENTS, TEXT, st.sampled_from(ENVELOPES), st.sampled_from(ODD))
LINE = st.lists(PIECE, min_size=0, max_size=4).map("".join)
LINES = st.lists(LINE, max_size=30)


def _frame(lines: list[str], start: int, gap: int) -> pl.DataFrame:
    """A LINE_SCHEMA frame whose line numbers start anywhere and skip (as after a filter)."""
    frame = lines_frame(lines, file="random.log")
    return frame.with_columns(pl.Series("line_no", [start + i * gap for i in range(len(lines))], pl.Int64))


def _check_events(events: pl.DataFrame, frame: pl.DataFrame) -> None:
    assert events.height == frame.height
    assert events.get_column("line_no").to_list() == frame.get_column("line_no").to_list()
    for name, dtype in EVENT_SCHEMA.items():
        assert events.schema[name] == dtype, name
    assert events.get_column("parsed").null_count() == 0
    assert set(events.get_column("ts_quality").to_list()) <= QUALITIES


@SETTINGS
@given(lines=LINES, start=st.integers(1, 10**9), gap=st.integers(1, 3))
def test_parse_log_keeps_every_line(lines: list[str], start: int, gap: int) -> None:
    frame = _frame(lines, start, gap)
    _check_events(parse_log(frame, ParseContext(file="random.log")).events, frame)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.NAME)
@SETTINGS
@given(lines=LINES, start=st.integers(1, 10**6))
def test_document_sources_keep_every_line(module: ModuleType, lines: list[str], start: int) -> None:
    frame = _frame(lines, start, 1)
    result = module.parse(frame, ParseContext(file="random.txt"))
    _check_events(result.events, frame)
    assert all(isinstance(w, str) for w in result.warnings)
    module.detect("\n".join(lines))


# JSON of any shape where the API documents a specific one: the two JSON sources must count it, not crash.
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(allow_nan=False),
                    st.text(max_size=6), st.sampled_from(["matrix", "vector", "scalar", "error", "NaN", "+Inf"]))
_KEYS = st.sampled_from(["status", "data", "resultType", "result", "metric", "values", "value", "warnings",
                         "__name__", "request", "response", "messages", "choices", "usage", "message", "delta",
                         "tool_calls", "function", "arguments", "index", "created", "timestamp", "ts", "status_code",
                         "latency_s", "duration_ms", "error", "code", "object", "prompt_tokens_details", "chunks"])
_JSON = st.recursive(_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(_KEYS, inner, max_size=5)), max_leaves=30)


@pytest.mark.parametrize("module", [m for m in MODULES if m.NAME in ("prometheus", "api_capture")],
                         ids=lambda m: m.NAME)
@SETTINGS
@given(docs=st.lists(_JSON, min_size=1, max_size=3), pretty=st.booleans())
def test_json_sources_count_documents_of_the_wrong_shape(module: ModuleType, docs: list[object], pretty: bool) -> None:
    lines = json.dumps(docs[0], indent=2).split("\n") if pretty else [json.dumps(d) for d in docs]
    frame = lines_frame(lines, file="capture.json")
    _check_events(module.parse(frame, ParseContext(file="capture.json")).events, frame)
    if module.NAME == "api_capture":
        module.load_exchanges(frame)


@pytest.mark.parametrize("kind", list(container.Envelope))
@SETTINGS
@given(lines=LINES)
def test_container_unwrap_keeps_every_line(kind: container.Envelope, lines: list[str]) -> None:
    frame = _frame(lines, 1, 1).select(list(LINE_SCHEMA))
    out, warnings = container.unwrap_report(frame, kind)
    assert out.height == frame.height
    assert out.get_column("line_no").to_list() == frame.get_column("line_no").to_list()
    assert out.get_column("line").null_count() == frame.get_column("line").null_count()
    assert all(isinstance(w, str) for w in warnings)
    container.envelope_kind("\n".join(lines))


_WORDS = st.sampled_from(["contains", "icontains", "matches", "imatches", "startswith", "and", "or", "not", "(",
                          ")", '"x"', "'y'", '"\\"', '"(a+)+$"', "level", "==", "!=", ">=", "in", "[", "]", ",",
                          "after", "before", "milestone", "within", "5s", "1.5h", "hit", "on", "same", "node",
                          "attr", ".", "xid", "79", "-1", "is", "null", "traceback", "any", "of", "\n", "\t", "é"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(_WORDS, max_size=14).map(" ".join), st.text(max_size=80)))
def test_condition_parses_or_names_line_and_column(text: str) -> None:
    where = Location("team/sig.yaml", 12, 12)  # where the `match:` value starts in its file
    try:
        parse_condition(text, where)
    except SignatureError as exc:
        assert exc.message.startswith("condition syntax error: ") and "^" in exc.message, exc
        loc = exc.location
        assert loc is not None and loc.file == where.file, exc
        assert loc.line is not None and loc.line >= 12 and loc.column is not None and loc.column >= 1, exc

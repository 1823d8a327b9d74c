"""Literal prefilters: what they require, that they are sound, and that prefiltered matching
gives exactly the hits of matching every line."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from k3forensics.library.condition import parse_condition
from k3forensics.library.examples import example_events
from k3forensics.library.loader import Library, load_library
from k3forensics.library.match import Matcher, match_events
from k3forensics.library.model import Role
from k3forensics.library.prefilter import Literals, options, regex_literals, regex_options, required
from k3forensics.sources.base import lines_frame
from k3forensics.timeline.ingest import build_timeline

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = sorted([*(ROOT / "samples").glob("*/bundle"), *(ROOT / "tests" / "corpus").glob("*/bundle")])


def req(text: str) -> Literals | None:
    return required(parse_condition(text))


def test_what_conditions_require() -> None:
    assert req('contains "NCCL WARN"') == Literals(exact=frozenset({"NCCL WARN"}))
    assert req('icontains "Out of Memory"') == Literals(folded=frozenset({"Out of Memory"}))
    # and: the most selective item; or: one of every branch; not: nothing
    assert req('contains "ab" and contains "longer text"') == Literals(exact=frozenset({"longer text"}))
    assert req('contains "xid" or contains "fallen off"') == Literals(exact=frozenset({"xid", "fallen off"}))
    assert req('contains "xid" or level == "ERROR"') is None
    assert req('not contains "x"') is None
    assert req('traceback contains "load_model"') == Literals(in_traceback=True)
    assert req('any of ["alpha", "beta"]') == Literals(exact=frozenset({"alpha", "beta"}))
    assert req('message contains "x"') is None  # only the line's text is searched


def test_regex_literals() -> None:
    found = regex_literals(r"NCCL INFO (?:Bootstrap|Using network)")
    assert found == Literals(exact=frozenset({"NCCL INFO Bootstrap", "NCCL INFO Using network"}))
    assert regex_literals(r"Xid \(PCI:[0-9a-f:]+\): \d+") == Literals(exact=frozenset({"Xid (PCI:"}))
    assert regex_literals(r"a(b|c)d") == Literals(exact=frozenset({"abd", "acd"}))
    assert regex_literals(r"(?:foo)?bar\d") == Literals(exact=frozenset({"bar"}))  # the optional part is not required
    assert regex_literals(r"(?:ab)+cd") == Literals(exact=frozenset({"ab"}))  # repeated at least once
    assert regex_literals(r"\d+\s+\w+") is None
    assert regex_literals(r"(unclosed") is None  # what Python cannot read requires nothing


def test_unicode_case_folding_is_not_assumed_away() -> None:
    # (?i) in the regex engine folds K to the Kelvin sign and s to long s; an ASCII-folding
    # literal search would miss those, so such letters split the literal.
    assert regex_literals("kernel panic", ignore_case=True) == Literals(folded=frozenset({"ernel panic"}))
    assert req('icontains "stack"') == Literals(folded=frozenset({"tac"}))
    assert req('icontains "ssss"') is None


def test_options_are_each_required() -> None:
    """`and` items and a regex's fixed runs are each an option; `required` keeps the longest."""
    assert options(parse_condition('contains "ab" and contains "longer text"')) == (
        Literals(exact=frozenset({"ab"})), Literals(exact=frozenset({"longer text"})))
    access = r'"(?:POST|GET) /\S* HTTP/[\d.]+" 500\b'
    assert regex_options(access) == (Literals(exact=frozenset({'"POST /', '"GET /'})),
                                     Literals(exact=frozenset({" HTTP/"})), Literals(exact=frozenset({'" 500'})))
    assert regex_literals(access) == Literals(exact=frozenset({" HTTP/"}))
    # a case-folded run without a foldable piece is no option; the others still are
    assert regex_options("(?i)ss+ fatal error") == (Literals(folded=frozenset({" fatal error"})),)
    assert options(parse_condition('level == "ERROR" and not contains "x"')) == ()


def test_every_positive_example_holds_every_option(library: Library) -> None:
    """Soundness on the shipped library: a line a signature matches holds each of its options,
    so whichever one is chosen."""
    for sig in library.signatures.values():
        assert library.literals(sig.id) in (*options(sig.condition), None), sig.id
        for literals in options(sig.condition):
            if literals.in_traceback:
                continue
            for example in sig.matches:
                frame = lines_frame([example.line]).with_columns(pl.lit(None, pl.Int64).alias("tb_group"))
                assert frame.select(literals.mask(pl.col("text"))).item(), (sig.id, example.line, literals)


ACCESS = """
signatures:
  - id: t.http-500
    title: error responses
    category: engine_dead
    role: secondary
    match: matches "\\"(?:POST|GET) /\\S* HTTP/[\\d.]+\\" 500\\b" and contains "/v1/"
    examples:
      match: ['INFO:     10.0.0.9:51422 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error']
      no_match: ['INFO:     10.0.0.9:51422 - "POST /v1/completions HTTP/1.1" 200 OK']
  - id: t.frames
    title: an error inside the loader
    category: model_load_error
    role: primary
    match: contains "Error" and traceback contains "load_model"
    examples:
      match: ['ValueError: bad shape']
      no_match: ['Error: not in a traceback', 'another Error']
  - id: t.serving
    title: requests served
    category: unknown
    role: milestone
    phase: serving
    match: contains "HTTP/1.1\\" 200"
    examples:
      match:
        - 'INFO:     10.0.0.9:51423 - "GET /v1/models HTTP/1.1" 200 OK'
        - 'INFO:     10.0.0.9:51424 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        - 'INFO:     10.0.0.9:51425 - "GET /metrics HTTP/1.1" 200 OK'
"""


def test_the_prefilter_is_the_option_the_examples_hold_least(tmp_path: Path) -> None:
    """The library's example lines tell how common a string is: ` HTTP/` and `/v1/` are on
    every access line, `" 500` only on the errors (length alone picks ` HTTP/`)."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "t.yaml").write_text(ACCESS, encoding="utf-8")
    library = load_library([tmp_path / "lib"])
    library.raise_problems()
    assert required(library.signatures["t.http-500"].condition) == Literals(exact=frozenset({" HTTP/"}))
    assert library.literals("t.http-500") == Literals(exact=frozenset({'" 500'}))
    assert library.literals_of([library.signatures[i] for i in ("t.http-500", "t.serving")]) == \
        Literals(exact=frozenset({'" 500', 'HTTP/1.1" 200'}))
    # Text before the traceback test alone, however common the text.
    assert library.literals("t.frames") == Literals(exact=frozenset({"Error"}))


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.parent.name for b in BUNDLES])
def test_prefiltered_hits_equal_unfiltered_hits(bundle: Path, library: Library) -> None:
    events = build_timeline(bundle, library).events
    for roles in (None, tuple(Role)):
        assert_frame_equal(match_events(events, library, roles, prefilter=True),
                           match_events(events, library, roles, prefilter=False))
    # Each signature over its own candidate lines, as on a large pool (the samples' pools are
    # small enough to be evaluated whole).
    one_by_one = Matcher(events, library, batch_rows=0).hits(library.of_role(*Role)).sort("seq", "signature")
    assert_frame_equal(one_by_one, match_events(events, library, tuple(Role), prefilter=False).drop("captures"))


def test_prefiltered_hits_equal_unfiltered_hits_on_the_examples(library: Library) -> None:
    groups = [(f"{s.id}.log", [*s.matches, *s.no_match]) for s in library.signatures.values() if s.matches or s.no_match]
    events = example_events(groups).with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64))
    assert_frame_equal(match_events(events, library, tuple(Role), prefilter=True),
                       match_events(events, library, tuple(Role), prefilter=False))


WINDOWED = """
signatures:
  - id: t.cause
    title: a cause
    category: nccl_network
    role: primary
    match: contains "link down"
    examples: {match: ["link down"]}
  - id: t.echo
    title: an echo shortly after the cause on the same node
    category: engine_dead
    role: secondary
    match: contains "engine dead" and within 5s after hit "t.cause"
    examples: {match: ["engine dead"]}
  - id: t.echo-elsewhere
    title: an echo after the cause on another node
    category: engine_dead
    role: secondary
    match: contains "engine dead" and within 60s after hit "t.cause" on other node
    examples: {match: ["engine dead"]}
  - id: t.frames
    title: a traceback through the loader
    category: model_load_error
    role: primary
    match: (contains "Error" and traceback contains "load_model") or (level == "ERROR" and after milestone "serving")
    examples: {match: ["ValueError: x"]}
  - id: t.ready
    title: ready
    category: unknown
    role: milestone
    phase: serving
    match: contains "startup complete"
"""


def test_windows_tracebacks_and_milestones_agree(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "t.yaml").write_text(WINDOWED, encoding="utf-8")
    library = load_library([tmp_path / "lib"])
    library.raise_problems()
    lines = [
        "INFO 01-01 00:00:00 [a.py:1] startup complete",
        "Traceback (most recent call last):",
        '  File "/x/loader.py", line 3, in load_model',
        "ValueError: bad shape",
        "ERROR 01-01 00:00:01 [a.py:2] link down",
        "ERROR 01-01 00:00:03 [a.py:3] engine dead",
        "ERROR 01-01 00:00:09 [a.py:4] engine dead",
        "ERROR 01-01 00:00:20 [a.py:5] ValueError again",
    ]
    bundle = tmp_path / "bundle"
    for node in ("node-a", "node-b"):
        (bundle / node).mkdir(parents=True)
        (bundle / node / "vllm.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    events = build_timeline(bundle, library).events
    filtered = match_events(events, library, tuple(Role), prefilter=True)
    assert_frame_equal(filtered, match_events(events, library, tuple(Role), prefilter=False))
    found = set(filtered.select("signature").to_series().to_list())
    assert {"t.cause", "t.echo", "t.echo-elsewhere", "t.frames", "t.ready"} <= found

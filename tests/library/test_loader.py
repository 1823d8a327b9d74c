"""Loading signature libraries: lint finds every problem in one pass; overrides are visible."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3forensics.errors import SignatureError
from k3forensics.library.examples import run_examples
from k3forensics.library.loader import load_library
from k3forensics.resources import signatures_dir

GOOD = """\
signatures:
  - id: team.thing
    title: A thing failed
    category: unknown
    role: primary
    match: contains "thing failed"
    examples:
      match: ["ERROR 08-14 10:11:12 [x.py:1] the thing failed"]
      no_match: ["INFO 08-14 10:11:12 [x.py:1] the thing worked"]
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_library_is_clean_and_large() -> None:
    library = load_library([signatures_dir()])
    assert library.problems == []
    assert len(library.signatures) >= 10


def test_shipped_examples_all_pass() -> None:
    library = load_library([signatures_dir()])
    assert [str(f) for f in run_examples(library)] == []


def test_every_problem_of_every_file_in_one_pass(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    write(lib, "dup.yaml", GOOD + GOOD.replace("signatures:\n", ""))
    write(lib, "dupkey.yaml", "id: a.b\nid: a.c\n")
    write(lib, "bomb.yaml", "a: &x [1, 2]\nb: [*x, *x]\n")
    write(lib, "unknown.yaml", GOOD.replace("    role: primary\n", "    role: primary\n    colour: red\n"))
    write(lib, "regex.yaml", GOOD.replace('contains "thing failed"', 'matches "(a)\\\\1"'))
    write(lib, "syntax.yaml", GOOD.replace('contains "thing failed"', 'contains "thing" and and'))
    write(lib, "badref.yaml", GOOD.replace('contains "thing failed"', 'within 5s after hit "no.such"')
          .replace("team.thing", "team.other"))
    library = load_library([lib])
    text = "\n".join(str(p) for p in library.problems)
    assert "duplicate signature id 'team.thing'" in text
    assert "dupkey.yaml:2:1: duplicate key 'id'" in text
    assert "bomb.yaml:1:4: YAML anchors are not allowed" in text
    assert "unknown field(s): colour" in text
    assert "not valid for the matching engine" in text
    assert "syntax.yaml:6" in text and "^" in text
    assert "unknown signature 'no.such'" in text
    assert len(library.problems) == 7


def test_later_library_overrides_with_a_note(tmp_path: Path) -> None:
    first, second = tmp_path / "shipped", tmp_path / "team"
    write(first, "a.yaml", GOOD)
    write(second, "a.yaml", GOOD.replace("A thing failed", "Our thing failed"))
    library = load_library([first, second])
    assert library.signatures["team.thing"].title == "Our thing failed"
    assert library.notes == ["team.thing: team/a.yaml:2 overrides shipped/a.yaml:2"]


def test_raise_problems_lists_them_all(tmp_path: Path) -> None:
    write(tmp_path, "x.yaml", "id: a.b\nid: a.c\n")
    write(tmp_path, "y.yaml", "- not a mapping\n")
    library = load_library([tmp_path])
    with pytest.raises(SignatureError, match="2 problem"):
        library.raise_problems()


def test_missing_folder_is_a_problem(tmp_path: Path) -> None:
    library = load_library([tmp_path / "nope"])
    assert "does not exist" in str(library.problems[0])


def test_example_failures_are_reported(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", GOOD.replace("the thing worked", "the thing failed twice"))
    failures = run_examples(load_library([tmp_path]))
    assert [f.expected for f in failures] == [False]
    assert "matched but must not" in str(failures[0])


def test_rejected_regex_gives_the_engine_reason_and_the_value_location(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", GOOD.replace('contains "thing failed"', 'matches "(?<=thing )failed"'))
    write(tmp_path, "b.yaml", GOOD.replace("team.thing", "team.cap")
          .replace("    examples:", "    captures: ['(?P<x>a)\\1']\n    examples:"))
    text = "\n".join(str(p) for p in load_library([tmp_path]).problems)
    assert ("a.yaml:2: signature 'team.thing': regex '(?<=thing )failed' is not valid for the matching "
            "engine: look-around, including look-ahead and look-behind, is not supported "
            f"(at {tmp_path.name}/a.yaml:6:12)") in text
    assert f"backreferences are not supported (at {tmp_path.name}/b.yaml:7:15)" in text


def test_one_bad_regex_among_many_is_located_and_the_rest_load(tmp_path: Path) -> None:
    good = GOOD.replace('contains "thing failed"', 'matches "thing \\\\w+ed"')
    write(tmp_path, "a.yaml", good)
    write(tmp_path, "b.yaml", good.replace("team.thing", "team.bad").replace("\\\\w+ed", "(a)\\\\1"))
    library = load_library([tmp_path])
    assert list(library.signatures) == ["team.thing"]
    assert [p.location.file for p in library.problems if p.location] == [f"{tmp_path.name}/b.yaml"]

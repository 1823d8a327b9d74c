"""The strict YAML loader: libyaml's parser (when PyYAML has it) gives exactly what the
pure-Python one gives, marks and refusals included."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3forensics.errors import SignatureError
from k3forensics.library import yamlsafe
from k3forensics.library.yamlsafe import LINE_KEY, MARKS_KEY, parse_yaml
from k3forensics.resources import signatures_dir

LOADERS = [yamlsafe._PyStrictLoader]
if yamlsafe.CParser is not None:
    LOADERS.append(yamlsafe._CStrictLoader)

REFUSED = {
    "a: &x [1, 2]\nb: [*x, *x]\n": "f:1:4: YAML anchors are not allowed in signature files (&x)",
    "a: *x\n": "f:1:4: YAML aliases are not allowed",
    "id: a.b\nid: a.c\n": "f:2:1: duplicate key 'id' (first at line 1)",
    "- a\n- {b: 1, b: 2}\n": "f:2:10: duplicate key 'b' (first at line 2)",
    "日本: 1\n日本: 2\n": "f:2:1: duplicate key '日本' (first at line 1)",
    "a: !!python/object:os.system x\n": "f:1:4: invalid YAML",
}


@pytest.mark.parametrize("path", sorted(signatures_dir().rglob("*.y*ml")), ids=lambda p: p.name)
def test_loaders_agree_on_the_shipped_library(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert {loader.__name__: parse_yaml(text, "f", loader) for loader in LOADERS} == {
        loader.__name__: parse_yaml(text, "f", LOADERS[0]) for loader in LOADERS}


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
def test_marks_count_characters_and_skip_quotes(loader: type) -> None:
    text = "ключ: 'é'\nб: {ü: \"ä\", x: 日本}\nblock: |\n  text\n"
    data = parse_yaml(text, "f", loader)
    assert data[LINE_KEY] == 1 and data["б"][LINE_KEY] == 2
    assert data[MARKS_KEY] == {"ключ": (1, 8), "б": (2, 4), "block": (4, 3)}
    assert data["б"][MARKS_KEY] == {"ü": (2, 9), "x": (2, 16)}


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("text", list(REFUSED))
def test_refusals_name_file_line_and_column(loader: type, text: str) -> None:
    with pytest.raises(SignatureError) as info:
        parse_yaml(text, "f", loader)
    assert str(info.value).startswith(REFUSED[text])


def test_the_c_parser_is_used_when_available() -> None:
    if yamlsafe.CParser is None:
        pytest.skip("PyYAML without libyaml")
    assert yamlsafe._Loader is yamlsafe._CStrictLoader

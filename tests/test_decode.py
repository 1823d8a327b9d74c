"""decode_file / iter_decoded_chunks: lines, exact byte offsets, counted problems."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3forensics.bundle import BundleFile
from k3forensics.decode import LINES_SCHEMA, DecodedFile, as_line_frame, decode_file, iter_decoded_chunks
from k3forensics.errors import BundleError
from k3forensics.sources.base import LINE_SCHEMA


def bundle_file(tmp_path: Path, data: bytes, name: str = "node1/vllm.log") -> BundleFile:
    path = tmp_path / name.replace("/", "_")
    path.write_bytes(data)
    return BundleFile(name, path, len(data), None)


def decode(tmp_path: Path, data: bytes, **kwargs: int) -> DecodedFile:
    return decode_file(bundle_file(tmp_path, data), **kwargs)


def rows(decoded: DecodedFile) -> list[tuple[int, int, str]]:
    return decoded.lines.select("line_no", "byte_offset", "line").rows()


def chunked(bf: BundleFile, chunk_bytes: int, max_line_bytes: int = 1 << 20) -> tuple[pl.DataFrame, DecodedFile]:
    chunks = list(iter_decoded_chunks(bf, chunk_bytes, max_line_bytes=max_line_bytes))
    assert all(c.sha256 == "" and c.problems == [] for c in chunks[:-1])
    return pl.concat([c.lines for c in chunks]), chunks[-1]


# -- golden --------------------------------------------------------------------------------------


def test_lines_offsets_and_schema(tmp_path: Path) -> None:
    data = b"first\nsecond line\n\nlast without newline"
    decoded = decode(tmp_path, data)
    assert rows(decoded) == [(1, 0, "first"), (2, 6, "second line"), (3, 18, ""), (4, 19, "last without newline")]
    assert decoded.lines.schema == pl.Schema(LINES_SCHEMA)
    assert decoded.lines["file"].unique().to_list() == ["node1/vllm.log"]
    assert (decoded.encoding, decoded.binary, decoded.problems, decoded.size) == ("utf-8", False, [], len(data))
    assert decoded.sha256 == hashlib.sha256(data).hexdigest()


def test_crlf_and_lone_cr(tmp_path: Path) -> None:
    data = b"crlf line\r\nLoading: 10%\rLoading: 50%\rLoading: 100%\r\ntwo\r\r\nend\r"
    assert rows(decode(tmp_path, data)) == [
        (1, 0, "crlf line"),
        (2, 11, "Loading: 10% Loading: 50% Loading: 100%"),  # a redrawn line keeps every state
        (3, 52, "two "),                                    # one trailing \r dropped per line
        (4, 58, "end"),
    ]


def test_empty_and_newline_only(tmp_path: Path) -> None:
    empty = decode(tmp_path, b"")
    assert (empty.lines.height, empty.binary, empty.problems) == (0, False, [])
    assert empty.sha256 == hashlib.sha256(b"").hexdigest()
    assert rows(decode(tmp_path, b"\n\n")) == [(1, 0, ""), (2, 1, "")]


def test_invalid_utf8_is_replaced_and_counted(tmp_path: Path) -> None:
    lines = [f"INFO line {i} ✓".encode() for i in range(30)]
    for i in (11, 14, 20):
        lines[i] += b" bad \xff\xfe byte"
    decoded = decode(tmp_path, b"\n".join(lines) + b"\n")
    assert decoded.encoding == "utf-8"
    assert decoded.problems == ["node1/vllm.log: 3 lines with invalid UTF-8 (first at line 12), shown with U+FFFD"]
    assert decoded.lines["line"][11] == "INFO line 11 ✓ bad \ufffd\ufffd byte"
    assert decoded.lines["line"][12] == "INFO line 12 ✓"


def test_latin1_file_falls_back(tmp_path: Path) -> None:
    data = "Café crème brûlée\nnaïve façade\nplain\n".encode("latin-1") * 4
    decoded = decode(tmp_path, data)
    assert decoded.encoding == "latin-1 fallback"
    assert decoded.lines["line"][:3].to_list() == ["Café crème brûlée", "naïve façade", "plain"]
    assert decoded.problems == ["node1/vllm.log: not valid UTF-8, decoded as Latin-1 (8 lines with non-ASCII bytes, "
                                "first at line 1)"]


@pytest.mark.parametrize("codec, label", [("utf-16-le", "utf-16-le"), ("utf-16-be", "utf-16-be")])
def test_utf16_with_bom(tmp_path: Path, codec: str, label: str) -> None:
    bom = b"\xff\xfe" if codec.endswith("le") else b"\xfe\xff"
    data = bom + "héllo wörld\r\n😀 emoji\nlast".encode(codec)
    decoded = decode(tmp_path, data)
    assert decoded.encoding == label
    # offsets count the original 2-byte units: "héllo wörld\r\n" is 13 units after the 2-byte BOM
    assert rows(decoded) == [(1, 0, "héllo wörld"), (2, 28, "😀 emoji"), (3, 46, "last")]


def test_utf16_without_bom_is_recognised(tmp_path: Path) -> None:
    decoded = decode(tmp_path, "plain ascii text\nsecond line\n".encode("utf-16-le"))
    assert decoded.encoding == "utf-16-le"
    assert rows(decoded) == [(1, 0, "plain ascii text"), (2, 34, "second line")]


def test_utf8_bom_is_dropped(tmp_path: Path) -> None:
    decoded = decode(tmp_path, b"\xef\xbb\xbfone\ntwo\n")
    assert decoded.encoding == "utf-8-sig"
    assert rows(decoded) == [(1, 0, "one"), (2, 7, "two")]


def test_nul_bytes_are_shown_and_counted(tmp_path: Path) -> None:
    lines = [f"ordinary log line number {i}".encode() for i in range(40)]
    lines[5] = b"crash left \x00\x00\x00 here"
    lines[30] = b"and \x00 here"
    decoded = decode(tmp_path, b"\n".join(lines))
    assert decoded.lines["line"][5] == "crash left ␀␀␀ here"
    assert decoded.problems == ["node1/vllm.log: 4 NUL bytes in 2 lines (first at line 6), shown as ␀"]


def test_long_lines_are_cut_on_a_character_boundary(tmp_path: Path) -> None:
    data = b"short\n" + "é".encode() * 10 + b"\n" + b"x" * 50 + b"\nend"
    decoded = decode(tmp_path, data, max_line_bytes=9)
    assert rows(decoded) == [
        (1, 0, "short"),
        (2, 6, "éééé …[truncated 12 bytes]"),  # 9 bytes would split the fifth é: 8 kept
        (3, 27, "xxxxxxxxx …[truncated 41 bytes]"),
        (4, 78, "end"),
    ]
    assert decoded.problems == ["node1/vllm.log: 2 lines longer than 9 bytes (first at line 2), cut and marked "
                                "'…[truncated N bytes]'"]


@pytest.mark.parametrize("data, what", [
    (b"\x89PNG\r\n\x1a\n" + bytes(64), "PNG image"),
    (b"\x7fELF\x02\x01\x01" + bytes(200), "ELF executable or core dump"),
    (b"\x0c\x00\x00\x00\x00\x00\x00\x00DUCK\x40\x00" + bytes(300), "DuckDB database"),
    (bytes(range(256)) * 16, "mostly non-text bytes at the start"),
    (b"ab\x00\x00\x00\x00cd\n" * 100, "NUL-heavy start"),
])
def test_binary_files_give_no_lines(tmp_path: Path, data: bytes, what: str) -> None:
    decoded = decode(tmp_path, data)
    assert (decoded.binary, decoded.encoding, decoded.lines.height) == (True, "binary", 0)
    assert decoded.lines.schema == pl.Schema(LINES_SCHEMA)
    assert decoded.problems == [f"node1/vllm.log: binary file ({what}); listed in the files manifest, no lines read"]
    assert decoded.sha256 == hashlib.sha256(data).hexdigest()


def test_unreadable_file_is_a_bundle_error(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="gone.log: cannot be read"):
        decode_file(BundleFile("gone.log", tmp_path / "missing", 0, None))


def test_as_line_frame(tmp_path: Path) -> None:
    frame = as_line_frame(decode(tmp_path, b"\x1b[32mINFO\x1b[0m ok\n").lines)
    assert frame.schema == pl.Schema(LINE_SCHEMA)
    assert frame.row(0, named=True)["text"] == "INFO ok"


# -- chunks --------------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [
    b"".join(b"line %d %s\r\n" % (i, b"x" * (i % 41)) for i in range(500)) + b"tail\r",
    "\ufeffUTF-8 BOM ✓\nnext\n".encode() * 50,
    "\ufeffhéllo\n😀 wide\r\nlong " .encode("utf-16-le") + "y".encode("utf-16-le") * 200 + b"\n\x00",
    b"no newline at all " * 300,
])
@pytest.mark.parametrize("chunk_bytes", [1, 2, 7, 64, 1000])
def test_chunks_continue_numbers_and_offsets(tmp_path: Path, data: bytes, chunk_bytes: int) -> None:
    bf = bundle_file(tmp_path, data)
    whole = decode_file(bf, max_line_bytes=30)
    lines, last = chunked(bf, chunk_bytes, max_line_bytes=30)
    assert lines.equals(whole.lines)
    assert (last.sha256, last.problems, last.encoding, last.size) == (
        whole.sha256, whole.problems, whole.encoding, whole.size)
    assert whole.sha256 == hashlib.sha256(data).hexdigest()


def test_binary_file_in_chunks_is_one_chunk(tmp_path: Path) -> None:
    bf = bundle_file(tmp_path, b"\x7fELF" + bytes(100_000))
    chunks = list(iter_decoded_chunks(bf, 4096))
    assert len(chunks) == 1 and chunks[0].binary and chunks[0].sha256


def test_hundred_megabyte_single_line_keeps_memory_flat(tmp_path: Path) -> None:
    path = tmp_path / "one-line.log"
    size = 100 << 20
    with open(path, "wb") as fh:
        fh.write(b"start ")
        for _ in range(100):
            fh.write(b"y" * (1 << 20))
        fh.write(b"\nnext line\n")
    script = textwrap.dedent(f"""
        import json, resource
        from pathlib import Path
        from k3forensics.bundle import BundleFile
        from k3forensics.decode import decode_file, iter_decoded_chunks
        path = Path({str(path)!r})
        bf = BundleFile("one-line.log", path, path.stat().st_size, None)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        whole = decode_file(bf)
        peak_whole = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        chunks = list(iter_decoded_chunks(bf, 8 << 20))
        print(json.dumps({{"rows": whole.lines.select("line_no", "byte_offset", "line").rows(),
                           "problems": whole.problems, "chunk_rows": sum(c.lines.height for c in chunks),
                           "grew_kib": peak_whole - before}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    first, second = result["rows"]
    assert first[:2] == [1, 0] and first[2].startswith("start yyy")
    assert first[2].endswith(f" …[truncated {size + 6 - (1 << 20)} bytes]")
    assert second == [2, size + 7, "next line"]
    assert result["chunk_rows"] == 2
    assert result["problems"] == ["one-line.log: 1 line longer than 1048576 bytes (first at line 1), cut and marked "
                                  "'…[truncated N bytes]'"]
    assert result["grew_kib"] * 1024 < 5 * size  # loose: the file once, the newline scan, little else


# -- properties ----------------------------------------------------------------------------------

TEXTISH = st.lists(st.sampled_from([b"a", b"Z", b" ", b"\n", b"\r", b"\t", b"\xc3\xa9", b"\xe2\x9c\x93", b"\xff",
                                    b"\x80", b"\x00", b"\xef\xbf\xbd", b"\x1b[0m"]), max_size=300).map(b"".join)
ANY_BYTES = st.one_of(st.binary(max_size=300), TEXTISH)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def expected_lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


@SETTINGS
@given(data=ANY_BYTES, max_line_bytes=st.sampled_from([1, 5, 1 << 20]))
def test_property_one_row_per_physical_line(tmp_path: Path, data: bytes, max_line_bytes: int) -> None:
    decoded = decode(tmp_path, data, max_line_bytes=max_line_bytes)
    if decoded.binary or decoded.encoding.startswith("utf-16"):
        return  # binary: no lines by design; UTF-16 lines end at 2-byte units, checked elsewhere
    assert decoded.lines.height == (expected_lines(data) if data != b"\xef\xbb\xbf" else 0)
    offsets = decoded.lines["byte_offset"].to_list()
    assert all(a < b for a, b in zip(offsets, offsets[1:], strict=False))
    assert all(o == 0 or data[o - 1:o] == b"\n" for o in offsets)
    assert decoded.lines["line_no"].to_list() == list(range(1, decoded.lines.height + 1))
    assert not decoded.lines["line"].str.contains("\n|\r|\x00").any()


@SETTINGS
@given(data=ANY_BYTES, chunk_bytes=st.integers(1, 64), max_line_bytes=st.sampled_from([3, 16, 1 << 20]))
def test_property_chunks_equal_whole(tmp_path: Path, data: bytes, chunk_bytes: int, max_line_bytes: int) -> None:
    bf = bundle_file(tmp_path, data)
    whole = decode_file(bf, max_line_bytes=max_line_bytes)
    lines, last = chunked(bf, chunk_bytes, max_line_bytes)
    assert lines.equals(whole.lines)
    assert (last.sha256, last.problems, last.binary) == (whole.sha256, whole.problems, whole.binary)

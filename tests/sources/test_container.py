"""Container envelopes: detection by vote over the head, unwrapping column-wise."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3forensics.sources import container
from k3forensics.sources.base import LINE_SCHEMA, lines_frame
from k3forensics.sources.container import detect, envelope_kind, unwrap, unwrap_report

VLLM = "(APIServer pid=1) INFO 08-14 10:11:12 [api_server.py:1912] Starting vLLM API server 0 on http://0.0.0.0:8000"

# Each kind: envelope lines, the inner lines, outer_ts (UTC), stream.
CASES = {
    "docker_json": (
        ['{"log":"' + VLLM + '\\n","stream":"stdout","time":"2024-08-14T10:11:12.123456789Z"}',
         '{"log":"INFO:     10.0.0.9:51422 - \\"GET /health HTTP/1.1\\" 200 OK\\n","stream":"stderr",'
         '"time":"2024-08-14T10:11:13.000456711+02:00"}'],
        [VLLM, 'INFO:     10.0.0.9:51422 - "GET /health HTTP/1.1" 200 OK'],
        [datetime(2024, 8, 14, 10, 11, 12, 123456, UTC), datetime(2024, 8, 14, 8, 11, 13, 456, UTC)],
        ["stdout", "stderr"],
    ),
    "cri": (
        ["2023-10-19T14:25:03.801614288+08:00 stderr F " + VLLM, "2024-08-14T10:11:12Z stdout F "],
        [VLLM, ""],
        [datetime(2023, 10, 19, 6, 25, 3, 801614, UTC), datetime(2024, 8, 14, 10, 11, 12, tzinfo=UTC)],
        ["stderr", "stdout"],
    ),
    "docker_ts": (
        ["2024-06-21T15:09:02.358742631+08:00 ERROR 06-21 15:09:02 async_llm_engine.py:52] Engine loop died",
         "2024-06-21T07:09:03.1-00:30 Traceback (most recent call last):"],
        ["ERROR 06-21 15:09:02 async_llm_engine.py:52] Engine loop died", "Traceback (most recent call last):"],
        [datetime(2024, 6, 21, 7, 9, 2, 358742, UTC), datetime(2024, 6, 21, 7, 39, 3, 100000, UTC)],
        [None, None],
    ),
    "compose": (
        ["vllm_1  | ERROR 02-11 08:25:49 serving_chat.py:661] boom",
         "\x1b[36mqwen3-1  |\x1b[0m (VllmWorker rank=1 pid=106) ERROR x"],
        ["ERROR 02-11 08:25:49 serving_chat.py:661] boom", "(VllmWorker rank=1 pid=106) ERROR x"],
        [None, None],
        [None, None],
    ),
    "buildkite": (
        ["[2026-02-24T20:21:58Z] (EngineCore_DP0 pid=6940) INFO 02-24 20:21:58 [core.py:1] x", "[2026-02-24T20:21:59Z]"],
        ["(EngineCore_DP0 pid=6940) INFO 02-24 20:21:58 [core.py:1] x", ""],
        [datetime(2026, 2, 24, 20, 21, 58, tzinfo=UTC), datetime(2026, 2, 24, 20, 21, 59, tzinfo=UTC)],
        [None, None],
    ),
    "gke": (
        ["INFO 2025-11-19T20:16:36.096501749Z [resource.labels.containerName: vllm] (EngineCore_DP0 pid=270) "
         "ERROR 11-19 12:16:36 [v1/engine/core.py:842] EngineCore failed to start."],
        ["(EngineCore_DP0 pid=270) ERROR 11-19 12:16:36 [v1/engine/core.py:842] EngineCore failed to start."],
        [datetime(2025, 11, 19, 20, 16, 36, 96501, UTC)],
        [None],
    ),
    "journald": (
        ["May 08 09:32:47 t3090 start_vllm_textmodel_qwen3.sh[3065331]: ERROR 05-08 09:32:47 [core.py:400] x",
         "2026-05-08T09:32:47+0000 t3090 python3[12]: INFO 05-08 09:32:47 [core.py:1] y"],
        ["ERROR 05-08 09:32:47 [core.py:400] x", "INFO 05-08 09:32:47 [core.py:1] y"],
        [None, datetime(2026, 5, 8, 9, 32, 47, tzinfo=UTC)],  # the short form has no year
        [None, None],
    ),
}


def frame(lines: list[str]) -> pl.DataFrame:
    return lines_frame(lines, "node1/container.log")


@pytest.mark.parametrize("kind", sorted(CASES))
def test_detection(kind: str) -> None:
    lines = CASES[kind][0]
    assert envelope_kind("\n".join(lines) + "\n") == kind
    assert detect("\n".join(lines)) is True


@pytest.mark.parametrize("head", [
    "INFO 08-14 10:11:12 [api_server.py:1] start\nWARNING 08-14 10:11:13 [x.py:2] hm\n",
    "host:12:34 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>\n",
    "May 08 09:32:48 t3090 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n" * 3,
    "| NVIDIA-SMI 570.133.20             Driver Version: 570.133.20     CUDA Version: 12.8     |\n",
    "2023-12-27 11:25:36 | ERROR | stderr | Traceback (most recent call last):\n",
    "[2024-01-01 10:00:00] host:1:2 [0] misc/socket.cc:50 NCCL WARN Call to connect failed\n",
    "",
    "\n\n",
])
def test_no_envelope(head: str) -> None:
    assert envelope_kind(head) is None
    assert detect(head) is False


def test_detection_is_a_majority_vote_and_ignores_a_cut_last_line() -> None:
    cri = CASES["cri"][0][0]
    assert envelope_kind("\n".join([cri] * 7 + ["plain"] * 3)) == "cri"
    assert envelope_kind("\n".join([cri] * 5 + ["plain"] * 5) + "\n") is None
    assert envelope_kind(cri + "\n" + '{"log":"cut in the mid') == "cri"


@pytest.mark.parametrize("kind", sorted(CASES))
def test_unwrap(kind: str) -> None:
    lines, inner, outer_ts, stream = CASES[kind]
    out = unwrap(frame(lines), kind)
    assert out.columns == [*LINE_SCHEMA, "continued"]
    assert out.schema["continued"] == pl.Boolean and out.schema["outer_ts"] == LINE_SCHEMA["outer_ts"]
    assert out["line"].to_list() == inner
    assert out["text"].to_list() == inner  # ANSI already gone from these inner lines
    assert out["outer_ts"].to_list() == outer_ts
    assert out["stream"].to_list() == stream
    assert out["continued"].to_list() == [False] * len(lines)
    assert out["line_no"].to_list() == list(range(1, len(lines) + 1))


@pytest.mark.parametrize("kind", sorted(CASES))
def test_lines_without_the_envelope_are_untouched_and_unwrap_is_idempotent(kind: str) -> None:
    lines = CASES[kind][0] + ["a plain line, no envelope"]
    source = frame(lines)
    once, warnings = unwrap_report(source, kind)
    assert once.row(-1) == (*source.row(-1), False)
    assert warnings and warnings[0].startswith("node1/container.log: 1 ")
    assert warnings[0].endswith(f"(first at line {len(lines)}), kept as they are")
    assert unwrap(once, kind).equals(once)


def test_docker_json_escapes_other_layouts_and_malformed_records() -> None:
    lines = [
        '{"log":"tab\\there \\\\ back\\/slash \\u001b[31mred\\u001b[0m \\u003cb\\u003e\\n","stream":"stdout",'
        '"time":"2024-08-14T10:11:12Z"}',
        '{"time":"2024-08-14T10:11:13Z","stream":"stderr","log":"keys in another order\\n"}',
        '{"log":"with attrs\\n","stream":"stdout","attrs":{"tag":"vllm"},"time":"2024-08-14T10:11:14Z"}',
        '{"log":"tqdm 10%\\r50%\\r\\n","stream":"stderr","time":"2024-08-14T10:11:15Z"}',
        '{"log":"nul \\u0000 inside\\n","stream":"stderr","time":"2024-08-14T10:11:16Z"}',
        '{"log":"cut in the middle',
        "",
    ]
    out, warnings = unwrap_report(frame(lines), "docker_json")
    assert out["line"].to_list() == [
        "tab\there \\ back/slash \x1b[31mred\x1b[0m <b>", "keys in another order", "with attrs", "tqdm 10% 50%",
        "nul ␀ inside", '{"log":"cut in the middle', "",
    ]
    assert out["text"][0] == "tab\there \\ back/slash red <b>"
    assert out["stream"].to_list() == ["stdout", "stderr", "stdout", "stderr", "stderr", None, None]
    assert out["outer_ts"][1] == datetime(2024, 8, 14, 10, 11, 13, tzinfo=UTC)
    assert out["outer_ts"][5] is None
    assert warnings == ["node1/container.log: 1 malformed JSON record (first at line 6), kept as they are"]


def test_cri_partial_lines_are_joined_per_stream() -> None:
    lines = [
        "2024-08-14T10:11:12.1Z stdout P first half of a long line ",
        "2024-08-14T10:11:12.2Z stderr F an interleaved stderr line",
        "2024-08-14T10:11:12.3Z stdout P second part ",
        "2024-08-14T10:11:12.4Z stdout F end",
        "2024-08-14T10:11:12.5Z stdout F whole",
        "2024-08-14T10:11:12.6Z stderr P the stream ends mid-line",
    ]
    out = unwrap(frame(lines), "cri")
    assert out["line"].to_list() == [
        "first half of a long line ", "an interleaved stderr line", "second part ",
        "first half of a long line second part end", "whole", "the stream ends mid-line",
    ]
    assert out["continued"].to_list() == [True, False, True, False, False, False]
    assert out["outer_ts"][3] == datetime(2024, 8, 14, 10, 11, 12, 400000, UTC)


def test_docker_json_pieces_of_a_long_line_are_joined() -> None:
    lines = ['{"log":"part one ","stream":"stdout","time":"2024-08-14T10:11:12Z"}',
             '{"log":"and two\\n","stream":"stdout","time":"2024-08-14T10:11:12Z"}']
    out = unwrap(frame(lines), "docker_json")
    assert out["line"].to_list() == ["part one ", "part one and two"]
    assert out["continued"].to_list() == [True, False]


def test_journald_leaves_kernel_lines_to_the_kernel_source() -> None:
    lines = ["May 08 09:32:48 t3090 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
             "May 08 09:32:49 t3090 vllm[12]: ERROR 05-08 09:32:49 [core.py:1] dead",
             "-- Boot 3a5b --"]
    head = "\n".join(lines)
    assert envelope_kind(head) == "journald"
    out, warnings = unwrap_report(frame(lines), "journald")
    assert out["line"].to_list() == [lines[0], "ERROR 05-08 09:32:49 [core.py:1] dead", "-- Boot 3a5b --"]
    assert warnings == ["node1/container.log: 1 line without the journald envelope (first at line 3), kept as they are"]


def test_compose_with_timestamps() -> None:
    out = unwrap(frame(["vllm-1  | 2024-06-21T15:09:02.5Z INFO 06-21 15:09:02 x"]), "compose")
    assert out.row(0, named=True)["line"] == "INFO 06-21 15:09:02 x"
    assert out.row(0, named=True)["outer_ts"] == datetime(2024, 6, 21, 15, 9, 2, 500000, UTC)


def test_empty_frame_and_unknown_kind() -> None:
    empty = unwrap(frame([]), "cri")
    assert empty.height == 0 and empty.columns == [*LINE_SCHEMA, "continued"]
    with pytest.raises(ValueError):
        unwrap(frame(["x"]), "syslog")


def test_module_is_a_registry_entry() -> None:
    assert container.NAME == "container"


# -- envelope times: the usual stamp read in two parts equals the general formats ---------------

_STAMPS = ["2026-09-14T06:00:01.110000000Z", "1969-12-31T23:59:59.999999999Z", "1900-01-01T00:00:00Z",
           "2026-09-14T06:00:01.5Z", "2026-09-14T06:00:01.1234567Z", "2024-02-29T23:59:60Z",
           "2024-12-31T24:00:00Z", "2026-02-29T00:00:00Z", "2026-09-14T06:00:01.1234567891Z",
           "2026-09-14T06:00:01.Z", "2026-09-14T06:00:01.123+08:00", "2026-09-14T06:00:01-0030",
           "0001-01-01T00:00:00.000001Z", "2026-9-14T06:00:01.5Z", "+2026-09-14T06:00:01Z",
           "2026-09-14t06:00:01Z", "2026-09-14T06:00:01z", " 2026-09-14T06:00:01Z", "2026-09-14T06:00:01.5ZZ"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_STAMPS),
                          st.lists(st.tuples(st.integers(0, 40), st.sampled_from("0123456789-T:.Z+ zé/"),
                                             st.sampled_from(["set", "insert", "delete"])), max_size=3)),
                min_size=1, max_size=40))
def test_envelope_times_read_in_two_parts_equal_the_general_formats(edits: list[tuple[str, list]]) -> None:
    texts = [*_STAMPS, None]
    for stamp, changes in edits:
        chars = list(stamp)
        for at, char, how in changes:
            at = min(at, len(chars))
            if how == "insert":
                chars.insert(at, char)
            elif chars and at < len(chars):
                chars[at:at + 1] = [char] if how == "set" else []
        texts.append("".join(chars))
    series = pl.Series("t", texts, pl.Utf8)
    fast, general = container._parse_ts(series), container._parse_rfc3339(series)
    assert fast.eq_missing(general).all()  # compared in polars: a mutated year may be out of Python's range
    assert fast[0] == datetime(2026, 9, 14, 6, 0, 1, 110000, UTC)
    assert fast[1] == datetime(1969, 12, 31, 23, 59, 59, 999999, UTC)  # truncated, not rounded

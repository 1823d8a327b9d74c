"""Golden tests for the log line formats: input line → expected event fields."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from k3forensics.sources import generic, kernel, nccl, pytorch, traceback, vllm
from k3forensics.sources.base import ParseContext, lines_frame
from k3forensics.sources.logformat import LineFormat, attrs_json, plain_attrs_json
from k3forensics.sources.logs import LOG_FORMATS, parse_log, parse_log_frame

UTC = UTC


def parse(lines: list[str]) -> list[dict]:
    return parse_log(lines_frame(lines), ParseContext("t.log")).events.to_dicts()


CASES = [
    # (line, expected subset)
    ("(EngineCore_DP0 pid=260) INFO 10-08 12:00:15 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config",
     {"source": "vllm", "process": "EngineCore_DP0", "pid": 260, "level": "INFO", "ts_quality": "yearless",
      "ts": datetime(2000, 10, 8, 12, 0, 15, tzinfo=UTC),
      "message": "Initializing a V1 LLM engine (v0.11.0) with config", "attrs": {"src": "core.py:77"}}),
    ("ERROR 06-06 14:09:57 worker_base.py:148] Error executing method",
     {"source": "vllm", "process": None, "level": "ERROR", "message": "Error executing method"}),
    ("\x1b[1;36m(VllmWorker rank=1 pid=2445156)\x1b[0;0m ERROR 05-10 16:00:15 [multiproc_executor.py:470] boom",
     {"source": "vllm", "process": "VllmWorker rank=1", "pid": 2445156, "level": "ERROR", "message": "boom"}),
    ("(APIServer pid=1) (EngineCore_DP0 pid=68) ERROR 01-05 12:12:01 [core.py:842] EngineCore failed to start.",
     {"process": "EngineCore_DP0", "pid": 68, "message": "EngineCore failed to start."}),
    ("(RayWorkerWrapper pid=206994, ip=192.168.10.25) ERROR 03-27 10:29:13 [worker_base.py:620] x",
     {"process": "RayWorkerWrapper", "pid": 206994, "level": "ERROR"}),
    ("(Worker_TP0 pid=412) INFO 10-08 12:01:31 [v1/worker/gpu_worker.py:298] Available KV cache memory: 33.47 GiB",
     {"process": "Worker_TP0", "attrs": {"src": "v1/worker/gpu_worker.py:298"}}),
    ('INFO:     10.42.0.17:40218 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
     {"source": "vllm", "format": "uvicorn", "level": "INFO",
      "attrs": {"logger": "uvicorn", "client": "10.42.0.17:40218", "method": "POST", "path": "/v1/chat/completions",
                "status": 500}}),
    ("(APIServer pid=1) INFO:     Waiting for application startup.",
     {"source": "vllm", "format": "uvicorn", "process": "APIServer", "attrs": {"logger": "uvicorn"}}),
    ("02fdc141b80d:213:213 [1] NCCL INFO cudaDriverVersion 12080",
     {"source": "nccl", "level": "INFO", "rank": "dev1", "message": "cudaDriverVersion 12080",
      "attrs": {"host": "02fdc141b80d", "pid": 213, "tid": 213, "dev": 1}}),
    ("H100-2:19989:20082 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer x with error 4",
     {"source": "nccl", "level": "WARNING", "attrs": {"host": "H100-2", "pid": 19989, "tid": 20082, "dev": 1,
                                                       "src": "transport/net_ib.cc:1295"}}),
    ("(RayWorkerWrapper pid=581, ip=10.225.128.18) k8s17:581:581 [0] NCCL INFO P2P Chunksize set to 131072",
     {"source": "nccl", "process": "RayWorkerWrapper", "message": "P2P Chunksize set to 131072"}),
    ("[2026-04-22 21:34:20] mt-l-w:202016:202235 [0] misc/shmutils.cc:88 NCCL WARN Error: failed to extend /dev/shm/nccl-WU88OE",
     {"source": "nccl", "level": "WARNING", "ts_quality": "zoneless",
      "ts": datetime(2026, 4, 22, 21, 34, 20, tzinfo=UTC)}),
    ("[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
     {"source": "nccl", "rank": "dev3", "level": "WARNING"}),
    ("NCCL version 2.21.5+cuda12.4", {"source": "nccl", "attrs": {"nccl_version": "2.21.5"}}),
    ("[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout",
     {"source": "pytorch", "rank": "rank0", "level": "ERROR", "ts": datetime(2000, 3, 21, 2, 7, 8, 408271, tzinfo=UTC),
      "message": "[Rank 0] Watchdog caught collective operation timeout"}),
    ("[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout",
     {"source": "pytorch", "level": "ERROR", "ts": None, "ts_quality": "missing"}),
    ("[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",
     {"source": "kernel", "format": "dmesg", "attrs": {"monotonic_s": 74889.644138, "xid": 79}}),
    ("[Fri Jan 29 23:42:34 2021] NVRM: Xid (PCI:0000:db:00): 31, pid=13641, Ch 00000008",
     {"source": "kernel", "ts": datetime(2021, 1, 29, 23, 42, 34, tzinfo=UTC), "ts_quality": "zoneless",
      "attrs": {"xid": 31}}),
    ("May 08 09:32:47 t3090 kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3",
     {"source": "kernel", "format": "journal", "ts_quality": "yearless", "attrs": {"host": "t3090", "unit": "kernel",
                                                                                   "xid": 45}}),
    ("2026-05-08T09:32:47+0200 gpu-3 kernel: NVRM: Xid (PCI:0000:dc:00): 79, GPU has fallen off the bus.",
     {"source": "kernel", "ts": datetime(2026, 5, 8, 7, 32, 47, tzinfo=UTC), "ts_quality": "exact"}),
    ("192.168.11.119: kern: warning: [2026-04-22T21:26:20.599716692Z]: NVRM: Xid (PCI:0000:48:00): 74, pid=22884",
     {"source": "kernel", "level": "WARNING", "ts": datetime(2026, 4, 22, 21, 26, 20, 599716, tzinfo=UTC),
      "attrs": {"host": "192.168.11.119", "xid": 74}}),
    ("2024-10-14 01:39:49,286 xinference.core.model 3187124 ERROR    boom",
     {"source": "generic", "level": "ERROR", "ts": datetime(2024, 10, 14, 1, 39, 49, 286000, tzinfo=UTC)}),
    ("[2024-10-22 06:31:49 TP0] Scheduler hit an exception",
     {"source": "generic", "rank": "TP0", "message": "Scheduler hit an exception"}),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.15 GiB.",
     {"source": "traceback", "exception": "torch.OutOfMemoryError", "level": "ERROR"}),
    ("just some words", {"source": "generic", "parsed": False, "message": "just some words"}),
]


@pytest.mark.parametrize(("line", "expected"), CASES, ids=[c[0][:50] for c in CASES])
def test_line_format(line: str, expected: dict) -> None:
    row = parse([line])[0]
    for key, value in expected.items():
        got = row[key]
        if key == "attrs":
            got = json.loads(got) if got else None
        assert got == value, f"{key}: {got!r} != {value!r}"


def test_height_and_order_are_kept() -> None:
    lines = [c[0] for c in CASES] * 3
    events = parse_log(lines_frame(lines), ParseContext("t.log")).events
    assert events.height == len(lines)
    assert events.get_column("line_no").to_list() == list(range(1, len(lines) + 1))


def test_traceback_grouping_per_process() -> None:
    lines = [
        "(Worker_TP0 pid=1) ERROR 08-14 10:11:12 [core.py:1] Traceback (most recent call last):",
        "(Worker_TP1 pid=2) ERROR 08-14 10:11:12 [core.py:1] Traceback (most recent call last):",
        '(Worker_TP0 pid=1) ERROR 08-14 10:11:12 [core.py:1]   File "/x/gpu_model_runner.py", line 3, in capture_model',
        "(Worker_TP0 pid=1) ERROR 08-14 10:11:12 [core.py:1]     self.capture()",
        '(Worker_TP1 pid=2) ERROR 08-14 10:11:12 [core.py:1]   File "/x/y.py", line 9, in load_model',
        "(Worker_TP0 pid=1) ERROR 08-14 10:11:12 [core.py:1] torch.OutOfMemoryError: CUDA out of memory.",
        "(Worker_TP1 pid=2) ERROR 08-14 10:11:12 [core.py:1] RuntimeError: NCCL error: unhandled cuda error",
        "(Worker_TP0 pid=1) INFO 08-14 10:11:13 [core.py:1] later",
    ]
    events = parse_log(lines_frame(lines), ParseContext("t.log")).events
    groups = events.get_column("tb_group").to_list()
    assert groups[0] == groups[2] == groups[3] == groups[5] is not None
    assert groups[1] == groups[4] == groups[6] is not None and groups[1] != groups[0]
    assert groups[7] is None
    finals = events.filter(pl.col("tb_final")).get_column("line_no").to_list()
    assert finals == [6, 7]
    assert events.get_column("exception").to_list()[5] == "torch.OutOfMemoryError"


@pytest.mark.parametrize(("module", "positive", "negative"), [
    (vllm, "(APIServer pid=1) INFO 10-08 12:00:01 [api_server.py:1839] vLLM API server version 0.11.0",
     "node1:412:412 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>"),
    (nccl, "node1:412:412 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>",
     "(APIServer pid=1) INFO 10-08 12:00:01 [api_server.py:1839] vLLM API server version 0.11.0"),
    (pytorch, "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught",
     "[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus."),
    (kernel, "[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",
     "INFO 10-17 09:12:01 llm_engine.py:237] Initializing an LLM engine (v0.6.3)"),
    (traceback, "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>",
     "INFO 10-17 09:12:01 llm_engine.py:237] Initializing an LLM engine (v0.6.3)"),
])
def test_detection(module, positive: str, negative: str) -> None:
    assert module.detect(positive)
    assert not module.detect(negative)


def test_generic_detects_anything() -> None:
    assert generic.detect("whatever")


# Lines a format's `split` must read as its pattern does: real ones (samples and corpus
# excerpts) and shapes at its edges.
_EDGE_LINES = [
    "gpu-node-3:2617:2617 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>",
    "gpu-node-3:2617:2617 [0] enqueue.cc:71 NCCL WARN Cuda failure 'out of memory'",
    "gpu-node-3:2617:2617 [0]  NCCL INFO two spaces before NCCL",
    "gpu-node-3:2617:2617 [0] NCCL INFOrmal (no word boundary)",
    "gpu-node-3:2617:2617 [0] NCCL INFO:colon after the level",
    "gpu-node-3:2617:2617 [0] NCCL INFO",
    "gpu-node-3:2617:2617 [0] NCCL INFO ",
    "gpu-node-3:2617:2617 [0] NCCL INFO  indented  message ",
    "a.b-c:1:2 [12] x/y.cc:3 NCCL ABORT",
    "a.b-c:1:2 [12] x/y.cc:3 NCCL ABORT  two spaces",
    "a.b-c:1:2 [12] x/y.cc:3 NCCL NCCL INFO doubled",
    "host:\u0661\u0662:3 [0] NCCL INFO digits of another script",
    "host:99999999999999999999:3 [0] NCCL INFO a pid past Int64",
    "[2026-09-14 06:00:00,123+0000] host:1:2 [0] NCCL INFO with a CI timestamp",
    "(RayWorker pid=5) host:1:2 [0] NCCL INFO behind a process prefix",
    "prefix text host:1:2 [0] NCCL INFO spliced into other output",
    "host:1:2 [0] host:3:4 [1] NCCL INFO two triples",
    "host:x:2 [0] NCCL INFO not a pid",
    "h\u00f6st:1:2 [0] NCCL WARN a host name with a non-ASCII letter",
]


def _sample_lines() -> list[str]:
    root = Path(__file__).resolve().parents[2]
    out: list[str] = []
    for folder in (root / "samples", root / "tests" / "corpus"):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix not in {".json", ".gz", ".tar", ".tgz", ".zip", ".parquet", ".duckdb"}:
                out += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return out


@pytest.mark.parametrize("fmt", [f for f in LOG_FORMATS if f.split], ids=lambda f: f.name)
def test_split_reads_what_the_pattern_captures(fmt: LineFormat) -> None:
    assert fmt.split is not None
    texts = pl.Series([*_EDGE_LINES, *_sample_lines()])
    usual, groups = fmt.split(texts)
    assert usual.sum() > 100, "the usual shape should occur in the samples"
    lines = texts.filter(pl.Series(usual))
    assert lines.str.contains(fmt.pattern).all()
    expected = lines.str.extract_groups("(?P<_m>)" + fmt.pattern).struct.unnest()
    assert_frame_equal(groups.struct.unnest(), expected)


def test_formats_parse_alike_with_and_without_split() -> None:
    frame = lines_frame([*_EDGE_LINES, *_sample_lines()])
    plain = [dataclasses.replace(f, split=None) for f in LOG_FORMATS]
    assert_frame_equal(parse_log_frame(frame, LOG_FORMATS), parse_log_frame(frame, plain))


def test_plain_attributes_are_what_json_encoding_gives() -> None:
    """`plain_attrs_json` writes members as text: equal to `attrs_json` on what a pattern like
    NCCL's admits (word characters of any script, dots, dashes, slashes; any integer; nulls)."""
    texts = pl.Series([*_EDGE_LINES, *_sample_lines()])
    groups = texts.str.extract_groups(nccl.NCCL_PATTERN).struct.unnest().filter(pl.col("dev").is_not_null())
    assert groups.height > 100
    extra = pl.DataFrame({"host": ["h\u00f6st", "\u7bc0\u70b9-1", "a_b.c", None], "npid": ["-3", None, "99999999999999999999", "0"],
                          "tid": ["1", "2", None, None], "dev": [None, "7", "0", None], "srcf": ["x/y.cc:3", None, None, None]})
    frame = pl.concat([groups.select(extra.columns), extra])
    fields = {"host": pl.col("host"), "pid": pl.col("npid").cast(pl.Int64, strict=False),
              "tid": pl.col("tid").cast(pl.Int64, strict=False), "dev": pl.col("dev").cast(pl.Int64, strict=False),
              "src": pl.col("srcf")}
    plain, encoded = frame.select(plain_attrs_json(("host", "src"), **fields).alias("a"), attrs_json(**fields).alias("b"))
    assert plain.to_list() == encoded.to_list()
    assert plain[-1] == '{"pid":0}' and pl.select(plain_attrs_json((), pid=pl.lit(None, pl.Int64))).item() is None


@pytest.mark.parametrize("share", [0.0, 1.0], ids=["every-line", "distinct-texts"])
def test_repeated_texts_parse_as_every_line_does(monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    """Texts are parsed once each when they repeat: the lines get what parsing each gives,
    in their own order, nulls and the envelope's time included."""
    texts = [*_EDGE_LINES, *_sample_lines()]
    lines = texts * 3 + [None, ""]  # every text repeated: the distinct share is about a third
    frame = lines_frame([t or "" for t in lines]).with_columns(pl.Series("text", lines, dtype=pl.Utf8)).with_columns(
        pl.when(pl.int_range(pl.len()) % 2 == 0).then(pl.lit(datetime(2026, 1, 2, tzinfo=UTC)))
        .cast(pl.Datetime("us", "UTC")).alias("outer_ts"))
    expected = [parse_log_frame(frame.slice(i, 1), LOG_FORMATS) for i in range(0, frame.height, 997)]
    monkeypatch.setattr("k3forensics.text.REPEATS_SHARE", share)
    got = parse_log_frame(frame, LOG_FORMATS)
    assert_frame_equal(got.gather(list(range(0, frame.height, 997))), pl.concat(expected))
    monkeypatch.setattr("k3forensics.text.REPEATS_SHARE", 1 - share)
    assert_frame_equal(parse_log_frame(frame, LOG_FORMATS), got)


def test_uvicorn_access_attributes_are_what_encoding_each_member_gives() -> None:
    """An access line's attributes are encoded as one object: equal to `attrs_json` of its
    members (quotes, backslashes and any script in the client and path included)."""
    odd = ['INFO:     10.0.0.1:5 - "POST /v1/a"b\\c HTTP/1.1" 200 OK', 'INFO:     [::1]:80 - "GET /\u00e9t\u00e9?q=\u7bc0 HTTP/2" 404',
           "INFO:     Started server process [1]", 'INFO:     h\u00f6st:1 - "DELETE /x HTTP/1.0" 500 Internal Server Error']
    texts = [t for t in [*odd, *_sample_lines()] if ":  " in t]
    events = parse_log_frame(lines_frame(texts), LOG_FORMATS).filter(pl.col("format") == "uvicorn")
    assert events.height > 10 and events.get_column("attrs").str.contains('"path"').sum() > 5
    access = events.select(pl.col("message").str.extract_groups(vllm.ACCESS_PATTERN).alias("a")).get_column("a")
    a = pl.col("a")
    want = pl.DataFrame({"a": access}).select(attrs_json(
        logger=pl.lit("uvicorn"), client=a.struct.field("client"), method=a.struct.field("method"),
        path=a.struct.field("path"), status=a.struct.field("status").cast(pl.Int64))).to_series()
    assert events.get_column("attrs").to_list() == want.to_list()
    assert json.loads(events.get_column("attrs")[0])["path"] == '/v1/a"b\\c'

"""The chunked timeline build: whatever the chunk size, the same timeline as the whole-bundle
computation, and `ingest` holds every line."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import k3forensics.decode
from k3forensics.bundle import BundleFile
from k3forensics.decode import decode_file
from k3forensics.library.loader import Library
from k3forensics.timeline.build import TimelineBuild
from k3forensics.timeline.ingest import build_timeline, ingest
from k3forensics.timeline.inmemory import build_whole
from k3forensics.timeline.smallfiles import decode_batch

ROOT = Path(__file__).resolve().parent.parent


def _vllm_log(lines: int) -> str:
    """A log that crosses New Year, with NCCL lines, tracebacks every so often (so that some
    straddle chunk boundaries) and lines without a time before the first one that has it."""
    out = ["starting container", "(APIServer pid=1) INFO:     Waiting for application startup."]
    for i in range(lines):
        second = i % 60
        day = "12-31 23:59" if i < lines // 2 else "01-01 00:00"
        if i == 5:
            out.append(f"(APIServer pid=1) INFO {day}:{second:02d} [api_server.py:1] vLLM API server version 0.27.1")
        if i == 40:
            out.append("(APIServer pid=1) INFO:     Application startup complete.")
        if i % 97 == 0:
            out += [
                f"(EngineCore pid=7) ERROR {day}:{second:02d} [core.py:854] Traceback (most recent call last):",
                f'(EngineCore pid=7) ERROR {day}:{second:02d} [core.py:854]   File "/v/gpu_worker.py", line 9, in load_model',
                f"k3-n1:9:{i} [0] NCCL INFO Channel {i % 24:02d}/24 : 0[0] -> 1[1] via P2P/CUMEM/read",
                f"(EngineCore pid=7) ERROR {day}:{second:02d} [core.py:854] torch.OutOfMemoryError: CUDA out of memory.",
            ]
        out.append(f"k3-n1:9:{i} [{i % 8}] NCCL INFO comm 0x7f21 rank {i % 8} nranks 8 cudaDev {i % 8} - Init COMPLETE")
        out.append(f"(APIServer pid=1) INFO {day}:{second:02d} [loggers.py:208] Engine 000: Avg prompt throughput: "
                   f"{i}.0 tokens/s, Running: {i % 9} reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%")
    return "\n".join(out) + "\n"


@pytest.fixture
def big_bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    (bundle / "node-a").mkdir(parents=True)
    (bundle / "node-b").mkdir()
    (bundle / "node-a" / "vllm.log").write_text(_vllm_log(1500), encoding="utf-8")
    # A few lines past the head lack the envelope (one in colour): kept with their own text.
    enveloped = [f"2026-12-31T23:{59 - (i < 300)}:{i % 60:02d}.000000000Z {line}" if i % 97 != 50
                 else f"\x1b[31m{line}\x1b[0m" if i % 2 else line
                 for i, line in enumerate(_vllm_log(300).splitlines())]
    (bundle / "node-b" / "docker.log").write_text("\n".join(enveloped) + "\n", encoding="utf-8")
    (bundle / "node-b" / "launch.sh").write_text("vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8\n",
                                                 encoding="utf-8")
    return bundle


def _same_timeline(bundle: Path, library: Library, chunk_bytes: int) -> None:
    chunked = build_timeline(bundle, library, chunk_bytes=chunk_bytes)
    events, samples, facts, files, nodes, warnings, year = build_whole(bundle, library)
    assert_frame_equal(chunked.events, events)
    assert_frame_equal(chunked.files, files)
    assert_frame_equal(chunked.nodes, nodes)
    assert_frame_equal(chunked.facts, facts)
    assert_frame_equal(chunked.samples, samples)
    assert (chunked.warnings, chunked.year) == (warnings, year)


def test_a_file_larger_than_the_chunk_keeps_every_line(big_bundle: Path, tmp_path: Path, library: Library) -> None:
    log = big_bundle / "node-a" / "vllm.log"
    chunk = 16 << 10
    assert log.stat().st_size > 10 * chunk
    spool = tmp_path / "spool"
    spool.mkdir()
    db = tmp_path / "t.duckdb"
    summary = ingest(big_bundle, db, library, chunk_bytes=chunk, spool_dir=spool)
    con = duckdb.connect(str(db), read_only=True)
    events = con.execute("SELECT count(*) FROM events").fetchone()[0]
    counted = con.execute("SELECT sum(line_count) FROM files").fetchone()[0]
    on_disk = sum(p.read_bytes().count(b"\n") for p in big_bundle.rglob("*") if p.is_file())
    assert events == counted == summary.line_count == on_disk
    assert con.execute("SELECT count(DISTINCT seq), min(seq), max(seq) FROM events").fetchone() == (events, 0, events - 1)
    assert con.execute("SELECT count(*) FROM events WHERE phase IS NULL").fetchone()[0] == 0
    assert con.execute("SELECT count(DISTINCT tb_group) FROM events WHERE tb_final").fetchone()[0] > 10
    con.close()
    assert not list(spool.iterdir()), "the spool is removed once the database is written"


def test_chunked_build_equals_the_whole_bundle(big_bundle: Path, library: Library) -> None:
    _same_timeline(big_bundle, library, chunk_bytes=16 << 10)


@pytest.mark.parametrize("name", ["nccl-ib-two-node", "oom-weight-load", "xid79-fallen-off-bus",
                                  "container-oomkilled", "driver-r575-cuda13", "healthy-prefix-cache-tools"])
def test_tiny_chunks_give_the_same_timeline(name: str, library: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first read of a file is at least the UTF-8 sample (64 KiB): shrink it so that the
    # sample bundles, all smaller, are cut into many chunks too.
    monkeypatch.setattr(k3forensics.decode, "_SAMPLE_BYTES", 1024)
    _same_timeline(ROOT / "samples" / name / "bundle", library, chunk_bytes=2048)


def test_the_events_are_in_the_table_order(big_bundle: Path, library: Library) -> None:
    events = build_timeline(big_bundle, library, chunk_bytes=16 << 10).events
    assert events.get_column("seq").to_list() == list(range(events.height))
    assert events.columns[:2] == ["seq", "file"] and events.columns[-1] == "phase"
    assert events.filter(pl.col("ts_quality") == "inferred").get_column("ts").dt.year().unique().sort().to_list() \
        == [2026, 2027]


# -- small files, read in batches --------------------------------------------------------------


def _mixed_small_files(bundle: Path) -> Path:
    """Small files of every kind (empty, CRLF, Latin-1, binary, enveloped, documents, tracebacks,
    year-less times over New Year) on both sides of a file too big for a batch."""
    a, b = bundle / "node-a", bundle / "node-b"
    a.mkdir(parents=True)
    b.mkdir()
    (a / "00-empty.log").write_bytes(b"")
    (a / "01-crlf.log").write_bytes(b"INFO 12-31 23:59:58 [api_server.py:1] vLLM API server version 0.27.1\r\n"
                                    b"ERROR 12-31 23:59:59 [core.py:1] EngineCore failed to start.\r\n")
    record = '{"log":"INFO 12-31 23:59:57 [api_server.py:1885] vLLM API server version 0.27.1\\n",' \
             '"stream":"stderr","time":"2026-12-31T23:59:57.000000000Z"}'
    (a / "02-docker.log").write_text(f"{record}\n{record}\n{{\"log\":\"cut\n", encoding="utf-8")
    (a / "03-gpus.txt").write_text("GPU 0: NVIDIA H200 (UUID: GPU-1234)\nGPU 1: NVIDIA H200 (UUID: GPU-5678)\n",
                                   encoding="utf-8")
    (a / "04-latin1.log").write_bytes("INFO 01-01 00:00:01 [x.py:1] caf\u00e9 cr\u00e8me \u00e0 la carte "
                                      "\u00e9t\u00e9 \u00e9\u00e9\u00e9\n".encode("latin-1"))
    (a / "05-core.bin").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)))
    (a / "06-big.log").write_text(_vllm_log(1500), encoding="utf-8")
    (a / "07-pdf.log").write_bytes(b"%PDF-1.4 not a log\n")
    (a / "08-last-line-open.log").write_bytes(b"INFO 01-01 00:00:02 [x.py:1] one\n\x1b[31mred\x1b[0m\ttab")
    for i in range(60):
        text = _vllm_log(1).splitlines()[i % 6] if i % 5 else "no time on this line\n\nstill none"
        (b / f"req-{i:03d}.log").write_text(text + "\n", encoding="utf-8")
    (b / "syslog").write_text("Dec 31 23:59:59 h kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=python3, "
                              "GPU has fallen off the bus.\nJan  1 00:00:02 h kernel: NVRM: GPU 0000:01:00.0: "
                              "GPU has fallen off the bus.\n", encoding="utf-8")
    (b / "tb.log").write_text(
        "ERROR 01-01 00:00:03 [core.py:1] Traceback (most recent call last):\n"
        '  File "/v/worker.py", line 9, in load_model\n'
        "torch.OutOfMemoryError: CUDA out of memory.\n", encoding="utf-8")
    (b / "launch.sh").write_text("vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8\n", encoding="utf-8")
    return bundle


@pytest.mark.parametrize("chunk_bytes", [16 << 10, 16 << 20])
def test_batched_small_files_give_the_same_timeline(tmp_path: Path, library: Library, chunk_bytes: int) -> None:
    _same_timeline(_mixed_small_files(tmp_path / "bundle"), library, chunk_bytes=chunk_bytes)


def test_small_files_share_chunks(tmp_path: Path, library: Library) -> None:
    build = TimelineBuild(_mixed_small_files(tmp_path / "bundle"), library, chunk_bytes=128 << 10)
    build.read()
    # the files before and after the big one make two batches; the big one its own chunks
    big = next(s for s in build.files if s.info.file.endswith("06-big.log"))
    assert not big.batched and sum(s.batched for s in build.files) == len(build.files) - 1 == 71
    assert big.info.decoded is not None
    assert len(build.spool) <= 2 + big.info.decoded.size // (128 << 10) + 1
    build.settle()
    chunks = list(build.finish())
    assert sum(c.height for c in chunks) == sum(s.lines for s in build.files)


@pytest.mark.parametrize("data", [
    b"", b"\n", b"\n\n", b"one", b"one\ntwo", b"one\ntwo\n", b"\ttab\x1b[0m\x0b\x0c\x08\n", b"%PDF-1.4\n",
    b"a\r\nb\r\n", b"nul\x00byte\n", "caf\u00e9\n".encode(), b"\xff\xfeu\x00t\x00f\x00", b"latin \xe9\n",
])
def test_batch_decoding_equals_decode_file(tmp_path: Path, data: bytes) -> None:
    paths = []
    for i, content in enumerate([b"before\n", data, b"after"]):
        path = tmp_path / f"{i}.log"
        path.write_bytes(content)
        paths.append(BundleFile(path.name, path, len(content), None))
    lines, decoded = decode_batch(paths)
    for bf, got in zip(paths, decoded, strict=True):
        want = decode_file(bf)
        assert_frame_equal(lines.filter(pl.col("file") == bf.rel_path), want.lines)
        assert (got.sha256, got.size, got.encoding, got.problems, got.binary) == \
            (want.sha256, want.size, want.encoding, want.problems, want.binary)

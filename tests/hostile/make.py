"""Hostile bundles, written at test time into a folder the test owns.

Every function takes the folder to write into and returns what it made. Large inputs (bombs,
100,000 members, a 100 MB line) are streamed to disk and never held whole in memory; none of
them is committed. The logs carry one real failure (a CUDA OOM while loading weights) so that
each accepted case also shows that the triage still names it.
"""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# A vLLM start-up that dies of a CUDA OOM while loading weights (4 lines, one failure).
OOM_LINE = ("ERROR 08-18 14:10:50 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            "2.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.06 GiB is free.")
FAILING_LOG = [
    "INFO 08-18 14:10:40 [api_server.py:1885] vLLM API server version 0.11.0",
    "INFO 08-18 14:10:41 [gpu_model_runner.py:2338] Starting to load model moonshotai/Kimi-K3...",
    "ERROR 08-18 14:10:50 [core.py:708] EngineCore failed to start.",
    OOM_LINE,
]
FAILURE_SIGNATURE = "oom.torch-cuda-oom"
_MIB = 1 << 20


def text(lines: list[str], newline: str = "\n") -> bytes:
    return "".join(line + newline for line in lines).encode()


def failing_log() -> bytes:
    return text(FAILING_LOG)


# -- archives -------------------------------------------------------------------------------------


def member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = "") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mtime, info.mode = kind, link, 1787000000, 0o644
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def write_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tar:  # type: ignore[call-overload]
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _filler(n_lines: int, seed: int = 7) -> bytes:
    """Log-like lines that compress about as well as real logs (a ratio far below a bomb's)."""
    out, x = [], seed
    for i in range(n_lines):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(f"INFO 08-18 14:0{i % 10}:{i % 60:02d} [worker.py:{x % 997}] step {i} token {x:x} ok\n")
    return "".join(out).encode()


def truncated_tgz(folder: Path) -> Path:
    """A .tar.gz cut in the middle of its second member (a copy that stopped early)."""
    whole = write_tar(folder / "whole.tgz", [member("node-a/vllm.log", failing_log()),
                                        member("node-a/worker.log", _filler(20_000))])
    data = whole.read_bytes()
    whole.unlink()
    path = folder / "truncated.tar.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    return path


def corrupt_zip(folder: Path) -> Path:
    """A zip whose second member's compressed bytes were damaged (CRC and inflate fail)."""
    path = folder / "corrupt.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("vllm.log", failing_log())
        archive.writestr("worker.log", _filler(5_000))
    data = bytearray(path.read_bytes())
    start = data.find(b"worker.log") + len("worker.log")  # the local header's name, then the data
    for i in range(start + 200, start + 400):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    return path


def traversal_tar(folder: Path, escape_name: str) -> Path:
    """A member named `../<escape_name>`: a naive extractor writes beside the extraction folder."""
    return write_tar(folder / "traversal.tar.gz", [member("vllm.log", failing_log()),
                                              member(f"logs/../../{escape_name}", b"escaped\n")])


def absolute_tar(folder: Path, target: Path) -> Path:
    """A member whose name is an absolute path (`target`)."""
    return write_tar(folder / "absolute.tar.gz", [member("vllm.log", failing_log()),
                                             member(str(target), b"escaped\n")])


def traversal_zip(folder: Path, escape_name: str) -> Path:
    path = folder / "traversal.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("vllm.log", failing_log())
        archive.writestr(f"../../{escape_name}", b"escaped\n")
    return path


def symlink_outside_tar(folder: Path, target: str) -> Path:
    """A symbolic link member pointing outside the archive (`/etc/passwd`, `../../x`)."""
    return write_tar(folder / "symlink.tar.gz", [member("vllm.log", failing_log()),
                                            member("evidence.log", kind=tarfile.SYMTYPE, link=target)])


def hardlink_outside_tar(folder: Path, target: str) -> Path:
    return write_tar(folder / "hardlink.tar.gz", [member("vllm.log", failing_log()),
                                             member("evidence.log", kind=tarfile.LNKTYPE, link=target)])


def symlink_outside_zip(folder: Path, target: str) -> Path:
    """Zip stores a link as a member whose mode says S_IFLNK and whose content is the target."""
    path = folder / "symlink.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("vllm.log", failing_log())
        info = zipfile.ZipInfo("evidence.log")
        info.create_system = 3  # unix: external_attr carries the mode
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, target)
    return path


def _devices() -> list[tuple[tarfile.TarInfo, bytes]]:
    """Character and block devices and a FIFO: skipped with a warning each."""
    chr_dev, _ = member("dev/nvidia0", kind=tarfile.CHRTYPE)
    chr_dev.devmajor, chr_dev.devminor = 195, 0
    blk_dev, _ = member("dev/sda", kind=tarfile.BLKTYPE)
    blk_dev.devmajor, blk_dev.devminor = 8, 0
    return [(chr_dev, b""), (blk_dev, b""), member("run/engine.fifo", kind=tarfile.FIFOTYPE)]


def _inside_links() -> list[tuple[tarfile.TarInfo, bytes]]:
    """Links that stay inside the archive: never followed, the target is read under its own name."""
    return [member("current.log", kind=tarfile.SYMTYPE, link="vllm.log"),
            member("copy.log", kind=tarfile.LNKTYPE, link="vllm.log")]


def _zeros(n: int) -> Iterator[bytes]:
    block = bytes(_MIB)
    for _ in range(n // _MIB):
        yield block


def gzip_bomb(folder: Path, mib: int = 64) -> Path:
    """`mib` MiB of zeros as one .gz (about 1000:1), streamed out."""
    path = folder / "bomb.log.gz"
    with gzip.open(path, "wb", compresslevel=9) as out:
        for block in _zeros(mib * _MIB):
            out.write(block)
    return path


def zip_bomb(folder: Path, mib: int = 64) -> Path:
    path = folder / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("vllm.log", failing_log())
        with archive.open("zeros.log", "w", force_zip64=True) as out:
            for block in _zeros(mib * _MIB):
                out.write(block)
    return path


class _ZeroReader(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        n = min(len(buf), self.left)
        buf[:n] = bytes(n)
        self.left -= n
        return n


def tgz_bomb(folder: Path, mib: int = 64) -> Path:
    """A .tar.gz whose one member is `mib` MiB of zeros: the stream's ratio gives it away."""
    path = folder / "bomb.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=9) as tar:
        tar.addfile(member("vllm.log", failing_log())[0], io.BytesIO(failing_log()))
        info = tarfile.TarInfo("zeros.log")
        info.size = mib * _MIB
        tar.addfile(info, io.BufferedReader(_ZeroReader(info.size)))
    return path


def low_ratio_tgz(folder: Path, members: int = 4, lines_each: int = 20_000) -> Path:
    """Ordinary-looking members (ratio far below a bomb's) that together pass a small total cap."""
    return write_tar(folder / "big.tar.gz", [member(f"node-{i}/worker.log", _filler(lines_each, seed=i))
                                        for i in range(members)])


@dataclass(frozen=True)
class Oddities:
    bundle: Path
    lines: dict[str, int]   # readable files -> physical lines
    inner_log: str          # in an archive one level down: read
    opaque: str             # an archive two levels down: kept as an opaque file, not unpacked


def oddities_tar(folder: Path) -> Oddities:
    """Harmless oddities in one .tar.gz: devices, a FIFO, links inside the archive, and nested
    archives (node-b/logs.zip ⊃ deeper.tar.gz ⊃ deep.log)."""
    deeper = write_tar(folder / "deeper.tar.gz", [member("deep.log", failing_log())])
    inner = folder / "logs.zip"
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("vllm-b.log", failing_log())
        archive.write(deeper, "deeper.tar.gz")
    outer = write_tar(folder / "oddities.tar.gz", [member("vllm.log", failing_log()), *_devices(), *_inside_links(),
                                              member("node-b/logs.zip", inner.read_bytes())])
    deeper.unlink()
    inner.unlink()
    inner_log, opaque = "node-b/logs/vllm-b.log", "node-b/logs/deeper.tar.gz"
    return Oddities(outer, {"vllm.log": 4, inner_log: 4, opaque: 0}, inner_log, opaque)


def empty_archive(folder: Path, kind: str) -> Path:
    if kind == "zip":
        path = folder / "empty.zip"
        zipfile.ZipFile(path, "w").close()
        return path
    path = folder / ("empty.tar.gz" if kind == "tgz" else "empty.tar")
    tarfile.open(path, "w:gz" if kind == "tgz" else "w").close()
    return path


def many_files(folder: Path, n: int = 100_000) -> Path:
    """`n` one-line files (a collection script that wrote one file per request), in one .tar.gz."""
    path = folder / "many.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        tar.addfile(member("vllm.log", failing_log())[0], io.BytesIO(failing_log()))
        for i in range(n - 1):
            data = f"INFO 08-18 14:10:{i % 60:02d} request {i} done\n".encode()
            info = member(f"requests/{i // 1000:03d}/{i:06d}.log", data)[0]
            tar.addfile(info, io.BytesIO(data))
    return path


# -- text ------------------------------------------------------------------------------------------

# Each text case is one file: (name, bytes, physical lines the decoder must give).
TextCase = tuple[str, bytes, int]


def invalid_utf8() -> TextCase:
    """A UTF-8 log with a few stray bytes: shown as U+FFFD, counted, the rest stays UTF-8."""
    lines = [line.encode() for line in FAILING_LOG]
    lines[0] += " ✓ ".encode() + b"\xff bad \xc3( bytes"
    lines[1] += b" \xed\xa0\x80 surrogate"
    return "invalid-utf8.log", b"\n".join(lines) + b"\n", len(lines)


def latin1() -> TextCase:
    """Not UTF-8 at all (a Latin-1 console): decoded as Latin-1 and reported once."""
    lines = [*FAILING_LOG[:2], "Modèle chargé, mémoire épuisée: ÄÖÜ äöü ß éèêë àâ ç", *FAILING_LOG[2:]]
    return "latin1.log", "\n".join(lines).encode("latin-1") + b"\n", len(lines)


def utf16_bom() -> TextCase:
    return "utf16.log", "\n".join(FAILING_LOG + ["ünïcödé ✓"]).encode("utf-16"), len(FAILING_LOG) + 1


def nul_bytes() -> TextCase:
    lines = [line.encode() for line in FAILING_LOG]
    lines[1] = lines[1][:10] + b"\x00\x00" + lines[1][10:]
    lines[2] += b"\x00"
    return "nul.log", b"\n".join(lines) + b"\n", len(lines)


def crlf_and_cr() -> TextCase:
    """CRLF line ends, and a progress bar that redraws one physical line with lone CRs."""
    progress = "Loading safetensors: 10%\rLoading safetensors: 50%\rLoading safetensors: 100%"
    data = "\r\n".join([*FAILING_LOG[:2], progress, *FAILING_LOG[2:]]).encode() + b"\r\n"
    return "crlf.log", data, len(FAILING_LOG) + 1


# Lines that every detector could claim: a docker envelope around a vLLM prefix around NCCL, kernel,
# JSON, Prometheus and nvidia-smi shapes at once.
EVERY_SOURCE_LINES = [
    '2026-08-18T14:10:39.000000000Z stdout F (EngineCore pid=1) INFO 08-18 14:10:39 [core.py:1] '
    'host:1:1 [0] NCCL INFO [  12.345678] NVRM: Xid (PCI:0000:01:00): 79, {"log":"x","stream":"stdout"}',
    '{"log":"vllm:num_requests_running{engine=\\"0\\"} 1\\n","stream":"stdout","time":"2026-08-18T14:10:39Z"}',
    '# TYPE vllm:num_requests_running gauge | NVIDIA-SMI 580.65.06  Driver Version: 580.65.06 |',
    '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[["x","y"]]}]}}',
    '{"request": {"messages": 7, "tools": "x"}, "response": {"choices": {"0": 1}, "usage": 3}}',
    'Aug 18 14:10:39 host kernel: [  12.345678] NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.',
    '[rank0]:[W818 14:10:39.000000000 ProcessGroupNCCL.cpp:1] Warning: PyTorch version: 2.8.0 GPU0\tX\tNV18',
    'Name:  vllm-0   Namespace: default   Warning  BackOff  2m  kubelet  Back-off restarting  vllm serve m --tp 8',
    'Traceback (most recent call last):   File "x.py", line 1, in <module>   [pip3] torch==2.8.0',
]


def every_source() -> TextCase:
    return "every-source.log", text(EVERY_SOURCE_LINES + FAILING_LOG), len(EVERY_SOURCE_LINES) + len(FAILING_LOG)


def polyglot_document() -> TextCase:
    """A file whose head shows the marks of several document types at once."""
    lines = [
        "# HELP vllm:num_requests_running Number of requests running.",
        "# TYPE vllm:num_requests_running gauge",
        '{"status":"success","data":{"resultType":"vector","result":[]}}',
        "| NVIDIA-SMI 580.65.06              Driver Version: 580.65.06      CUDA Version: 13.0     |",
        "PyTorch version: 2.8.0",
        "vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8",
        "Name:         vllm-0",
        "GPU0\t X \tNV18\tNV18",
        'vllm:num_requests_running{engine="0"} 3',
    ]
    return "polyglot.txt", text(lines), len(lines)


TEXT_CASES = {"invalid_utf8": invalid_utf8, "latin1": latin1, "utf16_bom": utf16_bom, "nul_bytes": nul_bytes,
              "crlf_and_cr": crlf_and_cr, "every_source": every_source, "polyglot": polyglot_document}


def long_line(folder: Path, mib: int = 100) -> tuple[Path, int]:
    """The failing log with one `mib` MiB line (no newline in it) in the middle."""
    path = folder / "long-line.log"
    with open(path, "wb") as out:
        out.write(text(FAILING_LOG[:2]))
        block = b"x" * _MIB
        for _ in range(mib):
            out.write(block)
        out.write(b"\n" + text(FAILING_LOG[2:]))
    return path, len(FAILING_LOG) + 1


# Terminal and markup payloads planted in the failure line: a reader's terminal, a Markdown
# ticket or an HTML page must show them as text, never act on them.
ANSI_PAYLOAD = "\x1b[31mred\x1b[0m \x1b[2J\x1b[H\x1b]0;owned-title\x07 \x1b]8;;https://evil.example/\x07click\x1b]8;;\x07"
RICH_PAYLOAD = "[bold red]FAKE-VERDICT[/bold red] [link=https://evil.example/]see here[/link]"
HTML_PAYLOAD = '<script>alert("k3f")</script><img src=x onerror=alert(1)>'
MARKDOWN_PAYLOAD = "``` [click](javascript:alert(1)) <!-- hidden -->"


def payload_log(folder: Path) -> Path:
    bundle = folder / "payload"
    bundle.mkdir()
    lines = [*FAILING_LOG[:3], f"{OOM_LINE} {ANSI_PAYLOAD} {RICH_PAYLOAD} {HTML_PAYLOAD} {MARKDOWN_PAYLOAD}"]
    lines[2] += f" {RICH_PAYLOAD} {HTML_PAYLOAD}"
    (bundle / "vllm.log").write_bytes(text(lines))
    return bundle


# -- time ------------------------------------------------------------------------------------------


def no_timestamps(folder: Path) -> Path:
    """A bare Python traceback: not one line carries a time."""
    bundle = folder / "no-timestamps"
    bundle.mkdir()
    lines = [
        "Loading model moonshotai/Kimi-K3",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/site-packages/vllm/worker/model_runner.py", line 1, in load_model',
        "    self.model = get_model(vllm_config=self.vllm_config)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
        "of 139.81 GiB of which 1.06 GiB is free.",
    ]
    (bundle / "stderr.txt").write_bytes(text(lines))
    return bundle


def mixed_zones(folder: Path) -> Path:
    """The same instant written in three zones, plus vLLM's zone-less, year-less lines."""
    bundle = folder / "mixed-zones"
    bundle.mkdir()
    (bundle / "vllm.log").write_bytes(failing_log())
    (bundle / "proxy.log").write_bytes(text([
        "2026-08-18T16:10:45+02:00 WARNING upstream slow (Berlin)",
        "2026-08-18T14:10:45Z WARNING upstream slow (UTC)",
        "2026-08-18T07:10:45-07:00 WARNING upstream slow (Pacific)",
    ]))
    return bundle


def skewed_nodes(folder: Path, skew_minutes: int = 3) -> Path:
    """node-b's clock runs `skew_minutes` behind: its echo of node-a's failure looks earlier."""
    bundle = folder / "skewed-nodes"
    (bundle / "node-a").mkdir(parents=True)
    (bundle / "node-b").mkdir(parents=True)
    (bundle / "node-a" / "vllm.log").write_bytes(failing_log())
    minute = 10 - skew_minutes
    (bundle / "node-b" / "vllm.log").write_bytes(text([
        f"INFO 08-18 14:{minute:02d}:40 [api_server.py:1885] vLLM API server version 0.11.0",
        f"ERROR 08-18 14:{minute:02d}:52 [core.py:708] EngineCore failed to start.",
        f"ERROR 08-18 14:{minute:02d}:52 [core.py:708] RuntimeError: Engine core initialization failed. "
        "See root cause above.",
    ]))
    return bundle


def backwards_time(folder: Path) -> Path:
    """A clock stepped back (NTP) in the middle of a log: later lines carry earlier times."""
    bundle = folder / "backwards"
    bundle.mkdir()
    (bundle / "vllm.log").write_bytes(text([
        "INFO 08-18 14:10:40 [api_server.py:1885] vLLM API server version 0.11.0",
        "INFO 08-18 14:10:41 [gpu_model_runner.py:2338] Starting to load model moonshotai/Kimi-K3...",
        "some line without a time",
        "INFO 08-18 14:05:00 [ntp.py:1] clock stepped back five minutes",
        FAILING_LOG[2].replace("14:10:50", "14:05:09"),
        OOM_LINE.replace("14:10:50", "14:05:10"),
    ]))
    return bundle


def yearless_new_year(folder: Path) -> Path:
    """syslog lines (no year) running over New Year; the containers' ISO times date the bundle."""
    bundle = folder / "new-year"
    bundle.mkdir()
    (bundle / "syslog").write_bytes(text([
        "Dec 31 23:59:58 gpu-node-7 kernel: NVRM: GPU at PCI:0000:01:00: GPU-1234",
        "Dec 31 23:59:59 gpu-node-7 kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=4242, name=python3, "
        "GPU has fallen off the bus.",
        "Jan  1 00:00:02 gpu-node-7 kernel: NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.",
        "Jan  1 00:00:05 gpu-node-7 systemd[1]: vllm.service: Main process exited, code=exited, status=1/FAILURE",
    ]))
    (bundle / "collector.log").write_bytes(text(["2027-01-01T00:10:00Z INFO bundle collected"]))
    return bundle


def leap_day_without_year(folder: Path) -> Path:
    """A year-less Feb 29 in a bundle dated by a non-leap year (the year is a guess: it may not fit)."""
    bundle = folder / "leap-day"
    bundle.mkdir()
    (bundle / "syslog").write_bytes(text([
        "Feb 28 23:59:59 gpu-node-7 kernel: NVRM: GPU at PCI:0000:01:00: GPU-1234",
        "Feb 29 00:00:01 gpu-node-7 kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=4242, name=python3, "
        "GPU has fallen off the bus.",
    ]))
    (bundle / "collector.log").write_bytes(text(["2027-03-01T00:10:00Z INFO bundle collected"]))
    return bundle


def impossible_dates(folder: Path) -> Path:
    """Dates no calendar has, in every timestamp shape."""
    bundle = folder / "impossible-dates"
    bundle.mkdir()
    (bundle / "vllm.log").write_bytes(text([
        "ERROR 02-30 10:00:00 [core.py:1] day 30 of February",
        "INFO 13-45 99:99:99 [core.py:1] month 13",
        "Dec 32 25:61:61 gpu-node-7 kernel: day 32",
        "2026-02-30T10:00:00Z INFO ISO day 30 of February",
        "2026-13-01 00:00:00 WARNING ISO month 13",
    ]))
    return bundle


# -- metrics ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricsCase:
    name: str
    lines: list[str]
    samples: int      # well-formed sample lines
    malformed: int    # lines the parser must count as malformed


METRICS_CASES = {
    "malformed": MetricsCase("malformed.prom", [
        "# HELP vllm:num_requests_running Number of requests running.",
        "# TYPE vllm:num_requests_running gauge",
        'vllm:num_requests_running{engine="0"} 3',
        'vllm:num_requests_running{engine="0" 3',          # unclosed labels
        "vllm:num_requests_running{engine=0} 3",           # unquoted label value
        "vllm:num_requests_running three",                 # not a number
        "this is not an exposition line at all",
        "vllm:gpu_cache_usage_perc 0.5 1787000000000 extra",
        'vllm:gpu_cache_usage_perc{engine="0"} 0.25',
    ], samples=2, malformed=5),
    "nan_inf": MetricsCase("nan-inf.prom", [
        "# TYPE vllm:e2e_request_latency_seconds histogram",
        'vllm:e2e_request_latency_seconds_bucket{le="+Inf"} 12',
        'vllm:e2e_request_latency_seconds_sum{engine="0"} NaN',
        'vllm:gauge_a{engine="0"} +Inf',
        'vllm:gauge_b{engine="0"} -Inf',
        'vllm:gauge_c{engine="0"} 1e400',
    ], samples=5, malformed=0),
    "duplicates": MetricsCase("duplicates.prom", [
        "# ts=1787000000",
        'vllm:num_requests_waiting{engine="0"} 1',
        'vllm:num_requests_waiting{engine="0"} 2',
        'vllm:num_requests_waiting{engine="1"} 7',
        'vllm:num_requests_waiting{engine="0"} 3',
    ], samples=4, malformed=0),
    "counter_reset": MetricsCase("counter-reset.prom", [
        "# TYPE vllm:prompt_tokens_total counter",
        "# ts=1787000000", 'vllm:prompt_tokens_total{engine="0"} 1000',
        "# ts=1787000015", 'vllm:prompt_tokens_total{engine="0"} 2500',
        "# ts=1787000030", 'vllm:prompt_tokens_total{engine="0"} 40',
        "# ts=1787000045", 'vllm:prompt_tokens_total{engine="0"} 900',
    ], samples=4, malformed=0),
}


# Query-API JSON and captured chat traffic typed by a stranger: wrong types at every level, a
# document nested deeper than the interpreter's stack, an integer of 5,000 digits, times out of range.
DEEP = "[" * 100_000 + "]" * 100_000
QUERY_JSON_LINES = [
    '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"vllm:x"},'
    '"values":[[1787000000,"1"],["soon","2"],[1787000015],null,[1787000030,"NaN"]]},7,"x"]}}',
    '{"status":"success","data":true}',
    '{"status":"success","data":{"resultType":"vector","result":[{"metric":[1,2],"value":[1787000000,"+Inf"]}]}}',
    '{"status":"success","data":{"resultType":"scalar","result":"x"},"warnings":"not a list"}',
    DEEP,
    '{"status":"success","data":{"resultType":"vector","result":[{"value":[' + "9" * 5000 + ',"1"]}]}}',
]
CAPTURE_LINES = [
    '{"request": {"model": "k3", "messages": [{"role": "user", "content": "hi"}]}, "response": '
    '{"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, '
    '"finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}, "status": 200}',
    '{"request": {"messages": 7, "tools": "x"}, "response": {"choices": {"0": 1}, "usage": 3}, "status": "²"}',
    '{"timestamp": 1e300, "response": {"object": "chat.completion", "choices": [true, {"message": [1]}]}}',
    '{"ts": "NaN", "duration_ms": "slow", "response": [{"choices": [{"index": [0], "delta": {"content": 5, '
    '"tool_calls": [{"index": {}, "function": {"arguments": {"a": 1}}}, 3]}}]}, "junk"]}',
    '{"response": {"object": "chat.completion", "created": 99999999999999999999, "error": {"code": [500]}}}',
    "data: " + DEEP,
    '{"request": {"messages": [{"role": "user", "content": "x"}]}, "latency_s": ' + "1" * 5000 + "}",
    "not json at all",
]


# A docker json-file log cut mid-record (the node died while writing), then written on.
DOCKER_JSON_LINES = [
    '{"log":"INFO 08-18 14:10:40 [api_server.py:1885] vLLM API server version 0.11.0\\n","stream":"stdout",'
    '"time":"2026-08-18T14:10:40.000000001Z"}',
    '{"log":"INFO 08-18 14:10:41 [gpu_model_runner.py:2338] Starting to load model\\n","stream":"stdout",'
    '"time":"2026-08-18T14:10:41.000000001Z"}',
    '{"log":"INFO 08-18 14:10:42 [gpu_model_runner.py:2338] Loading wei',
    '{"log":"ERROR 08-18 14:10:50 [core.py:708] EngineCore failed to start.\\n","stream":"stderr",'
    '"time":"2026-08-18T14:10:50.000000001Z"}',
]

# Numbers longer than any integer type, where formats capture `\d+` (NCCL pid/tid/device, a
# traceback's line number, a GPU index) or a float (memory sizes).
BIG = "9" * 25
HUGE_NUMBER_FILES = {
    "huge-numbers.log": [
        f"gpu-node-7:{BIG}:{BIG} [{BIG}] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>",
        "Traceback (most recent call last):",
        f'  File "/usr/lib/python3.12/site-packages/vllm/engine.py", line {BIG}, in run',
        "RuntimeError: boom",
    ],
    "nvidia-smi-query.csv": [
        "index, name, memory.total [MiB], memory.used [MiB]",
        "0, NVIDIA H200, 1e30 MiB, 1 MiB",
        f"1, NVIDIA H200, {BIG} MiB, 2 MiB",
    ],
    "nvidia-smi-topo.txt": [
        f"\tGPU0\tGPU1\tGPU{BIG}\tCPU Affinity\tNUMA Affinity",
        "GPU0\t X \tNV18\tNV18\t0-63\t0",
        "GPU1\tNV18\t X \tNV18\t0-63\t0",
        f"GPU{BIG}\tNV18\tNV18\t X \t0-63\t0",
    ],
}


@dataclass(frozen=True)
class Zoo:
    bundle: Path
    lines: dict[str, int]          # every readable file of the bundle -> its physical lines
    text: dict[str, TextCase]
    secret: Path                   # a file outside the bundle that two links point at


def zoo(folder: Path) -> Zoo:
    """One folder bundle holding one file per text, metrics and JSON case, and links that point
    outside it: one set of command runs checks them all, file by file."""
    bundle = folder / "zoo"
    bundle.mkdir()
    lines: dict[str, int] = {}
    cases = {key: build() for key, build in TEXT_CASES.items()}
    for name, data, count in cases.values():
        (bundle / name).write_bytes(data)
        lines[name] = count
    for case in METRICS_CASES.values():
        (bundle / case.name).write_bytes(text(case.lines))
        lines[case.name] = len(case.lines)
    for name, json_lines in (("query-range.json", QUERY_JSON_LINES), ("capture.jsonl", CAPTURE_LINES),
                             ("container-cut.log", DOCKER_JSON_LINES), *HUGE_NUMBER_FILES.items()):
        (bundle / name).write_bytes(text(json_lines))
        lines[name] = len(json_lines)
    secret = folder / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOPSECRET-k3f\n")
    (bundle / "secrets.log").symlink_to(secret)
    (bundle / "etc").symlink_to(secret.parent, target_is_directory=True)
    return Zoo(bundle, lines, cases, secret)


# -- signatures -------------------------------------------------------------------------------------


def signature_yaml(sig_id: str = "team.hostile", match: str = 'contains "hostile marker"',
                   extra: str = "") -> str:
    return (
        "signatures:\n"
        f"  - id: {sig_id}\n"
        "    title: A team signature\n"
        "    category: team_failure\n"
        "    role: primary\n"
        f"    match: '{match}'\n"
        f"{extra}"
        "    examples:\n"
        "      match: ['ERROR hostile marker seen']\n"
        "      no_match: ['INFO all good']\n"
    )


def yaml_bomb(sig_id: str = "team.bomb") -> str:
    """The billion-laughs shape: nine levels of anchors, each alias list ten times the last."""
    levels = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "\n".join(levels) + "\n" + signature_yaml(sig_id, extra="    description: *a9\n")


def duplicate_keys(sig_id: str = "team.dupkeys") -> str:
    return signature_yaml(sig_id, extra="    role: secondary\n")  # line 7; the first `role` is on line 5


def unknown_field(sig_id: str = "team.unknown") -> str:
    return signature_yaml(sig_id, extra="    colour: red\n")  # line 7


def regex_signature(sig_id: str, pattern: str) -> str:
    return signature_yaml(sig_id, match=f'matches "{pattern}"')  # the match value is on line 6


def deep_condition(sig_id: str = "team.deep", depth: int = 2000) -> str:
    """`not not … not contains "x"`: a condition nested deeper than the interpreter's stack."""
    return signature_yaml(sig_id, match="not " * depth + 'contains "hostile marker"')


BACKTRACKING_REGEX = "(a+)+$"
LOOKAROUND_REGEX = "(?<=CUDA )error"
BACKREFERENCE_REGEX = "(Xid) .* \\\\1"  # YAML single quotes, then the condition string: `\1` reaches the engine
SIZE_BOMB_REGEX = "(a{1000}){1000}"


def write_signatures(folder: Path, files: dict[str, str]) -> Path:
    """A signature library folder with one YAML file per entry of `files` (name -> text)."""
    folder.mkdir()
    for name, body in files.items():
        (folder / f"{name}.yaml").write_text(body, encoding="utf-8")
    return folder


def backtracking_line(folder: Path, length: int = 100_000) -> Path:
    """`aaaa…ab`: the input that makes a backtracking engine take exponential time on `(a+)+$`."""
    bundle = folder / "backtracking"
    bundle.mkdir()
    (bundle / "vllm.log").write_bytes(failing_log() + b"a" * length + b"b\n")
    return bundle


# -- timeline databases -------------------------------------------------------------------------------


def poison_database(db: Path, target: Path) -> list[str]:
    """Add tables to a timeline database whose names, pasted into SQL or a file name, would write
    `target` (an absolute path) or a file beside the output folder. Returns the names."""
    import duckdb

    names = [f"meta TO '{target}' (FORMAT csv); --", "zz/../../escaped-table"]
    con = duckdb.connect(str(db))
    try:
        for name in names:
            quoted = '"' + name.replace('"', '""') + '"'
            con.execute(f"CREATE TABLE {quoted} (x INTEGER)")
            con.execute(f"INSERT INTO {quoted} VALUES (1)")
    finally:
        con.close()
    return names

"""Generate a realistic multi-node K3 log bundle of a chosen size, for the benchmark.

    python benchmarks/generate.py --size 1GB --nodes 16 --out /tmp/k3bench-1g

Writes OUT/bundle/node-NN/{vllm.log, metrics.prom, dmesg.txt, launch.sh} and OUT/expected.json.
Each node runs vLLM (TP=8) with NCCL_DEBUG=INFO: a start-up with every milestone, then hours
of serving in which NCCL INFO lines dominate the bytes, with vLLM stats lines, uvicorn access
lines and the odd warning; Prometheus scrapes (timestamped) go to metrics.prom. Odd nodes' logs
carry `docker logs -t` timestamps (an envelope to remove), even nodes' are plain. One failure
is buried near the end of one node's log: an IB completion error (`NCCL WARN NET/IB : Got
completion ... status=12`), then watchdog timeouts on the other nodes and a dead engine.

Output is deterministic for a given seed and size. Never generate into the repository.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2026, 9, 14, 6, 0, 0, tzinfo=UTC)
SERVING_SHARE = 0.97        # the failure sits at this share of the failing node's serving lines
METRICS_SHARE = 0.03        # of each node's bytes
DMESG_LINES = 240
FLUSH_BYTES = 4 << 20       # write in blocks of about this size
WATCHDOG_S = 60             # NCCL timeout of the deployment (TORCH_NCCL timeout set to 60 s)


@dataclass(frozen=True)
class Node:
    index: int
    host: str
    ip: str
    envelope: bool           # docker logs -t timestamps in front of every line
    head: bool               # the node whose API server dies last


def parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 200MB, 1GB, 4G)")
    unit = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[match.group(2).upper()]
    return int(float(match.group(1)) * unit)


# -- clocks -----------------------------------------------------------------------------------------


class Clock:
    """Simulated time; formats are cached per second (millions of lines share a few thousand)."""

    def __init__(self, start: datetime):
        self.t = start
        self._second: datetime | None = None
        self._vllm = self._glog = ""

    def advance(self, seconds: float) -> None:
        self.t += timedelta(seconds=seconds)

    def vllm(self) -> str:
        self._refresh()
        return self._vllm

    def glog(self) -> str:
        self._refresh()
        return self._glog

    def iso(self) -> str:
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"

    def _refresh(self) -> None:
        second = self.t.replace(microsecond=0)
        if second != self._second:
            self._second = second
            self._vllm = second.strftime("%m-%d %H:%M:%S")
            self._glog = second.strftime("%m%d %H:%M:%S")


# -- line shapes ------------------------------------------------------------------------------------


def startup_lines(node: Node, clock: Clock, rng: random.Random) -> Iterator[str]:
    """A vLLM 0.27 start-up, TP=8, with NCCL INIT lines: every phase milestone appears."""
    c = clock
    yield f"INFO {c.vllm()} [__init__.py:225] Automatically detected platform cuda."
    c.advance(4.2)
    yield (f"(APIServer pid=1) INFO {c.vllm()} [utils.py:249] non-default args: {{'model_tag': 'moonshotai/Kimi-K3', "
           "'model': 'moonshotai/Kimi-K3', 'trust_remote_code': True, 'max_model_len': 131072, "
           "'served_model_name': ['kimi-k3'], 'tensor_parallel_size': 8, 'gpu_memory_utilization': 0.92, "
           "'enable_prefix_caching': True}")
    c.advance(6.1)
    yield f"(APIServer pid=1) INFO {c.vllm()} [model.py:661] Resolved architecture: KimiK3ForCausalLM"
    yield f"(APIServer pid=1) INFO {c.vllm()} [model.py:1833] Using max model len 131072"
    c.advance(4.0)
    yield f"(EngineCore pid=266) INFO {c.vllm()} [__init__.py:225] Automatically detected platform cuda."
    c.advance(1.7)
    yield (f"(EngineCore pid=266) INFO {c.vllm()} [core.py:93] Initializing a V1 LLM engine (v0.27.1) with config: "
           "model='moonshotai/Kimi-K3', tensor_parallel_size=8, pipeline_parallel_size=1, dtype=torch.bfloat16, "
           "max_seq_len=131072, enable_prefix_caching=True")
    c.advance(9.5)
    for tp in range(8):
        yield (f"(Worker_TP{tp} pid={341 + tp}) INFO {c.vllm()} [parallel_state.py:1325] rank {tp} in world size 8 "
               f"is assigned as DP rank 0, PP rank 0, TP rank {tp}, EP rank {tp}")
    c.advance(0.6)
    for tp in range(8):
        pid, tid = 341 + tp, 415 + tp
        yield f"{node.host}:{pid}:{pid} [{tp}] NCCL INFO Bootstrap: Using bond0:{node.ip}<0>"
        yield f"{node.host}:{pid}:{pid} [{tp}] NCCL INFO cudaDriverVersion 13000"
        if tp == 0:
            yield f"{node.host}:{pid}:{pid} [{tp}] NCCL INFO NCCL version 2.27.7+cuda13.0"
        yield (f"{node.host}:{pid}:{tid} [{tp}] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB "
               f"[2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB bond0:{node.ip}<0>")
        yield f"{node.host}:{pid}:{tid} [{tp}] NCCL INFO Using network IB"
        for channel in range(24):
            yield f"{node.host}:{pid}:{tid} [{tp}] NCCL INFO Channel {channel:02d}/24 : {tp}[{tp}] -> {(tp + 1) % 8}[{(tp + 1) % 8}] via P2P/CUMEM/read"
        yield (f"{node.host}:{pid}:{tid} [{tp}] NCCL INFO comm 0x55d0c1a{tp:02d}b000 rank {tp} nranks 8 cudaDev {tp} "
               f"nvmlDev {tp} busId {18000 + tp * 4096:x} commId 0x9e2f0c41d07b35a8e - Init COMPLETE")
    c.advance(2.0)
    for tp in range(8):
        yield f"(Worker_TP{tp} pid={341 + tp}) INFO {c.vllm()} [gpu_model_runner.py:2602] Starting to load model moonshotai/Kimi-K3..."
    for pct in range(0, 101, 10):
        c.advance(9.0)
        yield f"(Worker_TP0 pid=341) Loading safetensors checkpoint shards: {pct:3d}% Completed | {pct * 64 // 100}/64 [{pct // 10:02d}:00<00:00,  1.02it/s]"
    for tp in range(8):
        yield (f"(Worker_TP{tp} pid={341 + tp}) INFO {c.vllm()} [gpu_model_runner.py:2653] Model loading took "
               f"{118.31 + tp * 0.01:.4f} GiB and 92.{tp}1 seconds")
    c.advance(80.0)
    for tp in range(8):
        yield f"(Worker_TP{tp} pid={341 + tp}) INFO {c.vllm()} [gpu_worker.py:359] Available KV cache memory: 9.{tp}8 GiB"
    yield f"(EngineCore pid=266) INFO {c.vllm()} [kv_cache_utils.py:1087] GPU KV cache size: 512,384 tokens"
    c.advance(1.0)
    yield "(EngineCore pid=266) Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 [00:11<00:00,  5.83it/s]"
    c.advance(12.0)
    for tp in range(8):
        yield f"(Worker_TP{tp} pid={341 + tp}) INFO {c.vllm()} [gpu_model_runner.py:4064] Graph capturing finished in 12 secs, took 1.9{tp} GiB"
    c.advance(3.0)
    yield f"(APIServer pid=1) INFO {c.vllm()} [api_server.py:1971] Starting vLLM API server 0 on http://0.0.0.0:8000"
    for route in ("/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions"):
        yield f"(APIServer pid=1) INFO {c.vllm()} [launcher.py:54] Route: {route}, Methods: GET, POST"
    yield "(APIServer pid=1) INFO:     Started server process [1]"
    yield "(APIServer pid=1) INFO:     Waiting for application startup."
    yield "(APIServer pid=1) INFO:     Application startup complete."
    c.advance(5.0)


_NCCL_RUNTIME = (
    "{h}:{p}:{t} [{d}] NCCL INFO Channel {c:02d}/24 : {d}[{d}] -> {n}[{n}] via P2P/CUMEM/read",
    "{h}:{p}:{t} [{d}] NCCL INFO Channel {c:02d}/1 : {d}[{d}] -> {n}[{n}] [send] via NET/IB/{c8}/GDRDMA",
    "{h}:{p}:{t} [{d}] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "{h}:{p}:{t} [{d}] NCCL INFO ncclCommInitRankConfig comm 0x7f21a4{c:02x}0000 rank {d} nranks 8 cudaDev {d} nvmlDev {d} busId {b} commId 0x{cid:016x} - Init START",
    "{h}:{p}:{t} [{d}] NCCL INFO comm 0x7f21a4{c:02x}0000 rank {d} nranks 8 cudaDev {d} busId {b} - Init COMPLETE",
    "{h}:{p}:{t} [{d}] NCCL INFO threadThresholds 8/8/64 | 64/8/64 | 512 | 512",
    "{h}:{p}:{t} [{d}] NCCL INFO {c} coll channels, {c} collnet channels, 0 nvls channels, {c} p2p channels, 2 p2p channels per peer",
    "{h}:{p}:{t} [{d}] NCCL INFO CC Off, workFifoBytes 1048576",
    "{h}:{p}:{t} [{d}] NCCL INFO Trees [0] {n}/-1/-1->{d}->-1 [1] {n}/-1/-1->{d}->-1",
)


def serving_lines(node: Node, clock: Clock, rng: random.Random) -> Iterator[str]:
    """An endless serving stream; about 80 % of the bytes are NCCL INFO lines."""
    c = clock
    shapes = _NCCL_RUNTIME
    request = 0
    while True:
        for _ in range(24):
            d = rng.randrange(8)
            shape = shapes[rng.randrange(len(shapes))]
            yield shape.format(h=node.host, p=341 + d, t=415 + d, d=d, n=(d + 1) % 8, c=rng.randrange(24),
                               c8=rng.randrange(8), b=f"{18000 + d * 4096:x}", cid=rng.getrandbits(60))
            c.advance(0.021)
        for _ in range(rng.randrange(2, 5)):
            request += 1
            status = "200 OK" if rng.random() > 0.002 else "400 Bad Request"
            yield (f'(APIServer pid=1) INFO:     10.31.8.{rng.randrange(2, 250)}:{rng.randrange(30000, 65000)} - '
                   f'"POST /v1/chat/completions HTTP/1.1" {status}')
        if request % 40 < 4:
            running, waiting = rng.randrange(1, 48), rng.randrange(0, 3)
            yield (f"(APIServer pid=1) INFO {c.vllm()} [loggers.py:208] Engine 000: Avg prompt throughput: "
                   f"{rng.uniform(500, 9000):.1f} tokens/s, Avg generation throughput: {rng.uniform(200, 2000):.1f} tokens/s, "
                   f"Running: {running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: {rng.uniform(1, 60):.1f}%, "
                   f"Prefix cache hit rate: {rng.uniform(10, 80):.1f}%")
        if rng.random() < 0.01:
            yield (f"(APIServer pid=1) WARNING {c.vllm()} [protocol.py:93] The following fields were present in the "
                   "request but ignored: {'parallel_tool_calls'}")


def failure_lines(node: Node, clock: Clock) -> Iterator[str]:
    """The buried root cause: an IB completion error on one rank, the watchdog, a dead worker."""
    c = clock
    stamp = c.t.strftime("%Y-%m-%d %H:%M:%S")
    for port in (43317, 43321):
        yield (f"[{stamp}] {node.host}:344:433 [3] transport/net_ib.cc:2291 NCCL WARN NET/IB : Got completion from "
               f"peer 10.31.4.21<{port}> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
               f"::ffff:{node.ip} remoteGids::ffff:10.31.4.21 hca mlx5_3")
        yield f"{node.host}:344:433 [3] NCCL INFO transport/net.cc:1367 -> 6"
        yield f"{node.host}:344:433 [3] NCCL INFO proxy.cc:721 -> 6"
    c.advance(1.3)
    yield (f"[rank3]:[E{c.glog()}.444156374 ProcessGroupNCCL.cpp:2057] [PG ID 5 PG GUID 19 Rank 3] Process group "
           "watchdog thread terminated with exception: NCCL error: remote process exited or there was a network "
           "error, NCCL version 2.27.7")
    yield "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."
    yield "Last error:"
    yield (f"NET/IB : Got completion from peer 10.31.4.21<43317> with status=12 opcode=0 len=0 vendor err 129 "
           f"(Recv) localGid ::ffff:{node.ip} remoteGids::ffff:10.31.4.21 hca mlx5_3")
    yield "terminate called after throwing an instance of 'c10::DistBackendError'"
    c.advance(0.8)
    yield (f"(EngineCore pid=266) ERROR {c.vllm()} [multiproc_executor.py:149] Worker proc VllmWorker-3 died "
           "unexpectedly (exit code: -6), shutting down executor.")


def echo_lines(node: Node, clock: Clock) -> Iterator[str]:
    """What the other nodes print once the failing rank is gone: watchdog timeouts, a dead engine."""
    c = clock
    for rank in range(2):
        yield (f"[rank{rank}]:[E{c.glog()}.018188472 ProcessGroupNCCL.cpp:685] [Rank {rank}] Watchdog caught "
               "collective operation timeout: WorkNCCL(SeqNum=88412, OpType=ALLREDUCE, NumelIn=14680064, "
               "NumelOut=14680064, Timeout(ms)=60000) ran for 60043 milliseconds before timing out.")
    c.advance(1.0)
    yield (f"(EngineCore pid=266) ERROR {c.vllm()} [multiproc_executor.py:149] Worker proc VllmWorker-0 died "
           "unexpectedly (exit code: -6), shutting down executor.")
    yield f"(EngineCore pid=266) ERROR {c.vllm()} [core.py:854] EngineCore encountered a fatal error."
    yield f"(EngineCore pid=266) ERROR {c.vllm()} [core.py:854] Traceback (most recent call last):"
    yield (f'(EngineCore pid=266) ERROR {c.vllm()} [core.py:854]   File "/usr/local/lib/python3.12/dist-packages/'
           'vllm/v1/engine/core.py", line 845, in run_engine_core')
    yield f"(EngineCore pid=266) ERROR {c.vllm()} [core.py:854]     engine_core.run_busy_loop()"
    yield (f"(EngineCore pid=266) ERROR {c.vllm()} [core.py:854] RuntimeError: Worker failed with error "
           "'Watchdog caught collective operation timeout', please check the stack trace above for the root cause")
    c.advance(0.2)
    yield (f"(APIServer pid=1) ERROR {c.vllm()} [async_llm.py:480] AsyncLLM output_handler failed.")
    yield (f"(APIServer pid=1) ERROR {c.vllm()} [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
           "EngineCore encountered an issue. See stack trace (above) for the root cause.")


# -- files ------------------------------------------------------------------------------------------


class Sink:
    """Buffered line writer that counts bytes and lines (the line number of the failure)."""

    def __init__(self, path: Path, envelope: bool, clock: Clock):
        self.handle = path.open("w", encoding="utf-8", newline="\n")
        self.envelope, self.clock = envelope, clock
        self.buffer: list[str] = []
        self.pending = 0
        self.bytes = 0
        self.lines = 0

    def write(self, line: str) -> None:
        text = f"{self.clock.iso()} {line}\n" if self.envelope else line + "\n"
        self.buffer.append(text)
        self.pending += len(text)  # characters: close enough to bytes for pacing
        self.lines += 1
        if self.pending >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        data = "".join(self.buffer)
        self.bytes += len(data.encode("utf-8"))
        self.handle.write(data)
        self.buffer.clear()
        self.pending = 0

    @property
    def size(self) -> int:
        return self.bytes + self.pending

    def close(self) -> None:
        self.flush()
        self.handle.close()


def write_vllm_log(path: Path, node: Node, budget: int, failing: bool, fail_at: datetime | None,
                   rng: random.Random) -> tuple[int, datetime | None, int]:
    """Returns (line number of the failure or 0, the failure time, bytes written)."""
    clock = Clock(START + timedelta(seconds=node.index * 0.37))
    sink = Sink(path, node.envelope, clock)
    for line in startup_lines(node, clock, rng):
        sink.write(line)
    stream = serving_lines(node, clock, rng)
    failure_line, failure_time = 0, None
    if failing:
        target = int(budget * SERVING_SHARE)
        while sink.size < target:
            sink.write(next(stream))
        failure_line, failure_time = sink.lines + 1, clock.t
        for line in failure_lines(node, clock):
            sink.write(line)
    else:
        # The others keep serving until the failing rank is missed (the watchdog fires later).
        assert fail_at is not None
        echo_at = fail_at + timedelta(seconds=WATCHDOG_S)
        while sink.size < budget and clock.t < echo_at:
            sink.write(next(stream))
        clock.t = max(clock.t, echo_at)
        for line in echo_lines(node, clock):
            sink.write(line)
    while sink.size < budget:
        sink.write(next(stream))
    sink.close()
    return failure_line, failure_time, sink.bytes


_METRICS = (
    ("vllm:num_requests_running", "gauge", lambda r: f"{r.randrange(1, 48)}.0"),
    ("vllm:num_requests_waiting", "gauge", lambda r: f"{r.randrange(0, 3)}.0"),
    ("vllm:kv_cache_usage_perc", "gauge", lambda r: f"{r.uniform(0.01, 0.6):.4f}"),
    ("vllm:prompt_tokens_total", "counter", None),
    ("vllm:generation_tokens_total", "counter", None),
    ("vllm:prefix_cache_queries_total", "counter", None),
    ("vllm:prefix_cache_hits_total", "counter", None),
    ("vllm:num_preemptions_total", "counter", None),
    ("vllm:request_success_total", "counter", None),
)


def write_metrics(path: Path, node: Node, budget: int, end: datetime, rng: random.Random) -> None:
    """Prometheus scrapes (with timestamps), from the start until `end` or the budget."""
    t = START + timedelta(minutes=5)
    # Scrape often enough to fill the budget (about 1 KB a scrape), never more than once a second.
    step = max(1.0, (end - t).total_seconds() / max(budget / 1000, 1))
    counters = dict.fromkeys((m for m, kind, _ in _METRICS if kind == "counter"), 0.0)
    written = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < budget and t < end:
            ms = int(t.timestamp() * 1000)
            parts = []
            for name, kind, value in _METRICS:
                if value is None:
                    counters[name] += rng.uniform(0, 5000)
                    text = f"{counters[name]:.1f}"
                else:
                    text = value(rng)
                parts.append(f"# HELP {name} {name.split(':')[1].replace('_', ' ')}.\n# TYPE {name} {kind}\n"
                             f'{name}{{engine="0",model_name="kimi-k3"}} {text} {ms}\n')
            block = "".join(parts)
            handle.write(block)
            written += len(block)
            t += timedelta(seconds=step)


def write_dmesg(path: Path, node: Node, rng: random.Random) -> None:
    lines = []
    mono = 0.0
    for i in range(DMESG_LINES):
        mono += rng.uniform(0.001, 40.0)
        shape = i % 4
        if shape == 0:
            text = f"mlx5_core 0000:{0x18 + i % 8:02x}:00.0: mlx5_pcie_event:301:(pid 1234): PCIe slot advertised sufficient power (27W)."
        elif shape == 1:
            text = f"nvidia-nvswitch{i % 4}: open (major=508)"
        elif shape == 2:
            text = f"IPv6: ADDRCONF(NETDEV_CHANGE): veth{rng.getrandbits(24):06x}: link becomes ready"
        else:
            text = f"NVRM: GPU at PCI:0000:{0x18 + i % 8:02x}:00: GPU-{rng.getrandbits(32):08x} persistence mode on"
        lines.append(f"[{mono:12.6f}] {text}\n")
    path.write_text("".join(lines), encoding="utf-8")


LAUNCH = """#!/usr/bin/env bash
# Kimi K3 replica on {host}: TP=8 over NVLink, IB between replicas
docker run -d --name k3 --gpus all --ipc=host --network host --device=/dev/infiniband \\
  -e NCCL_DEBUG=INFO -e NCCL_IB_HCA=mlx5 -e NCCL_SOCKET_IFNAME=bond0 \\
  vllm/vllm-openai:v0.27.1-cu130 \\
  --model moonshotai/Kimi-K3 --trust-remote-code --served-model-name kimi-k3 \\
  --tensor-parallel-size 8 --max-model-len 131072 --gpu-memory-utilization 0.92 --enable-prefix-caching
"""


# -- the bundle -------------------------------------------------------------------------------------


def generate(out: Path, size: int, nodes: int, seed: int = 0, log: Callable[[str], None] = print) -> dict[str, object]:
    bundle = out / "bundle"
    if bundle.exists() and any(bundle.iterdir()):
        raise SystemExit(f"{bundle} exists and is not empty; choose another --out")
    per_node = size // nodes
    failing = nodes * 2 // 3  # not the first, not the last: buried
    all_nodes = [Node(i, f"k3-h200-{i:02d}", f"10.31.4.{21 + i}", envelope=i % 2 == 1, head=i == 0)
                 for i in range(nodes)]
    order = [all_nodes[failing]] + [n for n in all_nodes if n.index != failing]
    fail_line, fail_time, total = 0, None, 0
    for node in order:
        rng = random.Random(seed * 1000 + node.index)
        folder = bundle / f"node-{node.index:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "launch.sh").write_text(LAUNCH.format(host=node.host), encoding="utf-8")
        write_dmesg(folder / "dmesg.txt", node, rng)
        log_budget = int(per_node * (1 - METRICS_SHARE))
        line, when, written = write_vllm_log(folder / "vllm.log", node, log_budget, node.index == failing,
                                             fail_time, rng)
        if line:
            fail_line, fail_time = line, when
        assert fail_time is not None
        write_metrics(folder / "metrics.prom", node, per_node - written, fail_time + timedelta(hours=1), rng)
        total += sum(p.stat().st_size for p in folder.iterdir())
        log(f"node-{node.index:02d}: {total / (1 << 20):,.0f} MiB so far")
    expected = {
        "first_failure": {"category": "nccl_network", "file": f"node-{failing:02d}/vllm.log", "line_no": fail_line,
                          "line_contains": "NET/IB : Got completion from peer"},
        "bytes": total,
        "nodes": nodes,
        "seed": seed,
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
    return expected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=parse_size, default=parse_size("1GB"), help="total bundle size (default 1GB)")
    parser.add_argument("--nodes", type=int, default=16, help="number of nodes (default 16)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="output folder (bundle/ and expected.json)")
    args = parser.parse_args(argv)
    if args.nodes < 2:
        parser.error("--nodes must be at least 2")
    expected = generate(args.out, args.size, args.nodes, args.seed)
    print(json.dumps(expected, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

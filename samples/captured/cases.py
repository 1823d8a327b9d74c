"""Failure cases run by capture.sh, one per invocation: python3 cases.py CASE.

Each case provokes a real failure on a CUDA GPU and lets the exception
propagate uncaught, so the interpreter prints the genuine traceback.
"""
import os
import sys
import time

GiB = 1 << 30


def _torch():
    import torch
    return torch


def versions():
    torch = _torch()
    print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())


def oom_single():
    """One allocation larger than the card (200 GiB)."""
    torch = _torch()
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info()
    print(f"device: {torch.cuda.get_device_name(0)}; free {free / GiB:.2f} GiB of {total / GiB:.2f} GiB")
    print("allocating 200 GiB in one tensor ...")
    x = torch.empty(200 * GiB, dtype=torch.uint8, device="cuda")
    print("unexpectedly succeeded", x.numel())


def oom_ramp():
    """10 GiB tensors until the allocator gives up."""
    torch = _torch()
    held = []
    i = 0
    while True:
        i += 1
        held.append(torch.empty(10 * GiB, dtype=torch.uint8, device="cuda"))
        print(f"step {i}: allocated {torch.cuda.memory_allocated() / GiB:.1f} GiB, "
              f"reserved {torch.cuda.memory_reserved() / GiB:.1f} GiB")


def smi_ramp():
    """Allocate 10 GiB every 0.5 s up to 120 GiB, hold 2 s, free, hold 2 s (healthy)."""
    torch = _torch()
    held = []
    torch.cuda.init()
    time.sleep(1.0)
    for i in range(12):
        t = torch.empty(10 * GiB, dtype=torch.uint8, device="cuda")
        t.fill_(1)
        held.append(t)
        torch.cuda.synchronize()
        print(f"{time.strftime('%H:%M:%S')} step {i + 1}: {torch.cuda.memory_allocated() / GiB:.0f} GiB allocated")
        time.sleep(0.5)
    time.sleep(2.0)
    held.clear()
    torch.cuda.empty_cache()
    print(f"{time.strftime('%H:%M:%S')} freed: {torch.cuda.memory_allocated() / GiB:.0f} GiB allocated, "
          f"{torch.cuda.memory_reserved() / GiB:.0f} GiB reserved")
    time.sleep(2.0)


def holder():
    """Take ~120 GiB and sleep: the 'other process' on the same GPU."""
    torch = _torch()
    ready = os.environ.get("HOLDER_READY_FILE")
    held = [torch.empty(10 * GiB, dtype=torch.uint8, device="cuda") for _ in range(12)]
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    print(f"holder pid {os.getpid()}: holding {torch.cuda.memory_allocated() / GiB:.0f} GiB; "
          f"device free {free / GiB:.2f} GiB of {total / GiB:.2f} GiB")
    if ready:
        with open(ready, "w") as f:
            f.write(str(os.getpid()))
    time.sleep(float(os.environ.get("HOLDER_SECONDS", "60")))
    del held


def oom_victim():
    """Allocate 30 GiB while another process holds most of the GPU."""
    torch = _torch()
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info()
    print(f"victim pid {os.getpid()}: device free {free / GiB:.2f} GiB of {total / GiB:.2f} GiB")
    a = torch.empty(4 * GiB, dtype=torch.uint8, device="cuda")
    print("allocated 4 GiB; now asking for 30 GiB more ...")
    b = torch.empty(30 * GiB, dtype=torch.uint8, device="cuda")
    print("unexpectedly succeeded", a.numel(), b.numel())


def nccl():
    """init_process_group(nccl) + one all_reduce; rank/world/master from env."""
    torch = _torch()
    import torch.distributed as dist
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    dev = int(os.environ.get("FORCE_DEVICE", os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(dev)
    print(f"rank {rank}/{world} pid {os.getpid()} on cuda:{dev}", flush=True)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    t = torch.ones(1 << 20, device=f"cuda:{dev}") * (rank + 1)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"rank {rank}: all_reduce ok, t[0] = {t[0].item()}", flush=True)
    dist.destroy_process_group()


def shm_share():
    """CPU tensor moved to shared memory (what DataLoader workers do)."""
    torch = _torch()
    t = torch.ones(64 << 20, dtype=torch.uint8)
    print("moving a 64 MiB tensor to shared memory ...", flush=True)
    t.share_memory_()
    print("shared ok", t.is_shared())


class _BigItems:
    def __len__(self):
        return 8

    def __getitem__(self, i):
        torch = _torch()
        return torch.full((16 << 20,), i, dtype=torch.uint8)


def shm_dataloader():
    """DataLoader with worker processes returning 16 MiB tensors."""
    from torch.utils.data import DataLoader
    dl = DataLoader(_BigItems(), batch_size=2, num_workers=2)
    for j, b in enumerate(dl):
        print(f"batch {j}: {tuple(b.shape)}", flush=True)


def graph_sync():
    """torch.cuda.synchronize() inside CUDA-graph capture."""
    torch = _torch()
    x = torch.ones(1 << 20, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 2
        torch.cuda.synchronize()
    g.replay()
    print(y.sum().item())


def graph_item():
    """.item() (a device-to-host sync) inside CUDA-graph capture."""
    torch = _torch()
    x = torch.ones(1 << 20, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 2
        if y.sum().item() > 0:
            y = y + 1
    g.replay()
    print(y.sum().item())


def assert_embedding():
    """Out-of-range token id into an embedding on cuda."""
    torch = _torch()
    emb = torch.nn.Embedding(1000, 64).cuda()
    ids = torch.tensor([[1, 2, 3, 5000, 7]], device="cuda")
    print("CUDA_LAUNCH_BLOCKING =", os.environ.get("CUDA_LAUNCH_BLOCKING"), flush=True)
    out = emb(ids)
    print("lookup enqueued", flush=True)
    print(out.sum().item())


def assert_index_select():
    """Out-of-range index into index_select on cuda."""
    torch = _torch()
    x = torch.randn(128, 256, device="cuda")
    idx = torch.tensor([0, 1, 127, 128, 4096], device="cuda")
    y = x.index_select(0, idx)
    print("index_select enqueued", flush=True)
    print(y.sum().item())


def illegal_cupy():
    """A CuPy RawKernel writing through a wild pointer, next to torch."""
    torch = _torch()
    import cupy as cp
    x = torch.zeros(1024, device="cuda")
    torch.cuda.synchronize()
    k = cp.RawKernel(r'''
extern "C" __global__ void wild_write(float* p) {
    p[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}''', "wild_write")
    bad = x.data_ptr() + (1 << 44)
    print(f"launching wild_write at 0x{bad:x} (tensor at 0x{x.data_ptr():x})", flush=True)
    k((4,), (128,), (cp.uint64(bad),))
    torch.cuda.synchronize()
    print(x.sum().item())


def illegal_triton():
    """A Triton kernel storing far outside its tensor."""
    torch = _torch()
    import triton
    import triton.language as tl

    @triton.jit
    def wild_store(ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK).to(tl.int64) + 0x100000000000
        tl.store(ptr + offs, 1.0)

    x = torch.zeros(1024, device="cuda")
    wild_store[(1,)](x, BLOCK=128)
    torch.cuda.synchronize()
    print(x.sum().item())


CASES = {f.__name__: f for f in (
    versions, oom_single, oom_ramp, smi_ramp, holder, oom_victim, nccl,
    shm_share, shm_dataloader, graph_sync, graph_item, assert_embedding,
    assert_index_select, illegal_cupy, illegal_triton)}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit(f"usage: cases.py {{{'|'.join(CASES)}}}")
    CASES[sys.argv[1]]()

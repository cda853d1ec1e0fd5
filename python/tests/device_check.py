"""uq's Python binding on a CUDA device with torch (issue 45): run by hand on the H200, not in CI.

Build the module for the interpreter that has torch, and the uq program of the same CUDA build
(the C++ path the results must equal bit for bit), then run this script:

    UQ_PYTHON=$(command -v python3) ./uq python --kokkos cuda --path      # builds build/cuda/python
    cmake --build build/cuda --target uq_cli                              # the C++ path: build/cuda/src/cli/uq
    UQ_PYTHON=$(command -v python3) ./uq python --kokkos cuda python/tests/device_check.py

(UQ_PYTHON: the interpreter with torch; its pybind11 and DLPack headers come from Debian's
pybind11-dev and libdlpack-dev if installed, else from torch's include folder.) Options:
--cli PATH (default build/cuda/src/cli/uq), --work DIR (the .npy files; default a temporary
folder), --iterations N (overhead loop, default 2000). Exit code 0 when every check passes.

Checks:
 1. zero-copy: write_kv, decode, the plan's workspace write into the caller's torch tensors (same
    data_ptr, contents changed, memory around the views untouched);
 2. the C++ path's bits: the cache of uq.write_kv equals `uq write-kv`'s, and uq.decode's out and
    lse equal `uq decode`'s (auto and generic backends), from a strided q and into a strided out;
 3. a non-default stream: work issued on torch's current stream (torch.cuda.stream) and on
    stream= equals the default stream's results;
 4. torch.cuda.graph: a DecodePlan (check=False, caller's workspace) and a KvWriter captured once,
    replayed with new lengths (0 and the table's maximum among them), tables, q and cache
    contents, each replay equal bit for bit to an eager run on the same inputs;
 5. the per-call overhead of DecodePlan.run from Python against the same plan run from C++ (the
    module's _run_repeated loop over arguments imported once), in microseconds: host time per
    call of back-to-back calls (enqueue only), and per call including the device work.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import uq

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def bits(t):
    """A tensor's raw bits as a NumPy integer array (bf16 -> uint16, float32 -> uint32)."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    if t.dtype == torch.float32:
        return t.view(torch.int32).numpy().view(np.uint32)
    return t.numpy()


def run_cli(cli, *args):
    r = subprocess.run([cli, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s %s: %s" % (cli, " ".join(args), r.stderr))


class Problem:
    """A ragged batch over a paged cache on the device; K, V, q as bf16 torch tensors."""

    def __init__(self, dev, seq_lens, qg=8, hk=2, block_size=64, spare=8, seed=0):
        g = torch.Generator(device="cpu").manual_seed(seed)
        self.qg, self.hk, self.block_size, self.hq = qg, hk, block_size, hk * qg
        self.seq_lens_list = list(seq_lens)
        blocks = [(n + block_size - 1) // block_size for n in seq_lens]
        self.max_blocks = max(blocks) + 2
        self.num_blocks = sum(blocks) + spare
        perm = torch.randperm(self.num_blocks, generator=g).to(torch.int32)
        tables = perm[torch.randint(0, self.num_blocks, (len(seq_lens), self.max_blocks), generator=g)]
        used = 0
        for b, nb in enumerate(blocks):
            tables[b, :nb] = perm[used:used + nb]
            used += nb
        tokens = sum(seq_lens)
        pos = torch.cat([torch.arange(n) for n in seq_lens])
        seq = torch.repeat_interleave(torch.arange(len(seq_lens)), torch.tensor(seq_lens))
        slots = tables[seq, pos // block_size].to(torch.int64) * block_size + pos % block_size
        self.k = (torch.randn((tokens, hk, 256), generator=g) * 2).to(torch.bfloat16).to(dev)
        self.v = torch.randn((tokens, hk, 256), generator=g).to(torch.bfloat16).to(dev)
        self.slots = slots.to(dev)
        self.tables = tables.to(dev)
        self.seq_lens = torch.tensor(seq_lens, dtype=torch.int32, device=dev)
        # q: the first Hq heads of a fused [B, Hq + 2 Hk, 256] QKV tensor (strided rows)
        self.qkv = torch.randn((len(seq_lens), self.hq + 2 * hk, 256), generator=g).to(torch.bfloat16).to(dev)
        self.q = self.qkv[:, :self.hq]
        self.cache = torch.zeros((self.num_blocks, block_size, hk, 272), dtype=torch.uint8, device=dev)


def check_zero_copy_and_cli(p, cli, work):
    ptr = p.cache.data_ptr()
    uq.write_kv(p.k, p.v, p.slots, p.cache)
    torch.cuda.synchronize()
    check(p.cache.data_ptr() == ptr and int(p.cache.count_nonzero()) > 0, "write_kv writes the caller's cache in place")
    f = lambda name: os.path.join(work, name)
    np.save(f("k.npy"), bits(p.k))
    np.save(f("v.npy"), bits(p.v))
    np.save(f("slots.npy"), p.slots.cpu().numpy())
    if os.path.exists(f("cache.npy")):
        os.remove(f("cache.npy"))
    run_cli(cli, "write-kv", "--k", f("k.npy"), "--v", f("v.npy"), "--slots", f("slots.npy"), "--cache",
            f("cache.npy"), "--num-blocks", str(p.num_blocks), "--block-size", str(p.block_size))
    check(np.array_equal(np.load(f("cache.npy")), p.cache.cpu().numpy()), "write_kv cache == uq write-kv (C++) bytes")

    np.save(f("q.npy"), bits(p.q))
    np.save(f("bt.npy"), p.tables.cpu().numpy())
    np.save(f("sl.npy"), p.seq_lens.cpu().numpy())
    for backend in ("auto", "generic"):
        run_cli(cli, "decode", "--q", f("q.npy"), "--cache", f("cache.npy"), "--block-tables", f("bt.npy"),
                "--seq-lens", f("sl.npy"), "--qg", str(p.qg), "--backend", backend, "--out-dtype", "bf16",
                "--out", f("out.npy"), "--lse", f("lse.npy"))
        B = len(p.seq_lens_list)
        storage = torch.full((B, p.hq + 2, 320), float("nan"), dtype=torch.bfloat16, device=p.q.device)
        out = storage[:, 1:p.hq + 1, 32:288]
        lse_storage = torch.full((p.hq, B), 7.0, dtype=torch.float32, device=p.q.device)
        lse = lse_storage.t()
        ptr = storage.data_ptr()
        plan = uq.DecodePlan(B, p.hk, p.qg, p.block_size, p.max_blocks, backend=backend)
        got, got_lse = uq.decode(p.q, p.cache, p.tables, p.seq_lens, out=out, lse=lse, backend=backend)
        torch.cuda.synchronize()
        check(got is out and storage.data_ptr() == ptr, "decode(%s) returns the caller's out" % backend)
        outside = storage.clone()
        outside[:, 1:p.hq + 1, 32:288] = 0
        check(bool(torch.isnan(outside[:, 0]).all() and torch.isnan(outside[:, p.hq + 1:]).all()
                   and torch.isnan(storage[:, :, :32]).all() and torch.isnan(storage[:, :, 288:]).all()),
              "decode(%s) writes nothing around a strided out" % backend)
        check(np.array_equal(bits(out), np.load(f("out.npy"))), "decode(%s) out == uq decode (C++) bits" % backend)
        check(np.array_equal(bits(lse), np.load(f("lse.npy")).view(np.uint32)),
              "decode(%s) lse (transposed view) == uq decode (C++) bits; path %s" % (backend, plan.path))


def check_streams(p):
    want = uq.decode(p.q, p.cache, p.tables, p.seq_lens)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = uq.decode(p.q, p.cache, p.tables, p.seq_lens)  # torch's current stream: s
    b = torch.empty_like(want)
    s.wait_stream(torch.cuda.current_stream())
    uq.decode(p.q, p.cache, p.tables, p.seq_lens, out=b, stream=s)
    uq.decode(p.q, p.cache, p.tables, p.seq_lens, out=b, stream=s.cuda_stream)  # an int handle too
    torch.cuda.synchronize()
    check(torch.equal(bits_t(a), bits_t(want)) and torch.equal(bits_t(b), bits_t(want)),
          "decode on a non-default stream (current and stream=) == default stream bits")


def bits_t(t):
    return t.view(torch.int16) if t.dtype == torch.bfloat16 else t.view(torch.int32)


def check_graphs(p):
    dev = p.q.device
    B = len(p.seq_lens_list)
    s = torch.cuda.Stream()
    size = uq.DecodePlan.workspace_bytes(B, p.hk, p.qg, p.block_size, p.max_blocks)
    workspace = torch.zeros(size, dtype=torch.uint8, device=dev)
    ws_ptr = workspace.data_ptr()
    with torch.cuda.stream(s):
        plan = uq.DecodePlan(B, p.hk, p.qg, p.block_size, p.max_blocks, check=False, workspace=workspace)
        writer = uq.KvWriter(check=False)
    # graph inputs: fixed tensors whose contents change between replays
    q = p.q.clone()
    tables = p.tables.clone()
    lens = p.seq_lens.clone()
    out = torch.empty((B, p.hq, 256), dtype=torch.bfloat16, device=dev)
    lse = torch.empty((B, p.hq), dtype=torch.float32, device=dev)
    new_k = torch.randn((B, p.hk, 256), device=dev).to(torch.bfloat16)
    new_v = torch.randn((B, p.hk, 256), device=dev).to(torch.bfloat16)
    new_slots = torch.full((B,), -1, dtype=torch.int64, device=dev)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # eager runs on s first: its Kokkos instance exists before the capture
        writer.run(new_k, new_v, new_slots, p.cache)
        plan.run(q, p.cache, tables, lens, out, lse)
    torch.cuda.synchronize()
    check(int((workspace != 0).sum()) > 0 and workspace.data_ptr() == ws_ptr, "the plan works in the caller's workspace")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        writer.run(new_k, new_v, new_slots, p.cache)
        plan.run(q, p.cache, tables, lens, out, lse)
    gen = torch.Generator(device="cpu").manual_seed(5)
    full = p.max_blocks * p.block_size
    for replay in range(4):
        lens.copy_(torch.tensor([[0, full, 1, 700, 129][(i + replay) % 5] for i in range(B)], dtype=torch.int32))
        tables.copy_(tables[torch.randperm(B, generator=gen).to(dev)])
        q.copy_(torch.randn(q.shape, generator=gen).to(torch.bfloat16))
        new_k.copy_(torch.randn(new_k.shape, generator=gen).to(torch.bfloat16))
        new_v.copy_(torch.randn(new_v.shape, generator=gen).to(torch.bfloat16))
        # distinct slots: two tokens of one call with the same slot leave it undefined
        new_slots.copy_(torch.randperm(p.num_blocks * p.block_size, generator=gen)[:B])
        cache_before = p.cache.clone()
        g.replay()
        torch.cuda.synchronize()
        got_out, got_lse, got_cache = out.clone(), lse.clone(), p.cache.clone()
        p.cache.copy_(cache_before)
        with torch.cuda.stream(s):
            writer.run(new_k, new_v, new_slots, p.cache)
            plan.run(q, p.cache, tables, lens, out, lse)
        torch.cuda.synchronize()
        check(torch.equal(got_cache, p.cache) and torch.equal(bits_t(got_out), bits_t(out))
              and torch.equal(bits_t(got_lse), bits_t(lse)),
              "graph replay %d (lengths %s) == eager run bits" % (replay, lens.tolist()))
    check(plan.status().ok and writer.status().ok, "no bad data counted during the replays")


def overhead(p, iterations):
    """Per-call cost of DecodePlan.run from Python and from C++ on the same plan and arguments."""
    B = len(p.seq_lens_list)
    plan = uq.DecodePlan(B, p.hk, p.qg, p.block_size, p.max_blocks, check=False)
    out = torch.empty((B, p.hq, 256), dtype=torch.bfloat16, device=p.q.device)
    args = (p.q, p.cache, p.tables, p.seq_lens, out)
    for _ in range(50):
        plan.run(*args)
    torch.cuda.synchronize()
    rows = []
    for n in (200, iterations):  # 200: enqueue only, well inside the launch queue
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            plan.run(*args)
        host_py = time.perf_counter() - t0
        torch.cuda.synchronize()
        total_py = time.perf_counter() - t0
        t0 = time.perf_counter()
        host_cpp = plan._run_repeated(*args, None, n)
        torch.cuda.synchronize()
        total_cpp = time.perf_counter() - t0
        rows.append((n, host_py / n * 1e6, host_cpp / n * 1e6, total_py / n * 1e6, total_cpp / n * 1e6))
    print("DecodePlan.run per call (us), B=%d, lens %s, path %s, launches/run %d:" % (
        B, p.seq_lens_list, plan.path, plan.launches_per_run))
    print("  calls  host Python  host C++  with device Python  with device C++")
    for r in rows:
        print("  %5d  %11.2f  %8.2f  %18.2f  %15.2f" % r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "cuda", "src", "cli", "uq"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--iterations", type=int, default=2000)
    a = ap.parse_args()
    assert torch.cuda.is_available(), "no CUDA device"
    dev = torch.device("cuda", torch.cuda.current_device())
    print("uq", uq.__version__, uq.execution_spaces(), "torch", torch.__version__, torch.cuda.get_device_name(dev))
    check(uq.execution_spaces()["device"] == "cuda:%d" % dev.index, "uq runs on torch's device")
    work = a.work or tempfile.mkdtemp(prefix="uq-device-check-")
    p = Problem(dev, [0, 1, 63, 64, 65, 1000, 4097, 300])
    check_zero_copy_and_cli(p, a.cli, work)
    check_streams(p)
    check_graphs(p)
    try:
        uq.decode(p.q, p.cache.cpu(), p.tables, p.seq_lens)
        check(False, "a CPU cache with CUDA q is refused")
    except uq.Error as e:
        check(e.argument == "kv_cache" and "cuda" in e.expected, "a CPU cache with CUDA q is refused: %s" % e)
    overhead(Problem(dev, [1], qg=8, hk=1, block_size=16), a.iterations)
    overhead(Problem(dev, [4096] * 4, qg=8, hk=1, block_size=64), a.iterations)
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Many calls leave nothing behind: the reference counts of the arguments are unchanged (the
binding holds no Python reference past a call, failed calls included), every DLPack export is
released, Python-side memory (tracemalloc) and the process's resident memory (the C++ side: the
temporary plans and writers of the free functions, Kokkos views) stay flat."""

import gc
import os
import sys
import tracemalloc

import numpy as np

import _uqref
import uq
from uq_testing import DecodeCase, poisoned_bits


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_reference_counts_exports_and_memory_stay_flat():
    case = DecodeCase(seed=61, seq_lens=[200, 31, 0], qg=6, block_size=32)
    plan = uq.DecodePlan(3, 1, 6, 32, case.max_blocks, check=False)
    writer = uq.KvWriter(check=False)
    out = poisoned_bits((3, 6, 256))
    lse = np.zeros((3, 6), np.float32)
    k = case.k[:4].copy()
    slots = np.arange(4, dtype=np.int64)
    cache = case.cache.copy()
    q_view = case.q_bf16()
    args = [case.q_bits, case.cache, case.tables, case.seq_lens, out, lse, k, slots, cache, q_view, plan, writer]

    def calls():
        plan.run(case.q_bits, case.cache, case.tables, case.seq_lens, out, lse)
        plan.run(q_view, case.cache, case.tables, case.seq_lens, out)
        uq.decode(case.q_bits, case.cache, case.tables, case.seq_lens, out=out, lse=lse)
        writer.run(k, k, slots, cache)
        uq.write_kv(k, k, slots, cache)
        try:  # a failed call: its exports must be released too
            uq.decode(case.q_bits, case.cache, case.tables.astype(np.int64), case.seq_lens, out=out)
        except uq.Error:
            pass
        plan.status()

    for _ in range(20):  # warm-up: first-use caches, lazily created objects
        calls()
    gc.collect()
    before = [sys.getrefcount(a) for a in args]
    tracemalloc.start()
    snapshot = tracemalloc.take_snapshot()
    rss = resident_bytes()
    for _ in range(300):
        calls()
    gc.collect()
    growth = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(snapshot, "filename"))
    tracemalloc.stop()
    assert [sys.getrefcount(a) for a in args] == before
    assert _uqref.live_exports() == 0
    # 300 x 6 calls: a leak of one small object per call would show as > 64 KiB here
    assert growth < 64 * 1024, "Python memory grew by %d bytes" % growth
    # each decode call allocates a workspace of ~90 KiB and a writer's counters: leaking them
    # would add > 25 MiB
    assert resident_bytes() - rss < 8 * 1024 * 1024

"""uq from NumPy: write K and V of two sequences into a paged MXFP4 cache, decode, and compare
with plain float64 attention over the unquantised K and V.   Run: ./uq python python/example.py"""
import numpy as np
import uq

rng = np.random.default_rng(0)
num_blocks, block_size, kv_heads, qg = 16, 64, 1, 8            # cache [16, 64, 1, 272] uint8
seq_lens = np.array([300, 75], np.int32)
block_tables = np.array([[3, 9, 4, 12, 0], [7, 1, 0, 0, 0]], np.int32)  # block 0: free, any id is fine

cache = np.zeros((num_blocks, block_size, kv_heads, 272), np.uint8)
k = rng.standard_normal((seq_lens.sum(), kv_heads, 256)).astype(np.float32)  # float32: rounded to bf16
v = rng.standard_normal((seq_lens.sum(), kv_heads, 256)).astype(np.float32)
pos = np.concatenate([np.arange(n) for n in seq_lens])
seq = np.repeat(np.arange(len(seq_lens)), seq_lens)
slots = block_tables[seq, pos // block_size].astype(np.int64) * block_size + pos % block_size
uq.write_kv(k, v, slots, cache)                                 # in place

q = rng.standard_normal((len(seq_lens), kv_heads * qg, 256)).astype(np.float32)
out, lse = uq.decode(q, cache, block_tables, seq_lens, scale=1 / 16, return_lse=True)  # float32 holding bf16

for b, n in enumerate(seq_lens):                                # exact attention, float64
    s = q[b] @ k[seq == b, 0].T.astype(np.float64) / 16
    p = np.exp(s - s.max(axis=1, keepdims=True))
    exact = (p / p.sum(axis=1, keepdims=True)) @ v[seq == b, 0]
    cos = np.sum(out[b] * exact) / np.linalg.norm(out[b]) / np.linalg.norm(exact)
    lse_exact = np.log(p.sum(axis=1)) + s.max(axis=1)
    print(f"sequence {b}: {n} tokens, cosine(uq, exact) = {cos:.4f}, max |lse - exact| = "
          f"{np.abs(lse[b] - lse_exact).max():.3f}")
    assert cos > 0.95, "the 4-bit cache should track exact attention closely"

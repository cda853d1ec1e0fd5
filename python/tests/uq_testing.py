"""Shared pieces of the Python tests: bf16 helpers over the reference's rounding, a bf16 DLPack
view of NumPy memory, and the decode / index data cases (paged caches written by the float64
reference's writer into shuffled blocks, unused blocks full of garbage, as the C++ tests build them).
"""

import numpy as np

import _uqref

BF16_CODE, UINT_CODE, FLOAT_CODE = 4, 1, 2  # DLPack type codes
DLPACK_CPU, DLPACK_CUDA = 1, 2  # DLPack device types
POISON_BF16 = 0x7FC1  # a NaN no kernel produces (tests/support/test_util.hpp)
POISON_F32 = np.float32(12345.0)  # finite: a missing write is never taken for -inf or NaN
POISON_BYTE = 0xA5


def bf16_bits(x):
    """x rounded to bf16 by the reference (uqref::bf16_round), as uint16 bits."""
    return _uqref.bf16_round(np.ascontiguousarray(x, dtype=np.float32))


def widen(bits):
    """bf16 bits -> the float32 values they hold (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf16(base, shape=None, strides=None, offset=0):
    """A bfloat16 DLPack tensor over the uint16 array `base` (its memory, not a copy): the given
    shape and element strides from element `offset`, default base's own."""
    assert base.dtype == np.uint16 and base.flags.c_contiguous
    if shape is None:
        shape, strides = base.shape, [s // 2 for s in base.strides]
    return _uqref.producer(base, BF16_CODE, 16, list(shape), None if strides is None else list(strides),
                           byte_offset=2 * offset)


def random_rows(rng, shape, sigma=1.0):
    """Heavy-tailed bf16 rows: N(0, sigma) with a few outlier channels 10-30x, as KV projections have."""
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(sigma)
    channels = rng.choice(shape[-1], size=max(1, shape[-1] // 32), replace=False)
    x[..., channels] *= rng.uniform(10, 30, size=len(channels)).astype(np.float32)
    return bf16_bits(x)


class DecodeCase:
    """A ragged batch over a paged UltraQuant cache (block ids shuffled, unused blocks garbage)."""

    def __init__(self, seed, seq_lens, qg=6, block_size=64, num_kv_heads=1, slot_bytes=272, spare_blocks=3,
                 q_sigma=1.0, extra_table_blocks=1):
        rng = np.random.default_rng(seed)
        self.qg, self.block_size, self.num_kv_heads, self.slot_bytes = qg, block_size, num_kv_heads, slot_bytes
        self.seq_lens = np.array(seq_lens, dtype=np.int32)
        self.num_seqs = len(seq_lens)
        self.hq = num_kv_heads * qg
        blocks = [(n + block_size - 1) // block_size for n in seq_lens]
        self.max_blocks = max(blocks + [0]) + extra_table_blocks
        self.num_blocks = sum(blocks) + spare_blocks
        cache = rng.integers(0, 256, size=(self.num_blocks, block_size, num_kv_heads, slot_bytes), dtype=np.uint8)
        for lo, hi in ((128, 136), (264, 272)):  # scale bytes in a sane range: garbage that reads as numbers
            cache[..., lo:hi] = rng.integers(120, 131, size=cache[..., lo:hi].shape, dtype=np.uint8)
        phys = rng.permutation(self.num_blocks).astype(np.int32)
        self.tables = phys[rng.integers(0, self.num_blocks, size=(self.num_seqs, self.max_blocks))]
        used = 0
        for b, nb in enumerate(blocks):
            self.tables[b, :nb] = phys[used:used + nb]
            used += nb
        tokens = int(self.seq_lens.sum())
        self.k = random_rows(rng, (tokens, num_kv_heads, 256))
        self.v = random_rows(rng, (tokens, num_kv_heads, 256))
        pos = np.concatenate([np.arange(n) for n in seq_lens] + [np.zeros(0, np.int64)]).astype(np.int64)
        seq = np.repeat(np.arange(self.num_seqs), seq_lens)
        self.slots = self.tables[seq, pos // block_size].astype(np.int64) * block_size + pos % block_size
        _uqref.write_kv(self.k, self.v, self.slots, cache)
        self.cache = cache
        # q: the first Hq heads of a fused [B, Hq + 2 Hk, 256] QKV buffer whose K/V heads are garbage.
        self.fused = random_rows(np.random.default_rng(seed + 1), (self.num_seqs, self.hq + 2 * num_kv_heads, 256),
                                 q_sigma)
        self.q_bits = self.fused[:, :self.hq]  # a strided uint16 view

    def q_bf16(self):
        """q as a strided bfloat16 DLPack tensor over the fused buffer."""
        s = self.fused.shape
        return bf16(self.fused, (self.num_seqs, self.hq, 256), (s[1] * 256, 256, 1))

    def reference(self, scale=1.0 / 16.0, q_rotated=False, seq_lens=None, tables=None):
        return _uqref.decode(np.ascontiguousarray(self.q_bits), self.cache,
                             np.ascontiguousarray(self.tables if tables is None else tables),
                             np.ascontiguousarray(self.seq_lens if seq_lens is None else seq_lens),
                             self.qg, scale, q_rotated)


def check_decode(out_bits, ref, lse=None):
    """out (bf16 bits [B, Hq, 256]) and lse against the reference within the C++ tests' tolerances:
    empty sequences exactly +0 with lse -inf, non-finite q rows NaN."""
    got = widen(out_bits).astype(np.float64)
    nonfinite = ref["nonfinite_q"]
    empty = (ref["attended"] == 0) & ~nonfinite
    assert np.all(np.isnan(got[nonfinite])), "a non-finite q row must give NaN"
    finite = ~nonfinite
    err = np.abs(got[finite] - ref["out"][finite])
    assert np.all(err <= ref["tol"][finite]), "decode beyond tolerance: worst err/tol %g" % np.max(
        err / ref["tol"][finite])
    assert np.all(np.asarray(out_bits)[empty] == 0), "an empty sequence gives exactly +0"
    if lse is not None:
        lse = np.asarray(lse, dtype=np.float64)
        assert np.all(np.isneginf(lse[empty]))
        assert np.all(np.isnan(lse[nonfinite]))
        live = finite & ~empty
        assert np.all(np.abs(lse[live] - ref["lse"][live]) <= ref["lse_tol"][live])


def poisoned_bits(shape):
    return np.full(shape, POISON_BF16, dtype=np.uint16)

"""uq.write_kv / uq.KvWriter and uq.write_index_keys / uq.IndexKeyWriter: bit-exact against the
float64 reference's writers on garbage-filled caches (skipped slots and slot padding untouched),
for bf16 given as bfloat16 DLPack, uint16 bits or float32 NumPy (rounded to bf16), strided inputs,
int64 and int32 slots, and the status counters of bad slots and non-finite rows."""

import numpy as np
import pytest

import _uqref
import uq
from uq_testing import bf16, bf16_bits, random_rows, widen


def kv_case(seed, tokens, heads, block_size, num_blocks, slot_bytes):
    rng = np.random.default_rng(seed)
    k = random_rows(rng, (tokens, heads, 256), 3.0)
    v = random_rows(rng, (tokens, heads, 256), 0.5)
    slots = rng.choice(num_blocks * block_size, size=tokens, replace=False).astype(np.int64)
    slots[::7] = -1  # skipped
    cache = rng.integers(0, 256, size=(num_blocks, block_size, heads, slot_bytes), dtype=np.uint8)
    return k, v, slots, cache


@pytest.mark.parametrize("tokens,heads,block_size,slot_bytes", [(1, 1, 16, 272), (37, 3, 32, 288), (130, 2, 64, 400)])
def test_write_kv_is_bit_exact(tokens, heads, block_size, slot_bytes):
    k, v, slots, cache = kv_case(tokens, tokens, heads, block_size, 11, slot_bytes)
    want = cache.copy()
    assert _uqref.write_kv(k, v, slots, want) == (0, 0)
    # k strided: the K heads of a [T, 2 Hk, 256] buffer, as a bfloat16 DLPack tensor
    kbuf = np.zeros((tokens, 2 * heads, 256), np.uint16)
    kbuf[:, heads:] = k
    kview = bf16(kbuf, (tokens, heads, 256), (2 * heads * 256, 256, 1), offset=heads * 256)
    got = cache.copy()
    uq.write_kv(kview, v, slots, got)  # v: uint16 bits
    assert np.array_equal(got, want)
    got32 = cache.copy()
    uq.write_kv(widen(k), widen(v), slots.astype(np.int32), got32)  # float32 NumPy, int32 slots
    assert np.array_equal(got32, want)


def test_float32_inputs_are_rounded_to_nearest_even_bf16():
    rng = np.random.default_rng(3)
    k32 = rng.standard_normal((5, 1, 256)).astype(np.float32)  # off the bf16 grid
    v32 = rng.standard_normal((5, 1, 256)).astype(np.float32)
    slots = np.arange(5, dtype=np.int64)
    got = np.zeros((1, 16, 1, 272), np.uint8)
    uq.write_kv(k32, v32, slots, got)
    want = np.zeros_like(got)
    _uqref.write_kv(bf16_bits(k32), bf16_bits(v32), slots, want)
    assert np.array_equal(got, want) and np.count_nonzero(got) > 0


def test_kv_writer_reuse_and_status():
    k, v, slots, cache = kv_case(9, 40, 2, 16, 6, 272)
    writer = uq.KvWriter(check=False)
    want = cache.copy()
    _uqref.write_kv(k, v, slots, want)
    got = cache.copy()
    for start in range(0, 40, 9):  # token chunks, one writer
        writer.run(k[start:start + 9], v[start:start + 9], slots[start:start + 9], got)
    assert np.array_equal(got, want) and writer.status().ok
    bad = slots.copy()
    bad[3] = 6 * 16 + 5  # past the cache: not written, counted
    k_nan = k.copy()
    k_nan[4, 1, 0] = 0x7FC0
    for _ in range(2):
        writer.run(k_nan, v, bad, got)
    s = writer.status()
    assert s.bad_slots == 2 and s.nonfinite_inputs == 2
    writer.reset_status()
    assert writer.status().ok
    with pytest.raises(uq.Error, match="bad_slots=1"):
        uq.write_kv(k, v, bad, got)


@pytest.mark.parametrize("key_kind", ["float32", "bf16", "uint16 strided"])
def test_write_index_keys_is_bit_exact(key_kind):
    rng = np.random.default_rng(17)
    tokens, num_blocks = 300, 5
    bits = random_rows(rng, (tokens, 128), 2.0)
    slots = rng.choice(num_blocks * 128, size=tokens, replace=False).astype(np.int64)
    slots[5::11] = -3
    cache = rng.integers(0, 256, size=(num_blocks, 9216), dtype=np.uint8)
    want = cache.copy()
    if key_kind == "float32":
        keys = rng.standard_normal((tokens, 128)).astype(np.float32) * 3  # quantised as given, not via bf16
        _uqref.write_index_keys(keys, slots, want)
    else:
        _uqref.write_index_keys(widen(bits), slots, want)
        if key_kind == "bf16":
            keys = bf16(bits)
        else:
            buf = np.zeros((tokens, 200), np.uint16)
            buf[:, 30:158] = bits
            keys = buf[:, 30:158]
    got = cache.copy()
    uq.write_index_keys(keys, slots.astype(np.int32), got)
    assert np.array_equal(got, want)
    writer = uq.IndexKeyWriter(check=False)
    again = cache.copy()
    writer.run(keys, slots, again)
    assert np.array_equal(again, want) and writer.status().ok

"""Bad arguments raise uq.Error (a ValueError) naming the function, the argument, what was expected
and what was given, and nothing is written: every output is poisoned first and checked unchanged
after the error. Also: the DLPack exports of a failed call are all released."""

import numpy as np
import pytest

import _uqref
import uq
from uq_testing import (DLPACK_CUDA, POISON_BF16, POISON_F32, BF16_CODE, DecodeCase, bf16, poisoned_bits)


@pytest.fixture(scope="module")
def case():
    return DecodeCase(seed=3, seq_lens=[70, 5], qg=6, block_size=16)


def expect_error(call, argument, expected_part, actual_part=None, function=None):
    with pytest.raises(uq.Error) as e:
        call()
    err = e.value
    assert isinstance(err, ValueError)
    assert err.argument == argument, str(err)
    assert expected_part in err.expected, str(err)
    if actual_part is not None:
        assert actual_part in err.actual, str(err)
    if function is not None:
        assert err.function == function, str(err)
    assert str(err) == "%s: argument '%s': expected %s, got %s" % (err.function, err.argument, err.expected,
                                                                   err.actual)
    assert _uqref.live_exports() == 0, "an export of the failed call was not released"
    return err


def on_cuda(a):
    """`a`'s memory claimed to be on CUDA device 0 (a host-only build must refuse it, never read it)."""
    code = {np.dtype(np.uint8): 1, np.dtype(np.int32): 0, np.dtype(np.uint16): 1, np.dtype(np.float32): 2}[a.dtype]
    return _uqref.producer(a, code, a.dtype.itemsize * 8, list(a.shape), device_type=DLPACK_CUDA)


def decode_call(case, out, **overrides):
    args = dict(q=case.q_bits, kv_cache=case.cache, block_tables=case.tables, seq_lens=case.seq_lens)
    args.update(overrides)
    return lambda: uq.decode(args["q"], args["kv_cache"], args["block_tables"], args["seq_lens"], out=out,
                             lse=args.get("lse"), backend=args.get("backend", "auto"), stream=args.get("stream"))


def test_decode_argument_errors_write_nothing(case):
    out = poisoned_bits((2, 6, 256))
    lse = np.full((2, 6), POISON_F32, np.float32)
    bad = [
        (dict(q=case.q_bits.astype(np.float64)), "q", "bfloat16", "float64"),
        (dict(q=case.q_bits[0]), "q", "rank 3 [num_seqs, num_q_heads, 256]", "rank 2"),
        (dict(q=[[1.0]]), "q", "__dlpack__", "list"),
        (dict(q=case.q_bits[::-1]), "q", "non-negative strides", None),
        (dict(kv_cache=case.cache.view(np.int8)), "kv_cache", "uint8", "int8"),
        (dict(block_tables=case.tables.astype(np.int64)), "block_tables", "int32", "int64"),
        (dict(seq_lens=case.seq_lens.astype(np.uint32)), "seq_lens", "int32", "uint32"),
        (dict(lse=np.zeros((2, 6), np.float64)), "lse", "float32", "float64"),
        (dict(q=on_cuda(case.fused)), "q", "host memory", "cuda:0"),
        (dict(kv_cache=on_cuda(case.cache)), "kv_cache", "device of 'q' (cpu)", "cuda:0"),
        (dict(backend="fast"), "backend", '"auto", "generic" or "native"', '"fast"'),
        (dict(backend="native"), "config.backend", "native uq path", None),
        (dict(stream=7), "stream", "None", None),
        # the library's own checks (uq::decode): shapes, strides, aliasing
        (dict(q=np.zeros((2, 6, 128), np.uint16)), "q", "extent(2) == 256", "128"),
        (dict(kv_cache=case.cache[:, :, :, ::2]), "kv_cache", "slot_bytes", None),
        (dict(block_tables=case.tables[:1]), "block_tables", "extent(0) == 2", "1"),
        (dict(q=out.view(np.uint16)), "out", "memory disjoint from 'q'", "overlapping"),
    ]
    for overrides, argument, expected, actual in bad:
        expect_error(decode_call(case, out, **overrides), argument, expected, actual)
        assert np.all(out == POISON_BF16) and np.all(lse == POISON_F32), overrides
    # outputs: read-only, overlapping (stride 0), misaligned, wrong dtype
    readonly = poisoned_bits((2, 6, 256))
    readonly.flags.writeable = False
    expect_error(decode_call(case, readonly), "out", "writable", "read-only")
    storage = poisoned_bits((2, 6, 256))
    broadcast = bf16(storage, (2, 6, 256), (0, 256, 1))
    expect_error(decode_call(case, broadcast), "out", "do not share memory", "(0, 256, 1)")
    assert np.all(storage == POISON_BF16)
    raw = np.full(2 * 6 * 256 + 1, POISON_BF16, np.uint16)
    misaligned = _uqref.producer(raw.view(np.uint8), BF16_CODE, 16, [2, 6, 256], byte_offset=1)
    expect_error(decode_call(case, misaligned), "out", "aligned", None)
    assert np.all(raw == POISON_BF16)
    expect_error(decode_call(case, np.zeros((2, 6, 256), np.int16)), "out", "bfloat16", "int16")


def test_read_only_inputs_are_taken_in_place(case):
    q = case.q_bits.copy()
    q.flags.writeable = False  # NumPy refuses DLPack for these: the buffer protocol takes them
    cache = case.cache.copy()
    cache.flags.writeable = False
    got = uq.decode(q, cache, case.tables, case.seq_lens)
    want = uq.decode(case.q_bits, case.cache, case.tables, case.seq_lens)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_writer_errors_leave_the_cache_unchanged(case):
    k = np.ones((3, 1, 256), np.uint16) * 0x3F80
    slots = np.arange(3, dtype=np.int64)
    cache = np.full((4, 16, 1, 272), 0x5A, np.uint8)
    wide = np.full((4, 32, 1, 272), 0x5A, np.uint8)  # every other position: block size 16, not dense
    index_cache = np.full((2, 9216), 0x5A, np.uint8)
    keys = np.ones((3, 128), np.float32)
    calls = [
        (lambda: uq.write_kv(k, k, slots.astype(np.int16), cache), "slot_mapping", "int64 or int32", "int16"),
        (lambda: uq.write_kv(k, k[:2], slots, cache), "v", "same shape as k", None),
        (lambda: uq.write_kv(k, k, slots, cache[:, :, :, :200]), "kv_cache", ">= 272", "200"),
        (lambda: uq.write_kv(k, k, slots, wide[:, ::2]), "kv_cache", "positions dense", None),
        (lambda: uq.write_kv(k, k, slots, cache, backend="native"), "config.backend", "implements KV cache writer", None),
        (lambda: uq.KvWriter(check=False).run(k, k, slots, on_cuda(cache)), "kv_cache", "device of the plan (cpu)",
         "cuda:0"),
        (lambda: uq.write_index_keys(keys.astype(np.float64), slots, index_cache), "keys", "float32", "float64"),
        (lambda: uq.write_index_keys(keys[:, :64], slots, index_cache), "keys", "extent(1) == 128", "64"),
        (lambda: uq.write_index_keys(keys, slots, index_cache[:, :9000]), "index_cache", "9216", "9000"),
    ]
    for call, argument, expected, actual in calls:
        expect_error(call, argument, expected, actual)
        assert np.all(cache == 0x5A) and np.all(wide == 0x5A) and np.all(index_cache == 0x5A)


def test_index_and_plan_errors(case):
    q = np.zeros((2, 2, 128), np.uint8)
    cache = np.zeros((2, 9216), np.uint8)
    tables = np.zeros((2, 3), np.int32)
    lens = np.array([100, 200], np.int32)
    scores = np.full((2, 2, 3), 7.0, np.float32)
    expect_error(lambda: uq.score(q.astype(np.int8), cache, tables, lens, out=scores), "q", "uint8", "int8")
    expect_error(lambda: uq.score(np.zeros((2, 3, 128), np.uint8), cache, tables, lens), "q", "{1, 2, 4}", "3")
    expect_error(lambda: uq.score(q, cache, tables, lens, out=scores[:, :, :2]), "scores", ">= max_blocks", "2")
    assert np.all(scores == 7.0)
    out = np.full((2, 2, 2), 9, np.int32)
    expect_error(lambda: uq.select_blocks(scores, lens, out=out[:, :, :].astype(np.int64)), "out", "int32", "int64")
    expect_error(lambda: uq.select_blocks(scores, lens), "k", "number of blocks", "None")
    expect_error(lambda: uq.select_blocks(scores, lens, out=np.zeros((2, 2, 5), np.int32)), "out", "(k) <=", "5")
    assert np.all(out == 9)
    expect_error(lambda: uq.DecodePlan(4, 1, 7, 64, 10), "shape.qg", "6, 8 or 16", "7")
    expect_error(lambda: uq.DecodePlan(4, 1, 6, 64, 10, device="tpu"), "device", '"cpu"', '"tpu"')
    expect_error(lambda: uq.DecodePlan(4, 1, 6, 64, 10, device="cuda:0"), "device", "host memory", "cuda:0")
    expect_error(lambda: uq.DecodePlan(4, 1, 6, 64, 10, workspace=np.zeros(10, np.float32)), "workspace", "uint8",
                 "float32")
    plan = uq.DecodePlan(1, 1, 6, 16, case.max_blocks)
    out = poisoned_bits((2, 6, 256))
    expect_error(lambda: plan.run(case.q_bits, case.cache, case.tables, case.seq_lens, out), "q",
                 "max_seqs = 1", "2")
    assert np.all(out == POISON_BF16)

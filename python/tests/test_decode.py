"""uq.decode and uq.DecodePlan against the float64 reference (reference/ through _uqref), with the
C++ tests' tolerances: ragged batches at every query group, strided q (a slice of a fused QKV
buffer, as bfloat16 DLPack and as uint16 bits), strided out and a transposed lse written in place
with everything around them untouched, float32 NumPy q rounded to bf16, plan reuse, a caller's
workspace, and the status counters."""

import numpy as np
import pytest

import uq
from uq_testing import (POISON_BF16, POISON_F32, DecodeCase, bf16, bf16_bits, check_decode, poisoned_bits, widen)

RAGGED = [0, 1, 15, 16, 17, 255, 257, 700]


def strided_out(case, pad_heads=3, pad_dim=40):
    """out as a view into a bigger poisoned buffer: [B, Hq, 256] of [B, Hq + pad, 256 + pad]."""
    storage = poisoned_bits((case.num_seqs, case.hq + pad_heads, 256 + pad_dim))
    view = storage[:, 1:case.hq + 1, 7:263]
    return storage, view


@pytest.mark.parametrize("qg", [6, 8, 16])
@pytest.mark.parametrize("block_size", [16, 64, 256])
def test_ragged_batch_strided_q_out_and_transposed_lse(qg, block_size):
    case = DecodeCase(seed=qg * 1000 + block_size, seq_lens=RAGGED, qg=qg, block_size=block_size,
                      num_kv_heads=2 if qg == 6 else 1)
    storage, out_view = strided_out(case)
    out = bf16(storage, out_view.shape, [s // 2 for s in out_view.strides], offset=1 * storage.shape[2] + 7)
    lse_storage = np.full((case.hq, case.num_seqs), POISON_F32, dtype=np.float32)
    lse = lse_storage.T  # vLLM's [num_heads, num_tokens] layout seen as [num_seqs, num_heads]
    returned = uq.decode(case.q_bf16(), case.cache, case.tables, case.seq_lens, out=out, lse=lse)
    assert returned[0] is out and returned[1] is lse
    ref = case.reference()
    check_decode(out_view, ref, lse)
    outside = np.ones(storage.shape, bool)
    outside[:, 1:case.hq + 1, 7:263] = False
    assert np.all(storage[outside] == POISON_BF16), "decode wrote outside out's view"


def test_numpy_float32_q_is_rounded_to_bf16_and_out_comes_back_as_float32():
    case = DecodeCase(seed=5, seq_lens=[33, 1, 300], qg=8, block_size=32)
    # float32 values off the bf16 grid: the binding rounds them to nearest even, as the reference does.
    rng = np.random.default_rng(6)
    q32 = rng.standard_normal((case.num_seqs, case.hq, 256)).astype(np.float32)
    out = uq.decode(q32, case.cache, case.tables, case.seq_lens)
    assert out.dtype == np.float32 and out.shape == (case.num_seqs, case.hq, 256)
    bits = bf16_bits(q32)
    want = uq.decode(bits, case.cache, case.tables, case.seq_lens)  # uint16 bits: taken as they are
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))
    assert np.all((out.view(np.uint32) & 0xFFFF) == 0), "float32 outputs hold bf16 values exactly"
    case.fused[:, :case.hq] = bits
    check_decode(bf16_bits(out), case.reference())


def test_float32_out_given_by_numpy_is_filled_with_bf16_values():
    case = DecodeCase(seed=8, seq_lens=[100, 0], qg=6)
    out = np.full((2, 6, 256), 7.0, dtype=np.float32)
    got, lse = uq.decode(case.q_bits, case.cache, case.tables, case.seq_lens, out=out, return_lse=True)
    assert got is out and lse.dtype == np.float32 and lse.shape == (2, 6)
    check_decode(bf16_bits(out), case.reference(), lse)


@pytest.mark.parametrize("partitions", [1, 3, 64])
def test_forced_partitions_and_pre_rotated_queries(partitions):
    case = DecodeCase(seed=11 + partitions, seq_lens=[2999, 17, 0, 1024], qg=8, block_size=32)
    for q_rotated in (False, True):
        out = uq.decode(case.q_bits, case.cache, case.tables, case.seq_lens, partitions=partitions,
                        q_rotated=q_rotated, scale=0.25)
        check_decode(bf16_bits(out), case.reference(scale=0.25, q_rotated=q_rotated))


def test_non_finite_query_rows_give_nan_and_are_counted():
    case = DecodeCase(seed=12, seq_lens=[40, 70], qg=6)
    case.fused[1, 2, 9] = 0x7F80  # +inf in sequence 1, query head 2
    out, lse = uq.decode(case.q_bits, case.cache, case.tables, case.seq_lens, check=False, return_lse=True)
    check_decode(bf16_bits(out), case.reference(), lse)
    with pytest.raises(uq.Error, match="nonfinite_inputs=1"):
        uq.decode(case.q_bits, case.cache, case.tables, case.seq_lens)


def test_plan_reuse_equals_the_free_function_bit_for_bit():
    case = DecodeCase(seed=21, seq_lens=[500, 3, 129, 64, 0], qg=16, block_size=64, num_kv_heads=2)
    plan = uq.DecodePlan(8, 2, 16, 64, case.max_blocks + 5, check=False)
    assert plan.device == "cpu" and plan.path == "generic" and plan.launches_per_run in (1, 2)
    for num_seqs, width in ((5, case.max_blocks), (2, case.max_blocks), (5, case.max_blocks - 1)):
        out = poisoned_bits((num_seqs, case.hq, 256))
        lse = np.full((num_seqs, case.hq), POISON_F32, np.float32)
        q = case.q_bf16() if num_seqs == 5 else case.q_bits[:num_seqs]
        tables, lens = np.ascontiguousarray(case.tables[:num_seqs, :width]), case.seq_lens[:num_seqs]
        plan.run(q, case.cache, tables, lens, out, lse)
        want, want_lse = uq.decode(case.q_bits[:num_seqs], case.cache, tables, lens, partitions=plan.partitions,
                                   return_lse=True)
        assert np.array_equal(widen(out).view(np.uint32), want.view(np.uint32))
        assert np.array_equal(lse.view(np.uint32), want_lse.view(np.uint32))
        # the narrower table: lengths clamp to its width (the reference sees the same table)
        ref = case.reference(seq_lens=np.minimum(lens, width * 64), tables=tables) if num_seqs == 5 else None
        if ref is not None:
            check_decode(out, ref, lse)
    assert plan.status().ok


def test_caller_workspace_is_used_in_place():
    case = DecodeCase(seed=31, seq_lens=[257, 900, 12], qg=6, block_size=16)
    dims = (3, 1, 6, 16, case.max_blocks)
    size = uq.DecodePlan.workspace_bytes(*dims, partitions=7)
    assert size > uq.DecodePlan.workspace_bytes(*dims, partitions=1)
    align = uq.DecodePlan.workspace_alignment
    raw = np.full(size + 2 * align, 0xEE, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    workspace = raw[start:start + size]
    plan = uq.DecodePlan(*dims, partitions=7, workspace=workspace)
    assert plan.partitions == 7
    out = poisoned_bits((3, 6, 256))
    plan.run(case.q_bits, case.cache, case.tables, case.seq_lens, out)
    check_decode(out, case.reference())
    assert np.all(raw[:start] == 0xEE) and np.all(raw[start + size:] == 0xEE), "written outside the workspace"
    assert np.count_nonzero(workspace != 0xEE) > size // 4, "the partial results are in the caller's memory"
    with pytest.raises(uq.Error, match="workspace_bytes"):
        uq.DecodePlan(*dims, partitions=7, workspace=raw[start:start + size - 16])
    with pytest.raises(uq.Error, match="multiple of 16"):
        uq.DecodePlan(*dims, partitions=7, workspace=raw[start + 1:start + 1 + size])


def test_status_counts_bad_block_ids_and_lengths_across_runs():
    case = DecodeCase(seed=41, seq_lens=[300, 100], qg=6, block_size=64)
    tables = case.tables.copy()
    tables[0, 1] = case.num_blocks + 3  # a block id out of range: masked, counted
    lens = np.array([300, -5], np.int32)
    plan = uq.DecodePlan(2, 1, 6, 64, case.max_blocks, check=False)
    out = poisoned_bits((2, 6, 256))
    for _ in range(3):
        plan.run(case.q_bits, case.cache, tables, lens, out)
    s = plan.status()
    assert (s.bad_block_ids, s.negative_seq_lens, s.long_seq_lens) == (3, 3, 0) and not s.ok
    assert s.as_dict()["bad_block_ids"] == 3 and "bad_block_ids=3" in repr(s)
    plan.reset_status()
    assert plan.status().ok
    check_decode(out, case.reference(seq_lens=lens, tables=tables))
    with pytest.raises(uq.Error) as e:
        uq.decode(case.q_bits, case.cache, tables, lens)
    assert e.value.argument == "q/block_tables/seq_lens" and "bad_block_ids=1" in e.value.actual


def test_out_in_padded_rows_next_to_the_workspace_is_not_taken_for_an_overlap():
    # out = the first 256 of 320 elements per row of one buffer, the plan's workspace right after
    # out's last element, inside the last row's padding: disjoint memory. (The extent x stride
    # span of a strided view would reach into the workspace.)
    case = DecodeCase(seed=51, seq_lens=[90, 33], qg=6)
    dims = (2, 1, 6, 64, case.max_blocks)
    size = uq.DecodePlan.workspace_bytes(*dims)
    rows = 2 * 6
    raw = np.zeros(rows * 320 * 2 + size + 64, dtype=np.uint8)
    start = (-raw.ctypes.data) % 16
    buffer = raw[start:start + rows * 640].view(np.uint16).reshape(2, 6, 320)
    out = buffer[:, :, :256]
    end = start + (rows - 1) * 640 + 512  # one past out's last byte, a multiple of 16 from start
    plan = uq.DecodePlan(*dims, workspace=raw[end:end + size])
    plan.run(case.q_bits, case.cache, case.tables, case.seq_lens, out)
    check_decode(out, case.reference())

"""uq.decode and uq.DecodePlan with several query tokens per sequence (spec ultraquant.md
section 5.9: speculative-decoding verification, MTP) against the float64 reference with the C++
tests' per-row tolerances: query_start_loc with ragged n_b (0, and n_b above seq_len: rows that see
nothing), the uniform form (query_len), a transposed lse, a plan reused with new query tokens, the
path taken and why, and a bad query_start_loc on the host (check=True) and the device."""

import numpy as np
import pytest

import _uqref
import uq
from uq_testing import POISON_F32, DecodeCase, bf16_bits, check_decode, poisoned_bits, random_rows


def queries(seed, case, tokens):
    """q of `tokens` query tokens [T, Hq, 256] as bf16 bits."""
    return random_rows(np.random.default_rng(seed), (tokens, case.hq, 256))


def reference(case, q_bits, starts):
    return _uqref.decode(np.ascontiguousarray(q_bits), case.cache, np.ascontiguousarray(case.tables),
                         case.seq_lens, case.qg, 1.0 / 16.0, False, np.asarray(starts, dtype=np.int32))


@pytest.mark.parametrize("qg", [6, 16])
def test_query_start_loc_matches_the_reference(qg):
    case = DecodeCase(seed=70 + qg, seq_lens=[40, 2, 0, 300, 17], qg=qg, block_size=16)
    starts = np.array([0, 3, 7, 7, 15, 16], dtype=np.int32)  # n_b = 3, 4 (> 2), 0, 8, 1
    q = queries(71, case, int(starts[-1]))
    lse_storage = np.full((case.hq, 16), POISON_F32, dtype=np.float32)
    out, lse = uq.decode(q, case.cache, case.tables, case.seq_lens, query_start_loc=starts, lse=lse_storage.T)
    assert out.shape == (16, case.hq, 256) and lse is not None
    ref = reference(case, q, starts)
    assert np.any(ref["attended"] == 0), "the case has rows that see nothing"
    check_decode(bf16_bits(out), ref, lse)


def test_uniform_query_len_is_query_start_loc_of_equal_steps():
    case = DecodeCase(seed=80, seq_lens=[700, 3, 90], qg=8, block_size=64)
    q = queries(81, case, 3 * 4)
    uniform = uq.decode(q, case.cache, case.tables, case.seq_lens, query_len=4)
    starts = np.arange(0, 13, 4, dtype=np.int32)
    given = uq.decode(q, case.cache, case.tables, case.seq_lens, query_start_loc=starts)
    assert np.array_equal(uniform.view(np.uint32), given.view(np.uint32))
    check_decode(bf16_bits(uniform), reference(case, q, starts))


def test_one_query_token_each_gives_the_one_token_bits():
    case = DecodeCase(seed=85, seq_lens=[1000, 1, 64], qg=6)
    one = uq.decode(case.q_bits, case.cache, case.tables, case.seq_lens, backend="generic")
    several = uq.decode(case.q_bits, case.cache, case.tables, case.seq_lens, backend="generic",
                        query_start_loc=np.arange(4, dtype=np.int32))
    assert np.array_equal(one.view(np.uint32), several.view(np.uint32))


def test_plan_reused_with_new_query_tokens_path_and_status():
    case = DecodeCase(seed=90, seq_lens=[500, 40, 129], qg=6, block_size=32)
    plan = uq.DecodePlan(4, 1, 6, 32, case.max_blocks, check=False, max_query_len=6, max_query_tokens=12)
    assert plan.workspace_bytes(4, 1, 6, 32, case.max_blocks, max_query_len=6, max_query_tokens=12) > \
        plan.workspace_bytes(4, 1, 6, 32, case.max_blocks)
    for seed, n in ((91, [2, 2, 2]), (92, [6, 0, 5]), (93, [1, 1, 1])):
        starts = np.concatenate([[0], np.cumsum(n)]).astype(np.int32)
        q = queries(seed, case, int(starts[-1]))
        out = poisoned_bits((int(starts[-1]), case.hq, 256))
        plan.run(q, case.cache, case.tables, case.seq_lens, out, query_start_loc=starts)
        check_decode(out, reference(case, q, starts))
    # (36 query rows: more than a tuned multi-token kernel takes; its launcher names max_query_len)
    assert plan.path == "generic" and ("decode queries" in plan.path_reason or "max_query_len" in plan.path_reason)
    assert plan.status().ok


def test_bad_query_start_loc():
    case = DecodeCase(seed=95, seq_lens=[100, 50], qg=6)
    q = queries(96, case, 5)
    with pytest.raises(uq.Error, match="non-decreasing"):
        uq.decode(q, case.cache, case.tables, case.seq_lens, query_start_loc=np.array([0, 6, 5], np.int32))
    with pytest.raises(uq.Error, match=r"query_start_loc\[num_seqs\] == 5"):
        uq.decode(q, case.cache, case.tables, case.seq_lens, query_start_loc=np.array([0, 2, 4], np.int32))
    with pytest.raises(uq.Error, match="query_start_loc"):
        uq.decode(q, case.cache, case.tables, case.seq_lens, query_start_loc=np.array([0, 5], np.int32))
    # Unchecked: the device skips the malformed sequence and counts it; the other's rows are right.
    # (One partition: no reducer, so the rows no sequence covers keep what they held; with a reducer
    # they are unspecified.)
    plan = uq.DecodePlan(2, 1, 6, 64, case.max_blocks, check=False, max_query_len=3, max_query_tokens=5,
                         partitions=1)
    out = poisoned_bits((5, case.hq, 256))
    starts = np.array([0, 2, 7], np.int32)  # sequence 1 ends past T = 5
    plan.run(q, case.cache, case.tables, case.seq_lens, out, query_start_loc=starts)
    assert plan.status().bad_start_locs == 1
    ref = reference(case, q, starts)
    check_decode(out[:2], {k: v[:2] for k, v in ref.items()})
    assert np.all(out[2:] == 0x7FC1), "the skipped sequence's rows are not written"

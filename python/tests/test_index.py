"""uq.score / uq.ScorePlan and uq.select_blocks / uq.BlockSelector against the float64 reference:
scores within the C++ tests' tolerance (sentinels and -inf bit-exact, entries past a request's
blocks untouched), float32 q rounded to E4M3 as the reference rounds it, a strided scores
output, and the selection bit-exact on the same scores."""

import numpy as np
import pytest

import _uqref
import uq
from uq_testing import random_rows, widen


def index_case(seed, lens, query_len, heads, spare=2):
    rng = np.random.default_rng(seed)
    lens = np.array(lens, np.int32)
    blocks = [(max(int(n), 0) + 127) // 128 for n in lens]
    max_blocks = max(blocks) + 1
    num_blocks = sum(blocks) + spare
    cache = np.zeros((num_blocks, 9216), np.uint8)
    keys = widen(random_rows(rng, (num_blocks * 128, 128), 1.5))
    _uqref.write_index_keys(keys, np.arange(num_blocks * 128, dtype=np.int64), cache)
    pages = rng.permutation(num_blocks).astype(np.int32)
    tables = np.full((len(lens), max_blocks), -7, np.int32)
    used = 0
    for r, nb in enumerate(blocks):
        tables[r, :nb] = pages[used:used + nb]
        used += nb
    q32 = rng.standard_normal((len(lens) * query_len, heads, 128)).astype(np.float32) * 4
    return cache, tables, lens, q32


def reference_scores(q8, cache, tables, lens, query_len, init, local, S):
    ref = np.full((q8.shape[1], q8.shape[0], S), np.nan, np.float32)
    _uqref.score(q8, cache, tables, lens, query_len, init, local, ref)
    return ref


def check_scores(got, ref, tol):
    special = ~np.isfinite(ref) | (ref == np.float32(1e30)) | (ref == np.float32(1e29))
    assert np.array_equal(got[special].view(np.uint32), ref[special].view(np.uint32))
    close = ~special
    assert np.all(np.abs(got[close].astype(np.float64) - ref[close]) <= tol[close])


@pytest.mark.parametrize("query_len,heads", [(1, 1), (3, 2), (8, 4)])
def test_score_and_select_match_reference(query_len, heads):
    lens = [1, 128, 129, 900 + query_len, 3000, 0][: 6 if query_len < 8 else 4]
    lens = [max(n, query_len) if n else 0 for n in lens]
    cache, tables, lens, q32 = index_case(query_len * 10 + heads, lens, query_len, heads)
    q8 = _uqref.e4m3_round(q32)
    init, local = 1, 2
    ref = reference_scores(q8, cache, tables, lens, query_len, init, local, tables.shape[1])
    tol = _uqref.score_tolerance(q8, cache, tables, query_len, ref)
    got = uq.score(q32, cache, tables, lens, query_len=query_len, init_blocks=init, local_blocks=local)
    check_scores(got, ref, tol)  # float32 q rounded to E4M3 by the binding
    assert np.array_equal(uq.score(q8, cache, tables, lens, query_len=query_len, init_blocks=init,
                                   local_blocks=local).view(np.uint32), got.view(np.uint32))
    for k in (1, 5, tables.shape[1]):
        idx = uq.select_blocks(got, lens, k, query_len=query_len)
        assert idx.dtype == np.int32 and idx.shape == (heads, len(lens) * query_len, k)
        assert np.array_equal(idx, _uqref.select(got, lens, query_len, k))


def test_score_plan_into_a_strided_output_and_block_selector():
    query_len, heads = 2, 2
    cache, tables, lens, q32 = index_case(5, [300, 2, 1000], query_len, heads)
    q8 = _uqref.e4m3_round(q32)
    S = tables.shape[1] + 3
    storage = np.full((heads, len(lens) * query_len, S + 5), -1.5, np.float32)
    scores = storage[:, :, 2:2 + S]
    plan = uq.ScorePlan(4, heads, tables.shape[1], query_len=query_len, check=False)
    assert plan.path == "generic"
    plan.run(q8, cache, tables, lens, scores)
    ref = reference_scores(q8, cache, tables, lens, query_len, 0, 0, S)
    written = ~np.isnan(ref)
    ref[~written] = -1.5  # the plan leaves them as they were
    check_scores(scores, ref, _uqref.score_tolerance(q8, cache, tables, query_len, ref))
    assert np.all(storage[:, :, :2] == -1.5) and np.all(storage[:, :, 2 + S:] == -1.5)
    selector = uq.BlockSelector(query_len=query_len, max_blocks=tables.shape[1], check=False)
    out = np.full((heads, len(lens) * query_len, 4), 99, np.int32)
    selector.run(scores, lens, out)
    want = _uqref.select(np.ascontiguousarray(scores[:, :, :tables.shape[1]]), lens, query_len, 4)
    assert np.array_equal(out, want) and selector.status().ok
    bad = tables.copy()
    bad[0, 0] = 10_000
    plan.run(q8, cache, bad, lens, scores)
    assert plan.status().bad_block_ids >= 1
    plan.reset_status()
    assert plan.status().ok

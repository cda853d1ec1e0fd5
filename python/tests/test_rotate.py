"""uq.rotate_query against the reference's fp32 WHT, bit for bit (the spec fixes the butterfly
order), from bf16 bits, a strided bfloat16 view and float32 NumPy (rounded to bf16 first)."""

import numpy as np

import _uqref
import uq
from uq_testing import bf16, bf16_bits, random_rows, widen


def test_rotate_query_is_bit_exact():
    rng = np.random.default_rng(2)
    fused = random_rows(rng, (3, 10, 256), 2.0)
    q = fused[:, 1:8]  # strided
    want = _uqref.wht256(np.ascontiguousarray(widen(q)))
    got = uq.rotate_query(q)
    assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))
    out_storage = np.full((3, 7, 300), 5.0, np.float32)
    out = out_storage[:, :, 10:266]
    assert uq.rotate_query(bf16(fused, (3, 7, 256), (2560, 256, 1), offset=256), out=out) is out
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))
    assert np.all(out_storage[:, :, :10] == 5.0) and np.all(out_storage[:, :, 266:] == 5.0)
    x32 = rng.standard_normal((2, 3, 256)).astype(np.float32)
    want32 = _uqref.wht256(widen(bf16_bits(x32)))
    assert np.array_equal(uq.rotate_query(x32).view(np.uint32), want32.view(np.uint32))

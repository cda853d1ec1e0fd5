"""uq: decode kernels for 4-bit KV caches (UltraQuant MXFP4 decode, NVFP4 index scorer).

Arrays are taken in place, never copied, from any object with ``__dlpack__`` (torch, CuPy, JAX,
NumPy >= 1.22) or a NumPy array, on their own device: host arrays run on the host Kokkos
execution space, CUDA arrays on the CUDA one (CUDA builds), on the caller's stream (``stream=``,
an int handle or an object with ``cuda_stream``; default: torch's current stream). bf16 stays
bf16; uint16 arrays are taken as bf16 bits. NumPy has no bf16: where bf16 is expected, a host
float32 array is rounded to bf16 (a copy, round to nearest even, as the ``uq`` program does),
and an output uq allocates for NumPy inputs comes back as float32 holding the bf16 values.

Argument and data errors raise ``uq.Error`` (a ValueError) naming the function, the argument,
what was expected and what was given (also as attributes); nothing is written on an argument
error. Kokkos is initialised on import (an already initialised Kokkos is used as it is) and
finalised at interpreter exit.

Free functions build a temporary plan or writer per call, as the C++ ones do; engines keep a
``DecodePlan`` / ``KvWriter`` / ``IndexKeyWriter`` / ``ScorePlan`` / ``BlockSelector`` and run it
(with ``check=False``: no allocation, no host synchronisation, CUDA-graph capturable on a stream
the object has run on before the capture).
"""

import atexit as _atexit
import sys as _sys

from . import _uq
from ._uq import (BlockSelector, DecodePlan, Error, IndexKeyWriter, KvWriter, ScorePlan, Status,
                  execution_spaces, synchronize)
from ._outputs import new_output as _new_output, finish_output as _finish_output, shape_of as _shape_of

__version__ = _uq.__version__

__all__ = [
    "Error", "Status", "DecodePlan", "KvWriter", "IndexKeyWriter", "ScorePlan", "BlockSelector",
    "write_kv", "decode", "rotate_query", "write_index_keys", "score", "select_blocks",
    "execution_spaces", "synchronize",
]


def _kokkos_device_id():
    """The CUDA device torch already uses, if it does; else -1 (Kokkos' choice: KOKKOS_DEVICE_ID or 0)."""
    torch = _sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return torch.cuda.current_device()
    except Exception:  # a torch without CUDA
        pass
    return -1


_torch_import_failed = False


def _current_stream(device_id):
    """torch's current stream on the device (uq's default for CUDA arrays), or None without torch."""
    global _torch_import_failed
    torch = _sys.modules.get("torch")
    if torch is None and not _torch_import_failed:
        try:
            import torch
        except ImportError:
            _torch_import_failed = True
    if torch is None:
        return None
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what Triton uses: no Stream object
    if raw is not None:
        return raw(device_id)
    return torch.cuda.current_stream(device_id).cuda_stream


_uq._initialize(_kokkos_device_id())
_uq._set_stream_provider(_current_stream)
_atexit.register(_uq._finalize)


def write_kv(k, v, slot_mapping, kv_cache, *, check=True, backend="auto", stream=None):
    """Quantises K (rotated) and V into the UltraQuant cache, in place.

    k, v: bf16 [num_tokens, num_kv_heads, 256], any strides. slot_mapping: int64 or int32
    [num_tokens], block * block_size + pos (negative: skipped). kv_cache: uint8 [num_blocks,
    block_size, num_kv_heads, slot_bytes], dense in its last three dimensions.
    """
    _uq._write_kv(k, v, slot_mapping, kv_cache, check, backend, stream)


def decode(q, kv_cache, block_tables, seq_lens, *, scale=1.0 / 16.0, qg=None, q_rotated=False,
           partitions=None, backend="auto", check=True, out=None, lse=None, return_lse=False,
           stream=None, query_start_loc=None, query_len=1):
    """Paged split-K decode attention over the UltraQuant cache; returns out, or (out, lse).

    q: bf16 [num_seqs, num_kv_heads * qg, 256], any strides (a slice of a fused QKV tensor).
    block_tables: int32 [num_seqs, max_blocks_per_seq]; seq_lens: int32 [num_seqs].
    out: bf16 [num_seqs, num_q_heads, 256], any strides (allocated when None). lse: float32
    [num_seqs, num_q_heads], any strides (vLLM's [num_heads, num_tokens] transposed), the natural
    log of the sum of exp(score) (-inf for an empty sequence); written when given or when
    return_lse, and then returned with out.

    Several query tokens per sequence (speculative-decoding verification, MTP; spec
    ultraquant.md section 5.9): with query_start_loc (int32 [num_seqs + 1]: 0, non-decreasing,
    T; at most 16 a sequence) or query_len > 1 (T = num_seqs * query_len), q, out and lse have T
    rows, sequence b's new tokens in order. seq_lens count the new tokens (already in the cache);
    query token j of n sees positions 0 .. seq_len - n + j, and one that sees none gives 0 and
    lse -inf. These calls run the gfx950 multi-token kernel on a gfx950 device when the plan's
    max_query_len * qg <= 32, the sm90 one on a Hopper GPU when it is <= 32, else the generic
    kernels.
    """
    want_lse = return_lse or lse is not None
    shape = None
    if out is None or lse is None and want_lse:
        shape = _shape_of(q, "uq.decode", "q", 3, "[num_seqs, num_q_heads, 256]")
    out_arg, out_state = _new_output(q, out, shape, "bfloat16", "uq.decode", "out")
    lse_arg, lse_state = (None, None)
    if want_lse:
        lse_arg, lse_state = _new_output(q, lse, shape and shape[:2], "float32", "uq.decode", "lse")
    _uq._decode(q, kv_cache, block_tables, seq_lens, out_arg, lse_arg, scale, 0 if qg is None else qg,
                q_rotated, 0 if partitions is None else partitions, backend, check, stream, query_start_loc,
                query_len)
    result = _finish_output(out_arg, out_state)
    if want_lse:
        return result, _finish_output(lse_arg, lse_state)
    return result


def rotate_query(q, *, out=None, stream=None):
    """q_rot = WHT(fp32(q)) as float32, before the E4M3 rounding decode applies.

    q: bf16 [num_seqs, num_heads, 256], any strides; out: float32, same shape (allocated when None).
    """
    shape = _shape_of(q, "uq.rotate_query", "q", 3, "[num_seqs, num_heads, 256]") if out is None else None
    out_arg, state = _new_output(q, out, shape, "float32", "uq.rotate_query", "out")
    _uq._rotate_query(q, out_arg, stream)
    return _finish_output(out_arg, state)


def write_index_keys(keys, slot_mapping, index_cache, *, check=True, backend="auto", stream=None):
    """Quantises index keys into the NVFP4 index cache, in place.

    keys: bf16 or float32 [num_tokens, 128], any strides (float32 is quantised as given, not
    rounded to bf16). slot_mapping: int64 or int32 [num_tokens], block * 128 + pos (negative:
    skipped). index_cache: uint8 [num_blocks, 9216].
    """
    _uq._write_index_keys(keys, slot_mapping, index_cache, check, backend, stream)


def score(q, index_cache, block_tables, seq_lens, *, query_len=1, init_blocks=0, local_blocks=0,
          backend="auto", check=True, out=None, stream=None):
    """Per (index head, query row, 128-token block) the max of q.k over the block; returns scores.

    q: uint8 E4M3 bits [num_reqs * query_len, heads, 128] (host float32 is rounded to E4M3).
    block_tables: int32 [num_reqs, max_blocks]; seq_lens: int32 [num_reqs] (the whole length,
    query tokens included). scores: float32 [heads, num_reqs * query_len, S >= max_blocks], any
    strides; when uq allocates it (S = max_blocks) the entries past a request's blocks are NaN.
    Sentinels: 1e30 (init blocks), 1e29 (local blocks), -inf for blocks a row cannot see.
    """
    shape = None
    if out is None:
        rows, heads, _ = _shape_of(q, "uq.score", "q", 3, "[num_reqs * query_len, heads, 128]")
        _, max_blocks = _shape_of(block_tables, "uq.score", "block_tables", 2, "[num_reqs, max_blocks]")
        shape = (heads, rows, max_blocks)
    out_arg, state = _new_output(q, out, shape, "float32", "uq.score", "out", fill=float("nan"))
    _uq._score(q, index_cache, block_tables, seq_lens, out_arg, query_len, init_blocks, local_blocks,
               backend, check, stream)
    return _finish_output(out_arg, state)


def select_blocks(scores, seq_lens, k=None, *, query_len=1, max_blocks=0, check=True, out=None,
                  stream=None):
    """The k best visible blocks of each score row, int32 [heads, num_reqs * query_len, k].

    Descending score, equal scores -> smaller block first, NaN as -inf, -1 padding. k: the
    number of blocks (out.shape[2] when out is given). max_blocks: the block-table width given
    to score (0: scores.shape[2]).
    """
    shape = None
    if out is None:
        if k is None:
            _uq._raise("uq.select_blocks", "k", "the number of blocks to select (or out=)", "None")
        heads, rows, _ = _shape_of(scores, "uq.select_blocks", "scores", 3, "[heads, num_reqs * query_len, S]")
        shape = (heads, rows, k)
    out_arg, state = _new_output(scores, out, shape, "int32", "uq.select_blocks", "out")
    _uq._select_blocks(scores, seq_lens, out_arg, query_len, max_blocks, check, stream)
    return _finish_output(out_arg, state)

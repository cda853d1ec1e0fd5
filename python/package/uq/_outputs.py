"""Outputs the free functions allocate when the caller gives none, in the caller's framework.

NumPy has no bf16: a bf16 output for NumPy inputs is written as uint16 bf16 bits and returned
widened to float32 (exact); a float32 NumPy array given as a bf16 ``out=`` is filled the same way
after the call. torch gets a tensor of the dtype on the input's device. Other frameworks give
``out=`` themselves.
"""

import sys

from . import _uq


def _is_numpy(x):
    return type(x).__module__ == "numpy"


def _torch_tensor(x):
    torch = sys.modules.get("torch")
    return torch if torch is not None and isinstance(x, torch.Tensor) else None


def shape_of(x, fn, arg, rank, words):
    """x's shape as a tuple of the expected rank, else the uq.Error the C++ checks would give
    (from x.shape, or from its DLPack export for an object without one)."""
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = _uq._shape(x, fn, arg)
    if len(shape) != rank:
        _uq._raise(fn, arg, "rank %d %s" % (rank, words), "rank %d %s" % (len(shape), list(shape)))
    return tuple(int(e) for e in shape)


def new_output(like, given, shape, dtype, fn, arg, fill=None):
    """(array to pass to uq, state for finish_output): `given`, or a new array like `like`'s.

    dtype: "bfloat16", "float32" or "int32"; fill: a value for a new array (else uninitialised).
    """
    if given is not None:
        if dtype == "bfloat16" and _is_numpy(given) and given.dtype.name == "float32":
            import numpy as np
            return np.empty(given.shape, np.uint16), ("widen into", given)
        return given, None
    if _is_numpy(like):
        import numpy as np
        a = np.empty(shape, np.uint16 if dtype == "bfloat16" else np.dtype(dtype))
        if fill is not None:
            a.fill(fill)
        return a, ("widen",) if dtype == "bfloat16" else None
    torch = _torch_tensor(like)
    if torch is not None:
        t = torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)
        if fill is not None:
            t.fill_(fill)
        return t, None
    _uq._raise(fn, arg, "an out= array (uq allocates outputs for NumPy and torch inputs only)",
               "None for inputs of type " + type(like).__name__)


def _widened(bits):
    import numpy as np
    return (bits.astype(np.uint32) << 16).view(np.float32)


def finish_output(a, state):
    """What the caller gets: the array, or for NumPy bf16 outputs the float32 values."""
    if state is None:
        return a
    if state[0] == "widen":
        return _widened(a)
    target = state[1]
    target[...] = _widened(a)
    return target

"""``sum_to``: a gradient summed back to the shape its input was broadcast from (the engine's
shape check of every backward result, and expand's backward)."""

from __future__ import annotations

from collections.abc import Sequence

from ember._core.grad_mode import STATE
from ember._core.reductions import add_reduce
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import _OBSERVERS


def sum_to(g: Tensor, shape: Sequence[int], node=None, i: int = 0) -> Tensor:
    """Return ``g`` summed over the dimensions along which ``shape`` was broadcast to it."""
    gshape = g._data.shape
    shape = tuple(shape)
    lead = len(gshape) - len(shape)
    if lead < 0 or any(s != 1 and s != gs for s, gs in zip(shape, gshape[lead:])):
        where = (
            f"Function {node.name()} returned an invalid gradient at index {i} - " if node else ""
        )
        raise RuntimeError(
            f"{where}got {list(gshape)} but expected shape compatible with {list(shape)}"
        )
    dims = tuple(range(lead)) + tuple(
        lead + k for k, s in enumerate(shape) if s == 1 and gshape[lead + k] != 1
    )
    a = g._data
    fast = not STATE.grad_enabled and a.dtype.kind in "fc" and a.dtype.itemsize >= 4
    if fast and not _OBSERVERS:
        # the backward is not recorded: sum the array directly (half types take ember's sum,
        # which accumulates in float32 as torch does); a compile capture tracing a backward
        # (an op-table observer) needs the sum as an op call, or its trace would freeze it
        if dims:
            a = add_reduce(a, dims, keepdims=True)
        return _wrap(a.reshape(shape))
    if dims:
        g = g.sum(dims, keepdim=True)
    if g._data.shape != shape:
        g = g.reshape(shape)
    return g

"""Splits torch has beside ``split``/``chunk``: ``hsplit``/``vsplit``/``dsplit`` (numpy's
names and rules) and the ``unsafe_split``/``unsafe_split_with_sizes``/``unsafe_chunk`` variants
(their own grad_fn names)."""

from __future__ import annotations

import numpy as np

from ember._core.tensor import Tensor, wrap_dim
from ember._ops.registry import dispatch, op, publish


def _dsplit_like(name: str, input: Tensor, sections, min_dims: int, dim: int):
    from ember._ops.joining import tensor_split

    nd = input._data.ndim
    if nd < min_dims:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a "
            f"tensor with {nd} dimensions!"
        )
    if isinstance(sections, (int, np.integer)):
        n = input._data.shape[dim]
        if sections == 0 or n % sections:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                f"dimension {n} is not divisible by the split_size {sections}!"
            )
    return tensor_split(input, sections, dim)


def hsplit(input: Tensor, sections):
    """Return views of ``input`` split along dimension 1 (0 for 1-D tensors)."""
    nd = input._data.ndim
    return _dsplit_like("hsplit", input, sections, 1, 1 if nd >= 2 else 0)


def vsplit(input: Tensor, sections):
    """Return views of ``input`` split along dimension 0."""
    return _dsplit_like("vsplit", input, sections, 2, 0)


def dsplit(input: Tensor, sections):
    """Return views of ``input`` split along dimension 2."""
    return _dsplit_like("dsplit", input, sections, 3, 2)


def _unsafe_split_op(name, grad_fn):
    from ember._ops.cat_split import _split_backward, _split_forward

    o = op(name, grad_fn=grad_fn)(_split_forward)
    o.backward(_split_backward)
    return o


_unsafe_split = _unsafe_split_op("unsafe_split", "UnsafeSplitBackward0")
_unsafe_split_sizes = _unsafe_split_op("unsafe_split_with_sizes", "UnsafeSplitWithSizesBackward0")


def unsafe_split(tensor: Tensor, split_size: int, dim: int = 0):
    """Return the chunks of :func:`split`, not tracked as views (in-place use is allowed)."""
    from ember._ops.cat_split import split

    parts = split(tensor.detach(), split_size, dim)
    d = wrap_dim(dim, tensor._data.ndim)
    sizes = tuple(int(t._data.shape[d]) for t in parts)
    return dispatch(_unsafe_split, (tensor,), {"dim": d, "sizes": sizes})


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0):
    """Return the parts of :func:`split_with_sizes`, not tracked as views."""
    from ember._ops.cat_split import split_with_sizes

    split_with_sizes(input.detach(), split_sizes, dim)  # torch's checks and messages
    d = wrap_dim(dim, input._data.ndim)
    sizes = tuple(int(s) for s in split_sizes)
    return dispatch(_unsafe_split_sizes, (input,), {"dim": d, "sizes": sizes})


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0):
    """Return the chunks of :func:`chunk`, not tracked as views."""
    from ember._ops.cat_split import chunk

    parts = chunk(input.detach(), chunks, dim)
    d = wrap_dim(dim, input._data.ndim)
    sizes = tuple(int(t._data.shape[d]) for t in parts)
    return dispatch(_unsafe_split, (input,), {"dim": d, "sizes": sizes})


for _f in (hsplit, vsplit, dsplit, unsafe_split, unsafe_split_with_sizes, unsafe_chunk):
    publish(None, _f)

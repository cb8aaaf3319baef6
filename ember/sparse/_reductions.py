"""Sums and softmax over sparse COO tensors, written with ember ops on the values (so they
are differentiable) and NumPy on the indices."""

from __future__ import annotations

import builtins

import numpy as np

from ember._core.tensor import _wrap
from ember._ops.registry import API
from ember.sparse._coo import SparseTensor, _wrap_dim


def sparse_sum(input: SparseTensor, dim=None, dtype=None):
    """Return the sum of ``input`` over ``dim`` (all dims if None): a dense tensor when every
    sparse dimension is summed, else a coalesced sparse tensor."""
    vals = input._vals if dtype is None else input._vals.to(dtype)
    if dim is None:
        if input.requires_grad and input.is_leaf:
            input._grad_from_sum = True
        return vals.sum()
    n = input.ndim
    dims = (dim,) if isinstance(dim, builtins.int) else tuple(dim)
    dims = sorted({_wrap_dim(d, n) for d in dims})
    sd = input.sparse_dim()
    sparse_dims = [d for d in dims if d < sd]
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        vals = vals.sum(tuple(dense_dims))
    if len(sparse_dims) == sd:
        return vals.sum(0)
    keep = [d for d in range(sd) if d not in sparse_dims]
    shape = tuple(input._sshape[d] for d in keep) + tuple(vals.shape[1:])
    part = SparseTensor._make(input._idx[keep], vals, shape, False)
    return part.coalesce()


def _groups(S: SparseTensor, dim: int):
    """For the coalesced ``S``: the group (line along ``dim``) of each element."""
    sd = S.sparse_dim()
    d = _wrap_dim(dim, S.ndim)
    if d >= sd or S.dense_dim():
        raise NotImplementedError("ember: sparse softmax over a dense dimension")
    others = [k for k in range(sd) if k != d]
    if not others:
        return np.zeros(S._idx.shape[1], np.int64), 1
    key = np.ravel_multi_index(tuple(S._idx[others]), tuple(S._sshape[k] for k in others))
    uniq, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), uniq.shape[0]


def _softmax_parts(input: SparseTensor, dim: int, dtype):
    S = input.coalesce()
    vals = S._vals if dtype is None else S._vals.to(dtype)
    g, n = _groups(S, dim)
    gi = _wrap(g)
    top = np.full(n, -np.inf, dtype=vals.detach().numpy().dtype)
    if g.size:
        np.maximum.at(top, g, vals.detach().numpy())
    shifted = vals - _wrap(top[g])
    e = shifted.exp()
    total = API["zeros"](n, dtype=vals.dtype).index_add(0, gi, e)
    return S, shifted, e, total.index_select(0, gi)


def softmax(input: SparseTensor, dim: int, dtype=None) -> SparseTensor:
    """Return softmax over ``dim`` of the specified elements (unspecified ones count as
    -inf); the result has the coalesced input's indices."""
    S, _, e, total = _softmax_parts(input, dim, dtype)
    return S._with_values(e / total, True)


def log_softmax(input: SparseTensor, dim: int, dtype=None) -> SparseTensor:
    """Return log-softmax over ``dim`` of the specified elements."""
    S, shifted, _, total = _softmax_parts(input, dim, dtype)
    return S._with_values(shifted - total.log(), True)

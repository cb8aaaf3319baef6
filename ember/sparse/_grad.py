"""Sparse gradients: what ``nn.Embedding(sparse=True)`` needs end to end.

- ``embedding_sparse_grad``: torch's ``embedding_sparse_backward`` (indices = the input
  flattened without ``padding_idx``, values = the gradient rows; uncoalesced).
- ``merge_add``: torch's CPU ``add_out_sparse_contiguous``, a merge walk over the two index
  lists that sums the heads when they are equal (so ``s + s`` of the same pattern keeps nnz).
- ``accumulate``: ``AccumulateGrad`` for a sparse gradient or a sparse ``.grad``, called by
  ``_core/node.py`` once a sparse tensor exists (dense-only programs never come here).
- ``dense_add_``: ``dense.add_(sparse, alpha=)``; ``install_dense_methods`` puts it (and the
  dense results of ``dense.add/sub(sparse)``) on ``Tensor`` when the first sparse tensor is
  made, so dense-only programs keep the plain methods.
"""

from __future__ import annotations

import numpy as np

from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import API
from ember.sparse._coo import SparseTensor

# ------------------------------------------------------------------------------ embedding


def embedding_sparse_grad(g: Tensor, idx: Tensor, num: int, padding_idx: int) -> SparseTensor:
    """The sparse gradient of ``embedding`` w.r.t. its ``(num, D)`` weight, as torch's."""
    flat = idx._data.reshape(-1).astype(np.int64)
    d = g.shape[-1]
    rows = g.reshape(-1, d)
    if padding_idx >= 0:
        if idx.ndim == 0:  # torch masks the 0-d indices with a 0-d mask
            raise IndexError("too many indices for tensor of dimension 0 (got 1)")
        keep = flat != padding_idx
        if not keep.all():
            flat = flat[keep]
            rows = rows[_wrap(np.flatnonzero(keep))]
    if rows.numel() == 0:  # everything was padding (or no features): an empty gradient
        return SparseTensor._make(
            np.zeros((1, 0), np.int64), rows.new_zeros((0, d)), (num, d), False
        )
    return SparseTensor._make(np.ascontiguousarray(flat[None]), rows, (num, d), False)


# ------------------------------------------------------------------------------ sparse + sparse


def _keys(s: SparseTensor) -> np.ndarray:
    sd = s._idx.shape[0]
    if sd == 1:
        return s._idx[0]
    return np.ravel_multi_index(tuple(s._idx), s._sshape[:sd])


def _merge_positions(a: SparseTensor, b: SparseTensor):
    """Result index columns and the result position of each entry of ``a`` and ``b``."""
    ka, kb = _keys(a), _keys(b)
    if a._is_coalesced and b._is_coalesced:  # sorted unique lists: the merge is the union
        rk = np.union1d(ka, kb)
        return rk, np.searchsorted(rk, ka), np.searchsorted(rk, kb)
    if ka.shape == kb.shape and np.array_equal(ka, kb):  # the same pattern: pairwise sums
        pos = np.arange(ka.size)
        return ka, pos, pos
    # the general walk of torch's kernel (its result depends on the order of both lists):
    # compare the heads, emit the smaller (both, summed, when equal); a Python loop until
    # one list runs out, then the other's tail in one piece
    la, lb = ka.tolist(), kb.tolist()
    na, nb = len(la), len(lb)
    pa, pb, rk = [], [], []
    i = j = 0
    while i < na and j < nb:
        x, y = la[i], lb[j]
        pos = len(rk)
        if x <= y:
            pa.append(pos)
            rk.append(x)
            i += 1
        if y <= x:
            pb.append(pos)
            if x != y:
                rk.append(y)
            j += 1
    r = len(rk)
    tail_a, tail_b = ka[i:], kb[j:]  # at most one is non-empty
    pa = np.concatenate([np.asarray(pa, np.int64), r + np.arange(tail_a.size)])
    pb = np.concatenate([np.asarray(pb, np.int64), r + np.arange(tail_b.size)])
    rk = np.concatenate([np.asarray(rk, np.int64), tail_a, tail_b])
    return rk, pa, pb


def merge_add(a: SparseTensor, b: SparseTensor, alpha=1) -> SparseTensor:
    """Return ``a + alpha * b`` (same size and sparse dims) as torch's CPU kernel builds it."""
    if b._idx.shape[1] == 0:
        return SparseTensor._make(a._idx.copy(), a._vals.clone(), a._sshape, a._is_coalesced)
    bv = b._vals if alpha == 1 else b._vals * alpha
    if a._idx.shape[1] == 0:
        return SparseTensor._make(b._idx.copy(), bv.to(a.dtype), a._sshape, b._is_coalesced)
    if not (a._vals._data.flags.c_contiguous and b._vals._data.flags.c_contiguous):
        # torch's kernel cannot walk strided values: it concatenates, and coalesces only when
        # nnz outgrows the dense size (setting the result's parts flags it coalesced iff nnz < 2)
        idx = np.concatenate([a._idx, b._idx], axis=1)
        out = SparseTensor._make(idx, API["cat"]([a._vals, bv.to(a.dtype)]), a._sshape, False)
        if idx.shape[1] > out.numel():
            c = out.coalesce()
            out = SparseTensor._make(c._idx, c._vals, a._sshape, False)
        out._is_coalesced = out._idx.shape[1] < 2
        return out
    rk, pa, pb = _merge_positions(a, b)
    sd = a._idx.shape[0]
    if sd == 1:
        idx = rk[None].astype(np.int64)
    else:
        idx = np.stack(np.unravel_index(rk, a._sshape[:sd])).astype(np.int64)
    vals = a._vals.new_zeros((rk.size,) + tuple(a._vals.shape[1:]))
    vals = vals.index_add(0, _wrap(pa), a._vals).index_add(0, _wrap(pb), bv.to(a.dtype))
    return SparseTensor._make(idx, vals, a._sshape, a._is_coalesced and b._is_coalesced)


# ------------------------------------------------------------------------------ dense += sparse


def dense_add_(self: Tensor, other: SparseTensor, alpha=1) -> Tensor:
    """``self += alpha * other`` for a dense ``self`` and a sparse ``other`` (in place)."""
    if tuple(self.shape) != other._sshape:
        raise RuntimeError(
            f"add: expected 'self' and 'other' to have same size, but self has size "
            f"{list(self.shape)} while other has size {list(other._sshape)} (FYI: dense-sparse "
            "addition does not currently support broadcasting)"
        )
    if other._idx.shape[1] == 0:
        return self
    vals = other._vals if alpha == 1 else other._vals * alpha
    where = tuple(_wrap(r) for r in other._idx)
    return self.index_put_(where, vals.to(self.dtype), accumulate=True)


def install_dense_methods() -> None:
    """Let ``Tensor.add_``/``sub_`` (and ``+=``/``-=``) and ``add``/``sub`` take a sparse
    operand (the out-of-place ones return dense tensors, as torch's)."""
    if getattr(Tensor.add_, "_sparse_aware", False):
        return
    plain_add, plain_sub = Tensor.add_, Tensor.sub_

    def add_(self, other, *args, alpha=1):
        if type(other) is SparseTensor and not args:
            return dense_add_(self, other, alpha)
        return plain_add(self, other, *args, alpha=alpha)

    def sub_(self, other, *args, alpha=1):
        if type(other) is SparseTensor and not args:
            return dense_add_(self, other, -alpha)
        return plain_sub(self, other, *args, alpha=alpha)

    plain_add_out, plain_sub_out = Tensor.add, Tensor.sub

    def add(self, other, *args, alpha=1):
        if type(other) is SparseTensor and type(self) is not SparseTensor and not args:
            return plain_add_out(self, other.to_dense(), alpha=alpha)
        return plain_add_out(self, other, *args, alpha=alpha)

    def sub(self, other, *args, alpha=1):
        if type(other) is SparseTensor and type(self) is not SparseTensor and not args:
            return plain_sub_out(self, other.to_dense(), alpha=alpha)
        return plain_sub_out(self, other, *args, alpha=alpha)

    add_.__doc__, sub_.__doc__ = plain_add.__doc__, plain_sub.__doc__
    add.__doc__, sub.__doc__ = plain_add_out.__doc__, plain_sub_out.__doc__
    add_._sparse_aware = sub_._sparse_aware = True
    Tensor.add_ = add_
    Tensor.sub_ = sub_
    Tensor.add = add
    Tensor.sub = sub
    if Tensor.__iadd__ is plain_add:
        Tensor.__iadd__ = add_
    if Tensor.__isub__ is plain_sub:
        Tensor.__isub__ = sub_


# ------------------------------------------------------------------------------ AccumulateGrad


def accumulate(var: Tensor, g: Tensor) -> bool:
    """Add ``g`` into ``var.grad`` as torch's AccumulateGrad when either is sparse; return
    False (nothing done) when both are dense."""
    old = var._grad
    if type(g) is not SparseTensor and type(old) is not SparseTensor:
        return False
    if old is None:
        if STATE.grad_enabled:  # create_graph: a differentiable copy
            var._grad = SparseTensor._make(g._idx, g._vals.clone(), g._sshape, g._is_coalesced)
        else:
            # torch: a shallow copy (indices and values shared; ember never writes them in
            # place) when the values are contiguous, else a clone (contiguous values)
            vals = g._vals.detach()
            if not vals._data.flags.c_contiguous:
                vals = _wrap(np.ascontiguousarray(vals._data))
            var._grad = SparseTensor._make(g._idx, vals, g._sshape, g._is_coalesced)
    elif type(old) is SparseTensor and type(g) is not SparseTensor:
        var._grad = g + old  # dense result: .grad becomes a new (dense) tensor
    elif STATE.grad_enabled:
        var._grad = old + g
    elif type(old) is SparseTensor:
        old._assign(merge_add(old, g))  # in place: .grad stays the same object
    else:
        dense_add_(old, g)
    return True

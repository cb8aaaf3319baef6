"""The sparse x dense matrix products, as entries of the op table.

A COO matrix ``S`` enters an op through its values (a dense ``(nnz,)`` Tensor) with its
sparsity ``Pattern`` (row and column indices) as a parameter, so autograd needs nothing
sparse-specific: the gradient of the values is ``grad @ dense.T`` sampled at ``(row, col)``, the
gradient of the dense operand the transposed pattern's product with ``grad``.

``S @ D``: ``out[r_k] += v_k * D[c_k]``. The entries are visited sorted by row (the order is
computed once per pattern; a coalesced matrix is sorted already) in chunks of about 256K
elements, so the gathered ``D`` rows stay in cache while ``np.add.reduceat`` sums each row's run.
"""

from __future__ import annotations

import numpy as np

from ember._core.tensor import _wrap
from ember._ops.registry import op

_CHUNK = 1 << 18  # elements of the gathered rows summed at a time


class Pattern:
    """The (row, col) indices of a 2-D COO matrix, with the row-sorted order and the
    transposed pattern computed once and kept."""

    __slots__ = ("rows", "cols", "_sorted", "_t")

    def __init__(self, rows: np.ndarray, cols: np.ndarray):
        self.rows, self.cols = rows, cols
        self._sorted = self._t = None

    @property
    def t(self) -> Pattern:
        if self._t is None:
            self._t = Pattern(self.cols, self.rows)
            self._t._t = self
        return self._t

    def sorted(self):
        """Return (rows, cols, order): the entries sorted by row and the permutation (None
        when already sorted)."""
        if self._sorted is None:
            r = self.rows
            if r.shape[0] < 2 or bool((r[1:] >= r[:-1]).all()):
                self._sorted = (r, self.cols, None)
            else:
                order = np.argsort(r, kind="stable")
                self._sorted = (r[order], self.cols[order], order)
        return self._sorted


def _spmm(vals: np.ndarray, d: np.ndarray, pat: Pattern, n: int) -> np.ndarray:
    """``S @ d`` for a 2-D ``d`` (``(k, f)``): an ``(n, f)`` array."""
    rows, cols, order = pat.sorted()
    if order is not None:
        vals = vals[order]
    f = d.shape[1]
    out = np.zeros((n, f), dtype=np.result_type(vals, d))
    step = max(1024, _CHUNK // max(f, 1))
    for s in range(0, rows.shape[0], step):
        r = rows[s : s + step]
        contrib = np.take(d, cols[s : s + step], axis=0).astype(out.dtype, copy=False)
        contrib *= vals[s : s + step, None]
        starts = np.flatnonzero(np.concatenate(([True], r[1:] != r[:-1])))
        out[r[starts]] += np.add.reduceat(contrib, starts, axis=0)
    return out


def _sd_forward(vals, dense, *, pat, n):
    # (n, k) sparse @ (k, f) dense; a 1-D dense operand is a column
    if dense.ndim == 1:
        return _spmm(vals, dense[:, None], pat, n)[:, 0]
    return _spmm(vals, dense, pat, n)


def _values_grad(grad, dense, pat: Pattern, transposed: bool):
    """``(grad @ dense.T)[r_k, c_k]`` (or ``(dense.T @ grad)`` for dense @ sparse)."""
    r, c = _wrap(pat.rows), _wrap(pat.cols)
    if transposed:
        return (dense.index_select(1, r) * grad.index_select(1, c)).sum(0)
    if dense.ndim == 1:
        return grad.index_select(0, r) * dense.index_select(0, c)
    return (grad.index_select(0, r) * dense.index_select(0, c)).sum(1)


def _sd_backward(ctx, grad, *, pat, n):
    vals, dense = ctx.saved_tensors
    need_v, need_d = ctx.needs_input_grad
    gd = _SPARSE_DENSE(vals, grad, pat=pat.t, n=dense.shape[0]) if need_d else None
    gv = _values_grad(grad, dense, pat, False) if need_v else None
    return gv, gd


def _sd_op(name: str, grad_fn: str):
    o = op(name, grad_fn=grad_fn, save=("self", "other"))(_sd_forward)
    o.backward(_sd_backward)
    return o


_SPARSE_DENSE = _sd_op("sparse_mm", "MmBackward0")
_SPARSE_VEC = _sd_op("sparse_mv", "MvBackward0")
_SPARSE_MM = _sd_op("sparse_sparse_mm", "SparseAddmmBackward0")  # torch.sparse.mm's node


def _sd_addmm_forward(inp, vals, dense, *, pat, n, beta, alpha):
    prod = _sd_forward(vals, dense, pat=pat, n=n)
    if alpha != 1:
        prod *= alpha
    if beta == 0:
        return np.broadcast_to(prod, np.broadcast_shapes(inp.shape, prod.shape)).copy()
    return prod + (inp if beta == 1 else beta * inp)


def _sd_addmm_backward(ctx, grad, *, pat, n, beta, alpha):
    vals, dense = ctx.saved_tensors
    need_i, need_v, need_d = ctx.needs_input_grad
    gi = (grad if beta == 1 else grad * beta) if need_i else None
    g = grad if alpha == 1 else grad * alpha
    gd = _SPARSE_DENSE(vals, g, pat=pat.t, n=dense.shape[0]) if need_d else None
    gv = _values_grad(g, dense, pat, False) if need_v else None
    return gi, gv, gd


def _sd_addmm_op(name: str, grad_fn: str):
    o = op(name, grad_fn=grad_fn, args=("self", "mat1", "mat2"), save=("mat1", "mat2"))(
        _sd_addmm_forward
    )
    o.backward(_sd_addmm_backward)
    return o


_SPARSE_ADDMM = _sd_addmm_op("sparse_addmm", "SparseAddmmBackward0")  # torch.sparse.addmm
_ADDMM = _sd_addmm_op("addmm_sparse", "AddmmBackward0")  # torch.addmm with a sparse mat1


def _ds_forward(vals, dense, *, pat, n):
    # (m, k) dense @ (k, n) sparse == (S.T @ dense.T).T
    out_t = _spmm(vals, np.ascontiguousarray(dense.T), pat.t, n)
    return np.ascontiguousarray(out_t.T)


def _ds_backward(ctx, grad, *, pat, n):
    vals, dense = ctx.saved_tensors
    need_v, need_d = ctx.needs_input_grad
    gd = _DENSE_SPARSE(vals, grad, pat=pat.t, n=dense.shape[1]) if need_d else None
    gv = _values_grad(grad, dense, pat, True) if need_v else None
    return gv, gd


_DENSE_SPARSE = op("dense_sparse_mm", grad_fn="MmBackward0", save=("self", "other"))(_ds_forward)
_DENSE_SPARSE.backward(_ds_backward)


# ---------------------------------------------------------------------------------------------
# values <-> dense


@op("sparse_to_dense", grad_fn="ToDenseBackward0")
def _to_dense(vals, *, idx, shape):
    out = np.zeros(shape, vals.dtype)
    if idx.shape[1]:
        np.add.at(out, tuple(idx), vals)
    return out


@_to_dense.backward
def _(ctx, grad, *, idx, shape):
    return (grad[tuple(_wrap(r) for r in idx)],)


@op("sparse_coalesce", grad_fn="CoalesceBackward0")
def _coalesce(vals, *, inverse, nnz):
    out = np.zeros((nnz,) + vals.shape[1:], vals.dtype)
    np.add.at(out, inverse, vals)
    return out


@_coalesce.backward
def _(ctx, grad, *, inverse, nnz):
    return (grad.index_select(0, _wrap(inverse)),)

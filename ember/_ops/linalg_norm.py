"""Norms: matrix_norm and norm (built from vector_norm, svdvals, amax/amin as torch builds
them), cond. ``vector_norm`` (one op with torch's norm_backward) is shared with ``ember.norm``
and lives with the reductions in ``reduce.py``."""

from __future__ import annotations

import math

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, wrap_dim
from ember._ops import linalg_util as U
from ember._ops.linalg_util import check_float, check_matrix, check_tensor
from ember._ops.linalg_util import out_ as _out
from ember._ops.pointwise import where
from ember._ops.reduce import vector_norm


def _matrix_dims(dim, ndim, fn="linalg.matrix_norm"):
    if len(dim) != 2:
        raise RuntimeError(f"{fn}: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    d0, d1 = wrap_dim(dim[0], ndim), wrap_dim(dim[1], ndim)
    if d0 == d1:
        raise RuntimeError(f"{fn}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def _keep(r: Tensor, dims, keepdim):
    if keepdim:
        for d in sorted(dims):
            r = r.unsqueeze(d)
    return r


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None, out=None):
    """Return the matrix norm of ``A`` over ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2."""
    check_tensor("linalg_matrix_norm", A, "input")
    check_matrix("linalg.matrix_norm", A)
    if dtype is not None:
        A = A.to(dtype)
    check_float("linalg.matrix_norm", A)
    d0, d1 = _matrix_dims(tuple(dim), A.ndim)
    if isinstance(ord, str):
        if ord == "fro":
            return _out(vector_norm(A, 2, (d0, d1), keepdim), out)
        if ord != "nuc":
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
        from ember._ops.linalg_decomp import svdvals

        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        return _out(_keep(s.sum(-1), (d0, d1), keepdim), out)
    if ord not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if abs(ord) == 2:
        from ember._ops.linalg_decomp import svdvals

        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        r = U.amax(s, -1) if ord > 0 else U.amin(s, -1)
        return _out(_keep(r, (d0, d1), keepdim), out)
    # 1: max column sum; inf: max row sum
    sum_dim, max_dim = (d0, d1) if abs(ord) == 1 else (d1, d0)
    s = A.abs().sum(sum_dim, keepdim=keepdim)
    if not keepdim and sum_dim < max_dim:
        max_dim -= 1
    r = U.amax(s, max_dim, keepdim) if ord > 0 else U.amin(s, max_dim, keepdim)
    return _out(r, out)


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None, out=None):
    """Return a vector or matrix norm of ``A`` (torch.linalg.norm's rules for ``ord``/``dim``)."""
    check_tensor("linalg_norm", A, "input")
    if dim is not None and isinstance(dim, (int, np.integer)):
        dim = (int(dim),)
    if dim is not None:
        dim = tuple(dim)
        if len(dim) not in (1, 2):
            raise RuntimeError(
                f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}"
            )
    if ord is None:
        if dim is not None and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype=dtype, out=out)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype, out=out)
    if dim is None:
        if isinstance(ord, str) or A.ndim == 2:
            if A.ndim != 2:
                raise RuntimeError(
                    "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."
                )
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
        if A.ndim != 1:
            raise RuntimeError(
                "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                f"Got {A.ndim}D."
            )
        return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
    if len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype, out=out)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: Order {ord} not supported.")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype, out=out)


def cond(A: Tensor, p=None, *, out=None) -> Tensor:
    """Return the condition number of ``A`` in the ``p``-norm (2-norm by default)."""
    from ember._ops.linalg_decomp import svdvals

    check_tensor("linalg_cond", A, "A")
    check_matrix("linalg.cond", A)
    check_float("linalg.svd", A)
    if p is None or p in (2, -2):
        s = svdvals(A)
        big, small = s.narrow(-1, 0, 1), s.narrow(-1, s.shape[-1] - 1, 1)
        r = big / small if p in (None, 2) else small / big
        return _out(r.squeeze(-1), out)
    from ember._ops.linalg_solve import inv_ex

    U.check_square("linalg.cond", A)
    inverse, info = inv_ex(A)
    r = matrix_norm(A, p) * matrix_norm(inverse, p)
    bad = info._data != 0
    if bad.any():
        r = where(U.const(bad), math.inf, r)
    if A.dtype.is_complex:
        r = r.to(D.float32 if A.dtype is D.complex64 else D.float64)
    return _out(r, out)

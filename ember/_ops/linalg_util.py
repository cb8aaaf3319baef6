"""Shared pieces of the linear algebra and FFT families.

Input checks with torch's messages, ``LinAlgError``, LAPACK's column-major result layout, the
named result tuples, the batched LU factorisation NumPy lacks, and the few small ops the
backward formulas of these families are written with (``tril``, ``triu``, ``diag_embed``,
``real``, ``amax``, ``roll``). Those small ops are private here; they carry torch's grad_fn
names so they can be swapped for the public ops of the shape and reduction families.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ember._core import dtype as D
from ember._core.node import SavedTensor
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import _type_name, dispatch, op


class LinAlgError(RuntimeError):
    """Raised when a linear algebra routine fails: singular or non-definite input, no
    convergence (torch.linalg.LinAlgError, a RuntimeError)."""


LinAlgError.__module__ = "ember.linalg"

# ------------------------------------------------------------------------------ result tuples

_RETURN_TYPES: dict = {}


def return_type(name: str, fields: tuple):
    """Return a constructor ``(*values) -> torch.return_types.<name>`` with ``fields``.

    The class comes from ``ember.return_types`` when it defines ``name`` (its struct sequences
    take one sequence); otherwise a local named tuple that prints as torch's.
    """
    make = _RETURN_TYPES.get(name)
    if make is None:
        from ember import return_types as rt

        cls = getattr(rt, name, None)
        if cls is not None and tuple(getattr(cls, "_fields", ())) == tuple(fields):
            make = _from_sequence(cls)
        else:
            base = namedtuple(name, fields)

            def __repr__(self):
                body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
                return f"torch.return_types.{name}(\n{body})"

            make = type(name, (base,), {"__slots__": (), "__repr__": __repr__})
            make.__module__ = "ember.return_types"
        _RETURN_TYPES[name] = make
    return make


def _from_sequence(cls):
    def make(*values):
        return cls(values)

    make.__name__ = cls.__name__
    return make


# ------------------------------------------------------------------------------ checks


def type_name(dt) -> str:
    """Return torch's scalar type name of an ember dtype (``Float``, ``Long``...)."""
    return _type_name(dt)


def check_tensor(fn: str, x, arg: str = "input", pos: int = 1) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}"
        )


def check_float(fn: str, x: Tensor, what: str = "input") -> None:
    """Raise torch's error unless ``x`` is float32/64 or complex."""
    dt = x.dtype
    if dt.is_floating_point or dt.is_complex:
        if dt is D.float16 or dt is D.bfloat16:
            raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got {type_name(dt)}")
        return
    raise RuntimeError(
        f"{fn}: Expected a floating point or complex tensor as {what}. Got {type_name(dt)}"
    )


def check_kernel(kernel: str, x: Tensor) -> None:
    """Raise torch's NotImplementedError for dtypes its LAPACK kernel lacks (ints, half)."""
    dt = x.dtype
    if not (dt.is_floating_point or dt.is_complex) or dt is D.float16 or dt is D.bfloat16:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{type_name(dt)}'")


def check_matrix(fn: str, x: Tensor, name: str = "A") -> None:
    if x._data.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")


def check_square(fn: str, x: Tensor, name: str = "A") -> None:
    check_matrix(fn, x, name)
    m, n = x._data.shape[-2:]
    if m != n:
        raise RuntimeError(
            f"{fn}: {name} must be batches of square matrices, but they are {m} by {n} matrices"
        )


def check_same_dtype(fn: str, a: Tensor, b: Tensor, na: str = "A", nb: str = "B") -> None:
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"{fn}: Expected {na} and {nb} to have the same dtype, but found {na} of type "
            f"{type_name(a.dtype)} and {nb} of type {type_name(b.dtype)} instead"
        )


def batch_prefix(shape: tuple, flat_index: int) -> str:
    """Return torch's ``(Batch element i): `` prefix for batched errors ('' if unbatched)."""
    return f"(Batch element {flat_index}): " if len(shape) > 2 else ""


# ------------------------------------------------------------------------------ layout


def fortran(a: np.ndarray) -> np.ndarray:
    """Return ``a`` as a batch of column-major matrices: the layout of torch's LAPACK results."""
    if a.ndim < 2:
        return a
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)


def save_outputs(results: tuple, which: tuple) -> None:
    """Save outputs ``which`` of a multi-output op on its grad_fn (torch's ``result`` save).

    ``dispatch`` saves outputs of single-output ops only; the decompositions' backwards need
    theirs, saved as outputs (re-linked to the node on unpack, version-checked).
    """
    node = None
    for r in results:
        if r.grad_fn is not None:
            node = r.grad_fn
            break
    if node is None:
        return
    saved = tuple(SavedTensor(results[i], is_output=True, output_nr=i) for i in which)
    node._saved = saved if node._saved is None else node._saved + saved


# ------------------------------------------------------------------------------ LU (getrf)


def lu_factor_array(a: np.ndarray):
    """Return (LU, pivots, info) of LAPACK's ``getrf`` (partial pivoting) for a batch.

    ``pivots`` are 1-based int32 row interchanges, ``info`` the 1-based index of the first
    zero pivot (0 if none). NumPy exposes no LU; this is a recursive blocked factorisation:
    the trailing updates are matrix products, the Python loop runs over columns of narrow
    panels only.
    """
    shape = a.shape
    m, n = shape[-2:]
    k = min(m, n)
    A = np.array(a.reshape((-1, m, n)), dtype=a.dtype, copy=True)
    nb = A.shape[0]
    piv = np.zeros((nb, k), dtype=np.int64)
    info = np.zeros(nb, dtype=np.int32)
    if k and nb:
        _getrf(A, 0, 0, n, piv, info, np.arange(nb))
    lu = A.reshape(shape)
    return (
        lu,
        (piv + 1).astype(np.int32).reshape(shape[:-2] + (k,)),
        info.reshape(shape[:-2]),
    )


def _getrf(A, r0, c0, c1, piv, info, ar):
    # factor the panel A[:, r0:, c0:c1] in place; row swaps act on whole rows of A
    m = A.shape[1]
    w = min(c1 - c0, m - r0)
    if w <= 0:
        return
    if w <= 16:
        for t in range(w):
            r, j = r0 + t, c0 + t
            col = A[:, r:, j]
            # LAPACK's pivot: the largest |re| + |im| (icamax), not the modulus
            size = np.abs(col.real) + np.abs(col.imag) if col.dtype.kind == "c" else np.abs(col)
            p = r + np.argmax(size, axis=1)
            piv[:, r] = p
            swap = p != r
            if swap.any():
                rows = A[ar, r].copy()
                A[ar, r] = A[ar, p]
                A[ar, p] = rows
            d = A[:, r, j]
            zero = d == 0
            if zero.any():
                info[(info == 0) & zero] = r + 1
                d = np.where(zero, 1, d)
            A[:, r + 1 :, j] /= d[:, None]
            if j + 1 < c1:
                A[:, r + 1 :, j + 1 : c1] -= A[:, r + 1 :, j, None] * A[:, r, None, j + 1 : c1]
        return
    h = w // 2
    _getrf(A, r0, c0, c0 + h, piv, info, ar)
    if c0 + h < c1:
        L11 = np.tril(A[:, r0 : r0 + h, c0 : c0 + h], -1) + np.eye(h, dtype=A.dtype)
        A12 = A[:, r0 : r0 + h, c0 + h : c1]
        A12[...] = np.linalg.solve(L11, A12)
        A[:, r0 + h :, c0 + h : c1] -= A[:, r0 + h :, c0 : c0 + h] @ A12
        _getrf(A, r0 + h, c0 + h, c1, piv, info, ar)


def lu_info(a: np.ndarray) -> np.ndarray:
    """Return ``getrf``'s info (1-based first zero pivot, 0 if none) for a batch."""
    return lu_factor_array(a)[2]


def permutation_from_pivots(piv: np.ndarray, m: int) -> np.ndarray:
    """Return, per batch element, the row order ``perm`` with ``P.T @ A == A[perm]``."""
    batch = piv.shape[:-1]
    pv = piv.reshape((-1, piv.shape[-1])).astype(np.int64) - 1
    nb, k = pv.shape
    perm = np.broadcast_to(np.arange(m), (nb, m)).copy()
    ar = np.arange(nb)
    for i in range(k):
        p = pv[:, i]
        a, b = perm[ar, i].copy(), perm[ar, p].copy()
        perm[ar, i], perm[ar, p] = b, a
    return perm.reshape(batch + (m,))


def cholesky_info(a: np.ndarray, upper: bool = False) -> np.ndarray:
    """Return ``potrf``'s info (order of the first non positive-definite leading minor)."""
    flat = a.reshape((-1,) + a.shape[-2:])
    n = a.shape[-1]
    out = np.zeros(flat.shape[0], dtype=np.int32)
    for b, m in enumerate(flat):
        try:
            np.linalg.cholesky(m, upper=upper)
            continue
        except np.linalg.LinAlgError:
            pass
        lo, hi = 1, n  # the smallest failing order lies in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            try:
                np.linalg.cholesky(m[:mid, :mid], upper=upper)
                lo = mid + 1
            except np.linalg.LinAlgError:
                hi = mid
        out[b] = lo
    return out.reshape(a.shape[:-2])


# ------------------------------------------------------------------------------ small ops


def tril(x: Tensor, k: int = 0) -> Tensor:
    """``ember.tril`` (imported late: movement.py sits beside this file in the op table)."""
    from ember._ops.movement import tril as _tril

    return _tril(x, k)


def triu(x: Tensor, k: int = 0) -> Tensor:
    """``ember.triu``."""
    from ember._ops.movement import triu as _triu

    return _triu(x, k)


def diag_embed(x: Tensor) -> Tensor:
    """Return the batch of diagonal matrices with the last dimension of ``x`` as diagonal."""
    from ember._ops.movement import diag_embed as _diag_embed

    return _diag_embed(x)


@op("real", grad_fn="RealBackward0")
def _real(x):
    return np.real(x).copy()


_real.backward(lambda ctx, g: to_complex(g))


@op("_to_copy", grad_fn="ToCopyBackward0")
def _to_complex(x):
    return x.astype(np.complex128 if x.dtype == np.float64 else np.complex64)


_to_complex.backward(lambda ctx, g: real(g))


def real(x: Tensor) -> Tensor:
    """Return the real part of ``x`` (``x`` itself when real)."""
    return dispatch(_real, (x,)) if x.dtype.is_complex else x


def to_complex(x: Tensor) -> Tensor:
    """Return ``x`` cast to the complex dtype of its precision; the gradient is the real part."""
    return x if x.dtype.is_complex else dispatch(_to_complex, (x,))


def amax(x: Tensor, dims, keepdim: bool = False) -> Tensor:
    """``ember.amax`` (the gradient is shared evenly between equal extremes)."""
    from ember._ops.extrema import amax as _amax

    return _amax(x, dims, keepdim)


def amin(x: Tensor, dims, keepdim: bool = False) -> Tensor:
    """``ember.amin``."""
    from ember._ops.extrema import amin as _amin

    return _amin(x, dims, keepdim)


def roll(x: Tensor, shifts: tuple, dims: tuple) -> Tensor:
    """``ember.roll``."""
    from ember._ops.movement import roll as _roll

    return _roll(x, shifts, dims)


def const(a: np.ndarray) -> Tensor:
    """Return a constant tensor (no history) around the array ``a``."""
    return _wrap(np.asarray(a))


def out_(res: Tensor, out):
    """Write ``res`` into ``out`` (resized if its shape differs) and return ``out``."""
    if out is None:
        return res
    if tuple(out.shape) != tuple(res.shape):
        out._data = np.empty(res._data.shape, dtype=out._data.dtype)
    out.copy_(res.detach())
    return out


def outs_(res: tuple, out):
    """Write each result of a named tuple into the tensors of ``out``; return them as torch's
    ``<name>_out`` tuple."""
    if out is None:
        return res
    if len(out) != len(res):
        raise TypeError(f"out must be a tuple of {len(res)} tensors, got {len(out)}")
    for r, o in zip(res, out):
        out_(r, o)
    return return_type(type(res).__name__ + "_out", res._fields)(*out)


def eye_like(x: Tensor, n: int) -> Tensor:
    """Return the n x n identity in ``x``'s dtype (a constant)."""
    return _wrap(np.eye(n, dtype=x._data.dtype))

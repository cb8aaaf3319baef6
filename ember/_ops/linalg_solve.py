"""Inverses, determinants and solvers: inv, det, slogdet, logdet, solve, solve_triangular,
lu_factor, lu_solve, lstsq, matrix_exp.

Forward is one LAPACK call through NumPy; results keep torch's layout (batches of column-major
matrices). Backward follows torch's formulas (FunctionsManual.cpp) written with ember ops, so
the gradients are differentiable again; where torch takes a cheaper path when no graph is being
built (det, slogdet), so does ember.
"""

from __future__ import annotations

import numpy as np

from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap
from ember._ops import linalg_util as U
from ember._ops.linalg_util import (
    LinAlgError,
    check_float,
    check_matrix,
    check_same_dtype,
    check_square,
    check_tensor,
    fortran,
    return_type,
    save_outputs,
)
from ember._ops.linalg_util import out_ as _out
from ember._ops.registry import dispatch, op, publish


def _first_bad(info: np.ndarray) -> tuple:
    """Return (flat batch index, info value) of the first nonzero ``info``."""
    flat = info.reshape(-1)
    idx = int(np.flatnonzero(flat)[0]) if flat.size and flat.any() else 0
    return idx, int(flat[idx]) if flat.size else 0


def _eye(n: int, dtype) -> np.ndarray:
    return np.eye(n, dtype=dtype)


# ------------------------------------------------------------------------------ inv


@op("linalg_inv_ex", grad_fn="LinalgInvExBackward0", outputs=("inverse",), save=("inverse",))
def _inv(a, check_errors=True):
    try:
        return fortran(np.linalg.inv(a))
    except np.linalg.LinAlgError:
        pass
    info = U.lu_info(a)
    if check_errors:
        b, i = _first_bad(info)
        raise LinAlgError(
            f"linalg.inv: {U.batch_prefix(a.shape, b)}The diagonal element {i} is zero, the "
            "inversion could not be completed because the input matrix is singular."
        )
    out = np.full(a.shape, np.nan, dtype=a.dtype)
    ok = info == 0
    if ok.any():
        out[ok] = np.linalg.inv(a[ok])
    return fortran(out)


@_inv.backward
def _(ctx, g, check_errors=True):
    (r,) = ctx.saved_tensors
    rh = r.mH
    return -(rh @ (g @ rh))


def _check_inv(fn: str, A) -> None:
    check_tensor(fn.replace("linalg.", "linalg_"), A, "A")
    check_square(fn, A)
    check_float(fn, A)


def inv(A: Tensor, *, out=None) -> Tensor:
    """Return the inverse of a square matrix (or batch); raise LinAlgError if singular."""
    _check_inv("linalg.inv", A)
    return _out(dispatch(_inv, (A,)), out)


def inv_ex(A: Tensor, *, check_errors: bool = False, out=None):
    """Return (inverse, info): ``info`` > 0 marks singular matrices instead of raising."""
    _check_inv("linalg.inv_ex", A)
    res = dispatch(_inv, (A,), {"check_errors": check_errors})
    info = _wrap(np.zeros(A.shape[:-2], dtype=np.int32))
    if np.isnan(res._data).any():
        info = _wrap(U.lu_info(A._data).astype(np.int32))
    return U.outs_(return_type("linalg_inv_ex", ("inverse", "info"))(res, info), out)


def inverse(input: Tensor, *, out=None) -> Tensor:
    """Alias of :func:`ember.linalg.inv`."""
    return inv(input, out=out)


# ------------------------------------------------------------------------------ det, slogdet


@op("linalg_det", grad_fn="LinalgDetBackward0", args=("A",), save=("A", "result"))
def _det(a):
    return np.asarray(np.linalg.det(a)) if a.shape[-1] else np.ones(a.shape[:-2], a.dtype)


def _solve_adjoint_np(A: Tensor, rhs: np.ndarray, singular_fill) -> Tensor:
    """Return A^{-H} rhs computed in NumPy (no graph); singular matrices get ``singular_fill``
    (None: raise)."""
    a = A._data
    ah = np.conj(np.swapaxes(a, -1, -2))
    try:
        return _wrap(np.linalg.solve(ah, rhs))
    except np.linalg.LinAlgError:
        if singular_fill is None:
            raise
    ok = U.lu_info(a) == 0
    out = np.full(np.broadcast_shapes(a.shape, rhs.shape), singular_fill, dtype=rhs.dtype)
    if ok.any():
        out[ok] = np.linalg.solve(ah[ok], rhs[ok])
    return _wrap(out)


class STATE_off:  # noqa: N801 - a small context manager
    """Run with grad mode off (the no-graph backward path)."""

    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev


def _diag_rhs(d: Tensor, n: int) -> Tensor:
    return U.diag_embed(d.unsqueeze(-1).expand(*d.shape, n))


@_det.backward
def _(ctx, g):
    A, det = ctx.saved_tensors
    n = A.shape[-1]
    if A.numel() == 0:
        return A * 0
    d = g * det.conj()
    if not STATE.grad_enabled:
        rhs = d._data[..., None, None] * _eye(n, A._data.dtype)
        try:
            return _solve_adjoint_np(A, rhs, None)
        except np.linalg.LinAlgError:
            # exactly singular in LAPACK: the adjugate, which torch's perturbed LU approximates
            with STATE_off():
                return _det_singular_backward(A, g)
    eps = np.finfo(A._data.dtype).eps
    if (np.abs(det._data) < 100 * eps).any():
        return _det_singular_backward(A, g)
    return solve(A.mH, _diag_rhs(d, n))


def _det_singular_backward(A, g):
    # the adjugate through the SVD (Higham): valid for singular matrices too
    from ember._ops.linalg_decomp import svd

    Uu, S, Vh = svd(A)
    alpha = (det(Uu) * det(Vh)).conj() * g
    D = alpha.unsqueeze(-1) * dispatch(_prod_others, (S,)).conj()
    return (Uu * D.unsqueeze(-2)) @ Vh


@op("prod_others", grad_fn="ProdBackward1", save=("self",))
def _prod_others(s):
    # out[..., i] = prod_{j != i} s[..., j], without dividing (safe for zeros)
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    left = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    right = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]
    return left * right


@_prod_others.backward
def _(ctx, g):
    # d out_i / d s_k = prod_{j not in (i, k)} s_j for k != i; computed in NumPy: this is
    # reached at second order only (det's double backward at a singular matrix)
    (s,) = ctx.saved_tensors
    a = s._data
    n = a.shape[-1]
    eye = np.eye(n, dtype=bool)
    drop = eye[:, None, :] | eye[None, :, :]  # [i, k, j]: j is i or k
    m = np.where(drop, 1, a[..., None, None, :]).prod(-1)
    m = np.where(eye, 0, m)
    return _wrap(np.einsum("...i,...ik->...k", g._data, np.conj(m)))


def det(A: Tensor, *, out=None) -> Tensor:
    """Return the determinant of a square matrix (or batch)."""
    check_tensor("linalg_det", A, "A")
    check_square("linalg.det", A)
    if A.dtype.is_floating_point and A.dtype.itemsize == 2:
        U.check_kernel("lu_cpu", A)
    check_float("linalg.det", A)
    return _out(dispatch(_det, (A,)), out)


@op(
    "linalg_slogdet",
    grad_fn="LinalgSlogdetBackward0",
    args=("A",),
    save=("A",),
    post_save=("sign",),
)
def _slogdet(a):
    if not a.shape[-1]:
        return np.ones(a.shape[:-2], a.dtype), np.zeros(a.shape[:-2], a.real.dtype)
    s, logabs = np.linalg.slogdet(a)
    return np.asarray(s), np.asarray(logabs)


@_slogdet.backward
def _(ctx, g_sign, g_abs):
    A, sign = ctx.saved_tensors
    n = A.shape[-1]
    if A.numel() == 0:
        return A * 0
    if A.dtype.is_complex:
        g = U.to_complex(g_abs) if g_abs is not None else None
        if g_sign is not None:
            w = g_sign.conj() * sign
            term = -(w - w.conj()) * 0.5  # -i Im(w)
            g = term if g is None else g + term
        if g is None:
            return None
    else:
        if g_abs is None:
            return None
        g = g_abs
    if not STATE.grad_enabled:
        rhs = g._data[..., None, None] * _eye(n, A._data.dtype)
        return _solve_adjoint_np(A, rhs, np.nan)
    return solve(A.mH, _diag_rhs(g, n))


def _slogdet_call(A: Tensor, name: str, fn: str):
    check_tensor(fn, A, "A")
    check_square("linalg.slogdet", A)
    check_float("linalg.slogdet", A)
    res = dispatch(_slogdet, (A,))
    save_outputs(res, (0,))
    return return_type(name, ("sign", "logabsdet"))(*res)


def slogdet(A: Tensor, *, out=None):
    """Return (sign, logabsdet): the sign (phase) and the log of the absolute determinant."""
    return U.outs_(_slogdet_call(A, "linalg_slogdet", "linalg_slogdet"), out)


def torch_slogdet(input: Tensor):
    """Return (sign, logabsdet) of a square matrix (or batch), as ``torch.slogdet``."""
    return _slogdet_call(input, "slogdet", "slogdet")


def logdet(input: Tensor) -> Tensor:
    """Return the log determinant (nan for a negative determinant, -inf for 0)."""
    from ember._ops.pointwise import where

    sign, logabs = _slogdet_call(input, "slogdet", "logdet")
    if input.dtype.is_complex:
        return logabs + sign.log()
    return where(U.const(sign._data == -1), float("nan"), logabs)


# ------------------------------------------------------------------------------ solve


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    a, b = A._data.shape, B._data.shape
    return len(b) == 1 or (len(b) == len(a) - 1 and b == a[:-1])


def _broadcast_batch(a, b):
    if a.shape[:-2] == b.shape[:-2]:
        return a, b
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])


@op("linalg_solve_ex", grad_fn="LinalgSolveExBackward0", args=("A", "B"), save=("A", "result"))
def _solve(a, b, left=True, vector=False, check_errors=True):
    if vector:
        b = b[..., None]
    if not left:
        a, b = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)
    a, b = _broadcast_batch(a, b)
    try:
        x = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        info = U.lu_info(a)
        if check_errors:
            i, _ = _first_bad(info)
            raise LinAlgError(
                f"torch.linalg.solve: {U.batch_prefix(a.shape, i)}The solver failed because the "
                "input matrix is singular."
            ) from None
        x = np.full(b.shape, np.nan, dtype=b.dtype)
        ok = info == 0
        if ok.any():
            x[ok] = np.linalg.solve(a[ok], b[ok])
    if vector:
        return fortran(x[..., 0])
    if not left:
        return np.ascontiguousarray(np.swapaxes(x, -1, -2))
    return fortran(x)


@_solve.backward
def _(ctx, g, left=True, vector=False, check_errors=True):
    A, X = ctx.saved_tensors
    if vector:
        g, X = g.unsqueeze(-1), X.unsqueeze(-1)
    need = ctx.needs_input_grad
    gB = solve(A.mH, g, left=left)
    gA = None
    if need[0]:
        gA = -(gB @ X.mH) if left else -(X.mH @ gB)
    if vector:
        gB = gB.squeeze(-1)
    return gA, gB if need[1] else None


def _check_solve(A: Tensor, B: Tensor, left: bool, fn: str = "linalg.solve") -> bool:
    check_tensor("linalg_solve", A, "A")
    check_tensor("linalg_solve", B, "B", 2)
    check_square(fn, A)
    check_float(fn, A)
    check_same_dtype(fn, A, B)
    vector = left and _is_vector_rhs(A, B)
    bshape = B._data.shape + (1,) if vector else B._data.shape
    ashape = A._data.shape
    n = ashape[-1]
    if len(bshape) < 2 or (bshape[-2] if left else bshape[-1]) != n:
        bs = bshape[-2:] if len(bshape) >= 2 else (bshape[0], 1)
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"{fn}: Incompatible shapes of A and B for the equation {eq} "
            f"({ashape[-2]}x{n} and {bs[0]}x{bs[1]})"
        )
    if ashape[:-2] != bshape[:-2]:
        try:
            np.broadcast_shapes(ashape[:-2], bshape[:-2])
        except ValueError:
            raise RuntimeError(
                f"The size of tensor a must match the size of tensor b: batch shapes "
                f"{list(ashape[:-2])} and {list(bshape[:-2])} do not broadcast"
            ) from None
    return vector


def solve(A: Tensor, B: Tensor, *, left: bool = True, out=None) -> Tensor:
    """Return the solution X of ``A X = B`` (``X A = B`` if not ``left``); B may be a vector."""
    vector = _check_solve(A, B, left)
    params = {"left": left, "vector": vector} if (vector or not left) else {}
    return _out(dispatch(_solve, (A, B), params), out)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False, out=None):
    """Return (result, info) of :func:`solve`; ``info`` > 0 marks singular matrices."""
    vector = _check_solve(A, B, left)
    res = dispatch(_solve, (A, B), {"left": left, "vector": vector, "check_errors": check_errors})
    info = np.zeros(A.shape[:-2], dtype=np.int32)
    if np.isnan(res._data).any():
        info = U.lu_info(A._data).astype(np.int32)
    return U.outs_(return_type("linalg_solve_ex", ("result", "info"))(res, _wrap(info)), out)


# ------------------------------------------------------------------------------ solve_triangular


def _triangle(a, upper, unitriangular):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t.copy()
        np.einsum("...ii->...i", t)[...] = 1
    return t


def _substitute(t, b, upper):
    # back/forward substitution (what trsm does) for triangular t with zeros on the diagonal
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:], dtype=b.dtype)
    rows = range(n - 1, -1, -1) if upper else range(n)
    for i in rows:
        s = b[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, :], x)
        x[..., i, :] = s / t[..., i, i, None]
    return x


@op("linalg_solve_triangular", grad_fn="LinalgSolveTriangularBackward0", save=("self", "result"))
def _solve_triangular(a, b, upper, left=True, unitriangular=False):
    t = _triangle(a, upper, unitriangular)
    if not left:
        t, b, upper = np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not upper
    t, b = _broadcast_batch(t, b)
    try:
        x = np.linalg.solve(t, b)
    except np.linalg.LinAlgError:
        x = _substitute(t, b, upper)
    return fortran(np.swapaxes(x, -1, -2) if not left else x)


@_solve_triangular.backward
def _(ctx, g, upper, left=True, unitriangular=False):
    A, X = ctx.saved_tensors
    need = ctx.needs_input_grad
    gB = solve_triangular(A.mH, g, upper=not upper, left=left, unitriangular=unitriangular)
    gA = None
    if need[0]:
        gA = -(gB @ X.mH) if left else -(X.mH @ gB)
        gA = U.triu(gA, int(unitriangular)) if upper else U.tril(gA, -int(unitriangular))
    return gA, gB if need[1] else None


def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False, out=None
) -> Tensor:
    """Return the solution X of ``A X = B`` (``X A = B`` if not ``left``) for triangular A."""
    fn = "linalg.solve_triangular"
    check_tensor("linalg_solve_triangular", A, "A")
    check_tensor("linalg_solve_triangular", B, "B", 2)
    check_matrix(fn, A)
    check_matrix(fn, B, "B")
    check_square(fn, A)
    U.check_kernel("triangular_solve_cpu", A)
    check_same_dtype(fn, A, B)
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"{fn}: Incompatible shapes of A and B for the equation {eq} ({A.shape[-2]}x{n} and "
            f"{B.shape[-2]}x{B.shape[-1]})"
        )
    params = {"upper": bool(upper), "left": left, "unitriangular": unitriangular}
    return _out(dispatch(_solve_triangular, (A, B), params), out)


# ------------------------------------------------------------------------------ LU


@op(
    "linalg_lu_factor_ex",
    grad_fn="LinalgLuFactorExBackward0",
    nondiff_outputs=(1, 2),
    post_save=("LU", "pivots"),
)
def _lu_factor(a):
    lu, piv, info = U.lu_factor_array(a)
    return fortran(lu), piv, info


def _unpack(LU: Tensor, piv: np.ndarray):
    """Return (P as a constant, L, U) from packed factors; L and U are differentiable in LU."""
    m, n = LU.shape[-2:]
    k = min(m, n)
    L = U.tril(LU, -1).narrow(-1, 0, k) + _wrap(np.eye(m, k, dtype=LU._data.dtype))
    Um = U.triu(LU).narrow(-2, 0, k)
    perm = U.permutation_from_pivots(piv, m)
    P = np.swapaxes(np.eye(m, dtype=LU._data.dtype)[perm], -1, -2)
    return _wrap(np.ascontiguousarray(P)), L, Um


@_lu_factor.backward
def _(ctx, g, g_piv=None, g_info=None):
    LU, piv = ctx.saved_tensors
    m, n = LU.shape[-2:]
    if m != n:
        raise NotImplementedError(
            "ember: the derivative of linalg.lu_factor is implemented for square matrices only"
        )
    P, L, Um = _unpack(LU, piv._data)
    gA = U.tril(L.mH @ g, -1) + U.triu(g @ Um.mH)
    gA = solve_triangular(Um.mH, gA, upper=False, left=False)
    gA = solve_triangular(L.mH, gA, upper=True, left=True, unitriangular=True)
    return P @ gA


def _lu_factor_call(A, pivot, fn):
    check_tensor("linalg_lu_factor", A, "A")
    check_matrix(fn, A)
    U.check_kernel("lu_cpu", A)
    if not pivot:
        raise RuntimeError(f"{fn}: LU without pivoting is not implemented on the CPU")
    res = dispatch(_lu_factor, (A,))
    save_outputs(res, (0, 1))
    return res


def lu_factor(A: Tensor, *, pivot: bool = True, out=None):
    """Return (LU, pivots): the packed LU factorisation with partial pivoting (LAPACK getrf)."""
    LU, piv, info = _lu_factor_call(A, pivot, "linalg.lu_factor")
    if info._data.any():
        b, i = _first_bad(info._data)
        raise RuntimeError(
            f"torch.linalg.lu_factor: {U.batch_prefix(A.shape, b)}U[{i},{i}] is zero and using "
            "it on lu_solve would result in a division by zero. If you still want to perform the "
            "factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
        )
    return U.outs_(return_type("linalg_lu_factor", ("LU", "pivots"))(LU, piv), out)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False, out=None):
    """Return (LU, pivots, info) without raising on singular matrices (unless asked)."""
    LU, piv, info = _lu_factor_call(A, pivot, "linalg.lu_factor_ex")
    if check_errors and info._data.any():
        b, i = _first_bad(info._data)
        raise LinAlgError(
            f"linalg.lu_factor_ex: {U.batch_prefix(A.shape, b)}The factorization could not be "
            f"completed because the input is not invertible (U[{i},{i}] is zero)."
        )
    return U.outs_(return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))(LU, piv, info), out)


@op(
    "linalg_lu_solve",
    grad_fn="LinalgLuSolveBackward0",
    args=("LU", "pivots", "B"),
    save=("LU", "pivots", "result"),
)
def _lu_solve(lu, piv, b, left=True, adjoint=False):
    n = lu.shape[-1]
    perm = U.permutation_from_pivots(piv, n)
    L = np.tril(lu, -1) + np.eye(n, dtype=lu.dtype)
    A_perm = L @ np.triu(lu)  # = P^T A: rows of A in pivot order
    P = np.swapaxes(np.eye(n, dtype=lu.dtype)[perm], -1, -2)
    A = P @ A_perm
    if adjoint:
        A = np.conj(np.swapaxes(A, -1, -2))
    if left:
        a, bb = _broadcast_batch(A, b)
        return fortran(np.linalg.solve(a, bb))
    a, bb = _broadcast_batch(np.swapaxes(A, -1, -2), np.swapaxes(b, -1, -2))
    return np.ascontiguousarray(np.swapaxes(np.linalg.solve(a, bb), -1, -2))


@_lu_solve.backward
def _(ctx, g, left=True, adjoint=False):
    LU, piv, X = ctx.saved_tensors
    need = ctx.needs_input_grad
    gB = lu_solve(LU, piv, g, left=left, adjoint=not adjoint) if need[2] else None
    gLU = None
    if need[0]:
        P, L, Um = _unpack(LU, piv._data)
        if left != adjoint:
            gR = solve_triangular(
                Um.mH, -((g if left else g.mH) @ (X.mH if left else X)), upper=False
            )
            gL = solve_triangular(L.mH, gR @ Um.mH, upper=True, unitriangular=True)
            gLU = U.tril(gL, -1) + U.triu(gR)
        else:
            gR = -(P.mT @ (X if left else X.mH) @ (g.mH if left else g) @ P)
            gR = solve_triangular(L.mH, gR, upper=True, left=False, unitriangular=True)
            gU = U.triu(solve_triangular(Um.mH, L.mH @ gR, upper=False, left=False))
            gLU = U.tril(gR, -1) + gU
    return gLU, None, gB


def lu_solve(
    LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False, out=None
) -> Tensor:
    """Return the solution of ``A X = B`` given ``lu_factor(A)`` (``adjoint``: A^H; ``left``
    False: ``X A = B``)."""
    fn = "linalg.lu_solve"
    check_matrix(fn, LU, "LU")
    check_matrix(fn, B, "B")
    check_square(fn, LU, "LU")
    check_same_dtype(fn, LU, B, "LU", "B")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(
            f"{fn}: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})"
        )
    params = {"left": left, "adjoint": adjoint}
    return _out(dispatch(_lu_solve, (LU, pivots, B), params), out)


# ------------------------------------------------------------------------------ lstsq

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@op(
    "linalg_lstsq",
    grad_fn="LinalgLstsqBackward0",
    args=("self", "b"),
    save=("self", "b"),
    nondiff_outputs=(2, 3),
    post_save=("solution",),
)
def _lstsq(a, b, rcond, driver, vector):
    if vector:
        b = b[..., None]
    m, n = a.shape[-2:]
    a, b = _broadcast_batch(a, b)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    smax = s[..., :1] if s.shape[-1] else s
    keep = s > rcond * smax
    inv_s = np.where(keep, 1 / np.where(keep, s, 1), 0).astype(s.dtype)
    x = np.conj(np.swapaxes(vh, -1, -2)) @ (
        inv_s[..., None] * (np.conj(np.swapaxes(u, -1, -2)) @ b)
    )
    # torch's layout: a column-major (max(m, n), k) buffer narrowed to n rows
    buf = np.zeros(x.shape[:-2] + (max(m, n), x.shape[-1]), dtype=x.dtype)
    buf = fortran(buf)
    buf[..., :n, :] = x
    x = buf[..., :n, :]
    rank = keep.sum(-1).astype(np.int64)
    real = s.dtype
    if driver != "gelsy" and m > n and (rank == n).all():
        r = a @ x - b
        resid = (np.abs(r) ** 2).sum(-2).astype(real)
    else:
        resid = np.zeros((0,), real)
    if driver == "gels":
        rank = np.zeros((0,), np.int64)
    sv = s if driver in ("gelsd", "gelss") else np.zeros((0,), real)
    if vector:
        x = x[..., 0]
    return x, resid, rank, sv


@_lstsq.backward
def _(ctx, gX, gL, g_rank=None, g_sv=None, rcond=None, driver=None, vector=False):
    from ember._ops.linalg_decomp import _pinv_backward, pinv

    A, B, X = ctx.saved_tensors
    need = ctx.needs_input_grad
    if vector:
        B, X = B.unsqueeze(-1), X.unsqueeze(-1)
        gX = gX.unsqueeze(-1) if gX is not None else None
    gA = gB = None
    if gX is not None:
        pA = pinv(A)
        if need[0]:
            gA = _pinv_backward(gX @ B.mH, pA, A)
        if need[1]:
            gB = pA.mH @ gX
    if gL is not None and gL.numel():
        r = A @ X - B
        gl = gL.unsqueeze(-2)
        if need[0]:
            t = 2 * (gl * r) @ X.mH
            gA = t if gA is None else gA + t
        if need[1]:
            t = -2 * gl * r
            gB = t if gB is None else gB + t
    if vector and gB is not None:
        gB = gB.squeeze(-1)
    return gA, gB


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None):
    """Return (solution, residuals, rank, singular_values) of the least squares problem
    ``min ||A X - B||``, through the SVD (the minimum norm solution)."""
    fn = "torch.linalg.lstsq"
    check_tensor("linalg_lstsq", A, "A")
    check_matrix("linalg.lstsq", A)
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError("This function doesn't handle types other than float and double")
    check_same_dtype("linalg.lstsq", A, B)
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError(f"{fn}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.ndim < 2:
        raise RuntimeError(
            f"{fn}: input.dim() must be greater or equal to other.dim() and "
            "(input.dim() - other.dim()) <= 1"
        )
    if A.shape[-2] != Bm.shape[-2]:
        raise RuntimeError(f"{fn}: input.size(-2) should match other.size({-1 if vector else -2})")
    m, n = A.shape[-2:]
    if rcond is None:
        rcond = float(np.finfo(A._data.dtype).eps) * max(m, n)
    res = dispatch(_lstsq, (A, B), {"rcond": rcond, "driver": driver, "vector": vector})
    save_outputs(res, (0,))
    return return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))(*res)


# ------------------------------------------------------------------------------ matrix_exp

_PADE13 = (
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
)
_THETA13 = 5.371920351148152


def _expm(a: np.ndarray) -> np.ndarray:
    # Higham's scaling and squaring with the [13/13] Pade approximant, per batch element
    n = a.shape[-1]
    if n == 0 or a.size == 0:
        return a.copy()
    norm = np.abs(a).sum(-2).max(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.ceil(np.log2(norm / _THETA13))
    s = np.where(np.isfinite(s) & (s > 0), s, 0).astype(np.int64)
    A = a / (2.0**s)[..., None, None].astype(a.real.dtype)
    b = _PADE13
    eye = np.eye(n, dtype=a.dtype)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    u = A @ (
        A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye
    )
    v = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for k in range(int(s.max()) if s.size else 0):
        sq = r @ r
        r = np.where((k < s)[..., None, None], sq, r)
    return r


@op("linalg_matrix_exp", grad_fn="LinalgMatrixExpBackward0", save=("self",))
def _matrix_exp(a):
    return np.ascontiguousarray(_expm(a)).astype(a.dtype, copy=False)


@_matrix_exp.backward
def _(ctx, g):
    # Mathias: exp([[A^H, G], [0, A^H]]) holds the adjoint of the differential top right
    (A,) = ctx.saved_tensors
    n = A.shape[-1]
    Ah = A.mH
    from ember._ops.cat_split import cat

    top = cat([Ah, g], -1)
    bottom = cat([Ah * 0, Ah], -1)
    big = matrix_exp(cat([top, bottom], -2))
    return big.narrow(-2, 0, n).narrow(-1, n, n)


def matrix_exp(A: Tensor) -> Tensor:
    """Return the matrix exponential of a square matrix (or batch)."""
    check_tensor("linalg_matrix_exp", A, "A")
    check_square("linalg.matrix_exp", A)
    check_float("linalg.matrix_exp", A)
    return dispatch(_matrix_exp, (A,))


publish(_det, det)
publish(None, logdet)
publish(_slogdet, torch_slogdet, name="slogdet")
publish(_inv, inverse)
publish(_matrix_exp, matrix_exp)

"""More of torch.linalg: lu (P, L, U), geqrf, householder_product (orgqr), ormqr, ldl_factor(_ex),
ldl_solve, tensorinv, tensorsolve, vander.

Forwards run on arrays (LAPACK's geqrf through NumPy's raw QR, the LU of ``linalg_util``, the
Householder reflectors applied one rank-1 update at a time); backwards follow torch's formulas
in ember ops. householder_product and ormqr differentiate their own composite: the reflectors
applied with ember ops and differentiated by the engine.
"""

from __future__ import annotations

import math

import numpy as np

from ember._core import dtype as D
from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap
from ember._ops import linalg_util as U
from ember._ops.linalg_solve import solve, solve_triangular
from ember._ops.linalg_util import (
    check_tensor,
    fortran,
    return_type,
    save_outputs,
)
from ember._ops.registry import ABOVE, dispatch, op, publish

# ------------------------------------------------------------------------------ lu


@op("linalg_lu", grad_fn="LinalgLuBackward0", nondiff_outputs=(0,), post_save=("P", "L", "U"))
def _lu(a):
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        b = a.shape[:-2]
        P = np.broadcast_to(np.eye(m, dtype=a.dtype), b + (m, m))
        return P.copy(), np.zeros(b + (m, k), a.dtype), np.zeros(b + (k, n), a.dtype)
    lu, piv, _ = U.lu_factor_array(a)
    L = np.tril(lu[..., :, :k], -1)
    L += np.eye(m, k, dtype=a.dtype)
    Um = np.triu(lu[..., :k, :])
    perm = U.permutation_from_pivots(piv, m)
    P = np.swapaxes(np.eye(m, dtype=a.dtype)[perm], -1, -2)
    return np.ascontiguousarray(P), np.ascontiguousarray(L), np.ascontiguousarray(Um)


@_lu.backward
def _(ctx, gP, gL, gU):
    P, L, Um = ctx.saved_tensors
    m, n = L.shape[-2], Um.shape[-1]
    k = min(m, n)
    if m == n:
        gA = None
        if gL is not None:
            gA = U.tril(L.mH @ gL, -1)
        if gU is not None:
            t = U.triu(gU @ Um.mH)
            gA = t if gA is None else gA + t
        gA = solve_triangular(Um.mH, gA, upper=False, left=False)
        gA = solve_triangular(L.mH, gA, upper=True, left=True, unitriangular=True)
        return P @ gA
    from ember._ops.cat_split import cat

    if m < n:  # wide: U = [U1 U2]
        U1 = Um.narrow(-1, 0, k)
        gA = None
        if gL is not None:
            gA = L.mH @ gL
        if gU is not None:
            t = U.triu(gU) @ Um.mH
            gA = -t if gA is None else gA - t
        gA = solve_triangular(U1.mH, U.tril(gA, -1), upper=False, left=False)
        if gU is not None:
            gA = cat([gA + U.triu(gU.narrow(-1, 0, k)), gU.narrow(-1, k, n - k)], -1)
        gA = solve_triangular(L.mH, gA, upper=True, left=True, unitriangular=True)
        if gU is None:
            z = Um.narrow(-1, k, n - k).detach() * 0
            gA = cat([gA, z], -1)
        return P @ gA
    # tall: L = [L1; L2]
    L1 = L.narrow(-2, 0, k)
    gA = None
    if gU is not None:
        gA = gU @ Um.mH
    if gL is not None:
        t = L.mH @ U.tril(gL, -1)
        gA = -t if gA is None else gA - t
    gA = solve_triangular(L1.mH, U.triu(gA), upper=True, left=True, unitriangular=True)
    if gL is not None:
        gA = cat([gA + U.tril(gL.narrow(-2, 0, k), -1), gL.narrow(-2, k, m - k)], -2)
    gA = solve_triangular(Um.mH, gA, upper=False, left=False)
    if gL is None:
        z = L.narrow(-2, k, m - k).detach() * 0
        gA = cat([gA, z], -2)
    return P @ gA


def lu(A: Tensor, *, pivot: bool = True, out=None):
    """Return (P, L, U) with ``A = P @ L @ U`` (partial pivoting; L unit lower triangular)."""
    check_tensor("linalg_lu", A, "A")
    if A._data.ndim < 2:
        raise RuntimeError(
            "linalg.lu: Expected tensor with 2 or more dimensions. Got size: "
            f"{list(A._data.shape)} instead"
        )
    U.check_kernel("lu_cpu", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    res = dispatch(_lu, (A,))
    save_outputs(res, (0, 1, 2))
    return U.outs_(return_type("linalg_lu", ("P", "L", "U"))(*res), out)


# ------------------------------------------------------------------------------ geqrf


@op("geqrf", grad_fn="GeqrfBackward0", save=())
def _geqrf(a):
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        return fortran(a.copy()), np.zeros(a.shape[:-2] + (k,), a.dtype)
    h, tau = np.linalg.qr(a, mode="raw")
    return fortran(np.swapaxes(h, -1, -2)), np.asarray(tau, dtype=a.dtype)


@_geqrf.backward
def _(ctx, ga, gtau):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def geqrf(input: Tensor, *, out=None):
    """Return (a, tau): LAPACK's geqrf QR factorisation (R above the diagonal of ``a``, the
    Householder vectors below it, their scales in ``tau``)."""
    check_tensor("geqrf", input)
    if input._data.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    U.check_kernel("geqrf_cpu", input)
    return U.outs_(return_type("geqrf", ("a", "tau"))(*dispatch(_geqrf, (input,))), out)


# ------------------------------------------------------------------------------ Householder


def _reflectors_np(A, tau, C, left, transpose):
    """Apply Q = H_1 ... H_k (H_i = I - tau_i v_i v_i^H, v_i from A's columns) to C."""
    m = A.shape[-2]
    k = tau.shape[-1]
    C = np.array(C, copy=True)
    order = range(k) if left == transpose else range(k - 1, -1, -1)
    for i in order:
        v = np.concatenate(
            [np.zeros(A.shape[:-2] + (i,), A.dtype), np.ones(A.shape[:-2] + (1,), A.dtype)]
            + [A[..., i + 1 : m, i]],
            -1,
        )[..., :, None]
        t = tau[..., i, None, None]
        if transpose:
            t = np.conj(t)
        vh = np.conj(np.swapaxes(v, -1, -2))
        if left:
            C = C - t * (v @ (vh @ C))
        else:
            C = C - t * ((C @ v) @ vh)
    return C


def _reflectors(A: Tensor, tau: Tensor, C: Tensor, left: bool, transpose: bool) -> Tensor:
    """The same with ember ops (differentiable in A, tau and C)."""
    m = A.shape[-2]
    k = tau.shape[-1]
    V = U.tril(A, -1).narrow(-1, 0, k) + _wrap(np.eye(m, k, dtype=A._data.dtype))
    order = range(k) if left == transpose else range(k - 1, -1, -1)
    for i in order:
        v = V.narrow(-1, i, 1)
        t = tau.narrow(-1, i, 1).unsqueeze(-1)
        if transpose:
            t = t.conj()
        if left:
            C = C - t * (v @ (v.mH @ C))
        else:
            C = C - t * ((C @ v) @ v.mH)
    return C


def _composite_backward(fn, inputs, needs, g):
    """Differentiate ``fn(*inputs)`` (ember ops) at the saved inputs under ``g``: a graph of the
    gradient is kept when a graph is being built (double backward)."""
    from ember._core.grad_mode import enable_grad

    create = STATE.grad_enabled
    with enable_grad():
        ins = [x if create else x.detach().requires_grad_(n) for x, n in zip(inputs, needs)]
        wrt = [x for x, n in zip(ins, needs) if n]
        out = fn(*ins)
        gs = iter(ABOVE.grad(out, wrt, g, create_graph=create, allow_unused=True))
    return tuple(next(gs) if n else None for n in needs)


@op(
    "linalg_householder_product",
    grad_fn="LinalgHouseholderProductBackward0",
    args=("input", "tau"),
    save=("input", "tau"),
)
def _householder(A, tau):
    m, n = A.shape[-2:]
    E = np.broadcast_to(np.eye(m, n, dtype=A.dtype), A.shape)
    return fortran(_reflectors_np(A, tau, E, True, False))


def _householder_fn(A, tau):
    m, n = A.shape[-2:]
    E = _wrap(np.broadcast_to(np.eye(m, n, dtype=A._data.dtype), A._data.shape).copy())
    return _reflectors(A, tau, E, True, False)


@_householder.backward
def _(ctx, g):
    A, tau = ctx.saved_tensors
    return _composite_backward(_householder_fn, (A, tau), ctx.needs_input_grad, g)


def _check_householder(fn: str, A, tau) -> None:
    check_tensor(fn.split(".")[-1], A)
    check_tensor(fn.split(".")[-1], tau, "tau", 2)
    if A._data.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    m, n = A._data.shape[-2:]
    if m < n:
        raise RuntimeError(
            f"{fn}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    k = tau._data.shape[-1] if tau._data.ndim else 0
    if n < k:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau._data.ndim != A._data.ndim - 1 or tau._data.shape[:-1] != A._data.shape[:-2]:
        raise RuntimeError(
            f"{fn}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"{list(tau._data.shape[:-1])}"
        )
    if tau.dtype is not A.dtype:
        raise RuntimeError(
            f"{fn}: tau dtype {U.type_name(tau.dtype)} does not match input dtype "
            f"{U.type_name(A.dtype)}"
        )
    U.check_kernel("orgqr_cpu", A)


def householder_product(A: Tensor, tau: Tensor, *, out=None) -> Tensor:
    """Return the first n columns of the product of Householder matrices ``H_1 ... H_k``,
    ``H_i = I - tau_i v_i v_i^H`` with ``v_i`` the i-th column of ``A`` below the diagonal."""
    _check_householder("torch.linalg.householder_product", A, tau)
    return U.out_(dispatch(_householder, (A, tau)), out)


def orgqr(input: Tensor, input2: Tensor, *, out=None) -> Tensor:
    """Alias of :func:`ember.linalg.householder_product`."""
    _check_householder("torch.linalg.householder_product", input, input2)
    return U.out_(dispatch(_householder, (input, input2)), out)


@op(
    "ormqr",
    grad_fn="OrmqrBackward0",
    args=("self", "input2", "input3"),
    save=("self", "input2", "input3"),
)
def _ormqr(A, tau, C, left=True, transpose=False):
    return fortran(_reflectors_np(A, tau, C, left, transpose))


@_ormqr.backward
def _(ctx, g, left=True, transpose=False):
    A, tau, C = ctx.saved_tensors

    def fn(A, tau, C):
        return _reflectors(A, tau, C, left, transpose)

    return _composite_backward(fn, (A, tau, C), ctx.needs_input_grad, g)


def ormqr(
    input: Tensor,
    input2: Tensor,
    input3: Tensor,
    left: bool = True,
    transpose: bool = False,
    *,
    out=None,
) -> Tensor:
    """Return ``op(Q) @ other`` (``left``) or ``other @ op(Q)``, Q the product of the
    Householder matrices of (input, tau) as geqrf returns them, ``op`` the conjugate
    transpose if ``transpose``."""
    A, tau, C = input, input2, input3
    for i, (x, nm) in enumerate(((A, "input"), (tau, "tau"), (C, "other"))):
        check_tensor("ormqr", x, nm, i + 1)
    if A._data.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if C._data.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    m = A._data.shape[-2]
    side = -2 if left else -1
    if C._data.shape[side] != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    k = tau._data.shape[-1] if tau._data.ndim else 0
    if k > min(C._data.shape[side], A._data.shape[-1]):
        raise RuntimeError(
            f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])"
        )
    for x, nm in ((tau, "tau"), (C, "other")):
        if x.dtype is not A.dtype:
            raise RuntimeError(
                f"torch.ormqr: Expected input and {nm} to have the same dtype, but input has "
                f"dtype {U.type_name(A.dtype)} and {nm} has dtype {U.type_name(x.dtype)}"
            )
    U.check_kernel("ormqr_cpu", A)
    res = dispatch(_ormqr, (A, tau, C), {"left": bool(left), "transpose": bool(transpose)})
    return U.out_(res, out)


# ------------------------------------------------------------------------------ tensorinv/solve


def tensorinv(A: Tensor, ind: int = 2, *, out=None) -> Tensor:
    """Return the inverse of ``A`` as a tensor product: shape ``A.shape[ind:] + A.shape[:ind]``."""
    from ember._ops.linalg_solve import inv

    check_tensor("linalg_tensorinv", A)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(A.shape)
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    res = inv(A.reshape(rows, cols)).reshape(shape[ind:] + shape[:ind])
    return U.out_(res, out)


def tensorsolve(A: Tensor, B: Tensor, dims=None, *, out=None) -> Tensor:
    """Return X with ``tensordot(A, X, X.ndim) == B``; ``dims`` of A move to the end first."""
    check_tensor("linalg_tensorsolve", A)
    check_tensor("linalg_tensorsolve", B, "other", 2)
    if dims is not None:
        nd = A.dim()
        dims = [d % nd for d in dims]
        rest = [d for d in range(nd) if d not in dims]
        A = A.permute(rest + dims)
    shape = tuple(A.shape)
    bd = B.dim()
    res_shape = shape[bd:]
    rows, cols = math.prod(shape[:bd]), math.prod(res_shape)
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {rows}"
        )
    res = solve(A.reshape(rows, cols), B.reshape(rows)).reshape(res_shape)
    return U.out_(res, out)


# ------------------------------------------------------------------------------ vander


def vander(x: Tensor, N: int | None = None) -> Tensor:
    """Return the Vandermonde matrix of ``x``: columns ``x**0, x**1, ..., x**(N-1)``."""
    from ember._ops.cat_split import cat
    from ember._ops.scan import cumprod

    check_tensor("linalg_vander", x, "x")
    if x.dtype is D.bool:
        raise RuntimeError(
            "linalg.vander supports floating point, complex, and integer tensors, but got Bool"
        )
    if x.dim() == 0:
        raise RuntimeError("N must be greater than 1.")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    ones = x.new_ones(tuple(x.shape) + (1,))
    powers = cumprod(x.unsqueeze(-1).expand(tuple(x.shape) + (n - 1,)), -1)
    return cat([ones, powers], -1)


publish(_geqrf, geqrf)
publish(_householder, orgqr)
publish(_ormqr, ormqr)

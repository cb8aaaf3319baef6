"""Decompositions: cholesky, qr, eigh, eigvalsh, eig, eigvals, svd, svdvals, pinv, matrix_rank.

Forward is NumPy's LAPACK call; the factors keep torch's column-major layout. The backward
formulas are torch's (FunctionsManual.cpp: cholesky_backward, linalg_qr_backward,
linalg_eig_backward, svd_backward, pinv_backward) in ember ops. As in
torch, eigenvector and singular vector gradients assume distinct eigen/singular values and a
loss invariant to the sign (phase) of each vector.
"""

from __future__ import annotations

import numpy as np

from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap
from ember._ops import linalg_util as U
from ember._ops.linalg_solve import solve, solve_triangular
from ember._ops.linalg_util import (
    LinAlgError,
    check_float,
    check_matrix,
    check_square,
    check_tensor,
    fortran,
    return_type,
    save_outputs,
)
from ember._ops.linalg_util import out_ as _out
from ember._ops.registry import dispatch, op, publish


def _needs_graph(A: Tensor) -> bool:
    return STATE.grad_enabled and A.requires_grad


# ------------------------------------------------------------------------------ cholesky


@op("linalg_cholesky_ex", grad_fn="LinalgCholeskyExBackward0", outputs=("L",), save=("L",))
def _cholesky(a, upper=False, check_errors=True, fn="linalg.cholesky"):
    try:
        return fortran(np.linalg.cholesky(a, upper=upper))
    except np.linalg.LinAlgError:
        pass
    info = U.cholesky_info(a, upper)
    if check_errors:
        flat = info.reshape(-1)
        b = int(np.flatnonzero(flat)[0])
        raise LinAlgError(
            f"{fn}: {U.batch_prefix(a.shape, b)}The factorization could not be completed because "
            f"the input is not positive-definite (the leading minor of order {int(flat[b])} is "
            "not positive-definite)."
        )
    out = np.full(a.shape, np.nan, dtype=a.dtype)
    ok = info == 0
    if ok.any():
        out[ok] = np.linalg.cholesky(a[ok], upper=upper)
    return fortran(out)


@_cholesky.backward
def _(ctx, g, upper=False, check_errors=True, fn=None):
    (L,) = ctx.saved_tensors
    if upper:
        L, g = L.mH, g.mH
    gA = U.tril(L.mH @ g)
    gA = 0.5 * (gA + U.tril(gA, -1).mH)
    gA = solve_triangular(L.mH, gA, upper=True, left=True)
    return solve_triangular(L, gA, upper=False, left=False)


def _check_cholesky(A, fn):
    check_tensor("linalg_cholesky", A, "A")
    check_square(fn, A)
    check_float(fn, A)


def cholesky(A: Tensor, *, upper: bool = False, out=None) -> Tensor:
    """Return the Cholesky factor L (``A = L L^H``; U with ``A = U^H U`` if ``upper``)."""
    _check_cholesky(A, "linalg.cholesky")
    return _out(dispatch(_cholesky, (A,), {"upper": upper} if upper else {}), out)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False, out=None):
    """Return (L, info): ``info`` > 0 gives the order of the leading minor that is not
    positive-definite, instead of raising."""
    _check_cholesky(A, "linalg.cholesky_ex")
    params = {"upper": upper, "check_errors": check_errors, "fn": "linalg.cholesky_ex"}
    L = dispatch(_cholesky, (A,), params)
    info = np.zeros(A.shape[:-2], dtype=np.int32)
    if np.isnan(L._data).any():
        info = U.cholesky_info(A._data, upper)
    return U.outs_(return_type("linalg_cholesky_ex", ("L", "info"))(L, _wrap(info)), out)


# ------------------------------------------------------------------------------ qr


@op("linalg_qr", grad_fn="LinalgQrBackward0", post_save=("Q", "R"))
def _qr(a, mode="reduced"):
    if mode == "r":
        r = np.linalg.qr(a, mode="r")
        return np.zeros((0,), a.dtype), fortran(r)
    q, r = np.linalg.qr(a, mode=mode)
    return fortran(q), fortran(r)


@_qr.backward
def _(ctx, gQ, gR, mode="reduced"):
    if mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
            "linalg.qr."
        )
    Q, R = ctx.saved_tensors
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError(
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
        )
    if gQ is not None and gR is not None:
        gA = gR @ R.mH - Q.mH @ gQ
    elif gQ is not None:
        gA = -(Q.mH @ gQ)
    else:
        gA = gR @ R.mH
    if m >= n:
        Y = U.triu(gA)
        sym = Y + U.tril(Y.mH, -1)  # X + X^H with the real part of the diagonal halved
        if sym.dtype.is_complex:
            d = Y.diagonal(0, -2, -1)
            sym = sym - U.diag_embed(d - U.to_complex(U.real(d)))
        gA = Q @ sym
        if gQ is not None:
            gA = gA + gQ
        return solve_triangular(R.mH, gA, upper=False, left=False)
    X = -gA
    Y = U.tril(X - X.mH)
    if Y.dtype.is_complex:
        d = Y.diagonal(0, -2, -1)
        Y = Y - U.diag_embed(d * 0.5)
    gA = Q @ Y
    gA = solve_triangular(R.narrow(-1, 0, m).mH, gA, upper=False, left=False)
    from ember._ops.cat_split import cat

    gA = cat([gA, gA.new_zeros((*gA.shape[:-1], n - m))], -1)
    if gR is not None:
        gA = gA + Q @ gR
    return gA


def qr(A: Tensor, mode: str = "reduced", *, out=None):
    """Return (Q, R) with ``A = Q R``; ``mode`` 'reduced', 'complete' or 'r' (Q empty)."""
    check_tensor("linalg_qr", A, "A")
    check_matrix("linalg.qr", A)
    check_float("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    res = dispatch(_qr, (A,), {"mode": mode} if mode != "reduced" else {})
    save_outputs(res, (0, 1))
    return U.outs_(return_type("linalg_qr", ("Q", "R"))(*res), out)


# ------------------------------------------------------------------------------ eigh


_EIG = ("eigenvalues", "eigenvectors")  # saved by the public functions (save_outputs)


@op("linalg_eigh", grad_fn="LinalgEighBackward0", post_save=_EIG)
def _eigh(a, UPLO="L"):
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    return w, fortran(v)


@_eigh.backward
def _(ctx, gL, gV, UPLO="L"):
    L, V = ctx.saved_tensors
    if gV is None:
        return (V * _as(gL, V).unsqueeze(-2)) @ V.mH
    VhgV = V.mH @ gV
    VhgV = 0.5 * (VhgV - VhgV.mH)
    n = L.shape[-1]
    eye = U.eye_like(L, n)
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye
    ret = VhgV / _as(E, V)
    if gL is not None:
        ret = ret * _as(1 - eye, V) + U.diag_embed(_as(gL, V))
    return V @ (ret @ V.mH)


def _as(x: Tensor, like: Tensor) -> Tensor:
    return U.to_complex(x) if like.dtype.is_complex and not x.dtype.is_complex else x


def _check_eigh(A, UPLO, fn):
    check_tensor("linalg_eigh", A, "A")
    check_square("linalg.eigh", A)
    U.check_kernel("linalg_eigh_cpu", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A: Tensor, UPLO: str = "L", *, out=None):
    """Return (eigenvalues, eigenvectors) of a Hermitian matrix, eigenvalues ascending."""
    _check_eigh(A, UPLO, "linalg.eigh")
    res = dispatch(_eigh, (A,), {"UPLO": UPLO} if UPLO != "L" else {})
    save_outputs(res, (0, 1))
    return U.outs_(return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))(*res), out)


def eigvalsh(A: Tensor, UPLO: str = "L", *, out=None) -> Tensor:
    """Return the eigenvalues of a Hermitian matrix, ascending."""
    _check_eigh(A, UPLO, "linalg.eigvalsh")
    if _needs_graph(A):
        return _out(eigh(A, UPLO)[0], out)
    return _out(_wrap(np.ascontiguousarray(np.linalg.eigvalsh(A._data, UPLO=UPLO))), out)


# ------------------------------------------------------------------------------ eig


@op("linalg_eig", grad_fn="LinalgEigBackward0", post_save=_EIG)
def _eig(a):
    w, v = np.linalg.eig(a)
    # NumPy returns real results when every eigenvalue is real; torch's are always complex
    cdt = np.result_type(a.dtype, np.complex64)
    return w.astype(cdt, copy=False), fortran(v.astype(cdt, copy=False))


@_eig.backward
def _(ctx, gL, gV):
    # torch's linalg_eig_backward (non-Hermitian case):
    # gA = V^{-H} (diag(gL) + (V^H gV - V^H V diag(re(V^H gV))) / conj(L_j - L_i)) V^H
    L, V = ctx.saved_tensors
    n = L.shape[-1]
    Vh = V.mH
    if gV is None:
        ret = U.diag_embed(gL)
    else:
        VhgV = Vh @ gV
        diag = VhgV.diagonal(0, -2, -1)
        VhgV = VhgV - Vh @ (V * U.to_complex(diag.real).unsqueeze(-2))
        eye = U.eye_like(L, n)
        Lc = L.conj()
        ret = VhgV / (Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye)
        if gL is not None:
            ret = ret * (1 - eye) + U.diag_embed(gL)
    gA = solve(Vh, ret @ Vh)
    return gA if ctx._input_meta[0][1].is_complex else gA.real


def _check_eig(A: Tensor, fn: str) -> None:
    check_tensor("linalg_eig", A, "A")
    check_square(fn, A)
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"Unknown Complex ScalarType for {U.type_name(A.dtype)}")
    U.check_kernel("linalg_eig_out_cpu", A)


def eig(A: Tensor, *, out=None):
    """Return (eigenvalues, eigenvectors) of a square matrix, both complex; eigenvectors have
    unit norm."""
    _check_eig(A, "linalg.eig")
    res = dispatch(_eig, (A,))
    save_outputs(res, (0, 1))
    return U.outs_(return_type("linalg_eig", ("eigenvalues", "eigenvectors"))(*res), out)


def eigvals(A: Tensor, *, out=None) -> Tensor:
    """Return the (complex) eigenvalues of a square matrix."""
    if _needs_graph(A):
        return _out(eig(A)[0], out)
    _check_eig(A, "linalg.eigvals")
    a = A._data
    w = np.linalg.eigvals(a).astype(np.result_type(a.dtype, np.complex64), copy=False)
    return _out(_wrap(np.ascontiguousarray(w)), out)


# ------------------------------------------------------------------------------ svd


def _svd_np(a, full_matrices):
    if not np.isfinite(a).all():
        raise LinAlgError(
            "linalg.svd: The algorithm failed to converge because the input matrix contained "
            "non-finite values."
        )
    return np.linalg.svd(a, full_matrices=full_matrices)


@op("linalg_svd", grad_fn="LinalgSvdBackward0", post_save=("U", "S", "Vh"))
def _svd(a, full_matrices=True):
    u, s, vh = _svd_np(a, full_matrices)
    return fortran(u), s, fortran(vh)


@_svd.backward
def _(ctx, gU, gS, gVh, full_matrices=True):
    Uu, S, Vh = ctx.saved_tensors
    k = S.shape[-1]
    if full_matrices:
        Uu, Vh = Uu.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU = gU.narrow(-1, 0, k) if gU is not None else None
        gVh = gVh.narrow(-2, 0, k) if gVh is not None else None
    return _svd_backward(gU, gS, gVh, Uu, S, Vh)


def _svd_backward(gU, gS, gVh, Uu, S, Vh):
    m, n = Uu.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        gS = _as(gS, Uu)
        return Uu @ (gS.unsqueeze(-1) * Vh) if m >= n else (Uu * gS.unsqueeze(-2)) @ Vh
    UhgU = VhgV = None
    if gU is not None:
        UhgU = Uu.mH @ gU
        UhgU = UhgU - UhgU.mH
    if gVh is not None:
        VhgV = Vh @ gVh.mH
        VhgV = VhgV - VhgV.mH
    k = S.shape[-1]
    eye = U.eye_like(S, k)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye
    Sc = _as(S, Uu)
    if UhgU is not None and VhgV is not None:
        gA = (UhgU * Sc.unsqueeze(-2) + Sc.unsqueeze(-1) * VhgV) / _as(E, Uu)
    elif UhgU is not None:
        gA = (UhgU / _as(E, Uu)) * Sc.unsqueeze(-2)
    else:
        gA = Sc.unsqueeze(-1) * (VhgV / _as(E, Uu))
    if gS is not None:
        gA = gA + U.diag_embed(_as(gS, Uu))
    if Uu.dtype.is_complex and UhgU is not None and VhgV is not None:
        gA = gA + U.diag_embed(UhgU.diagonal(0, -2, -1) / (2 * Sc))
    if m > n and gU is not None:
        gA = Uu @ gA
        gUSinv = gU / Sc.unsqueeze(-2)
        gA = gA + gUSinv - Uu @ (Uu.mH @ gUSinv)
        return gA @ Vh
    if m < n and gVh is not None:
        gA = gA @ Vh
        SinvgVh = gVh / Sc.unsqueeze(-1)
        gA = gA + SinvgVh - (SinvgVh @ Vh.mH) @ Vh
        return Uu @ gA
    return Uu @ (gA @ Vh) if m >= n else (Uu @ gA) @ Vh


def _check_svd(A, fn):
    check_tensor("linalg_svd", A, "A")
    check_matrix(fn, A)
    check_float(fn, A)


def svd(A: Tensor, full_matrices: bool = True, *, driver=None, out=None):
    """Return (U, S, Vh) with ``A = U diag(S) Vh``, singular values descending."""
    _check_svd(A, "linalg.svd")
    res = dispatch(_svd, (A,), {} if full_matrices else {"full_matrices": False})
    save_outputs(res, (0, 1, 2))
    return U.outs_(return_type("linalg_svd", ("U", "S", "Vh"))(*res), out)


def svdvals(A: Tensor, *, driver=None, out=None) -> Tensor:
    """Return the singular values of ``A``, descending."""
    _check_svd(A, "linalg.svd")
    if _needs_graph(A):
        return _out(svd(A, full_matrices=False)[1], out)
    a = A._data
    if not np.isfinite(a).all():
        raise LinAlgError(
            "linalg.svd: The algorithm failed to converge because the input matrix contained "
            "non-finite values."
        )
    return _out(_wrap(np.linalg.svd(a, compute_uv=False)), out)


# ------------------------------------------------------------------------------ pinv


def _tolerances(a, atol, rtol, hermitian=False):
    m, n = a.shape[-2:]
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else np.finfo(a.real.dtype).eps * max(m, n)
    return 0.0 if atol is None else atol, rtol


@op("linalg_pinv", grad_fn="LinalgPinvBackward0", save=("self", "result"))
def _pinv(a, atol=None, rtol=None, hermitian=False):
    atol_, rtol_ = _tolerances(a, atol, rtol)
    if hermitian:
        w, v = np.linalg.eigh(a)
        aw = np.abs(w)
        thr = np.maximum(atol_, rtol_ * aw.max(-1, initial=0, keepdims=True))
        keep = aw > thr
        winv = np.where(keep, 1 / np.where(keep, w, 1), 0).astype(w.dtype)
        return np.ascontiguousarray((v * winv[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2)))
    u, s, vh = _svd_np(a, False)
    thr = np.maximum(atol_, rtol_ * (s[..., :1] if s.shape[-1] else s))
    keep = s > thr
    sinv = np.where(keep, 1 / np.where(keep, s, 1), 0).astype(s.dtype)
    res = np.conj(np.swapaxes(vh, -1, -2)) @ (sinv[..., None] * np.conj(np.swapaxes(u, -1, -2)))
    return np.ascontiguousarray(res)


@_pinv.backward
def _(ctx, g, atol=None, rtol=None, hermitian=False):
    A, pA = ctx.saved_tensors
    return _pinv_backward(g, pA, A)


def _pinv_backward(grad, pinvA, A):
    m, n = A.shape[-2:]
    pinvAh = pinvA.mH
    gradh = grad.mH
    if m <= n:
        K = gradh @ pinvA
        KpinvAh = K @ pinvAh
        return (
            -(pinvA @ K).mH + KpinvAh - (A @ pinvA) @ KpinvAh + (pinvAh @ pinvA) @ (gradh - K @ A)
        )
    K = pinvA @ gradh
    pinvAhK = pinvAh @ K
    return -(K @ pinvA).mH + (gradh - A @ K) @ pinvA @ pinvAh + pinvAhK - pinvAhK @ pinvA @ A


def _scalar(x):
    if isinstance(x, Tensor):
        return x.item()
    return x


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False, rcond=None, out=None):
    """Return the pseudoinverse of ``A`` (singular values below ``max(atol, rtol * s_max)``
    count as zero)."""
    check_tensor("linalg_pinv", A, "A")
    if not (A.dtype.is_floating_point or A.dtype.is_complex) or A.ndim < 2:
        raise RuntimeError(
            f"linalg.pinv({U.type_name(A.dtype)}{{{list(A.shape)}}}): expected a tensor with 2 or "
            "more dimensions of float, double, cfloat or cdouble types"
        )
    if rcond is not None:
        rtol = rcond
    params = {"atol": _scalar(atol), "rtol": _scalar(rtol), "hermitian": hermitian}
    return _out(dispatch(_pinv, (A,), params), out)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """Return the pseudoinverse (``torch.pinverse``: ``rcond`` is the relative tolerance)."""
    return pinv(input, rtol=rcond)


def matrix_rank(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False, tol=None, out=None):
    """Return the number of singular values above ``max(atol, rtol * s_max)``, per matrix."""
    check_tensor("linalg_matrix_rank", A, "input")
    check_matrix("linalg.matrix_rank", A, "input")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError("This function doesn't handle types other than float and double")
    a = A._data
    if tol is not None:
        atol, rtol = tol, 0.0
    atol_, rtol_ = _tolerances(a, _scalar(atol), _scalar(rtol))
    if hermitian:
        s = np.abs(np.linalg.eigvalsh(a))
        smax = s.max(-1, initial=0, keepdims=True)
    else:
        s = np.linalg.svd(a, compute_uv=False)
        smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    thr = np.maximum(atol_, rtol_ * smax)
    return _out(_wrap(np.asarray((s > thr).sum(-1), dtype=np.int64)), out)


publish(_pinv, pinverse)

"""linalg.ldl_factor(_ex) and linalg.ldl_solve: LAPACK's Bunch-Kaufman LDL^T (``?sytf2`` /
``?hetf2``, lower triangle, as torch calls ``?sytrf``) and its solve (``?sytrs`` / ``?hetrs``).

NumPy exposes neither, so the column loop runs in Python with vectorised updates of the
trailing matrix (LAPACK's unblocked algorithm, which its blocked one reproduces up to rounding
and which it runs itself below 64 columns). Neither has a derivative in torch.
"""

from __future__ import annotations

import math

import numpy as np

from ember._core.tensor import Tensor
from ember._ops import linalg_util as U
from ember._ops.linalg_util import check_tensor, fortran, return_type
from ember._ops.registry import dispatch, op

_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0


def _abs1(z):
    # LAPACK's cabs1 for complex (|re| + |im|), abs for real
    if np.iscomplexobj(z):
        return np.abs(z.real) + np.abs(z.imag)
    return np.abs(z)


def _sytf2(A, herm):
    """Factor one matrix in place (lower triangle); return (1-based pivots, info)."""
    n = A.shape[0]
    cplx = np.iscomplexobj(A)
    herm = herm and cplx
    conj = np.conj if herm else (lambda x: x)
    piv = np.zeros(n, np.int32)
    info = 0
    if herm:
        A[np.diag_indices(n)] = A.diagonal().real
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(A[k, k].real) if herm else float(_abs1(A[k, k]))
        if k < n - 1:
            col = _abs1(A[k + 1 :, k])
            imax = k + 1 + int(np.argmax(col))
            colmax = float(col[imax - k - 1])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0.0 or math.isnan(absakk):
            if info == 0:
                info = k + 1
            kp = k
            if herm:
                A[k, k] = A[k, k].real
        else:
            if absakk >= _ALPHA * colmax:
                kp = k
            else:
                rowmax = float(np.max(_abs1(A[imax, k:imax])))
                if imax < n - 1:
                    rowmax = max(rowmax, float(np.max(_abs1(A[imax + 1 :, imax]))))
                aimax = abs(A[imax, imax].real) if herm else float(_abs1(A[imax, imax]))
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif aimax >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp = imax
                    kstep = 2
            kk = k + kstep - 1
            if kp != kk:
                # interchange rows and columns kk and kp of the trailing lower triangle
                if kp < n - 1:
                    A[kp + 1 :, [kk, kp]] = A[kp + 1 :, [kp, kk]]
                seg = A[kk + 1 : kp, kk].copy()
                A[kk + 1 : kp, kk] = conj(A[kp, kk + 1 : kp])
                A[kp, kk + 1 : kp] = conj(seg)
                if herm:
                    A[kp, kk] = np.conj(A[kp, kk])
                A[kk, kk], A[kp, kp] = A[kp, kp], A[kk, kk]
                if kstep == 2:
                    if herm:
                        A[k, k] = A[k, k].real
                    A[k + 1, k], A[kp, k] = A[kp, k], A[k + 1, k]
            elif herm:
                A[k, k] = A[k, k].real
                if kstep == 2:
                    A[k + 1, k + 1] = A[k + 1, k + 1].real
            if kstep == 1:
                if k < n - 1:
                    x = A[k + 1 :, k].copy()
                    if herm:
                        r1 = 1.0 / A[k, k].real
                        A[k + 1 :, k + 1 :] += np.tril(np.outer(x, -r1 * np.conj(x)))
                        idx = np.arange(k + 1, n)
                        A[idx, idx] = A[idx, idx].real
                    else:
                        d11 = 1.0 / A[k, k]
                        temp = -d11 * x
                        A[k + 1 :, k + 1 :] += np.tril(np.outer(x, temp))
                    A[k + 1 :, k] = x * (r1 if herm else d11)
            elif k < n - 2:
                a0 = A[k + 2 :, k].copy()
                a1 = A[k + 2 :, k + 1].copy()
                if herm:
                    d = abs(A[k + 1, k])
                    d11 = A[k + 1, k + 1].real / d
                    d22 = A[k, k].real / d
                    tt = 1.0 / (d11 * d22 - 1.0)
                    d21 = A[k + 1, k] / d
                    d = tt / d
                    wk = d * (d11 * a0 - d21 * a1)
                    wkp1 = d * (d22 * a1 - np.conj(d21) * a0)
                    sub = A[k + 2 :, k + 2 :]
                    sub -= np.tril(np.outer(a0, np.conj(wk)))
                    sub -= np.tril(np.outer(a1, np.conj(wkp1)))
                    idx = np.arange(k + 2, n)
                    A[idx, idx] = A[idx, idx].real
                else:
                    d21 = A[k + 1, k]
                    d11 = A[k + 1, k + 1] / d21
                    d22 = A[k, k] / d21
                    t = 1.0 / (d11 * d22 - 1.0)
                    d21 = t / d21
                    wk = d21 * (d11 * a0 - a1)
                    wkp1 = d21 * (d22 * a1 - a0)
                    sub = A[k + 2 :, k + 2 :]
                    sub -= np.tril(np.outer(a0, wk))
                    sub -= np.tril(np.outer(a1, wkp1))
                A[k + 2 :, k] = wk
                A[k + 2 :, k + 1] = wkp1
        if kstep == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return piv, info


@op("linalg_ldl_factor_ex", grad_fn="NotImplemented", save=(), nondiff_outputs=(1, 2))
def _ldl_factor(a, hermitian=False):
    n = a.shape[-1]
    flat = np.array(a.reshape((-1, n, n)), copy=True)
    pivs = np.zeros(flat.shape[:1] + (n,), np.int32)
    infos = np.zeros(flat.shape[:1], np.int32)
    for b in range(flat.shape[0]):
        pivs[b], infos[b] = _sytf2(flat[b], hermitian)
    ld = np.tril(flat).reshape(a.shape)
    return (
        fortran(ld),
        pivs.reshape(a.shape[:-2] + (n,)),
        infos.reshape(a.shape[:-2]),
    )


@_ldl_factor.backward
def _(ctx, g, gp=None, gi=None, hermitian=False):
    raise RuntimeError("derivative for aten::linalg_ldl_factor_ex is not implemented")


def _ldl_call(A, hermitian, fn):
    check_tensor("linalg_ldl_factor_ex", A, "A")
    U.check_square(fn, A)
    U.check_float(fn, A)
    return dispatch(_ldl_factor, (A,), {"hermitian": bool(hermitian)})


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False, out=None):
    """Return (LD, pivots, info): the Bunch-Kaufman LDL factorisation of symmetric (or
    Hermitian) ``A`` without raising on failure unless ``check_errors``."""
    LD, piv, info = _ldl_call(A, hermitian, "torch.linalg.ldl_factor_ex")
    if check_errors and info._data.any():
        code = int(info._data.reshape(-1)[np.flatnonzero(info._data.reshape(-1))[0]])
        raise RuntimeError(f"torch.linalg.ldl_factor_ex: Unknown error code: {code}.")
    make = return_type("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
    return U.outs_(make(LD, piv, info), out)


def ldl_factor(A: Tensor, *, hermitian: bool = False, out=None):
    """Return (LD, pivots): the Bunch-Kaufman LDL factorisation of symmetric (or Hermitian)
    ``A``: the lower triangle of LD holds L (unit diagonal implied) and D's blocks."""
    LD, piv, info = _ldl_call(A, hermitian, "torch.linalg.ldl_factor_ex")
    if info._data.any():
        code = int(info._data.reshape(-1)[np.flatnonzero(info._data.reshape(-1))[0]])
        raise RuntimeError(f"torch.linalg.ldl_factor: Unknown error code: {code}.")
    return U.outs_(return_type("linalg_ldl_factor", ("LD", "pivots"))(LD, piv), out)


def _sytrs(A, piv, B, herm):
    """Solve A X = B in place on B from one factorisation (LAPACK's ?sytrs / ?hetrs, lower)."""
    n = A.shape[0]
    herm = herm and np.iscomplexobj(A)
    k = 0
    while k < n:
        if piv[k] > 0:
            kp = piv[k] - 1
            if kp != k:
                B[[k, kp]] = B[[kp, k]]
            if k < n - 1:
                B[k + 1 :] -= np.outer(A[k + 1 :, k], B[k])
            B[k] *= 1.0 / (A[k, k].real if herm else A[k, k])
            k += 1
        else:
            kp = -piv[k] - 1
            if kp != k + 1:
                B[[k + 1, kp]] = B[[kp, k + 1]]
            if k < n - 2:
                B[k + 2 :] -= np.outer(A[k + 2 :, k], B[k])
                B[k + 2 :] -= np.outer(A[k + 2 :, k + 1], B[k + 1])
            akm1k = A[k + 1, k]
            if herm:
                akm1 = A[k, k] / np.conj(akm1k)
                ak = A[k + 1, k + 1] / akm1k
                denom = akm1 * ak - 1.0
                bkm1 = B[k] / np.conj(akm1k)
                bk = B[k + 1] / akm1k
            else:
                akm1 = A[k, k] / akm1k
                ak = A[k + 1, k + 1] / akm1k
                denom = akm1 * ak - 1.0
                bkm1 = B[k] / akm1k
                bk = B[k + 1] / akm1k
            B[k] = (ak * bkm1 - bk) / denom
            B[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    conj = np.conj if herm else (lambda x: x)
    k = n - 1
    while k >= 0:
        if piv[k] > 0:
            if k < n - 1:
                B[k] -= conj(A[k + 1 :, k]) @ B[k + 1 :]
            kp = piv[k] - 1
            if kp != k:
                B[[k, kp]] = B[[kp, k]]
            k -= 1
        else:
            if k < n - 1:
                B[k] -= conj(A[k + 1 :, k]) @ B[k + 1 :]
                B[k - 1] -= conj(A[k + 1 :, k - 1]) @ B[k + 1 :]
            kp = -piv[k] - 1
            if kp != k:
                B[[k, kp]] = B[[kp, k]]
            k -= 2
    return B


@op("linalg_ldl_solve", grad_fn="NotImplemented", save=())
def _ldl_solve(ld, piv, b, hermitian=False):
    batch = np.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
    n, nrhs = b.shape[-2:]
    LD = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape((-1, n, n))
    P = np.broadcast_to(piv, batch + piv.shape[-1:]).reshape((-1, n))
    X = np.array(np.broadcast_to(b, batch + (n, nrhs)).reshape((-1, n, nrhs)), copy=True)
    for i in range(X.shape[0]):
        _sytrs(LD[i], P[i], X[i], hermitian)
    return fortran(X.reshape(batch + (n, nrhs)))


@_ldl_solve.backward
def _(ctx, g, hermitian=False):
    raise RuntimeError("derivative for aten::linalg_ldl_solve is not implemented")


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False, out=None):
    """Return X with ``A @ X = B`` from ``A``'s LDL factorisation (``ldl_factor``)."""
    check_tensor("linalg_ldl_solve", LD, "LD")
    check_tensor("linalg_ldl_solve", pivots, "pivots", 2)
    check_tensor("linalg_ldl_solve", B, "B", 3)
    fn = "torch.linalg.ldl_solve"
    U.check_square(fn, LD, "LD")
    if B._data.ndim < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    n = LD._data.shape[-1]
    if B._data.shape[-2] != n:
        raise RuntimeError(
            f"Incompatible matrix sizes for {fn}: each A matrix is {n} by {n} but each b matrix "
            f"is {B._data.shape[-2]} by {B._data.shape[-1]}"
        )
    if B.dtype is not LD.dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type "
            f"{U.type_name(B.dtype)} and A of type {U.type_name(LD.dtype)} instead."
        )
    res = dispatch(_ldl_solve, (LD, pivots, B), {"hermitian": bool(hermitian)})
    return U.out_(res, out)

"""The deprecated ``torch.*`` linear algebra names older code still calls.

Each delegates to the ``torch.linalg`` function (from its op-table module) with the old
argument order and result layout (``torch.svd`` returns ``V``, not ``Vh``;
``torch.triangular_solve`` takes ``(b, A)`` and returns a copy of ``A``...). The names torch
itself has removed (``torch.solve``, ``torch.eig``, ``torch.symeig``, ``torch.lstsq``,
``torch.matrix_rank``) raise torch's error pointing at the replacement.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core.tensor import Tensor, _wrap, contiguous_format
from ember._ops.linalg_decomp import cholesky as _cholesky
from ember._ops.linalg_decomp import qr as _qr
from ember._ops.linalg_decomp import svd as _svd
from ember._ops.linalg_decomp import svdvals
from ember._ops.linalg_solve import lu_factor, lu_factor_ex, solve_triangular
from ember._ops.linalg_solve import lu_solve as _lu_solve
from ember._ops.linalg_util import return_type
from ember._ops.registry import SAME, dispatch, op, publish

_WARNED: set = set()


def _warn_once(name: str, msg: str) -> None:
    # torch warns once per process (TORCH_WARN_ONCE)
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(msg, UserWarning, stacklevel=3)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """Return the Cholesky factor of the positive-definite ``input`` (lower, or upper if
    ``upper``). Deprecated: use :func:`ember.linalg.cholesky`."""
    _warn_once(
        "cholesky",
        "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
        "future PyTorch release.",
    )
    L = _cholesky(input)
    out = L.mH if upper else L
    return out.mT.contiguous().mT  # LAPACK's column-major layout, as torch's


def _colmajor(a):
    # LAPACK's layout, which torch's results keep: each matrix stored column by column
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)


def _cholesky_solve_arrays(b, L, upper):
    tri = np.triu(L) if upper else np.tril(L)
    tri_h = np.conj(np.swapaxes(tri, -1, -2))
    first, second = (tri_h, tri) if upper else (tri, tri_h)
    return _colmajor(np.linalg.solve(second, np.linalg.solve(first, b)))


@op(
    "cholesky_solve",
    grad_fn="CholeskySolveBackward0",
    args=("self", "input2"),
    save=("input2", "result"),
    promote=SAME,
)
def _cholesky_solve(b, L, upper):
    return _cholesky_solve_arrays(b, L, upper)


@_cholesky_solve.backward
def _(ctx, g, upper):
    # torch's cholesky_solve_backward: A = L L^H with L read as a full matrix
    L, x = ctx.saved_tensors
    gb = dispatch(_cholesky_solve, (g, L), {"upper": upper})
    gL = None
    if ctx.needs_input_grad[1]:
        common = gb @ x.mH
        common = common + common.mH
        gL = -(L @ common) if upper else -(common @ L)
    return gb if ctx.needs_input_grad[0] else None, gL


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """Return ``X`` solving ``A X = input`` for ``A`` given by its Cholesky factor
    ``input2`` (lower, or upper if ``upper``)."""
    for name, t in (("b", input), ("u", input2)):
        if t._data.ndim < 2:
            raise RuntimeError(
                f"{name} should have at least 2 dimensions, but has {t._data.ndim} dimensions "
                "instead"
            )
    return dispatch(_cholesky_solve, (input, input2), {"upper": bool(upper)})


@op("cholesky_inverse", grad_fn="CholeskyInverseBackward0", save=("self", "result"))
def _cholesky_inverse(L, upper):
    eye = np.broadcast_to(np.eye(L.shape[-1], dtype=L.dtype), L.shape)
    return _cholesky_solve_arrays(eye, L, upper)


@_cholesky_inverse.backward
def _(ctx, g, upper):
    # torch's cholesky_inverse_backward
    L, inv = ctx.saved_tensors
    common = inv @ (g + g.mH) @ inv
    return -(L @ common) if upper else -(common @ L)


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """Return the inverse of ``A`` given its Cholesky factor ``input``."""
    if input._data.ndim < 2:
        raise RuntimeError(
            "linalg.cholesky_inverse: The input tensor must have at least 2 dimensions."
        )
    return dispatch(_cholesky_inverse, (input,), {"upper": bool(upper)})


def qr(input: Tensor, some: bool = True):
    """Return ``(Q, R)``, the QR decomposition of ``input`` (reduced if ``some``).
    Deprecated: use :func:`ember.linalg.qr`."""
    _warn_once(
        "qr",
        "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future "
        "PyTorch release.",
    )
    Q, R = _qr(input, "reduced" if some else "complete")
    return return_type("qr", ("Q", "R"))(Q, R)


def svd(input: Tensor, some: bool = True, compute_uv: bool = True):
    """Return ``(U, S, V)`` with ``input = U diag(S) V^H`` (``V``, not ``Vh``). Without
    ``compute_uv``, ``U`` and ``V`` are zero matrices. Deprecated: use
    :func:`ember.linalg.svd`."""
    make = return_type("svd", ("U", "S", "V"))
    if not compute_uv:
        S = svdvals(input)
        m, n = input._data.shape[-2:]
        batch = tuple(input.shape[:-2])
        U = input.new_zeros(batch + (m, m))
        V = input.new_zeros(batch + (n, n)).mT
        return make(U, S, V)
    U, S, Vh = _svd(input, full_matrices=not some)
    return make(U, S, Vh.mH)


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False):
    """Return ``(LU, pivots)`` (and ``infos`` if ``get_infos``), the LU factorization of
    ``A``. Deprecated: use :func:`ember.linalg.lu_factor`."""
    _warn_once(
        "lu",
        "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex "
        "and will be removed in a future PyTorch release.",
    )
    m, n = A._data.shape[-2:] if A._data.ndim >= 2 else (0, 0)
    if m < n:
        return _lu_wide(A, pivot, get_infos)
    if get_infos:
        LU, piv, info = lu_factor_ex(A, pivot=pivot)
        return LU, piv, info
    LU, piv = lu_factor(A, pivot=pivot)
    return LU, piv


def _lu_wide(A: Tensor, pivot: bool, get_infos: bool):
    # A = P L [U1 U2] with P L U1 the LU of the leading square block (LAPACK pivots only
    # within it) and U2 = L^-1 P^T A2: the same factors, differentiable through ember ops
    from ember._ops.cat_split import cat

    m = A._data.shape[-2]
    LU1, piv, info = lu_factor_ex(A[..., :m], pivot=pivot)
    P, L, _ = lu_unpack(LU1, piv)
    U2 = solve_triangular(L, P.mT @ A[..., m:], upper=False, unitriangular=True)
    LU = cat([LU1, U2], -1).mT.contiguous().mT  # LAPACK's column-major layout
    return (LU, piv, info) if get_infos else (LU, piv)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """Return ``X`` solving ``A X = b`` for ``A`` given as ``(LU_data, LU_pivots)``.
    Deprecated: use :func:`ember.linalg.lu_solve`."""
    _warn_once(
        "lu_solve",
        "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a "
        "future PyTorch release.",
    )
    return _lu_solve(LU_data, LU_pivots, b)


def triangular_solve(
    b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False, unitriangular=False
):
    """Return ``(solution, cloned_coefficient)``: ``X`` solving ``op(A) X = b`` for triangular
    ``A`` (``op`` transposes if ``transpose``) and a copy of ``A``. Deprecated: use
    :func:`ember.linalg.solve_triangular`."""
    _warn_once(
        "triangular_solve",
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will "
        "be removed in a future PyTorch release.",
    )
    for name, t in (("b", b), ("A", A)):
        if t._data.ndim < 2:
            raise RuntimeError(
                f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it "
                f"has {t._data.ndim} dimensions instead"
            )
    coeff = A.mT if transpose else A
    X = solve_triangular(
        coeff, b, upper=bool(upper) != bool(transpose), unitriangular=unitriangular
    )
    batch = tuple(X.shape[:-2])
    clone = A.expand(batch + tuple(A.shape[-2:])).mT.clone(memory_format=contiguous_format).mT
    return return_type("triangular_solve", ("solution", "cloned_coefficient"))(X, clone)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots=True):
    """Return ``(P, L, U)`` with ``A = P L U`` from the LU factorization ``(LU_data,
    LU_pivots)`` of ``A`` (empty tensors for the parts not asked for)."""
    from ember._ops.creation import eye

    make = return_type("lu_unpack", ("P", "L", "U"))
    m, n = LU_data._data.shape[-2:]
    k = min(m, n)
    # the parts not asked for are empty (still attached to LU_data's history, as torch's)
    L = U = LU_data.reshape(-1)[:0].clone()
    P = LU_data.new_zeros((0,))
    if unpack_data:
        unit = eye(m, k, dtype=LU_data.dtype)
        L = LU_data[..., :, :k].tril(-1) + unit
        U = LU_data[..., :k, :].triu()
    if unpack_pivots:
        piv = LU_pivots._data.astype(np.int64) - 1
        batch = piv.shape[:-1]
        perm = np.broadcast_to(np.arange(m), batch + (m,)).copy()
        flat = perm.reshape(-1, m)
        fpiv = piv.reshape(-1, piv.shape[-1])
        idx = np.arange(flat.shape[0])
        for i in range(fpiv.shape[-1]):  # the row swaps, in LAPACK's order, over the batch
            j = fpiv[:, i]
            a, b = flat[idx, i].copy(), flat[idx, j].copy()
            flat[idx, i], flat[idx, j] = b, a
        # row i of P L U is row perm[i] of L U: P[perm[i], i] = 1
        p = np.zeros(batch + (m, m), dtype=np.dtype(LU_data.dtype.np))
        np.put_along_axis(p, flat.reshape(batch + (1, m)), 1, axis=-2)
        P = _wrap(p)
    return make(P, L, U)


# ------------------------------------------------------------------------------ removed names

_REMOVED = "This function was deprecated since version 1.9 and is now removed. "
_REMOVED_MSG = {
    "matrix_rank": _REMOVED.rstrip()
    + "\nPlease use the `torch.linalg.matrix_rank` function instead. "
    "The parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
    "lstsq": _REMOVED + "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
    "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in "
    "the returned tuple (although it returns other information about the problem).\n\n"
    "To get the QR decomposition consider using `torch.linalg.qr`.\n\n"
    "The returned solution in `torch.lstsq` stored the residuals of the solution in the last "
    "m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals "
    "are in the field 'residuals' of the returned named tuple.\n\n"
    "The unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
    "should be replaced with:\nX = torch.linalg.lstsq(A, B).solution",
    "solve": _REMOVED + "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
    "`torch.linalg.solve` has its arguments reversed and does not return the LU "
    "factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used with "
    "`torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced "
    "with:\nX = torch.linalg.solve(A, B)",
    "symeig": _REMOVED + "The default behavior has changed from using the upper triangular "
    "portion of the matrix by default to using the lower triangular portion.\n\n"
    "L, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
    "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\n"
    "L, V = torch.symeig(A, eigenvectors=True) should be replaced with:\n"
    "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "eig": _REMOVED + "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or "
    "`cdouble` rather than real tensors mimicking complex tensors.\n\n"
    "L, _ = torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)\n\n"
    "and\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
    "L_complex, V_complex = torch.linalg.eig(A)",
}


def _removed(name: str):
    def fn(*args, **kwargs):
        raise RuntimeError(_REMOVED_MSG[name])

    fn.__name__ = name
    fn.__doc__ = f"Raise torch's error: ``torch.{name}`` was removed in 1.9."
    return fn


publish(None, cholesky)
publish(None, cholesky_solve)
publish(None, cholesky_inverse)
publish(None, qr)
publish(None, svd)
publish(None, lu)
publish(None, lu_solve)
publish(None, triangular_solve)
publish(None, lu_unpack, method=False)
for _name in _REMOVED_MSG:
    # torch keeps these as functions that raise; as Tensor methods only lstsq and solve and the
    # eig pair remain
    publish(None, _removed(_name), method=_name != "matrix_rank")

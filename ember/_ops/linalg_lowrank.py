"""torch-level linear algebra outside ``linalg``: the deprecated ``spmm``, ``frobenius_norm``
and ``nuclear_norm``, and the randomized low-rank ``svd_lowrank``/``pca_lowrank``."""

from __future__ import annotations

import warnings

from ember._core.tensor import Tensor
from ember._ops import linalg_decomp, linalg_norm
from ember._ops.registry import API, publish


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Return ``input @ mat2`` (torch's sparse-dense product; ember's tensors are dense)."""
    from ember._ops.linalg import mm

    return mm(input, mat2)


def frobenius_norm(input: Tensor, dim=(-2, -1), keepdim: bool = False) -> Tensor:
    """Return the Frobenius norm over ``dim`` (deprecated: use ``linalg.vector_norm``)."""
    warnings.warn(
        "at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be "
        "removed in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, "
        "keepdim)` instead",
        UserWarning,
        stacklevel=2,
    )
    return API["norm"](input, 2, dim, keepdim)


def nuclear_norm(input: Tensor, dim=(-2, -1), keepdim: bool = False) -> Tensor:
    """Return the nuclear norm over ``dim`` (deprecated: use ``linalg.matrix_norm``)."""
    warnings.warn(
        "at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be "
        "removed in a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, "
        "keepdim)` instead",
        UserWarning,
        stacklevel=2,
    )
    return linalg_norm.matrix_norm(input, "nuc", dim, keepdim)


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    """Return ``(U, S, V)``, an estimate of the ``q`` leading singular triplets of ``A - M``.

    Randomized subspace iteration (Halko, Martinsson and Tropp, 2009, algorithms 4.4 and 5.1):
    a Gaussian ``(n, q)`` test matrix drawn from the global generator spans a sample of the
    range of ``A - M``; ``niter`` power passes sharpen it; the SVD of the small projection
    gives the triplets. Tall and wide inputs are handled through the transpose, so the test
    matrix is drawn for the shorter side, as torch draws it.
    """
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if m < n:
        U, S, V = svd_lowrank(A.mT, q, niter, None if M is None else M.mT)
        return V, S, U

    def times(right):  # (A - M) @ right, without forming A - M
        return A @ right if M is None else A @ right - M @ right

    def adjoint_times(Q):  # (A - M)^H @ Q
        return A.mH @ Q if M is None else A.mH @ Q - M.mH @ Q

    test_matrix = API["randn"](n, q, dtype=A.dtype)
    Q = linalg_decomp.qr(times(test_matrix)).Q
    for _ in range(niter):
        Q = linalg_decomp.qr(adjoint_times(Q)).Q
        Q = linalg_decomp.qr(times(Q)).Q
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = linalg_decomp.svd(B, full_matrices=False)
    return Q @ U, S, Vh.mH


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """Return ``(U, S, V)`` of the ``q`` leading principal components of ``A`` (rows are
    samples): ``A - mean ~= U diag(S) V^T``, estimated as ``svd_lowrank`` estimates it."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    if center:
        A = A - A.mean(dim=-2, keepdim=True)
    return svd_lowrank(A, q, niter)


for _fn in (spmm, frobenius_norm, nuclear_norm, svd_lowrank, pca_lowrank):
    publish(None, _fn, method=False)

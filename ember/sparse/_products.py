"""Products of a sparse COO matrix with a dense matrix or vector (``torch.sparse.mm``,
``torch.mm``/``matmul``/``@``/``spmm``/``addmm`` with a sparse operand); the kernels are the op
table entries of ``_ops.py``."""

from __future__ import annotations

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember.sparse._coo import SparseTensor


def _check_mm(a: Tensor, b: Tensor) -> None:
    for x in (a, b):
        if isinstance(x, SparseTensor) and (x.sparse_dim() != 2 or x.dense_dim()):
            raise NotImplementedError(
                "ember: sparse products need a 2-D sparse matrix (2 sparse, 0 dense dims)"
            )
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise RuntimeError(f"{'self' if a.ndim != 2 else 'mat2'} must be a matrix")
    if isinstance(a, SparseTensor):
        if a.shape[1] != b.shape[0]:
            raise RuntimeError(
                f"addmm: Argument #3 (dense): Expected dim 0 size {a.shape[1]}, got {b.shape[0]}"
            )
    elif a.shape[1] != b.shape[0]:  # torch computes dense @ sparse as (sparse.T @ dense.T).T
        raise RuntimeError(
            f"addmm: Argument #3 (dense): Expected dim 0 size {b.shape[0]}, got {a.shape[1]}"
        )
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected scalar type {D.scalar_type_name(a.dtype)} but found "
            f"{D.scalar_type_name(b.dtype)}"
        )


def _mm(a: Tensor, b: Tensor, kind: str, bias: Tensor | None = None, beta=1, alpha=1) -> Tensor:
    """``a @ b`` with one sparse operand (``beta * bias + alpha * a @ b`` given ``bias``).
    ``kind`` "mm" is torch.mm's (MmBackward0/AddmmBackward0 nodes; a sparse leaf gets a dense
    gradient), "sparse" torch.sparse.mm's (SparseAddmmBackward0; a sparse leaf's gradient is
    sparse)."""
    from ember._core.grad_mode import STATE
    from ember.sparse import _ops

    a_sp = isinstance(a, SparseTensor)
    b_sp = isinstance(b, SparseTensor)
    if a_sp and b_sp:
        raise NotImplementedError("ember: sparse @ sparse products")
    _check_mm(a, b)
    S = a if a_sp else b
    if kind == "mm" and S._vals.requires_grad and S.is_leaf and STATE.grad_enabled:
        # torch.mm gives a sparse leaf a dense gradient: multiply a dense stand-in leaf
        leaf = S._dense_leaf
        dense = S.detach().to_dense()
        if leaf is None:
            leaf = S._dense_leaf = dense.requires_grad_(True)
        else:
            leaf._data[...] = dense.numpy()
        a, b = (leaf, b) if a_sp else (a, leaf)
        if bias is None:
            return _linalg().matmul(a, b)
        return _linalg().addmm(bias, a, b, beta=beta, alpha=alpha)
    pat = S.__dict__.get("_pattern")
    if pat is None:
        pat = S._pattern = _ops.Pattern(S._idx[0], S._idx[1])
    if not a_sp:
        out = _ops._DENSE_SPARSE(S._vals, a, pat=pat, n=S._sshape[1])
        if bias is None:
            return out
        return (out * alpha if alpha != 1 else out) + (bias * beta if beta != 1 else bias)
    n = S._sshape[0]
    if bias is not None:
        o = _ops._ADDMM if kind == "mm" else _ops._SPARSE_ADDMM
        return o(bias, S._vals, b, pat=pat, n=n, beta=beta, alpha=alpha)
    if b.ndim == 1:
        o = _ops._SPARSE_VEC
    else:
        o = _ops._SPARSE_DENSE if kind == "mm" else _ops._SPARSE_MM
    return o(S._vals, b, pat=pat, n=n)


def _linalg():
    from ember._ops import linalg

    return linalg


def mm(mat1: Tensor, mat2: Tensor, reduce: str = "sum") -> Tensor:
    """Return the (dense) product of a sparse matrix and a dense matrix (torch.sparse.mm);
    a sparse leaf gets a sparse gradient."""
    if reduce != "sum":
        raise NotImplementedError("ember: torch.sparse.mm(reduce=...) other than 'sum'")
    if not isinstance(mat1, SparseTensor):
        if isinstance(mat2, SparseTensor):
            return _mm(mat1, mat2, "mm")
        return _linalg().matmul(mat1, mat2)
    return _mm(mat1, mat2, "sparse")


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """Return ``beta * mat + alpha * (mat1 @ mat2)`` for a sparse ``mat1`` (dense result)."""
    return _mm(mat1, mat2, "sparse", mat, beta, alpha)


def _torch_addmm(input, mat1, mat2, beta, alpha):
    return _mm(mat1, mat2, "mm", input, beta, alpha)


# ---------------------------------------------------------------------------------------------
# torch.mm / matmul / addmm with a sparse operand: linalg's products hand it over (registered
# when the first sparse tensor is made, so dense programs pay one empty-list test)


def _register() -> None:
    from ember._ops import linalg

    linalg.SPARSE[:] = [SparseTensor, _mm, _torch_addmm]


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Return ``input @ mat2`` for a sparse or dense ``input`` (``torch.spmm``)."""
    if isinstance(input, SparseTensor) or isinstance(mat2, SparseTensor):
        return _mm(input, mat2, "mm")
    return _linalg().matmul(input, mat2)

"""Matrix products: matmul and its named cases (mm, bmm, mv, dot)."""

from __future__ import annotations

import numpy as np

from ember._core.tensor import Tensor
from ember._ops.registry import SAME, Op, dispatch, expose, op


def _np_matmul(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D"
        )
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        if a.ndim == 1 and b.ndim == 1:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same "
                f"number of elements, but got {ka} and {kb} elements respectively"
            )
        sa = "x".join(map(str, a.shape if a.ndim > 1 else (1,) + a.shape))
        sb = "x".join(map(str, b.shape if b.ndim > 1 else b.shape + (1,)))
        if a.ndim <= 2 and b.ndim <= 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{b.shape[0] if b.ndim > 2 else 1}, {ka}] but got: "
            f"[{b.shape[0] if b.ndim > 2 else 1}, {kb}]."
        )
    if a.dtype.kind in "biu" and a.dtype == np.bool_:
        raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    return np.matmul(a, b)


def _matmul_backward(ctx, g):
    a, b = ctx.saved_tensors
    need = ctx.needs_input_grad
    ga = gb = None
    if a.ndim == 1 and b.ndim == 1:
        ga = g * b.conj() if need[0] else None
        gb = g * a.conj() if need[1] else None
    elif b.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        if need[0]:
            ga = g.unsqueeze(-1) * b.conj()
        if need[1]:
            gb = (a.mT.conj() @ g.unsqueeze(-1)).squeeze(-1)
    elif a.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        if need[0]:
            ga = (g.unsqueeze(-2) @ b.mT.conj()).squeeze(-2)
        if need[1]:
            gb = a.conj().unsqueeze(-1) * g.unsqueeze(-2)
    else:
        ga = g @ b.mT.conj() if need[0] else None
        gb = a.mT.conj() @ g if need[1] else None
    return ga, gb


def _matmul_op(grad_fn: str) -> Op:
    o = op("matmul", grad_fn=grad_fn, save=(0, 1), promote=SAME)(_np_matmul)
    o.backward(_matmul_backward)
    return o


# torch's matmul decomposes into these; the top node carries the same name as torch's
_DOT = _matmul_op("DotBackward0")
_MM = _matmul_op("MmBackward0")
_MV = _matmul_op("MvBackward0")
_VM = _matmul_op("SqueezeBackward4")
_BATCHED = _matmul_op("UnsafeViewBackward0")
_BMM = _matmul_op("BmmBackward0")


def matmul(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Return the matrix product of two tensors, with torch's rules for 1-D and batched inputs."""
    if not isinstance(other, Tensor) or not isinstance(input, Tensor):
        raise TypeError(
            f"matmul(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}"
        )
    na, nb = input._data.ndim, other._data.ndim
    if na == 1 and nb == 1:
        o = _DOT
    elif na == 2 and nb == 2:
        o = _MM
    elif na == 2 and nb == 1:
        o = _MV
    elif na == 1 and nb == 2:
        o = _VM
    else:
        o = _BATCHED
    return dispatch(o, (input, other))


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Return the product of two 2-D matrices."""
    if input.ndim != 2 or mat2.ndim != 2:
        bad = input if input.ndim != 2 else mat2
        which = "self" if bad is input else "mat2"
        raise RuntimeError(f"{which} must be a matrix")
    return dispatch(_MM, (input, mat2))


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Return the batched product of two 3-D tensors with equal batch sizes."""
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(
            f"batch1 and batch2 must have same number of batches, got {input.shape[0]} and "
            f"{mat2.shape[0]}"
        )
    return dispatch(_BMM, (input, mat2))


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Return the product of a matrix and a vector."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    return dispatch(_MV, (input, vec))


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Return the dot product of two 1-D tensors."""
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input.dtype is not tensor.dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{_name(input)} and {_name(tensor)}"
        )
    return dispatch(_DOT, (input, tensor))


def _name(t):
    from ember._ops.registry import _type_name

    return _type_name(t.dtype)


for _f in (matmul, mm, bmm, mv, dot):
    expose(_f)
Tensor.__matmul__ = matmul
Tensor.__rmatmul__ = lambda self, other: matmul(other, self)

"""Products: matmul and its named cases (mm, bmm, mv, dot), vdot, inner, outer, the fused
``add*`` products (addmm, addmv, addbmm, baddbmm, addr), tensordot, multi_dot, chain_matmul,
vecdot, cross, matrix_power.

Products whose torch implementation is a composition (inner, tensordot, multi_dot, vecdot,
outer) are compositions of ember ops here too, so they carry the same grad_fn and their
double backward comes for free.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, wrap_dim
from ember._ops.linalg_util import out_ as _out
from ember._ops.pointwise import _conj
from ember._ops.registry import (
    AUTOCAST,
    SAME,
    Op,
    _type_name,
    autocast_inputs,
    dispatch,
    dispatch_inplace,
    op,
    publish,
    result_dtype,
)


def _swap_product(a, b) -> bool:
    """True for a float32 product of a few rows by a transposed matrix (``x @ w.T`` with a
    small batch), which OpenBLAS runs 1.3-2x faster as ``(w @ x.T).T`` (measured single-threaded
    for 2-32 rows, 64-1024 columns of ``x``, 256-4096 of ``w.T``; no gain in float64 or for
    more rows)."""
    return (
        a.ndim == 2
        and b.ndim == 2
        and a.dtype == np.float32
        and b.dtype == np.float32
        and 2 <= a.shape[0] <= 32
        and a.shape[1] >= 64
        and b.shape[1] >= 256
        and b.strides[0] == 4
        and b.strides[1] == 4 * b.shape[0]
    )


def _matmul(a, b):
    """``np.matmul`` in the operands' dtype: NumPy (ml_dtypes >= 0.5) multiplies bfloat16
    matrices in float32; round the product back, as torch's float32-accumulating kernels do."""
    if _swap_product(a, b):  # (a transposed copy of the (N, M) product: cheap at small M)
        return np.ascontiguousarray(np.matmul(b.T, a.T).T)
    out = np.matmul(a, b)
    if out.dtype != a.dtype:
        out = out.astype(a.dtype)
    return out


def _np_matmul(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D"
        )
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        raise _matmul_shape_error(a.shape, b.shape)
    if a.dtype == np.bool_:
        raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    try:
        return _matmul(a, b)
    except ValueError:
        raise _matmul_shape_error(a.shape, b.shape) from None


def _matmul_shape_error(a: tuple, b: tuple) -> RuntimeError:
    """torch's error for operands of matmul whose sizes do not fit."""
    ka = a[-1]
    kb = b[-2] if len(b) > 1 else b[0]
    if len(a) == 1 and len(b) == 1:
        return RuntimeError(
            f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same "
            f"number of elements, but got {ka} and {kb} elements respectively"
        )
    if len(a) <= 2 and len(b) <= 2:
        sa = "x".join(map(str, a if len(a) > 1 else (1,) + a))
        sb = "x".join(map(str, b if len(b) > 1 else b + (1,)))
        return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
    # batched: torch broadcasts the batch dims first, then checks batch2's leading sizes
    ba, bb = a[:-2], b[:-2]
    n = max(len(ba), len(bb))
    ba, bb = (1,) * (n - len(ba)) + ba, (1,) * (n - len(bb)) + bb
    for d in range(n - 1, -1, -1):
        if ba[d] != bb[d] and ba[d] != 1 and bb[d] != 1:
            return RuntimeError(
                f"The size of tensor a ({ba[d]}) must match the size of tensor b ({bb[d]}) at "
                f"non-singleton dimension {d}"
            )
    batch = math.prod(max(x, y) if x and y else 0 for x, y in zip(ba, bb))
    return RuntimeError(
        f"Expected size for first two dimensions of batch2 tensor to be: "
        f"[{batch}, {ka}] but got: [{batch}, {kb}]."
    )


def _matmul_backward(ctx, g):
    a, b = ctx.saved_tensors
    need = ctx.needs_input_grad
    ga = gb = None
    if a.ndim == 1 and b.ndim == 1:
        ga = g * _conj(b) if need[0] else None
        gb = g * _conj(a) if need[1] else None
    elif b.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        if need[0]:
            ga = g.unsqueeze(-1) * _conj(b)
        if need[1]:
            gb = (a.mH @ g.unsqueeze(-1)).squeeze(-1)
    elif a.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        if need[0]:
            ga = (g.unsqueeze(-2) @ b.mH).squeeze(-2)
        if need[1]:
            gb = _conj(a).unsqueeze(-1) * g.unsqueeze(-2)
    elif a.ndim == 2 and b.ndim == 2:
        ga, gb = _mm_grads(ctx.needs_input_grad, g, a, b, first=0)
    else:
        ga = g @ b.mH if need[0] else None
        gb = a.mH @ g if need[1] else None
    return ga, gb


def _column_major(t: Tensor) -> bool:
    """True for a matrix laid out as a transposed one (torch's ``strides == (1, rows)``)."""
    return _column_major_array(t._data)


def _column_major_array(d: np.ndarray) -> bool:
    n = d.itemsize
    return d.ndim == 2 and d.strides[0] == n and d.strides[1] == d.shape[0] * n


def _mm_pair(need, g, a, b, first, mT, conj, column_major):
    """Gradients of ``a @ b`` for matrices, each laid out as its input (torch's
    ``mm_mat1_backward``/``mm_mat2_backward``): the weight of ``F.linear`` enters as ``w.t()``,
    so its gradient comes out row-major for ``w`` and becomes ``w.grad`` without a copy. Written
    once for Tensors and arrays: ``mT``, ``conj`` and ``column_major`` are the kind's own."""
    ga = gb = None
    if need[first]:
        ga = mT(conj(b) @ mT(g)) if column_major(a) else g @ mT(conj(b))
    if need[first + 1]:
        gb = mT(mT(g) @ conj(a)) if column_major(b) else mT(conj(a)) @ g
    return ga, gb


def _mm_grads(need, g, a, b, first: int = 1):
    """``_mm_pair`` on Tensors (ember ops: differentiable)."""
    return _mm_pair(need, g, a, b, first, lambda t: t.mT, _conj, _column_major)


def _mm_array_grads(need, g, a, b, first: int = 1):
    """``_mm_pair`` on arrays."""
    return _mm_pair(need, g, a, b, first, _mT, _c, _column_major_array)


def _c(a: np.ndarray) -> np.ndarray:
    return a.conj() if a.dtype.kind == "c" else a


def _mT(a: np.ndarray) -> np.ndarray:
    return a.swapaxes(-1, -2)


def _matmul_array_backward(ctx, g):
    a, b = ctx.saved_arrays
    need = ctx.needs_input_grad
    ga = gb = None
    if a.ndim == 1 and b.ndim == 1:
        ga = g * _c(b) if need[0] else None
        gb = g * _c(a) if need[1] else None
    elif b.ndim == 1:
        ga = np.multiply.outer(g, _c(b)) if need[0] else None
        gb = _matmul(_mT(_c(a)), g[..., None])[..., 0] if need[1] else None
    elif a.ndim == 1:
        ga = _matmul(g[..., None, :], _mT(_c(b)))[..., 0, :] if need[0] else None
        gb = _c(a)[:, None] * g[..., None, :] if need[1] else None
    elif b.ndim == 2 and a.ndim > 2:
        # (..., n, k) @ (k, m): b's gradient is one product over a's rows folded together, not
        # a stack of batch-many (k, m) products summed afterwards (a tied 50257-token head at
        # batch 4 held 590 MB for its 150 MB gradient)
        k, m = a.shape[-1], b.shape[-1]
        ga, gb = _mm_array_grads(need, g.reshape(-1, m), a.reshape(-1, k), b, first=0)
        ga = None if ga is None else ga.reshape(a.shape)
    else:
        ga, gb = _mm_array_grads(need, g, a, b, first=0)
    return ga, gb


def _matmul_op(grad_fn: str, other: str | None) -> Op:
    # ``other``: torch's name of the second operand of the top node (None: torch's top node of
    # the decomposition, a view, saves nothing)
    args = ("self", other or "other")
    save = args if other else ("_self", "_other")
    o = op("matmul", grad_fn=grad_fn, args=args, save=save, promote=SAME)(_np_matmul)
    o.backward(_matmul_backward)
    o.array_backward(_matmul_array_backward)
    return o


# torch's matmul decomposes into these; the top node carries the same name as torch's
_DOT = _matmul_op("DotBackward0", "tensor")
_MM = _matmul_op("MmBackward0", "mat2")
_MV = _matmul_op("MvBackward0", "vec")
_VM = _matmul_op("SqueezeBackward4", None)
_BATCHED = _matmul_op("UnsafeViewBackward0", None)
_BMM = _matmul_op("BmmBackward0", "mat2")


def _name(t: Tensor) -> str:
    return _type_name(t.dtype)


def _check_tensors(fn: str, *pairs) -> None:
    for i, (arg, x) in enumerate(pairs):
        if not isinstance(x, Tensor):
            raise TypeError(
                f"{fn}(): argument '{arg}' (position {i + 1}) must be Tensor, not "
                f"{type(x).__name__}"
            )


# ember.sparse registers (SparseTensor, product, addmm) here when it makes its first sparse
# tensor; until then the dense products pay one empty-list test
SPARSE: list = []


def matmul(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Return the matrix product of two tensors, with torch's rules for 1-D and batched inputs."""
    if SPARSE and (type(input) is SPARSE[0] or type(other) is SPARSE[0]):
        return SPARSE[1](input, other, "mm")
    if AUTOCAST:
        input, other = autocast_inputs(_MM, (input, other))
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        _check_tensors("matmul", ("input", input), ("other", other))
    na, nb = input._data.ndim, other._data.ndim
    if na and nb and input.dtype is not other.dtype:
        raise _matmul_dtype_error(input, other)
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
    if na >= 2 and nb <= 2 and nb and input._data.shape[-1] != other._data.shape[0]:
        raise _folded_matmul_error(input._data.shape, other._data.shape)
    return _out(dispatch(o, (input, other)), out)


def _folded_matmul_error(a: tuple, b: tuple) -> RuntimeError:
    # torch folds the batch dims of the left operand into rows: its mm / mv errors name them
    rows = math.prod(a[:-1])
    if len(b) == 1:
        return RuntimeError(
            f"size mismatch, got input ({rows}), mat ({rows}x{a[-1]}), vec ({b[0]})"
        )
    return RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({rows}x{a[-1]} and {b[0]}x{b[1]})"
    )


def _cpp_name(t: Tensor) -> str:
    return D.cpp_type_name(t.dtype)


def _m1m2_error(a: Tensor, b: Tensor) -> RuntimeError:
    return RuntimeError(
        f"expected m1 and m2 to have the same dtype, but got: {_cpp_name(a)} != {_cpp_name(b)}"
    )


def _mv_error(a: Tensor, v: Tensor) -> RuntimeError:
    return RuntimeError(
        f"addmv input tensors must have the same dtype, but got {_name(v)}, {_name(a)}, and "
        f"{_name(v)}"
    )


def _matmul_dtype_error(a: Tensor, b: Tensor) -> RuntimeError:
    na, nb = a.ndim, b.ndim
    if na == 1 and nb == 1:
        return RuntimeError(
            f"dot : expected both vectors to have same dtype, but found {_name(a)} and {_name(b)}"
        )
    # torch folds the batch dims of a left operand of 3 or more dims into mm / mv
    if nb == 2:
        return _m1m2_error(a, b)
    if na >= 2 and nb == 1:
        return _mv_error(a, b)
    return _scalar_type_error(a, b)


def mm(input: Tensor, mat2: Tensor, *, out=None) -> Tensor:
    """Return the product of two 2-D matrices."""
    if SPARSE and (type(input) is SPARSE[0] or type(mat2) is SPARSE[0]):
        return SPARSE[1](input, mat2, "mm")
    _check_tensors("mm", ("input", input), ("mat2", mat2))
    if AUTOCAST:
        input, mat2 = autocast_inputs(_MM, (input, mat2))
    if input.ndim != 2 or mat2.ndim != 2:
        which = "self" if input.ndim != 2 else "mat2"
        raise RuntimeError(f"{which} must be a matrix")
    if input.dtype is not mat2.dtype:
        raise _m1m2_error(input, mat2)
    return _out(dispatch(_MM, (input, mat2)), out)


def _scalar_type_error(a: Tensor, b: Tensor) -> RuntimeError:
    return RuntimeError(f"expected scalar type {_name(a)} but found {_name(b)}")


def bmm(input: Tensor, mat2: Tensor, *, out=None) -> Tensor:
    """Return the batched product of two 3-D tensors with equal batch sizes."""
    _check_tensors("bmm", ("input", input), ("mat2", mat2))
    if AUTOCAST:
        input, mat2 = autocast_inputs(_BMM, (input, mat2))
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"batch{1 if input.ndim != 3 else 2} must be a 3D tensor")
    b, k = input.shape[0], input.shape[2]
    if mat2.shape[0] != b or mat2.shape[1] != k:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but "
            f"got: [{mat2.shape[0]}, {mat2.shape[1]}]."
        )
    if input.dtype is not mat2.dtype:
        raise _scalar_type_error(input, mat2)
    return _out(dispatch(_BMM, (input, mat2)), out)


def mv(input: Tensor, vec: Tensor, *, out=None) -> Tensor:
    """Return the product of a matrix and a vector."""
    _check_tensors("mv", ("input", input), ("vec", vec))
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise _folded_matmul_error(input._data.shape, vec._data.shape)
    if input.dtype is not vec.dtype:
        raise _mv_error(input, vec)
    return _out(dispatch(_MV, (input, vec)), out)


def _check_dot(fn: str, a: Tensor, b: Tensor) -> None:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"{fn} : expected both vectors to have same dtype, but found {_name(a)} and {_name(b)}"
        )


def dot(input: Tensor, tensor: Tensor, *, out=None) -> Tensor:
    """Return the dot product of two 1-D tensors."""
    _check_tensors("dot", ("input", input), ("tensor", tensor))
    _check_dot("dot", input, tensor)
    return _out(dispatch(_DOT, (input, tensor)), out)


@op("vdot", grad_fn="VdotBackward0", save=("self", "other"))
def _vdot(a, b):
    if a.shape[0] != b.shape[0]:
        return _np_matmul(a, b)  # torch's size error
    return np.asarray(np.vdot(a, b))


@_vdot.backward
def _(ctx, g):
    a, b = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (_conj(g) * b if need[0] else None, g * a if need[1] else None)


def vdot(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Return the dot product of two 1-D tensors, conjugating the first."""
    _check_tensors("vdot", ("input", input), ("other", other))
    _check_dot("dot", input, other)
    return _out(dispatch(_vdot, (input, other)), out)


def outer(input: Tensor, vec2: Tensor, *, out=None) -> Tensor:
    """Return the outer product of two 1-D tensors."""
    _check_tensors("outer", ("input", input), ("vec2", vec2))
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return _out(input.reshape(input.shape[0], 1) * vec2, out)


def ger(input: Tensor, vec2: Tensor, *, out=None) -> Tensor:
    """Alias of :func:`outer`."""
    return outer(input, vec2, out=out)


def inner(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Return the sum of products over the last dimension of both tensors (a * b if one is 0-d)."""
    _check_tensors("inner", ("input", input), ("other", other))
    if input.ndim == 0 or other.ndim == 0:
        return _out(input * other, out)
    if input.dtype is not other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    return _out(tensordot(input, other, ([-1], [-1])), out)


# ------------------------------------------------------------------------------ fused add-products


def _scaled_sum(inp, prod, beta, alpha):
    if alpha != 1:
        # (a Python float would lift a bfloat16 product to float32: ml_dtypes' scalars are
        # not weak)
        prod = prod * (prod.dtype.type(alpha) if prod.dtype.kind == "V" else alpha)
    if beta == 1 and type(inp) is np.ndarray and inp.ndim <= prod.ndim:
        try:  # the common case (a bias): add in place; a shape error is reported below
            return np.add(prod, inp, out=prod, casting="unsafe")
        except ValueError:
            pass
    try:
        bshape = np.broadcast_shapes(np.shape(inp), prod.shape)
    except ValueError:
        bshape = None
    if bshape != prod.shape:
        ishape = list(np.shape(inp))
        raise RuntimeError(
            f"The expanded size of the tensor ({prod.shape[-1]}) must match the existing size "
            f"({ishape[-1] if ishape else 1}) at non-singleton dimension {prod.ndim - 1}.  "
            f"Target sizes: {list(prod.shape)}.  Tensor sizes: {ishape}"
        )
    if beta == 0:  # torch ignores input then: its nan and inf do not propagate
        return prod
    if beta != 1:
        inp = inp * beta
    return np.add(prod, inp, out=prod, casting="unsafe")  # ``prod`` is ours: add in place


def _scaled_grads(ctx, g, saved, grads, beta, alpha):
    """Backward of ``beta * input + alpha * prod(a, b)`` (Tensors or arrays alike)."""
    need = ctx.needs_input_grad
    gi = (g * _conj_scalar(beta) if beta != 1 else g) if need[0] else None
    ga = gb = None
    if need[1] or need[2]:
        ga, gb = grads(need, g, *saved)
        if alpha != 1:
            ga = ga * _conj_scalar(alpha) if ga is not None else None
            gb = gb * _conj_scalar(alpha) if gb is not None else None
    return gi, ga, gb


def _add_prod_op(name, grad_fn, prod, grads, args, array_grads=None):
    """Declare ``beta * input + alpha * prod(a, b)``; ``grads(needs_input_grad, g, a, b)`` ->
    (ga, gb), and optionally the same on arrays, ``array_grads``."""

    @op(name, grad_fn=grad_fn, args=("self", *args), save=args)
    def fwd(inp, a, b, beta=1, alpha=1):
        return _scaled_sum(inp, prod(a, b), beta, alpha)

    @fwd.backward
    def _(ctx, g, beta=1, alpha=1):
        return _scaled_grads(ctx, g, ctx.saved_tensors, grads, beta, alpha)

    if array_grads is not None:

        @fwd.array_backward
        def _(ctx, g, beta=1, alpha=1):
            return _scaled_grads(ctx, g, ctx.saved_arrays, array_grads, beta, alpha)

    return fwd


def _conj_scalar(x):
    return x.conjugate() if isinstance(x, complex) else x


def _mv_grads(need, g, a, v):
    return (
        g.unsqueeze(-1) * _conj(v) if need[1] else None,
        (a.mH @ g.unsqueeze(-1)).squeeze(-1) if need[2] else None,
    )


def _addbmm_grads(need, g, a, b):
    ge = g.unsqueeze(0).expand(a.shape[0], *g.shape)
    return (ge @ b.mH if need[1] else None, a.mH @ ge if need[2] else None)


def _addr_grads(need, g, u, v):
    return (
        (g @ _conj(v).unsqueeze(-1)).squeeze(-1) if need[1] else None,
        (g.mT @ _conj(u).unsqueeze(-1)).squeeze(-1) if need[2] else None,
    )


_MAT_ARGS = ("mat1", "mat2")
_BATCH_ARGS = ("batch1", "batch2")
_addmm = _add_prod_op("addmm", "AddmmBackward0", _matmul, _mm_grads, _MAT_ARGS, _mm_array_grads)
_addmv = _add_prod_op("addmv", "AddmvBackward0", _matmul, _mv_grads, ("mat", "vec"))
_addbmm = _add_prod_op(
    "addbmm", "AddbmmBackward0", lambda a, b: _matmul(a, b).sum(0), _addbmm_grads, _BATCH_ARGS
)
_baddbmm = _add_prod_op(
    "baddbmm", "BaddbmmBackward0", _matmul, _mm_grads, _BATCH_ARGS, _mm_array_grads
)
_addr = _add_prod_op(
    "addr", "AddrBackward0", lambda u, v: np.multiply.outer(u, v), _addr_grads, ("vec1", "vec2")
)


def _params(beta, alpha):
    p = {}
    if beta != 1:
        p["beta"] = beta
    if alpha != 1:
        p["alpha"] = alpha
    return p


def _check_mm(m1: Tensor, m2: Tensor) -> None:
    if m1.ndim != 2 or m2.ndim != 2:
        raise RuntimeError(
            f"{'mat1' if m1.ndim != 2 else 'mat2'} must be a matrix, got "
            f"{m1.ndim if m1.ndim != 2 else m2.ndim}-D tensor"
        )
    if m1.shape[1] != m2.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({m1.shape[0]}x{m1.shape[1]} and "
            f"{m2.shape[0]}x{m2.shape[1]})"
        )


def _same_dtype3(fn, inp, a, b, msg):
    if not (inp.dtype is a.dtype is b.dtype):
        raise RuntimeError(msg(inp, a, b))


def _mm_dtype_msg(inp, a, b):
    # torch compares self with mat2 first, then mat1 with mat2
    if inp.dtype is not b.dtype:
        return f"self and mat2 must have the same dtype, but got {_name(inp)} and {_name(b)}"
    return f"mat1 and mat2 must have the same dtype, but got {_name(a)} and {_name(b)}"


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """Return ``beta * input + alpha * (mat1 @ mat2)``."""
    if SPARSE and (type(mat1) is SPARSE[0] or type(mat2) is SPARSE[0]):
        return SPARSE[2](input, mat1, mat2, beta, alpha)
    _check_tensors("addmm", ("input", input), ("mat1", mat1), ("mat2", mat2))
    if AUTOCAST:
        input, mat1, mat2 = autocast_inputs(_addmm, (input, mat1, mat2))
    _check_mm(mat1, mat2)
    _same_dtype3("addmm", input, mat1, mat2, _mm_dtype_msg)
    return _out(dispatch(_addmm, (input, mat1, mat2), _params(beta, alpha)), out)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """Return ``beta * input + alpha * (mat @ vec)``."""
    _check_tensors("addmv", ("input", input), ("mat", mat), ("vec", vec))
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}"
        )
    if mat.shape[1] != vec.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({input.shape[0] if input.ndim else 1}), mat "
            f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})"
        )
    _same_dtype3(
        "addmv",
        input,
        mat,
        vec,
        lambda i, a, b: (
            "addmv input tensors must have the same dtype, but got "
            f"{_name(i)}, {_name(a)}, and {_name(b)}"
        ),
    )
    return _out(dispatch(_addmv, (input, mat, vec), _params(beta, alpha)), out)


def _check_batches(b1: Tensor, b2: Tensor) -> None:
    if b1.ndim != 3 or b2.ndim != 3:
        raise RuntimeError(f"batch{1 if b1.ndim != 3 else 2} must be a 3D tensor")
    if b1.shape[0] != b2.shape[0]:
        raise RuntimeError(
            f"batch1 and batch2 must have same number of batches, got {b1.shape[0]} and "
            f"{b2.shape[0]}"
        )
    if b1.shape[2] != b2.shape[1]:
        raise RuntimeError(
            f"Incompatible matrix sizes for bmm ({b1.shape[1]}x{b1.shape[2]} and "
            f"{b2.shape[1]}x{b2.shape[2]})"
        )


def _baddbmm_dtype_msg(inp, a, b):
    # torch compares self with batch1 first, then batch1 with batch2
    if inp.dtype is not a.dtype:
        return (
            f"Input dtypes must be the same, got: input {_cpp_name(inp)}, batch1: "
            f"{_cpp_name(a)}, batch2: {_cpp_name(b)}"
        )
    return f"expected scalar type {_name(a)} but found {_name(b)}"


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """Return ``beta * input + alpha * sum_i(batch1[i] @ batch2[i])``."""
    _check_tensors("addbmm", ("input", input), ("batch1", batch1), ("batch2", batch2))
    if AUTOCAST:
        input, batch1, batch2 = autocast_inputs(_addbmm, (input, batch1, batch2))
    _check_batches(batch1, batch2)
    _same_dtype3("addbmm", input, batch1, batch2, _mm_dtype_msg)
    return _out(dispatch(_addbmm, (input, batch1, batch2), _params(beta, alpha)), out)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """Return ``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices."""
    _check_tensors("baddbmm", ("input", input), ("batch1", batch1), ("batch2", batch2))
    if AUTOCAST:
        input, batch1, batch2 = autocast_inputs(_baddbmm, (input, batch1, batch2))
    _check_batches(batch1, batch2)
    _same_dtype3("baddbmm", input, batch1, batch2, _baddbmm_dtype_msg)
    return _out(dispatch(_baddbmm, (input, batch1, batch2), _params(beta, alpha)), out)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """Return ``beta * input + alpha * outer(vec1, vec2)``."""
    _check_tensors("addr", ("input", input), ("vec1", vec1), ("vec2", vec2))
    for name, t in (("vec1", vec1), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {t.ndim}-D")
    dt = result_dtype((input, vec1, vec2))
    args = tuple(t if t.dtype is dt else t.to(dt) for t in (input, vec1, vec2))
    return _out(dispatch(_addr, args, _params(beta, alpha)), out)


def _inplace(fn_op, check):
    def method(self, a, b, *, beta=1, alpha=1):
        check(self, a, b)
        return dispatch_inplace(fn_op, self, (self, a, b), _params(beta, alpha))

    return method


_INPLACE = {
    "addmm_": _inplace(
        _addmm, lambda s, a, b: (_check_mm(a, b), _same_dtype3("addmm", s, a, b, _mm_dtype_msg))
    ),
    "addmv_": _inplace(_addmv, lambda s, a, b: None),
    "addbmm_": _inplace(_addbmm, lambda s, a, b: _check_batches(a, b)),
    "baddbmm_": _inplace(_baddbmm, lambda s, a, b: _check_batches(a, b)),
    "addr_": _inplace(_addr, lambda s, a, b: None),
}
for _n, _m in _INPLACE.items():
    _m.__name__ = _n
    _m.__doc__ = f"In-place version of :meth:`Tensor.{_n[:-1]}`."

# ------------------------------------------------------------------------------ tensordot, chains


def tensordot(a: Tensor, b: Tensor, dims=2, out=None) -> Tensor:
    """Return the contraction of ``a`` and ``b`` over ``dims`` (an int: the last dims of ``a``
    with the first of ``b``; or two lists of dims)."""
    _check_tensors("tensordot", ("a", a), ("b", b))
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(-dims, 0)), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    given = list(zip(da, db))
    da = [wrap_dim(d, a.ndim) for d in da]
    db = [wrap_dim(d, b.ndim) for d in db]
    for (i, j), (gi, gj) in zip(zip(da, db), given):
        if b.shape[j] == 1 and a.shape[i] != 1:  # a broadcast dim: sum it away first
            a = a.sum(i, keepdim=True)
        elif a.shape[i] == 1 and b.shape[j] != 1:
            b = b.sum(j, keepdim=True)
        elif a.shape[i] != b.shape[j]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[i]} in dim "
                f"{gi} and second has size {b.shape[j]} in dim {gj}"
            )
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    csize = int(np.prod([a.shape[d] for d in da], dtype=np.int64))
    sa = int(np.prod([a.shape[d] for d in fa], dtype=np.int64))
    sb = int(np.prod([b.shape[d] for d in fb], dtype=np.int64))
    ta = a.permute(*fa, *da).reshape(sa, csize)
    tb = b.permute(*db, *fb).reshape(csize, sb)
    res = dispatch(_MM, (ta, tb))
    return _out(res.reshape(tuple([a.shape[d] for d in fa] + [b.shape[d] for d in fb])), out)


def _chain_order(shapes):
    # the matrix chain order of least cost (torch's multi_dot): split[i][j] for the chain i..j
    n = len(shapes)
    p = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(ms, split, i, j):
    if i == j:
        return ms[i]
    k = split[i][j]
    return dispatch(_MM, (_chain(ms, split, i, k), _chain(ms, split, k + 1, j)))


def multi_dot(tensors, *, out=None) -> Tensor:
    """Return the product of two or more matrices, multiplied in the cheapest order; the first
    may be a row vector and the last a column vector (1-D)."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.ndim}D")
    if last.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.ndim}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    for i, t in enumerate(tensors[1:], 1):
        if t.dtype is not first.dtype:
            raise RuntimeError(
                f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{_cpp_name(first)} and tensor {i} {_cpp_name(t)}"
            )
    ms = list(tensors)
    if first.ndim == 1:
        ms[0] = first.unsqueeze(0)
    if last.ndim == 1:
        ms[-1] = last.unsqueeze(-1)
    for i in range(n - 1):
        if ms[i].shape[1] != ms[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                f"{list(tensors[i + 1].shape)} cannot be multiplied"
            )
    res = _chain(ms, _chain_order([tuple(m.shape) for m in ms]), 0, n - 1)
    shape = [
        s for s, keep in ((res.shape[0], first.ndim == 2), (res.shape[1], last.ndim == 2)) if keep
    ]
    return _out(res.view(tuple(shape)), out)


def chain_matmul(*matrices, out=None) -> Tensor:
    """Return the product of the 2-D ``matrices`` (deprecated: use ``linalg.multi_dot``)."""
    warnings.warn(
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
        "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
        "multiple parameters.",
        UserWarning,
        stacklevel=2,
    )
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return _out(matrices[0].clone(), out)
    return multi_dot(matrices, out=out)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out=None) -> Tensor:
    """Return the dot product of ``x`` and ``y`` along ``dim`` (``x`` conjugated), broadcasting."""
    _check_tensors("vecdot", ("x", x), ("y", y))
    if AUTOCAST:
        x, y = autocast_inputs("linalg_vecdot", (x, y))
    if x.dtype is not y.dtype:
        raise RuntimeError(
            f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{_name(x)} and y of type {_name(y)} instead"
        )
    if x.ndim == 1 and y.ndim == 1 and dim in (-1, 0):
        return vdot(x, y, out=out)  # torch's 1-D case
    return _out((_conj(x) * y).sum(dim), out)


def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Return a view of the diagonals of (a batch of) matrices (``torch.linalg.diagonal``)."""
    return A.diagonal(offset, dim1, dim2)


# ------------------------------------------------------------------------------ cross


@op("linalg_cross", grad_fn="LinalgCrossBackward0", save=("self", "other"))
def _cross(a, b, dim):
    a, b = np.broadcast_arrays(a, b)
    return np.ascontiguousarray(np.cross(a, b, axis=dim))


@_cross.backward
def _(ctx, g, dim):
    a, b = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (
        dispatch(_cross, (_conj(b), g), {"dim": dim}) if need[0] else None,
        dispatch(_cross, (g, _conj(a)), {"dim": dim}) if need[1] else None,
    )


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1, out=None) -> Tensor:
    """Return the cross product of 3-vectors along ``dim``, broadcasting the other dims."""
    _check_tensors("cross", ("input", input), ("other", other))
    if input.ndim != other.ndim:
        raise RuntimeError(
            f"linalg.cross: inputs must have the same number of dimensions. Got {input.ndim} and "
            f"{other.ndim}"
        )
    if input.dtype is not other.dtype:
        raise _scalar_type_error(input, other)
    d = wrap_dim(dim, input.ndim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
            f"{other.shape[d]}"
        )
    return _out(dispatch(_cross, (input, other), {"dim": d}), out)


def cross(input: Tensor, other: Tensor, dim: int | None = None, *, out=None) -> Tensor:
    """Return the cross product along ``dim`` (default: the first dimension of size 3)."""
    if dim is None:
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass "
            "the dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will "
            "change to agree with that of linalg.cross in a future release.",
            UserWarning,
            stacklevel=2,
        )
        shape = np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dim = next((i for i, s in enumerate(shape) if s == 3), -1)
    return linalg_cross(input, other, dim=dim, out=out)


# ------------------------------------------------------------------------------ matrix_power


def matrix_power(A: Tensor, n: int, *, out=None) -> Tensor:
    """Return ``A`` to the integer power ``n`` (``n < 0``: powers of the inverse)."""
    from ember._ops.linalg_util import check_square

    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(
            f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}"
        )
    check_square("linalg.matrix_power", A)
    n = int(n)
    if n == 0:
        from ember._core.tensor import _wrap

        eye = _wrap(np.eye(A.shape[-1], dtype=A._data.dtype)).expand(*A.shape)
        return _out(A.clone().copy_(eye), out)
    if n < 0:
        from ember._ops.linalg_solve import inv

        A, n = inv(A), -n
        if n == 1:
            return _out(A, out)
    if n == 1:
        return _out(A.clone(), out)
    if n == 2:
        return _out(matmul(A, A), out)
    if n == 3:
        return _out(matmul(matmul(A, A), A), out)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = A if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return _out(result, out)


# ------------------------------------------------------------------------------ publishing
# (matmul's node is one of _DOT/_MM/_MV/_VM/_BATCHED/_BMM by the operands' ranks)

publish(
    _MM,
    matmul,
    operators={"__matmul__": matmul, "__rmatmul__": lambda self, other: matmul(other, self)},
)
publish(_MM, mm)
publish(_BMM, bmm)
publish(_MV, mv)
publish(_DOT, dot)
publish(_vdot, vdot)
for _f in (outer, ger, inner):
    publish(None, _f)
publish(_addmm, addmm, inplace=_INPLACE["addmm_"])
publish(_addmv, addmv, inplace=_INPLACE["addmv_"])
publish(_addbmm, addbmm, inplace=_INPLACE["addbmm_"])
publish(_baddbmm, baddbmm, inplace=_INPLACE["baddbmm_"])
publish(_addr, addr, inplace=_INPLACE["addr_"])
publish(_cross, cross)
publish(None, tensordot, method=False)
publish(None, chain_matmul, method=False)
publish(None, matrix_power)

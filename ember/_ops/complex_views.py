"""Complex numbers from and to pairs of reals: ``view_as_real``, ``view_as_complex`` (views that
share memory, as torch's), ``complex`` and ``polar``.

Rotary position embeddings (LLaMA-style code) rely on them: ``view_as_complex`` pairs the last
dimension, the product with ``polar(ones, freqs)`` rotates, ``view_as_real`` unpairs.
"""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.dtype import scalar_type_name
from ember._core.tensor import Tensor
from ember._ops.registry import _broadcast_error, dispatch, op, publish

# ------------------------------------------------------------------------------ the views


@op("view_as_real", grad_fn="ViewAsRealBackward0", view=True)
def _view_as_real(z):
    # a trailing axis of size 1 is contiguous, so NumPy can split each complex item in two
    return z[..., None].view(z.real.dtype)


@_view_as_real.backward
def _(ctx, g):
    return dispatch(_view_as_complex, (g.contiguous(),))


@op("view_as_complex", grad_fn="ViewAsComplexBackward0", view=True)
def _view_as_complex(x):
    return x.view(np.complex64 if x.dtype == np.float32 else np.complex128)[..., 0]


@_view_as_complex.backward
def _(ctx, g):
    return dispatch(_view_as_real, (g,))


def view_as_real(input: Tensor) -> Tensor:
    """Return a real view of a complex tensor, its last dimension of size 2 holding the real
    and imaginary parts."""
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return dispatch(_view_as_real, (input,))


def view_as_complex(input: Tensor) -> Tensor:
    """Return a complex view of a real tensor whose last dimension (of size 2, stride 1) holds
    the real and imaginary parts."""
    dt = input.dtype
    if dt is not D.float32 and dt is not D.float64:
        if dt is D.float16:
            raise RuntimeError("view_as_complex: ember has no complex32 (ComplexHalf) dtype")
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a "
            f"tensor of scalar type: {scalar_type_name(dt)}"
        )
    shape, strides = input.shape, input.stride()
    if not shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return dispatch(_view_as_complex, (input,))


# ------------------------------------------------------------------------------ complex / polar


def _complex_of(a, b):
    return np.empty(np.broadcast_shapes(a.shape, b.shape), dtype=D.FROM_NP[a.dtype].to_complex().np)


@op("complex", grad_fn="ComplexBackward0")
def _complex(re, im):
    out = _complex_of(re, im)
    out.real, out.imag = re, im
    return out


@_complex.backward
def _(ctx, g):
    nig = ctx.needs_input_grad
    return (g.real if nig[0] else None, g.imag if nig[1] else None)


@op("polar", grad_fn="PolarBackward0", save=("result",))
def _polar(r, theta):
    out = _complex_of(r, theta)
    out.real, out.imag = r * np.cos(theta), r * np.sin(theta)
    return out


@_polar.backward
def _(ctx, g):
    # torch's polar_backward: d/d abs is along sgn(result), d/d angle along i * result
    (result,) = ctx.saved_tensors
    nig = ctx.needs_input_grad
    gc = g.conj()
    return (
        (gc * result.sgn()).real if nig[0] else None,
        (gc * (result * 1j)).real if nig[1] else None,
    )


def _check_pair(real: Tensor, other: Tensor) -> None:
    a, b = real.dtype, other.dtype
    ok = (D.float32, D.float64)
    if a not in ok or b not in ok:
        if a is D.float16 and b is D.float16:
            raise RuntimeError("ember has no complex32 (ComplexHalf) dtype")
        raise RuntimeError(
            "Expected both inputs to be Half, Float or Double tensors but got "
            f"{scalar_type_name(a)} and {scalar_type_name(b)}"
        )
    if a is not b:
        raise RuntimeError(
            f"Expected object of scalar type {scalar_type_name(a)} but got scalar type "
            f"{scalar_type_name(b)} for second argument"
        )
    err = _broadcast_error((real, other))
    if err is not None:
        raise err


def complex(real: Tensor, imag: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A001
    """Return the complex tensor ``real + imag * 1j`` (both float or both double)."""
    _check_pair(real, imag)
    res = dispatch(_complex, (real, imag))
    return res if out is None else out.copy_(res)


def polar(abs: Tensor, angle: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """Return the complex tensor ``abs * (cos(angle) + sin(angle) * 1j)``."""
    _check_pair(abs, angle)
    res = dispatch(_polar, (abs, angle))
    return res if out is None else out.copy_(res)


publish(_view_as_real, view_as_real, method=False)
publish(_view_as_complex, view_as_complex, method=False)
publish(_complex, complex, method=False)
publish(_polar, polar, method=False)

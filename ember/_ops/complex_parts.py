"""The parts of a complex tensor: ``real``/``imag`` (views, also the ``Tensor.real`` /
``Tensor.imag`` properties with their setters), ``angle``, ``conj_physical`` (and in place),
``adjoint`` (the conjugate transpose of the last two dims)."""

from __future__ import annotations

import numpy as np

from ember._core.tensor import Tensor
from ember._ops.registry import FLOAT, dispatch, dispatch_inplace, op, publish


@op("real", grad_fn="SelectBackward0", view=True)
def _real(x):
    return x.real


@_real.backward
def _(ctx, g):
    return g * (1 + 0j)


@op("imag", grad_fn="SelectBackward0", view=True)
def _imag(x):
    return x.imag


@_imag.backward
def _(ctx, g):
    return g * 1j


def real(input: Tensor) -> Tensor:
    """Return the real part of ``input``: a view for complex tensors, ``input`` otherwise."""
    if input.dtype.is_complex:
        return dispatch(_real, (input,))
    return input


def imag(input: Tensor) -> Tensor:
    """Return the imaginary part of a complex ``input`` as a view."""
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return dispatch(_imag, (input,))


def _set_part(part):
    def setter(self, value):
        view = part(self)
        view.copy_(value) if isinstance(value, Tensor) else view.fill_(value)

    return setter


@op("angle", grad_fn="AngleBackward0", save=("self",), promote=FLOAT)
def _angle(x):
    if x.dtype.kind == "c":
        return np.angle(x)
    # 0 for -0.0 (NumPy's angle would say pi), nan stays nan
    return np.where(x < 0, np.pi, 0.0).astype(x.dtype) + x * 0


@_angle.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    if not x.dtype.is_complex:
        return g * 0
    from ember._ops.copying import where

    return where(x == 0, 0.0, g * x / x.abs().pow(2) * 1j)


def angle(input: Tensor, *, out=None) -> Tensor:
    """Return the elementwise argument of ``input`` (0 or pi for real numbers)."""
    return dispatch(_angle, (input,))


@op("conj_physical", grad_fn="ConjPhysicalBackward0")
def _conj_physical(x):
    return np.conj(x)


@_conj_physical.backward
def _(ctx, g):
    return g.conj()


@op("conj_physical_", grad_fn="ConjPhysicalBackward1")
def _conj_physical_inplace(x):
    return np.conj(x)


_conj_physical_inplace.backward(_conj_physical.backward_fn)


def conj_physical(input: Tensor) -> Tensor:
    """Return the complex conjugate of ``input`` as a new tensor (``input`` if real)."""
    if not input.dtype.is_complex:
        return input
    return dispatch(_conj_physical, (input,))


def conj_physical_(self: Tensor) -> Tensor:
    """Conjugate ``self`` in place; return ``self``."""
    return dispatch_inplace(_conj_physical_inplace, self, (self,))


def adjoint(input: Tensor) -> Tensor:
    """Return the conjugate transpose of the last two dimensions of ``input``."""
    if input._data.ndim < 2:
        raise RuntimeError(
            "tensor.adjoint() is only supported on matrices or batches of matrices. "
            f"Got {input._data.ndim}-D tensor."
        )
    t = input.transpose(-2, -1)
    return t.conj() if input.dtype.is_complex else t


publish(None, conj_physical_)
for _f in (angle, conj_physical, adjoint):
    publish(None, _f)
publish(None, real, method=False)
publish(None, imag, method=False)
Tensor.real = property(real, _set_part(real), doc="The real part of a complex tensor (a view).")
Tensor.imag = property(
    imag, _set_part(imag), doc="The imaginary part of a complex tensor (a view)."
)

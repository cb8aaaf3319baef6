"""torch's in-place functions: ``torch.X_(t, ...)`` is ``t.X_(...)`` (``torch.relu_``,
``torch.zero_``...), plus ``torch.fill`` and ``torch.detach``.

``publish_all()`` (run by ``ember._ops`` once every family is imported) makes a function for
each in-place method that exists and has no function of its own yet.
"""

from __future__ import annotations

import numpy as np

from ember._core.tensor import Tensor
from ember._ops.registry import API, dispatch, op, publish

# --- torch.X_(t, ...) is t.X_(...); torch.fill, torch.detach -----------------------------------

_INPLACE_FUNCTIONS = (
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ as_strided_ "
    "asin_ asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ "
    "detach_ erf_ erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ i0_ index_put_ ldexp_ log10_ "
    "log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ resize_as_ "
    "round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_ gcd_ "
    "lcm_ conj_physical_"
).split()


def _inplace_function(name):
    def fn(input: Tensor, *args, **kwargs) -> Tensor:
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Return ``input.{name}(...)``: :meth:`Tensor.{name}` as a function."
    return fn


def publish_all() -> None:
    """Publish ``torch.X_`` for each in-place method that exists and has no function yet."""
    for name in _INPLACE_FUNCTIONS:
        if hasattr(Tensor, name) and name not in API:
            publish(None, _inplace_function(name), method=False)


@op("fill", grad_fn="FillBackward0")
def _fill_scalar(x, value):
    return np.full_like(x, value)


_fill_scalar.backward(lambda ctx, g, value: g.new_zeros(g.shape))


@op("fill", grad_fn="FillBackward1")
def _fill_tensor(x, value):
    return np.full_like(x, value)


@_fill_tensor.backward
def _(ctx, g):
    need = ctx.needs_input_grad
    return (g.new_zeros(g.shape) if need[0] else None), (g.sum() if need[1] else None)


def fill(input: Tensor, value) -> Tensor:
    """Return a tensor like ``input`` filled with ``value`` (a number or a 0-dim tensor)."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.dim()} dimensions."
            )
        return dispatch(_fill_tensor, (input, value))
    from ember._ops.convert import scalar_value

    return dispatch(_fill_scalar, (input,), {"value": scalar_value(value, input.dtype)})


def detach(input: Tensor) -> Tensor:
    """Return ``input.detach()``: a view sharing data, cut from the graph."""
    return input.detach()


publish(None, fill, method=False)
publish(None, detach, method=False)

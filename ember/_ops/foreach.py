"""``torch._foreach_*``: one op applied to each tensor of a list (EMA updates, hand-written
optimizers). torch fuses these into multi-tensor kernels; here each is a loop over the list
calling the ordinary op, so autograd, version counters and in-place checks behave as for the
single-tensor op.

The second argument may be a number, a list of numbers, a list of tensors or one tensor, as
in torch. Out-of-place functions return a tuple; in-place ones update ``self`` in place and
return it.
"""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember._ops.registry import publish

_UNARY = (
    "abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 log1p log2 "
    "neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc"
).split()
_BINARY = "add sub mul div pow maximum minimum clamp_min clamp_max".split()
# a number (not a tensor) as the other operand of these uses the scalar form of the op
_SCALAR_FORM = {"maximum": "clamp_min", "minimum": "clamp_max"}


def _others(self: list, other) -> list:
    if isinstance(other, (list, tuple)):
        if len(other) != len(self):
            raise RuntimeError(
                f"Tensor lists must have the same number of tensors, got {len(self)} and "
                f"{len(other)}"
            )
        return list(other)
    return [other] * len(self)


def _unary(name: str, inplace: bool):
    method = name + "_" if inplace else name

    def fn(self):
        res = [getattr(t, method)() for t in self]
        return self if inplace else tuple(res)

    fn.__name__ = f"_foreach_{method}"
    fn.__doc__ = f"Apply ``{method}`` to each tensor of the list."
    return fn


def _binary(name: str, inplace: bool):
    suffix = "_" if inplace else ""

    def fn(self, other, *, alpha=1):
        res = []
        for t, o in zip(self, _others(self, other)):
            op = name if isinstance(o, Tensor) else _SCALAR_FORM.get(name, name)
            kw = {"alpha": alpha} if alpha != 1 else {}
            res.append(getattr(t, op + suffix)(o, **kw))
        return self if inplace else tuple(res)

    fn.__name__ = f"_foreach_{name}{suffix}"
    fn.__doc__ = f"Apply ``{name}{suffix}`` to each tensor of the list and its partner."
    return fn


def _pointwise3(name: str, inplace: bool):
    suffix = "_" if inplace else ""

    def fn(self, tensor1, tensor2, value=1):
        if isinstance(value, Tensor) and value.ndim == 1:
            value = value.tolist()
        values = _others(self, value)
        res = [
            getattr(t, name + suffix)(a, b, value=v)
            for t, a, b, v in zip(self, tensor1, tensor2, values)
        ]
        return self if inplace else tuple(res)

    fn.__name__ = f"_foreach_{name}{suffix}"
    fn.__doc__ = f"Apply ``{name}{suffix}`` to each tensor of the list."
    return fn


def _lerp(inplace: bool):
    suffix = "_" if inplace else ""

    def fn(self, tensors, weight):
        res = [
            getattr(t, "lerp" + suffix)(e, w)
            for t, e, w in zip(self, tensors, _others(self, weight))
        ]
        return self if inplace else tuple(res)

    fn.__name__ = f"_foreach_lerp{suffix}"
    fn.__doc__ = f"Apply ``lerp{suffix}`` to each tensor of the list."
    return fn


def _foreach_norm(self, ord=2, dtype=None) -> tuple:
    """Return the vector norm of each tensor of the list."""
    from ember._ops.linalg_norm import vector_norm

    return tuple(vector_norm(t, ord, dtype=dtype) for t in self)


def _foreach_max(self) -> tuple:
    """Return the largest element of each tensor of the list."""
    return tuple(t.max() for t in self)


def _foreach_zero_(self) -> list:
    """Fill each tensor of the list with zeros."""
    for t in self:
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking: bool = False) -> list:
    """Copy each tensor of ``src`` into its partner of the list."""
    for t, s in zip(self, _others(self, src)):
        t.copy_(s)
    return self


def _foreach_clone(self) -> tuple:
    """Return a copy of each tensor of the list."""
    return tuple(t.clone() for t in self)


for _inplace in (False, True):
    for _name in _UNARY:
        publish(None, _unary(_name, _inplace), method=False)
    for _name in _BINARY:
        publish(None, _binary(_name, _inplace), method=False)
    for _name in ("addcmul", "addcdiv"):
        publish(None, _pointwise3(_name, _inplace), method=False)
    publish(None, _lerp(_inplace), method=False)
for _f in (_foreach_norm, _foreach_max, _foreach_zero_, _foreach_copy_, _foreach_clone):
    publish(None, _f, method=False)

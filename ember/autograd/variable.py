"""``Variable``: torch's pre-0.4 wrapper, today an alias that returns the tensor itself."""

from __future__ import annotations

from ember._core.tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(t, requires_grad=False)``: return a new leaf tensor sharing ``t``'s data (with
    ``requires_grad`` as asked), as torch does since Variables and Tensors merged;
    ``isinstance(t, Variable)`` is True for every tensor."""

    def __new__(cls, data: Tensor, requires_grad: bool = False, volatile: bool = False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)

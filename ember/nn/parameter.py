"""``nn.Parameter``, ``nn.Buffer`` and ``nn.UninitializedParameter``, as torch's."""

from __future__ import annotations

import ember
from ember._core.tensor import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "is_lazy"]


def _alias(data: Tensor, cls: type, requires_grad: bool) -> Tensor:
    # a new tensor object of class ``cls`` sharing ``data``'s memory and version counter
    t = data.detach()
    t.__class__ = cls
    t._requires_grad = False
    if requires_grad:
        t.requires_grad_(True)
    return t


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning it as a Module attribute registers it.

    ``Parameter(data=None, requires_grad=True)`` shares ``data``'s memory; without data it is
    an empty float tensor."""

    _is_param = True

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter.__new__ expected a Tensor as data, but got {type(data).__name__}"
            )
        return _alias(data, cls, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(ember.clone(self.detach()), self.requires_grad)
        memo[id(self)] = result
        if self._grad is not None:
            result._grad = self._grad.__deepcopy__(memo)
        import copy

        for k, v in self._user_dict().items():
            setattr(result, k, copy.deepcopy(v, memo))
        return result


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (lazy modules); ``materialize`` gives it one."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        t = ember.empty(0, dtype=dtype)
        return _alias(t, cls, requires_grad)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the parameter ``shape`` (uninitialized values) and turn it into a Parameter."""
        if dtype is None:
            dtype = self.dtype
        new = ember.empty(tuple(shape), dtype=dtype)
        self._data = new._data
        self.dtype = new.dtype
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return "<UninitializedParameter>"

    __str__ = __repr__


def is_lazy(param) -> bool:
    """Return True if ``param`` is an uninitialized (lazy) parameter."""
    return isinstance(param, UninitializedParameter)


class _BufferMeta(type):
    # ``isinstance(t, Buffer)`` is True for tensors made by ``Buffer(...)``, as torch
    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    """``Buffer(data, persistent=True)``: a tensor that a Module registers as a buffer on
    assignment (in the state dict unless ``persistent=False``)."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = ember.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t._is_buffer = True
        t.persistent = persistent
        return t

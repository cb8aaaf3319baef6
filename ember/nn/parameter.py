"""``nn.Parameter``, ``nn.Buffer`` and ``nn.UninitializedParameter``, as torch's."""

from __future__ import annotations

import ember
from ember._core.tensor import Tensor
from ember.overrides import _disabled_torch_function_impl

__all__ = [
    "Parameter",
    "Buffer",
    "UninitializedParameter",
    "UninitializedBuffer",
    "UninitializedTensorMixin",
    "is_lazy",
]


def _alias(data: Tensor, cls: type, requires_grad: bool) -> Tensor:
    # a new tensor object of class ``cls`` sharing ``data``'s memory and version counter
    t = data.detach()
    t.__class__ = cls
    t._requires_grad = False
    if requires_grad:  # torch's _make_subclass words the dtype error this way
        t._set_requires_grad(True, "Only Tensors of floating point and complex dtype")
    return t


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning it as a Module attribute registers it.

    ``Parameter(data=None, requires_grad=True)`` shares ``data``'s memory; without data it is
    an empty float tensor."""

    _is_param = True
    # ops on a Parameter return plain Tensors, as torch's
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter.__new__ expected a Tensor as data, but got {type(data).__name__}"
            )
        return _alias(data, cls, requires_grad)

    _plain_repr = True  # its values print as a plain tensor's

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        # as torch's: a new Parameter of a copy of the data; .grad and attributes stay behind
        result = type(self)(ember.clone(self.detach()), self.requires_grad)
        memo[id(self)] = result
        return result


_SHAPE_MSG = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
    "in `load_state_dict` when trying to load an uninitialized parameter into an initialized "
    "one. Call `forward` to initialize the parameters before accessing their attributes."
)


class UninitializedTensorMixin:
    """What uninitialized parameters and buffers share: no shape until ``materialize``."""

    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor ``shape`` (uninitialized values) and turn it into ``cls_to_become``."""
        if dtype is None:
            dtype = self.dtype
        self.data = ember.empty(tuple(shape), dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_SHAPE_MSG)

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`."
        )

    def _recast(self, dtype):
        if dtype is None or dtype == self.dtype:
            return self
        out = type(self)(self.requires_grad, None, dtype)
        if hasattr(self, "persistent"):
            out.persistent = self.persistent
        return out

    def to(self, *args, **kwargs):
        dtype = kwargs.get("dtype")
        for a in args:
            if isinstance(a, ember.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
        return self._recast(dtype)

    def float(self, memory_format=None):
        return self._recast(ember.float32)

    def double(self, memory_format=None):
        return self._recast(ember.float64)

    def half(self, memory_format=None):
        return self._recast(ember.float16)

    def bfloat16(self, memory_format=None):
        return self._recast(ember.bfloat16)

    def cpu(self, memory_format=None):
        return self

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, None, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (lazy modules); ``materialize`` gives it one."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        t = ember.empty(0, dtype=dtype)
        return _alias(t, cls, requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (lazy modules); ``materialize`` gives it one."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent=True):
        t = _alias(ember.empty(0, dtype=dtype), cls, requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


def is_lazy(param) -> bool:
    """Return True if ``param`` is an uninitialized (lazy) parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


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

"""``nn.utils.parametrize``: a tensor of a module computed from unconstrained originals.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``... when
``P.right_inverse`` returns several tensors), swaps the module's class for a subclass
``Parametrized<Class>`` with a ``weight`` property that evaluates the parametrizations,
and keeps torch's state-dict keys."""

from __future__ import annotations

import collections.abc
import copy
import copyreg
from contextlib import contextmanager

import ember
from ember._core.tensor import Tensor
from ember.nn.modules.container import ModuleDict, ModuleList
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = [
    "cached",
    "ParametrizationList",
    "register_parametrization",
    "is_parametrized",
    "remove_parametrizations",
    "type_before_parametrizations",
]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Cache the parametrized tensors inside the block (each is computed once)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_original(module: Module, name: str, tensor: Tensor) -> None:
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its unconstrained original(s)."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape = original.shape
        original_dtype = original.dtype
        with ember.no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, collections.abc.Sequence):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        # one original, or a numbered sequence of them
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\n"
                    f"right_inverse(original).dtype: {new.dtype}"
                )
            # keep the same Parameter object (optimizers hold it): move the new data into it
            with ember.no_grad():
                if new is not original:
                    original.data = new.detach().clone()
            _register_original(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        "(list, tuple...). "
                        f"Got element {i} of the sequence with type {type(originali).__name__}."
                    )
                if isinstance(original, Parameter):
                    originali = Parameter(originali.detach().clone(), original.requires_grad)
                _register_original(self, f"original{i}", originali)
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized dtype: {original_dtype}\n"
                    f"parametrized dtype: {Z.dtype}"
                )
            if Z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized shape: {original_shape}\n"
                    f"parametrized shape: {Z.shape}"
                )

    def right_inverse(self, value: Tensor) -> None:
        """Set the original(s) so that the parametrized tensor becomes ``value``."""
        with ember.no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(
                        f"`right_inverse` should return a tensor. Got {type(value).__name__}"
                    )
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                        f"while `original` has dtype {self.original.dtype}"
                    )
                self.original.copy_(value)
            else:
                if not isinstance(value, collections.abc.Sequence):
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors. "
                        f"Got {type(value).__name__}."
                    )
                if len(value) != self.ntensors:
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors of length "
                        f"{self.ntensors}. Got a sequence of length {len(value)}."
                    )
                for i, tensor in enumerate(value):
                    getattr(self, f"original{i}").copy_(tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _default_deepcopy(self, memo):
    obj = memo.get(id(self), None)
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _getstate(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only "
        "supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
    )


def _swap_in_parametrized_class(module: Module) -> None:
    """Give ``module`` its own subclass ``Parametrized<Class>``, where the properties of its
    parametrized tensors live (so other instances of the class are untouched). It refuses
    pickling, and deep-copies through ``__dict__`` unless the class copies itself."""
    base = type(module)
    namespace = {"__getstate__": _getstate}
    if not hasattr(base, "__deepcopy__"):
        namespace["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{base.__name__}", (base,), namespace)


def _add_property(module: Module, tensor_name: str) -> None:
    """Define ``tensor_name`` on the module's parametrized class: reading evaluates the
    parametrizations (once per ``cached()`` block), assigning goes through right_inverse."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def evaluate(self) -> Tensor:
        chain = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return chain()
        key = (id(module), tensor_name)
        if _cache.get(key) is None:
            _cache[key] = chain()
        return _cache[key]

    def assign(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(evaluate, assign))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Return True if ``module`` has a parametrization (on ``tensor_name`` if given)."""
    table = getattr(module, "parametrizations", None)
    if not isinstance(table, ModuleDict):
        return False
    return len(table) > 0 if tensor_name is None else tensor_name in table


def _check_appended(module: Module, tensor_name: str, parametrization: Module) -> None:
    """The checks of a parametrization appended to an existing chain (skipped when
    ``unsafe``): it must keep the tensor's dtype and shape, and so must its right_inverse."""
    current = getattr(module, tensor_name)
    image = parametrization(current)
    if not isinstance(image, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(image).__name__}.")
    for attr in ("dtype", "shape"):
        if getattr(image, attr) != getattr(current, attr):
            raise ValueError(
                f"Registering a parametrization may not change the {attr} of the tensor, "
                "unless the `unsafe` flag is enabled.\n"
                f"module.{tensor_name}.{attr}: {getattr(current, attr)}\n"
                f"parametrization(module.{tensor_name}).{attr}: {getattr(image, attr)}"
            )
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        back = parametrization.right_inverse(image)
    except NotImplementedError:
        return
    if not isinstance(back, Tensor):
        raise ValueError(
            f"parametrization.right_inverse must return a tensor. Got: {type(back).__name__}"
        )
    for attr in ("dtype", "shape"):
        if getattr(back, attr) != getattr(current, attr):
            raise ValueError(
                "The tensor returned by parametrization.right_inverse must have "
                f"the same {attr} as module.{tensor_name}, unless the `unsafe` flag "
                "is enabled.\n"
                f"module.{tensor_name}.{attr}: {getattr(current, attr)}\n"
                f"returned {attr}: {getattr(back, attr)}"
            )


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Make ``module.<tensor_name>`` be ``parametrization(original)``; return ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        # a further parametrization: appended to the chain, applied after the others
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a "
            f"parametrized element with name '{tensor_name}'"
        )
    # the first one: the tensor becomes the chain's original(s) and a property takes its name
    chain = ParametrizationList([parametrization], getattr(module, tensor_name), unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _swap_in_parametrized_class(module)
        module.parametrizations = ModuleDict()
    _add_property(module, tensor_name)
    module.parametrizations[tensor_name] = chain
    return module


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Remove the parametrizations of ``tensor_name``, leaving its current value
    (``leave_parametrized=True``) or its original; return ``module``."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with ember.no_grad():
                t = getattr(module, tensor_name)
            with ember.no_grad():
                if t.dtype == original.dtype:
                    original.data = t.detach().clone()
                else:
                    raise ValueError(
                        "The parametrization changes the dtype of the tensor from "
                        f"{original.dtype} to {t.dtype}. It is not supported to leave the "
                        "tensor parametrized (`leave_parametrized=True`) in this case."
                    )
    else:
        if leave_parametrized:
            t = getattr(module, tensor_name)
            original = Parameter(t.detach(), True) if t.requires_grad else t.detach()
        else:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                "that is parametrized in terms of a sequence of tensors."
            )
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_original(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        orig_cls = module.__class__.__bases__[0]
        module.__class__ = orig_cls
    return module


def type_before_parametrizations(module: Module) -> type:
    """Return the module's class before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)

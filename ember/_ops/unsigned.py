"""torch 2.13's limited support for uint16, uint32 and uint64: tensors of them can be made,
cast, copied, viewed, joined, multiplied, compared for equality, sorted, summed (to int64) and
combined bitwise with and/or/xor; any other kernel raises torch's NotImplementedError
(``"add_stub" not implemented for 'UInt16'``). The gate is installed in ``registry.HOOKS`` when
the first such array reaches ember (``dtype.ON_UNSIGNED``): until then it costs nothing."""

from __future__ import annotations

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops import registry

# ops torch runs on the unsigned types (views run too: they move no data)
_SUPPORTED = frozenset(
    {
        "mul", "eq", "ne", "sum", "prod", "cumsum", "sort", "_unique2", "unique",
        "bitwise_and", "bitwise_or", "bitwise_xor", "fill_", "clone", "copy_", "_to_copy",
        "cat", "stack", "contiguous", "copy", "all", "any", "masked_select",
    }
)  # fmt: skip

# torch's kernel names in its error, where they are not ``<op>_cpu``
_KERNELS = {
    "add": "add_stub",
    "sub": "add_stub",
    "rsub": "add_stub",
    "max": "max_all",
    "min": "min_all",
    "amax": "max_all",
    "amin": "min_all",
    "pow": "pow",
    "index_select": "index_select",
    "bitwise_left_shift": "lshift_cpu",
    "bitwise_right_shift": "rshift_cpu",
    "nonzero": "nonzero_count_cpu",
    "floor_divide": "div_floor_cpu",
}

_UNSIGNED = frozenset(D.UNSIGNED)


def _check(op, tensors) -> None:
    for x in tensors:
        if isinstance(x, Tensor) and x.dtype in _UNSIGNED:
            if op.view or op.name in _SUPPORTED:
                return
            kernel = _KERNELS.get(op.name, op.name.rstrip("_") + "_cpu")
            raise NotImplementedError(
                f"\"{kernel}\" not implemented for '{D.scalar_type_name(x.dtype)}'"
            )


def _out_of_place(op, inputs, params):
    _check(op, inputs)
    return NotImplemented


def _in_place(op, self, inputs, params):
    _check(op, (self, *inputs))
    return NotImplemented


def _install() -> None:
    if (_out_of_place, _in_place) not in registry.HOOKS:
        registry.HOOKS.append((_out_of_place, _in_place))


D.ON_UNSIGNED.append(_install)

# factories torch has no unsigned kernel for (the rest, zeros/ones/full/empty/randint, work)
_FACTORY_KERNELS = {"arange": "arange_cpu", "linspace": "linspace_cpu", "eye": "eye"}


def _gated_factory(fn, kernel):
    def factory(*args, **kwargs):
        dt = kwargs.get("dtype")
        if dt is not None and dt in _UNSIGNED:
            raise NotImplementedError(
                f"\"{kernel}\" not implemented for '{D.scalar_type_name(dt)}'"
            )
        return fn(*args, **kwargs)

    factory.__name__ = factory.__qualname__ = fn.__name__
    factory.__doc__ = fn.__doc__
    factory.__wrapped__ = fn
    return factory


def wrap_factories() -> None:
    """Give arange/linspace/eye torch's error for the unsigned dtypes."""
    for name, kernel in _FACTORY_KERNELS.items():
        registry.API[name] = _gated_factory(registry.API[name], kernel)

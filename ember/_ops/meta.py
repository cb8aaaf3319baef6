"""The ``meta`` device for the op table: tensors with a shape, a dtype and autograd state but
no data (``ember/_core/meta.py`` makes their arrays).

One mechanism serves every op: a dispatched op with a meta input runs its own forward on the
inputs' zero-stride stand-ins, so its result's shape and dtype are the kernel's own (no table
of shape rules), and each fresh result array is replaced by a meta array of that shape; views
of a meta array are meta already. An in-place op on a meta tensor checks its shapes and
changes nothing (samplers draw nothing). Factories (``empty``, ``zeros``, ``randn``,
``*_like``, ``new_*``...) given ``device="meta"`` or run under ``with device("meta")`` /
``set_default_device("meta")`` resolve the result's dtype on a zero-size call and allocate
nothing. ``to("meta")`` drops the data; reading data back raises torch's errors.

The hooks are installed in ``registry.HOOKS`` when the first meta array is made: until then
dispatch pays one list test.
"""

from __future__ import annotations

import functools

import numpy as np

from ember._core import device as _device
from ember._core import meta as _meta
from ember._core.tensor import Size, Tensor, _wrap
from ember._ops import registry

_INSIDE = [0]  # > 0 while an op runs on meta stand-ins (its inner dispatch is the real one)


def _is_meta(x) -> bool:
    return isinstance(x, Tensor) and _meta.is_meta(x._data)


def _to_meta(t: Tensor) -> Tensor:
    if not _meta.is_meta(t._data):
        t._data = _meta.meta_array(t._data.shape, t._data.dtype)
    return t


def _out_of_place(op, inputs, params):
    # (a CPU tensor beside a meta one gives a meta result: torch raises "Tensor on device cpu
    # is not on the expected device meta!" unless it is 0-d, but ember's composites make CPU
    # temporaries (dropout's mask) that must not fail on meta inputs)
    if _INSIDE[0] or not any(_is_meta(x) for x in inputs):
        return NotImplemented
    x = inputs[0] if inputs else None
    if (
        op.name in _COPIES
        and _is_meta(x)
        and not (x._requires_grad and registry.STATE.grad_enabled)
    ):
        # a copy (deepcopy's clone, a cast) is its input's shape: no kernel run, no memory
        npdt = params["dtype"].np if params.get("dtype") is not None else x._data.dtype
        return _wrap(_meta.meta_array(x._data.shape, npdt))
    _INSIDE[0] += 1
    try:
        res = registry._dispatch(op, inputs, params)
    finally:
        _INSIDE[0] -= 1
    if type(res) is tuple:
        return tuple(_to_meta(r) if isinstance(r, Tensor) else r for r in res)
    return _to_meta(res) if isinstance(res, Tensor) else res


# ops whose result is a copy of their first input, perhaps cast (``dtype`` parameter)
_COPIES = frozenset({"clone", "_to_copy", "contiguous", "copy", "detach_copy", "alias_copy"})


def _in_place(op, self, inputs, params):
    if _INSIDE[0]:
        return NotImplemented
    if not _meta.is_meta(self._data):
        if any(_is_meta(x) for x in inputs):
            if op.name in ("copy_", "_to_copy", "copy"):
                raise NotImplementedError("Cannot copy out of meta tensor; no data!")
            raise RuntimeError("Tensor on device meta is not on the expected device cpu!")
        return NotImplemented
    shapes = [x._data.shape for x in inputs if isinstance(x, Tensor) and x is not self]
    if shapes:
        try:
            full = np.broadcast_shapes(self._data.shape, *shapes)
        except ValueError:
            raise registry._shapes_broadcast_error([self._data.shape, *shapes]) from None
        if full != self._data.shape:
            raise RuntimeError(
                f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                f"{list(full)}"
            )
    self._vc[0] += 1
    return self


def _install() -> None:
    if (_out_of_place, _in_place) not in registry.HOOKS:
        registry.HOOKS.append((_out_of_place, _in_place))


_meta.ON_LIVE.append(_install)


# ------------------------------------------------------------------------------ factories


_DEFAULT = _device.DEFAULT
_SET_DEFAULT = _device._SET_DEFAULT
_META = _device.META


def _wants_meta(device) -> bool:
    if device is None:
        # (the common case: no device block, no default set: two list tests)
        if not _DEFAULT and _SET_DEFAULT[0] is not _META:
            return False
        return _device.as_device(_device.default_device()) is _META  # (a cuda block raises)
    if device == "cpu" or device is _device.CPU:
        return False
    return _device.as_device(device) is _META


def _size_of(args, kwargs) -> tuple:
    if "size" in kwargs:
        size = kwargs["size"]
    else:
        packed = registry.packed_items(args, (tuple, list, Size))
        size = args if packed is None else packed
    return (size,) if isinstance(size, int) else tuple(size)


def _meta_result(probe: Tensor, shape) -> Tensor:
    t = _wrap(_meta.meta_array(shape, probe._data.dtype))
    if probe._requires_grad:
        t._requires_grad = True
    return t


def _sized(fn, first_size: bool):
    """``empty(*size, ...)``-like factories (``full(size, value)`` when ``first_size``)."""

    @functools.wraps(fn)
    def factory(*args, **kwargs):
        if not _wants_meta(kwargs.get("device")):
            return fn(*args, **kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k != "device"}
        if first_size and args:
            shape, rest = _size_of(args[:1], {}), args[1:]
        elif first_size:
            shape, rest = _size_of((), kwargs), ()
        else:
            shape, rest = _size_of(args, kwargs), ()
        kwargs.pop("size", None)
        zero = (0,) * len(shape)
        return _meta_result(fn(zero, *rest, **kwargs), shape)

    return factory


def _randint(fn):
    @functools.wraps(fn)
    def factory(*args, **kwargs):
        if not _wants_meta(kwargs.get("device")):
            return fn(*args, **kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k != "device"}
        args = list(args)
        if "size" in kwargs:
            shape = tuple(kwargs["size"])
            kwargs["size"] = (0,) * len(shape)
        else:
            i = next(i for i, a in enumerate(args) if isinstance(a, (tuple, list, Size)))
            shape = tuple(args[i])
            args[i] = (0,) * len(shape)
        return _meta_result(fn(*args, **kwargs), shape)

    return factory


def _standin(t: Tensor, size=0) -> Tensor:
    # a CPU tensor of ``t``'s dtype and rank with ``size`` elements per dim (0: no memory)
    shape = t._data.shape if size is None else (size,) * t._data.ndim
    s = _wrap(np.empty(shape, dtype=t._data.dtype))
    return s


def _like(fn):
    """``empty_like(input, ...)``: the input's device unless one is given."""

    @functools.wraps(fn)
    def factory(input, *args, **kwargs):
        device = kwargs.get("device")
        src_meta = _is_meta(input)
        if device is None:
            if not src_meta:
                return fn(input, *args, **kwargs)
            to_meta = True
        else:
            to_meta = _device.as_device(device) is _device.META
        if not to_meta:
            if src_meta:  # to_empty's path: real memory of the input's shape
                kwargs = {k: v for k, v in kwargs.items() if k != "memory_format"}
                return fn(_standin(input, None), *args, **kwargs)
            return fn(input, *args, **kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "memory_format")}
        return _meta_result(fn(_standin(input), *args, **kwargs), input._data.shape)

    return factory


def _computed(fn):
    """Factories whose size follows from their values (arange, eye, tensor...): computed on
    the CPU, then the data dropped."""

    @functools.wraps(fn)
    def factory(*args, **kwargs):
        if not _wants_meta(kwargs.get("device")):
            return fn(*args, **kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k != "device"}
        return _to_meta(fn(*args, **kwargs))

    return factory


def _new(fn, first_size: bool):
    """``Tensor.new_empty(size, ...)``: ``self``'s device unless one is given."""

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        device = kwargs.get("device")
        to_meta = _is_meta(self) if device is None else _wants_meta(device)
        if not to_meta:
            if _is_meta(self):
                return fn(_standin(self), *args, **kwargs)
            return fn(self, *args, **kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k != "device"}
        if first_size:
            shape, rest = _size_of(args[:1], {}) if args else _size_of((), kwargs), args[1:]
        else:
            shape, rest = _size_of(args, kwargs), ()
        kwargs.pop("size", None)
        return _meta_result(fn(_standin(self), (0,) * len(shape), *rest, **kwargs), shape)

    return method


def wrap_factories() -> None:
    """Give the table's factories (and Tensor's new_*, to, cpu) the meta device."""
    api = registry.API
    for name in ("empty", "zeros", "ones", "rand", "randn"):
        api[name] = _sized(api[name], first_size=False)
    api["full"] = _sized(api["full"], first_size=True)
    api["randint"] = _randint(api["randint"])
    for name in ("empty_like", "zeros_like", "ones_like", "full_like", "rand_like"):
        api[name] = _like(api[name])
    for name in ("randn_like", "randint_like"):
        api[name] = _like(api[name])
    for name in ("arange", "linspace", "logspace", "eye", "tensor", "as_tensor", "randperm"):
        if name in api:
            api[name] = _computed(api[name])
    for name in ("scalar_tensor", "empty_strided", "tril_indices", "triu_indices"):
        if name in api:
            api[name] = _computed(api[name])
    for name in ("new_empty", "new_zeros", "new_ones"):
        setattr(Tensor, name, _new(getattr(Tensor, name), first_size=False))
    Tensor.new_full = _new(Tensor.new_full, first_size=True)
    Tensor.to = _to(Tensor.to)
    Tensor.cpu = _cpu(Tensor.cpu)


# ------------------------------------------------------------------------------ moving


def _target_device(args, kwargs):
    dev = kwargs.get("device")
    if dev is None:
        for a in args:
            if isinstance(a, (str, _device.device)):
                dev = a
            elif isinstance(a, Tensor):
                dev = a.device
    return None if dev is None else _device.as_device(dev)


def _to(fn):
    @functools.wraps(fn)
    def to(self, *args, **kwargs):
        if not _meta.LIVE and kwargs.get("device") is None and not args:
            return fn(self, *args, **kwargs)
        dev = _target_device(args, kwargs)
        src_meta = _is_meta(self)
        if dev is None or (dev is _device.META) == src_meta:
            return fn(self, *args, **kwargs)
        if src_meta:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        # to meta: the dtype conversion decided on a zero-size stand-in, the data dropped
        probe = fn(_standin(self), *_drop_devices(args), **_drop_device_kw(kwargs))
        out = _wrap(_meta.meta_array(self._data.shape, probe._data.dtype))
        out._requires_grad = self._requires_grad
        return out

    return to


def _drop_devices(args):
    return tuple(a for a in args if not isinstance(a, (str, _device.device)))


def _drop_device_kw(kwargs):
    return {k: v for k, v in kwargs.items() if k != "device"}


def _cpu(fn):
    @functools.wraps(fn)
    def cpu(self, *args, **kwargs):
        if _meta.LIVE and _is_meta(self):
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        return fn(self, *args, **kwargs)

    return cpu

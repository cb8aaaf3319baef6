"""Layers built with ``device="meta"``: ember's layer constructors run inside
``with device(...)`` when given a non-CPU ``device`` keyword, so every factory inside them
(``empty``, ``zeros``, ``ones``...) makes its tensors there, as torch's ``factory_kwargs`` do."""

from __future__ import annotations

import functools
import inspect

from ember._core import device as _device
from ember._standin import is_ember_module


def scope_device(cls) -> None:
    """Wrap ``cls.__init__`` (an ember layer's own) so that ``device=`` applies inside it."""
    init = cls.__dict__.get("__init__")
    if init is None or getattr(init, "_device_scoped", False):
        return
    if not is_ember_module(cls.__module__):
        return  # (a user's module passes device= on to the layers it builds)
    if "device" not in inspect.signature(init).parameters:
        return  # no device= to apply (and no extra frame under its warnings' stacklevel)

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        dev = kwargs.get("device")
        if dev is None or _device.as_device(dev) is _device.CPU:
            return init(self, *args, **kwargs)
        with _device.as_device(dev):
            return init(self, *args, **kwargs)

    __init__._device_scoped = True
    cls.__init__ = __init__

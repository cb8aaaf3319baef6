"""The few ``torch._C`` names user code reaches for: the ``__torch_function__`` switches and
``_TensorMeta``, Tensor's metaclass.

torch's ``_C`` is its C++ extension; ember has none. Its protocol pieces live in
``ember.overrides`` and are re-exported here under torch's private names.
"""

from __future__ import annotations

import types

from ember._core.tensor import _TensorMeta
from ember.overrides import (
    DisableTorchFunction,
    DisableTorchFunctionSubclass,
    _disabled_torch_function_impl,
)

# ``torch._C._nn``: of torch's C++ nn bindings, the argument parser of ``Module.to``
_nn = types.ModuleType("torch._C._nn")


def _parse_to(*args, **kwargs):
    """Return ``(device, dtype, non_blocking, memory_format)`` as ``Module.to`` reads them."""
    from ember.nn.modules._to_args import parse_to

    return parse_to(*args, **kwargs)


_nn._parse_to = _parse_to


def _log_api_usage_once(event: str) -> None:
    """torch's usage logging hook for libraries; ember logs nothing."""


__all__ = [
    "DisableTorchFunction",
    "DisableTorchFunctionSubclass",
    "_TensorMeta",
    "_disabled_torch_function_impl",
]

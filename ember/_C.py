"""The few ``torch._C`` names user code reaches for: the ``__torch_function__`` switches.

torch's ``_C`` is its C++ extension; ember has none. Its protocol pieces live in
``ember.overrides`` and are re-exported here under torch's private names.
"""

from __future__ import annotations

from ember.overrides import (
    DisableTorchFunction,
    DisableTorchFunctionSubclass,
    _disabled_torch_function_impl,
)

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass", "_disabled_torch_function_impl"]

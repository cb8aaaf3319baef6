"""ember.nn: modules, parameters, layers, functional, init and utils (torch.nn)."""

from __future__ import annotations

from ember.nn import attention, functional, grad, init, modules, utils
from ember.nn.modules import *  # noqa: F403
from ember.nn.modules import __all__ as _modules_all
from ember.nn.parallel import DataParallel
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = [
    "Buffer",
    "Parameter",
    "UninitializedBuffer",
    "UninitializedParameter",
    "init",
    "utils",
    "modules",
]
__all__ += list(_modules_all) + ["functional", "grad", "DataParallel", "attention"]

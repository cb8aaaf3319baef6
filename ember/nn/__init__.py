"""ember.nn: modules, parameters, layers, functional, init and utils (torch.nn)."""

from __future__ import annotations

from ember.nn import attention, functional, grad, init, modules, utils
from ember.nn.modules import *  # noqa: F403
from ember.nn.modules import __all__ as _modules_all
from ember.nn.parallel import DataParallel
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

# torch-level functions over nn.functional (torch.conv2d, torch.dropout, torch.stft, ...):
# published into the op table's namespace from here, the layer they belong to
from ember.nn import _spectral, _torch_aliases  # noqa: F401  (isort: skip)

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

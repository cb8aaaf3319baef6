"""Padding layers (torch.nn.modules.padding): Zero/Constant/Reflection/Replication/Circular
padding in 1, 2 and 3 dims."""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _constants_repr

__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]


def _tuple(padding, n: int) -> tuple:
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    return tuple(padding)


class _PadNd(Module):
    __constants__ = ["padding"]
    _mode = "constant"
    _n = 1

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _tuple(padding, self._n)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]

    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    extra_repr = _constants_repr


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with ``value``."""

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with ``value``."""

    _n = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pads the last dim with zeros."""

    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pads the last 2 dims with zeros."""

    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pads the last 3 dims with zeros."""

    _n = 3


class ReflectionPad1d(_PadNd):
    """Pads the last dim with its reflection."""

    _mode, _n = "reflect", 1


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dims with their reflection."""

    _mode, _n = "reflect", 2


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dims with their reflection."""

    _mode, _n = "reflect", 3


class ReplicationPad1d(_PadNd):
    """Pads the last dim by repeating its edge values."""

    _mode, _n = "replicate", 1


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dims by repeating their edge values."""

    _mode, _n = "replicate", 2


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dims by repeating their edge values."""

    _mode, _n = "replicate", 3


class CircularPad1d(_PadNd):
    """Pads the last dim circularly."""

    _mode, _n = "circular", 1


class CircularPad2d(_PadNd):
    """Pads the last 2 dims circularly."""

    _mode, _n = "circular", 2


class CircularPad3d(_PadNd):
    """Pads the last 3 dims circularly."""

    _mode, _n = "circular", 3

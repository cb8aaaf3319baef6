"""Pooling layers: MaxPool, MaxUnpool, AvgPool, AdaptiveAvgPool, AdaptiveMaxPool, LPPool."""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember.nn.modules.module import Module
from ember.nn.modules.utils import (
    _constants_repr,
    _fields,
    _functional,
    _pair,
    _single,
    _triple,
)

__all__ = [
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
]


def _default_stride(stride, kernel_size):
    # no stride given: the windows tile the input without overlapping
    return kernel_size if stride is None else stride


class _MaxPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"]

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices=False,
        ceil_mode=False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = _default_stride(stride, kernel_size)
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return _fields(self, "kernel_size", "stride", "padding", "dilation", "ceil_mode")

    def forward(self, input: Tensor):
        return self._fn(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class MaxPool1d(_MaxPoolNd):
    """Apply a 1D max pooling over an input signal composed of several input planes."""

    _fn = _functional("max_pool1d")


class MaxPool2d(_MaxPoolNd):
    """Apply a 2D max pooling over an input signal composed of several input planes."""

    _fn = _functional("max_pool2d")


class MaxPool3d(_MaxPoolNd):
    """Apply a 3D max pooling over an input signal composed of several input planes."""

    _fn = _functional("max_pool3d")


def _window_repr(self) -> str:
    return _fields(self, "kernel_size", "stride", "padding")


class _MaxUnpoolNd(Module):
    # every size argument is expanded to one entry per spatial dimension
    _expand = staticmethod(_single)

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = self._expand(kernel_size)
        self.stride = self._expand(_default_stride(stride, kernel_size))
        self.padding = self._expand(padding)

    extra_repr = _window_repr

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return self._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """Compute a partial inverse of :class:`MaxPool1d`."""

    _fn = _functional("max_unpool1d")


class MaxUnpool2d(_MaxUnpoolNd):
    """Compute a partial inverse of :class:`MaxPool2d`."""

    _fn = _functional("max_unpool2d")
    _expand = staticmethod(_pair)


class MaxUnpool3d(_MaxUnpoolNd):
    """Compute a partial inverse of :class:`MaxPool3d`."""

    _fn = _functional("max_unpool3d")
    _expand = staticmethod(_triple)


class _AvgPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]

    extra_repr = _window_repr


class AvgPool1d(_AvgPoolNd):
    """Apply a 1D average pooling over an input signal composed of several input planes."""

    _fn = _functional("avg_pool1d")

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(_default_stride(stride, kernel_size))
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )


class AvgPool2d(_AvgPoolNd):
    """Apply a 2D average pooling over an input signal composed of several input planes."""

    __constants__ = _AvgPoolNd.__constants__ + ["divisor_override"]
    _fn = _functional("avg_pool2d")

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = _default_stride(stride, kernel_size)
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class AvgPool3d(AvgPool2d):
    """Apply a 3D average pooling over an input signal composed of several input planes."""

    _fn = _functional("avg_pool3d")


class _AdaptivePoolNd(Module):
    __constants__ = ["output_size"]

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return _fields(self, "output_size")

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Apply a 1D adaptive average pooling over an input signal."""

    _fn = _functional("adaptive_avg_pool1d")


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Apply a 2D adaptive average pooling over an input signal."""

    _fn = _functional("adaptive_avg_pool2d")


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """Apply a 3D adaptive average pooling over an input signal."""

    _fn = _functional("adaptive_avg_pool3d")


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    __constants__ = ["output_size", "return_indices"]

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        return self._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Apply a 1D adaptive max pooling over an input signal."""

    _fn = _functional("adaptive_max_pool1d")


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Apply a 2D adaptive max pooling over an input signal."""

    _fn = _functional("adaptive_max_pool2d")


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Apply a 3D adaptive max pooling over an input signal."""

    _fn = _functional("adaptive_max_pool3d")


class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode=False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    extra_repr = _constants_repr

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """Apply a 1D power-average pooling over an input signal."""

    _fn = _functional("lp_pool1d")


class LPPool2d(_LPPoolNd):
    """Apply a 2D power-average pooling over an input signal."""

    _fn = _functional("lp_pool2d")


class LPPool3d(_LPPoolNd):
    """Apply a 3D power-average pooling over an input signal."""

    _fn = _functional("lp_pool3d")

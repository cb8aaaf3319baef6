"""Conv1d/2d/3d and ConvTranspose1d/2d/3d, with torch's arguments, init and repr."""

from __future__ import annotations

import types

import ember
from ember._core.tensor import Tensor
from ember.nn import init
from ember.nn.modules._device_init import scope_device
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _functional
from ember.nn.parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _tuple(v, n):
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    __constants__ = [
        "stride",
        "padding",
        "dilation",
        "groups",
        "padding_mode",
        "output_padding",
        "in_channels",
        "out_channels",
        "kernel_size",
    ]
    _nd = 2

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        bias,
        padding_mode,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {_PADDING_MODES}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, nd)
        self.stride = _tuple(stride, nd)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, nd)
        self.dilation = _tuple(dilation, nd)
        self.transposed = transposed
        self.output_padding = _tuple(output_padding, nd)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            pads = []
            for d, k in zip(self.dilation, self.kernel_size):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            self._mode_pads = tuple(pads)
        else:
            self._mode_pads = tuple((p, p) for p in self.padding)
        if transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(ember.empty(shape, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Kaiming-uniform weight (a=sqrt(5)), bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init._layer_default_(self.weight, self.bias)

    def extra_repr(self) -> str:
        nd = len(self.kernel_size)
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _fn = _functional("conv2d")

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            False,
            0,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    _pad = _functional("pad")

    def _conv_forward(self, input: Tensor, weight: Tensor, bias) -> Tensor:
        if self.padding_mode != "zeros":
            # as torch's layers: F.pad (last dim first), then the convolution without padding
            pads = tuple(p for lo_hi in reversed(self._mode_pads) for p in lo_hi)
            x = self._pad(input, pads, mode=self.padding_mode)
            return self._fn(x, weight, bias, self.stride, 0, self.dilation, self.groups)
        return self._fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """Apply a 1D convolution over an input signal composed of several input planes."""

    _nd = 1
    _fn = _functional("conv1d")


class Conv2d(_Conv):
    """Apply a 2D convolution over an input signal composed of several input planes."""

    _nd = 2
    _fn = _functional("conv2d")


class Conv3d(_Conv):
    """Apply a 3D convolution over an input signal composed of several input planes."""

    _nd = 3
    _fn = _functional("conv3d")


class _ConvTransposeNd(_ConvNd):
    _fn = _functional("conv_transpose2d")

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {self.__class__.__name__}'
            )
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            True,
            output_padding,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _output_padding(
        self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None
    ):
        if output_size is None:
            return self.output_padding
        has_batch = input.dim() == num_spatial_dims + 2
        output_size = list(output_size)
        if len(output_size) == num_spatial_dims + (2 if has_batch else 1):
            output_size = output_size[-num_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(
                f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must "
                f"have {num_spatial_dims} or {num_spatial_dims + (2 if has_batch else 1)} "
                f"elements (got {len(output_size)})"
            )
        res = []
        for d in range(num_spatial_dims):
            dim_size = input.shape[d + input.dim() - num_spatial_dims]
            lo = (
                (dim_size - 1) * stride[d]
                - 2 * padding[d]
                + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1)
                + 1
            )
            hi = lo + stride[d] - 1
            if not lo <= output_size[d] <= hi:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{[lo]} to {[hi]} (for an input of {list(input.shape[2:])})"
                )
            res.append(output_size[d] - lo)
        return tuple(res)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        nd = len(self.kernel_size)
        op_ = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, nd, self.dilation
        )
        return self._fn(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            op_,
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTransposeNd):
    """Apply a 1D transposed convolution operator over an input image."""

    _nd = 1
    _fn = _functional("conv_transpose1d")


class ConvTranspose2d(_ConvTransposeNd):
    """Apply a 2D transposed convolution operator over an input image."""

    _nd = 2
    _fn = _functional("conv_transpose2d")


class ConvTranspose3d(_ConvTransposeNd):
    """Apply a 3D transposed convolution operator over an input image."""

    _nd = 3
    _fn = _functional("conv_transpose3d")


def _own_init(cls: type) -> None:
    # torch defines __init__ in each class: Python names it in argument errors
    # ("Conv2d.__init__() missing 1 required positional argument: 'kernel_size'")
    f = cls.__init__
    f = getattr(f, "__wrapped__", f)  # (under the device scope of _device_init)
    g = types.FunctionType(f.__code__, f.__globals__, "__init__", f.__defaults__, f.__closure__)
    g.__kwdefaults__, g.__annotations__, g.__doc__ = f.__kwdefaults__, f.__annotations__, f.__doc__
    g.__qualname__ = f"{cls.__name__}.__init__"
    cls.__init__ = g
    scope_device(cls)


for _cls in (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d):
    _own_init(_cls)
del _cls

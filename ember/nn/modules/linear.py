"""Identity, Linear, Bilinear (and the private ``_linear`` / ``_bilinear`` kernels)."""

from __future__ import annotations

import math

import ember
from ember._core.tensor import Tensor
from ember._ops import API as _OPS
from ember.nn import init
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _functional
from ember.nn.parameter import Parameter

__all__ = ["Identity", "Linear", "Bilinear"]


def _qualname(x) -> str:
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y = input @ weight.T + bias`` (``F.linear``); with a bias, one ``addmm`` over the
    input flattened to 2-D (torch's graph: ``AddmmBackward0`` / ``ViewBackward0``)."""
    if not isinstance(input, Tensor):  # a NumPy array or a list given to a model
        raise TypeError(
            f"linear(): argument 'input' (position 1) must be Tensor, not {_qualname(input)}"
        )
    if not isinstance(weight, Tensor):
        raise TypeError(
            f"linear(): argument 'weight' (position 2) must be Tensor, not {_qualname(weight)}"
        )
    if not (input.ndim and weight.ndim):
        raise RuntimeError(
            f"both arguments to linear need to be at least 1D, but they are {input.ndim}D and "
            f"{weight.ndim}D"
        )
    # the op table's own functions, not ``ember.addmm``: patching ``torch.addmm`` (as FLOP
    # counters do) does not reach into F.linear, whose kernel is not Python in torch
    if bias is None:
        return _OPS["matmul"](input, weight.t())
    if input.dim() == 2:
        return _OPS["addmm"](bias, input, weight.t())
    shape = input.shape
    out = _OPS["addmm"](bias, input.reshape(-1, shape[-1]), weight.t())
    return out.view(*shape[:-1], out.shape[-1])


def _bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``."""
    out = ember.einsum("...i,oij,...j->...o", input1, weight, input2)
    if bias is not None:
        out = out + bias
    return out


class Identity(Module):
    """A placeholder that returns its input (arguments are ignored)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x W^T + b`` with ``W`` of shape (out_features, in_features)."""

    __constants__ = ["in_features", "out_features"]
    _fn = _functional("linear")

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(ember.empty((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Kaiming-uniform weight (a=sqrt(5)), bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init._layer_default_(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under another name: the out-projection of ``MultiheadAttention``."""


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``A`` of shape (out_features, in1_features, in2_features)."""

    _fn = _functional("bilinear")

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(
            ember.empty((out_features, in1_features, in2_features), dtype=dtype)
        )
        if bias:
            self.bias = Parameter(ember.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight and bias from U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return self._fn(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )

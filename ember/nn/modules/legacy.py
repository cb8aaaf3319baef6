"""torch's legacy layers kept for old code: CrossMapLRN2d, NLLLoss2d, Container."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember.autograd.function import Function
from ember.nn.modules.loss import NLLLoss
from ember.nn.modules.module import Module

__all__ = ["CrossMapLRN2d", "NLLLoss2d", "Container"]


class CrossMapLRN2d(Function):  # named as torch's: its node is CrossMapLRN2dBackward
    """torch's Lua-era cross-channel LRN (``torch/nn/_functions.py``), its sums in its order."""

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        x = input._data
        channels = x.shape[1]
        sq = x * x
        scale = np.empty_like(x)
        pre_pad = int((size - 1) / 2 + 1)
        # a running window sum over channels, added and removed in torch's order (the first
        # channel is never removed: torch's ``c > pre_pad``)
        scale[:, 0] = 0
        for c in range(min(pre_pad, channels)):
            scale[:, 0] += sq[:, c]
        for c in range(1, channels):
            scale[:, c] = scale[:, c - 1]
            if c < channels - pre_pad + 1:
                scale[:, c] += sq[:, c + pre_pad - 1]
            if c > pre_pad:
                scale[:, c] -= sq[:, c - pre_pad]
        scale *= x.dtype.type(alpha / size)
        scale += x.dtype.type(k)
        out = np.power(scale, x.dtype.type(-beta)) * x
        ctx.size, ctx.alpha, ctx.beta, ctx.scale = size, alpha, beta, scale
        res = _wrap(out)
        ctx.save_for_backward(input, res)
        return res

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        x, y, g = input._data, output._data, grad_output._data
        size, scale = ctx.size, ctx.scale
        n, channels = x.shape[:2]
        dt = x.dtype.type
        cache_ratio = dt(2 * ctx.alpha * ctx.beta / size)
        inverse_pre_pad = int(size - (size - 1) / 2)
        if inverse_pre_pad + channels > channels + size - 1:  # torch's narrow fails (size 1)
            raise RuntimeError(
                f"start ({inverse_pre_pad}) + length ({channels}) exceeds dimension size "
                f"({channels + size - 1})."
            )
        grad_input = np.power(scale, dt(-ctx.beta)) * g
        padded = np.zeros((n, channels + size - 1) + x.shape[2:], dtype=x.dtype)
        padded[:, inverse_pre_pad : inverse_pre_pad + channels] = g * y / scale
        accum = padded[:, : size - 1].sum(1)
        for c in range(channels):
            accum += padded[:, c + size - 1]
            grad_input[:, c] -= cache_ratio * x[:, c] * accum
            accum -= padded[:, c]
        return _wrap(grad_input), None, None, None, None


_CrossMapLRN2d = CrossMapLRN2d


class CrossMapLRN2d(Module):  # noqa: F811
    """Local response normalization across channels (torch's legacy ``CrossMapLRN2d``)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return _CrossMapLRN2d.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class NLLLoss2d(NLLLoss):
    """Deprecated alias of :class:`NLLLoss` (warns, as torch)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
    ) -> None:
        warnings.warn(
            "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in "
            "replacement and see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for "
            "more details.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class Container(Module):
    """Deprecated: a Module holding the keyword sub-modules given (subclass Module instead)."""

    def __init__(self, **kwargs: Any) -> None:
        warnings.warn(
            "`nn.Container` is deprecated. All of its functionality is now implemented in "
            "`nn.Module`. Subclass that instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)

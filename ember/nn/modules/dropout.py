"""Dropout layers (torch.nn.modules.dropout): active in training mode, identity in eval."""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _constants_repr, _functional

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]


# each layer names its nn.functional function (``_fn``); the family's forward calls it with
# the probability, the training flag and (except the alpha variants, which torch's layers call
# without it) ``inplace``, by keyword as a __torch_function__ mode sees torch's calls


class _DropoutNd(Module):
    __constants__ = ["p", "inplace"]

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    extra_repr = _constants_repr

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, p=self.p, training=self.training, inplace=self.inplace)


class _AlphaDropoutNd(_DropoutNd):
    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, p=self.p, training=self.training)


class Dropout(_DropoutNd):
    """Zeroes elements with probability ``p`` in training; survivors scaled by 1/(1-p)."""

    _fn = _functional("dropout")


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of (N, C, L) input with probability ``p``."""

    _fn = _functional("dropout1d")


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) input with probability ``p``."""

    _fn = _functional("dropout2d")


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) input with probability ``p``."""

    _fn = _functional("dropout3d")


class AlphaDropout(_AlphaDropoutNd):
    """Dropout keeping the self-normalising property of SELU networks."""

    _fn = _functional("alpha_dropout")


class FeatureAlphaDropout(_AlphaDropoutNd):
    """Alpha dropout of whole channels."""

    _fn = _functional("feature_alpha_dropout")

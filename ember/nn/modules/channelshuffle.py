"""ChannelShuffle."""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _constants_repr

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Divide the channels of a (N, C, *) tensor into ``groups`` and interleave them."""

    __constants__ = ["groups"]

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    extra_repr = _constants_repr

"""Upsample, UpsamplingNearest2d and UpsamplingBilinear2d."""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Upsample multi-channel 1D (temporal), 2D (spatial) or 3D (volumetric) data."""

    __constants__ = [
        "size",
        "scale_factor",
        "mode",
        "align_corners",
        "name",
        "recompute_scale_factor",
    ]

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        # the scale factor when there is one, else the size
        name = "size" if self.scale_factor is None else "scale_factor"
        return f"{name}={getattr(self, name)!r}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Apply a 2D nearest neighbor upsampling to an input signal."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Apply a 2D bilinear upsampling (``align_corners=True``) to an input signal."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)

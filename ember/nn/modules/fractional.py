"""Fractional max pooling layers: FractionalMaxPool2d, FractionalMaxPool3d."""

from __future__ import annotations

from ember._core.tensor import Tensor
from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _pair, _triple

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


class _FractionalMaxPoolNd(Module):
    """The shared arguments and checks; ``_random_samples`` (a buffer, shape ``(N, C, nd)``)
    fixes the windows, without it each call draws new ones."""

    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]
    _tuple = staticmethod(_pair)

    def __init__(
        self,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ) -> None:
        super().__init__()
        self._check_kernel(kernel_size)
        self.kernel_size = self._tuple(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = self._tuple(output_size) if output_size is not None else None
        self.output_ratio = self._tuple(output_ratio) if output_ratio is not None else None
        # the output is fixed by exactly one of its size and its ratio to the input
        given = (output_size is not None) + (output_ratio is not None)
        if given == 0:
            raise ValueError(
                f"{type(self).__name__} requires specifying either an output size, or a "
                "pooling ratio"
            )
        if given == 2:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    @staticmethod
    def _check_kernel(kernel_size) -> None:
        pass

    def forward(self, input: Tensor):
        pool = F.fractional_max_pool2d if len(self.kernel_size) == 2 else F.fractional_max_pool3d
        return pool(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Applies a 2D fractional max pooling over an input signal of several input planes.

    ``_random_samples`` (a buffer, shape ``(N, C, 2)``) fixes the windows; without it each call
    draws new ones.
    """


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Applies a 3D fractional max pooling over an input signal of several input planes."""

    _tuple = staticmethod(_triple)

    @staticmethod
    def _check_kernel(kernel_size) -> None:
        # (torch's 3-d module checks the kernel itself; the 2-d one leaves it to the function)
        if isinstance(kernel_size, int):
            sizes = (kernel_size,)
        else:
            sizes = kernel_size if isinstance(kernel_size, (tuple, list)) else ()
        if any(k <= 0 for k in sizes):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")

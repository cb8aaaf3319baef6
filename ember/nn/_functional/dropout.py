"""The dropout family of ``ember.nn.functional``.

A dropout multiplies its input by a random mask drawn from ember's default generator (so
``ember.manual_seed`` makes it reproducible); the product is an ember ``mul`` (torch's
``MulBackward0``). Feature dropouts draw one value per (sample, channel).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import ember
from ember import _torch_rng
from ember._core.tensor import Tensor
from ember._ops.array_kernels import rng_kernel

__all__ = [
    "alpha_dropout",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
]

_SELU_ALPHA = 1.7580993408473766


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise(input: Tensor, p: float, feature: bool) -> np.ndarray:
    shape = tuple(input.shape)
    gen = ember.random.default_generator
    dt = input._data.dtype
    if feature:
        return gen._bernoulli(1.0 - p, shape[:2] + (1,) * (len(shape) - 2), dt)
    # torch's mask is empty_like(input): a permuted dense input's layout, filled in memory order
    a = input._data
    order = None
    if _torch_rng.dense(a):
        order = _torch_rng.fill_order(a)
    if order is None:
        return gen._bernoulli(1.0 - p, shape, dt)
    noise = gen._bernoulli(1.0 - p, tuple(shape[i] for i in order), dt)
    return noise.transpose(np.argsort(order))


def _apply(input: Tensor, noise: np.ndarray, inplace: bool, add=None) -> Tensor:
    m = ember.from_numpy(noise)
    out = input.mul_(m) if inplace else input * m
    if add is not None:
        out = out.add_(ember.from_numpy(add)) if inplace else out + ember.from_numpy(add)
    return out


@rng_kernel
def _masks(input, p, feature, alpha):
    # the arrays a dropout multiplies (and, for alpha dropout, adds): one draw (a compiled
    # program records this as one kernel)
    noise = _noise(input, p, feature)
    if not alpha:
        return (noise / noise.dtype.type(1 - p),)
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    b = ((noise - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p).astype(noise.dtype)
    return ((noise * a).astype(noise.dtype), b)


def _dropout_impl(input, p, training, inplace, feature=False, alpha=False):
    _check_p(p)
    if not training or p == 0:
        return input
    if p == 1:
        zeros = np.zeros((1,) * input.dim(), input._data.dtype)
        return _apply(input, zeros, inplace)
    masks = _masks(input, p, feature, alpha)
    return _apply(input, masks[0], inplace, masks[1] if alpha else None)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    return _dropout_impl(input, p, training, inplace)


def alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """Dropout that keeps the mean and variance of SELU activations."""
    return _dropout_impl(input, p, training, inplace, alpha=True)


def feature_alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """Alpha dropout of whole channels."""
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=True)


def _feature(input, p, training, inplace):
    return _dropout_impl(input, p, training, inplace, feature=True)


def _unbatched(input, p, training, inplace):
    # channel dropout of input without a batch dim: add one, drop, remove it
    out = _feature(input.unsqueeze(0), p, training, inplace)
    return input if inplace else out.squeeze(0)


def dropout1d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p``."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note "
            "that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs)."
        )
    if input.dim() == 2:
        return _unbatched(input, p, training, inplace)
    return _feature(input, p, training, inplace)


def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, H, W) or (C, H, W) input with probability ``p``."""
    _check_p(p)
    nd = input.dim()
    if nd not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 3D or 4D inputs).",
            UserWarning,
            stacklevel=2,
        )
    if nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain "
            "the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            UserWarning,
            stacklevel=2,
        )
    return _feature(input, p, training, inplace)


def dropout3d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    _check_p(p)
    nd = input.dim()
    if nd not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {nd}-D input to dropout3d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 4D or 5D inputs).",
            UserWarning,
            stacklevel=2,
        )
    if nd == 4:
        return _unbatched(input, p, training, inplace)
    return _feature(input, p, training, inplace)

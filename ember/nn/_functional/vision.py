"""Resampling: interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area),
pixel_shuffle / pixel_unshuffle and channel_shuffle.

Every interpolation mode is separable: resampling is one small ``(out, in)`` matrix applied
along each spatial dim (nearest modes gather instead of multiplying, so inf/nan stay put). The
op's backward applies the transposed matrices, and the backward of that is the forward again,
so double backward works. Source coordinates follow torch's ``area_pixel_compute_source_index``.
"""

from __future__ import annotations

import math

import numpy as np

from ember._core.tensor import Tensor
from ember._ops.registry import dispatch, op
from ember.nn._functional import pooling as _pool

__all__ = [
    "interpolate",
    "upsample",
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
    "affine_grid",
    "grid_sample",
]

_INTERP = ("linear", "bilinear", "bicubic", "trilinear")


def _linear_ops(name, grad_fn):
    @op(name, grad_fn=grad_fn)
    def fwd(x, *, mats, nearest):
        if nearest:
            nd = len(mats)
            for i, m in enumerate(mats):
                x = np.take(x, m.argmax(1), axis=x.ndim - nd + i)
            return np.ascontiguousarray(x)
        return _pool._apply_mats(x, [m.astype(x.dtype, copy=False) for m in mats])

    @op(name + "_backward", grad_fn=grad_fn[:-1] + "Backward0")
    def bwd(g, *, mats, nearest):
        return _pool._apply_mats(g, [m.T.astype(g.dtype, copy=False) for m in mats])

    @fwd.backward
    def _(ctx, g, *, mats, nearest):
        return dispatch(bwd, (g,), {"mats": mats, "nearest": nearest})

    @bwd.backward
    def _(ctx, gg, *, mats, nearest):
        return dispatch(fwd, (gg,), {"mats": mats, "nearest": nearest})

    return fwd


_NAMES = {
    ("nearest", 1): "UpsampleNearest1D",
    ("nearest", 2): "UpsampleNearest2D",
    ("nearest", 3): "UpsampleNearest3D",
    ("nearest-exact", 1): "UpsampleNearestExact1D",
    ("nearest-exact", 2): "UpsampleNearestExact2D",
    ("nearest-exact", 3): "UpsampleNearestExact3D",
    ("linear", 1): "UpsampleLinear1D",
    ("bilinear", 2): "UpsampleBilinear2D",
    ("bicubic", 2): "UpsampleBicubic2D",
    ("trilinear", 3): "UpsampleTrilinear3D",
}
_OPS = {k: _linear_ops("upsample_" + v.lower(), v + "Backward0") for k, v in _NAMES.items()}


def _scale(n_in, n_out, align_corners, scale):
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _matrix(mode, n_in, n_out, align_corners, scale) -> np.ndarray:
    """Return the ``(n_out, n_in)`` resampling matrix of one spatial dim."""
    dst = np.arange(n_out, dtype=np.float64)
    m = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    if mode in ("nearest", "nearest-exact"):
        s = n_in / n_out if scale is None or scale <= 0 else 1.0 / scale
        off = 0.5 if mode == "nearest-exact" else 0.0
        src = np.minimum(np.floor(((dst + off) * s).astype(np.float32)).astype(np.int64), n_in - 1)
        m[rows, src] = 1.0
        return m
    s = np.float32(_scale(n_in, n_out, align_corners, scale))
    dst = dst.astype(np.float32)
    cubic = mode == "bicubic"
    if align_corners:
        src = s * dst
    else:
        src = s * (dst + np.float32(0.5)) - np.float32(0.5)
        if not cubic:
            src = np.maximum(src, 0)
    if not cubic:
        i0 = src.astype(np.int64)
        lam = src - i0
        i1 = np.minimum(i0 + 1, n_in - 1)
        np.add.at(m, (rows, i0), 1.0 - lam)
        np.add.at(m, (rows, i1), lam)
        return m
    i0 = np.floor(src).astype(np.int64)
    t = (src - i0).astype(np.float64)
    a = -0.75

    def c1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    coeffs = (c2(t + 1), c1(t), c1(1 - t), c2(2 - t))
    for j, c in enumerate(coeffs):
        np.add.at(m, (rows, np.clip(i0 - 1 + j, 0, n_in - 1)), c)
    return m


def interpolate(
    input: Tensor,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Down/up sample the input to the given ``size`` or by the given ``scale_factor``."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("ember: antialias=True is not supported")
    nd = input.dim() - 2
    if nd < 1:
        raise ValueError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
            f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
            f"nearest-exact (got {mode})"
        )
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nd:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size "
                    f"of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                    "format and output size in (o1, o2, ...,oK) format."
                )
            out = tuple(int(s) for s in size)
        else:
            out = (int(size),) * nd
        scales = (None,) * nd
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != nd:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor "
                    "in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                    "format."
                )
            scales = tuple(float(s) for s in scale_factor)
        else:
            scales = (float(scale_factor),) * nd
        out = tuple(math.floor(float(s) * f) for s, f in zip(input.shape[2:], scales))
        if recompute_scale_factor:
            scales = (None,) * nd
    else:
        raise ValueError("either size or scale_factor should be defined")
    if mode == "area":
        fn = {
            1: _pool.adaptive_avg_pool1d,
            2: _pool.adaptive_avg_pool2d,
            3: _pool.adaptive_avg_pool3d,
        }[nd]
        return fn(input, out)
    need = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
    if mode in need and need[mode] != nd:
        raise NotImplementedError(
            f"Got {input.dim()}D input, but {mode} mode needs {need[mode] + 2}D input"
        )
    if (mode, nd) not in _OPS:
        raise NotImplementedError(
            "Input Error: Only 3D, 4D and 5D input Tensors supported (got "
            f"{input.dim()}D) for the modes: nearest | linear | bilinear | bicubic | trilinear "
            f"| area | nearest-exact (got {mode})"
        )
    mats = tuple(
        _matrix(mode, n_in, n_out, align_corners, sc)
        for n_in, n_out, sc in zip(input.shape[2:], out, scales)
    )
    nearest = mode.startswith("nearest")
    return dispatch(_OPS[(mode, nd)], (input,), {"mats": mats, "nearest": nearest})


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Upsample the input (deprecated alias of :func:`interpolate`)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


# ---------------------------------------------------------------------------------------------
# pixel and channel shuffles: permutations, each op the other's backward


def _ps(x, r):
    *lead, c, h, w = x.shape
    oc = c // (r * r)
    y = x.reshape((*lead, oc, r, r, h, w))
    n = len(lead)
    y = y.transpose(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return np.ascontiguousarray(y).reshape((*lead, oc, h * r, w * r))


def _pu(x, r):
    *lead, c, h, w = x.shape
    y = x.reshape((*lead, c, h // r, r, w // r, r))
    n = len(lead)
    y = y.transpose(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return np.ascontiguousarray(y).reshape((*lead, c * r * r, h // r, w // r))


@op("pixel_shuffle", grad_fn="PixelShuffleBackward0")
def _pixel_shuffle(x, *, r):
    return _ps(x, r)


@op("pixel_unshuffle", grad_fn="PixelUnshuffleBackward0")
def _pixel_unshuffle(x, *, r):
    return _pu(x, r)


@_pixel_shuffle.backward
def _(ctx, g, *, r):
    return dispatch(_pixel_unshuffle, (g,), {"r": r})


@_pixel_unshuffle.backward
def _(ctx, g, *, r):
    return dispatch(_pixel_shuffle, (g,), {"r": r})


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearrange (*, C*r^2, H, W) into (*, C, H*r, W*r)."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(
            f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    c = input.shape[-3]
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    return dispatch(_pixel_shuffle, (input,), {"r": r})


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Rearrange (*, C, H*r, W*r) into (*, C*r^2, H, W)."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(
            f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    h, w = input.shape[-2:]
    if h % r:
        raise RuntimeError(
            "pixel_unshuffle expects height to be divisible by downscale_factor, but input."
            f"size(-2)={h} is not divisible by {r}"
        )
    if w % r:
        raise RuntimeError(
            "pixel_unshuffle expects width to be divisible by downscale_factor, but input."
            f"size(-1)={w} is not divisible by {r}"
        )
    return dispatch(_pixel_unshuffle, (input,), {"r": r})


def _cs(x, g):
    n, c = x.shape[:2]
    y = x.reshape((n, g, c // g) + x.shape[2:]).swapaxes(1, 2)
    return np.ascontiguousarray(y).reshape(x.shape)


@op("channel_shuffle", grad_fn="ChannelShuffleBackward0")
def _channel_shuffle(x, *, groups):
    return _cs(x, groups)


@_channel_shuffle.backward
def _(ctx, g, *, groups):
    c = g.shape[1]
    return dispatch(_channel_shuffle, (g,), {"groups": c // groups})


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Divide the channels into ``groups`` and interleave them."""
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    if input.shape[1] % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {input.shape[1]} channels "
            f"and {groups} groups."
        )
    return dispatch(_channel_shuffle, (input,), {"groups": int(groups)})


# ---------------------------------------------------------------------------------------------
# affine_grid and grid_sample (2D), compositions of ember ops: gradients w.r.t. the input, the
# grid and theta come from the ops they are made of (torch records single fused nodes).


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """Generate a 2D sampling grid, given a batch of affine matrices ``theta`` (N, 2, 3)."""
    import ember

    if align_corners is None:
        align_corners = False
    if not (theta.dtype.is_floating_point or theta.dtype.is_complex):
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) != 4:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
        raise ValueError(
            "Expected a batch of 2D affine matrices of shape Nx2x3 for size "
            f"{size}. Got {list(theta.shape)}."
        )
    n, _, h, w = size

    def base(k):
        if align_corners:
            v = np.linspace(-1.0, 1.0, k) if k > 1 else np.zeros(1)
        else:
            v = (np.arange(k) * 2 + 1) / k - 1
        return v

    bx, by = np.meshgrid(base(w), base(h))
    b = np.stack([bx, by, np.ones_like(bx)], -1).reshape(1, h * w, 3)
    bt = ember.from_numpy(b.astype(theta._data.dtype))
    return ember.matmul(bt, theta.transpose(1, 2)).view(n, h, w, 2)


def _reflect(x, lo2, hi2):
    import ember

    if lo2 == hi2:
        return x * 0
    mn = lo2 / 2
    span = (hi2 - lo2) / 2
    x = (x - mn).abs()
    extra = ember.fmod(x, span)
    flips = ember.floor(x / span)
    even = ember.fmod(flips, 2) == 0
    return ember.where(even, extra + mn, span - extra + mn)


def _source(coord, size, padding_mode, align_corners):
    if align_corners:
        c = (coord + 1) / 2 * (size - 1)
    else:
        c = ((coord + 1) * size - 1) / 2
    if padding_mode == "border":
        c = c.clamp(0, size - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = c.clamp(0, size - 1)
    return c


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Sample ``input`` (N, C, H, W) at the locations of ``grid`` (N, Ho, Wo, 2) in [-1, 1]."""
    import ember

    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    if mode == "bicubic" or input.dim() != 4:
        raise NotImplementedError("ember: grid_sample supports 4D input, bilinear and nearest")
    if align_corners is None:
        align_corners = False
    n, c, h, w = input.shape
    _, ho, wo, _ = grid.shape
    ix = _source(grid[..., 0], w, padding_mode, align_corners).reshape(n, ho * wo)
    iy = _source(grid[..., 1], h, padding_mode, align_corners).reshape(n, ho * wo)
    flat = input.reshape(n, c, h * w)
    bidx = ember.arange(n).reshape(n, 1)

    def tap(yy, xx):
        # values (N, C, Ho*Wo) at integer positions, zero outside the input
        inside = (xx >= 0) & (xx <= w - 1) & (yy >= 0) & (yy <= h - 1)
        xi = xx.clamp(0, w - 1).long()
        yi = yy.clamp(0, h - 1).long()
        v = flat[bidx, :, yi * w + xi].permute(0, 2, 1)
        return v * inside.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        out = tap(ember.round(iy).detach(), ember.round(ix).detach())
        # torch gives the grid a zero gradient here (not None): keep it in the graph at 0
        never = ember.zeros((), dtype=ember.bool)
        out = out + ember.where(never, (ix + iy).sum(), 0.0).to(out.dtype)
    else:
        x0 = ember.floor(ix).detach()
        y0 = ember.floor(iy).detach()
        x1, y1 = x0 + 1, y0 + 1
        wx1, wy1 = ix - x0, iy - y0
        wx0, wy0 = 1 - wx1, 1 - wy1
        out = (
            tap(y0, x0) * (wy0 * wx0).unsqueeze(1)
            + tap(y0, x1) * (wy0 * wx1).unsqueeze(1)
            + tap(y1, x0) * (wy1 * wx0).unsqueeze(1)
            + tap(y1, x1) * (wy1 * wx1).unsqueeze(1)
        )
    return out.reshape(n, c, ho, wo)

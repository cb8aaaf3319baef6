"""Resampling: interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area),
pixel_shuffle / pixel_unshuffle and channel_shuffle.

Every interpolation mode is separable: resampling is one small ``(out, in)`` matrix applied
along each spatial dim (nearest modes gather instead of multiplying, so inf/nan stay put). The
op's backward applies the transposed matrices, and the backward of that is the forward again,
so double backward works. Source coordinates follow torch's ``area_pixel_compute_source_index``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember._ops.copying import keep_layout_of
from ember._ops.registry import dispatch, op
from ember.nn._functional import pooling as _pool

__all__ = [
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
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
            out, nd = x, len(mats)
            for i, m in enumerate(mats):
                out = np.take(out, m.argmax(1), axis=out.ndim - nd + i)
            return keep_layout_of(np.ascontiguousarray(out), x)
        out = _pool._apply_mats(x, [m.astype(x.dtype, copy=False) for m in mats])
        return keep_layout_of(out, x)

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
_AA_OPS = {
    "bilinear": _linear_ops("upsample_bilinear2d_aa", "UpsampleBilinear2DAaBackward0"),
    "bicubic": _linear_ops("upsample_bicubic2d_aa", "UpsampleBicubic2DAaBackward0"),
}


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


def _aa_filter(mode, x):
    """torch's antialias filters: the triangle, or Keys' cubic with a = -0.5 (as PIL)."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.where(x < 1, 1 - x, 0)
    a = -0.5
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0))


def _aa_matrix(mode, n_in, n_out, align_corners, scale, dt) -> np.ndarray:
    """Return the ``(n_out, n_in)`` antialiasing resampling matrix of one spatial dim
    (torch's ``_compute_weights_aa``: the filter widens by the downscaling factor)."""
    interp = 2 if mode == "bilinear" else 4
    s = dt(_scale(n_in, n_out, align_corners, scale))
    half = dt(interp * 0.5)
    support = half * s if s >= 1 else half
    invscale = dt(1) / s if s >= 1 else dt(1)
    center = s * (np.arange(n_out).astype(dt) + dt(0.5))
    xmin = np.maximum(np.trunc(center - support + dt(0.5)).astype(np.int64), 0)
    xmax = np.minimum(np.trunc(center + support + dt(0.5)).astype(np.int64), n_in)
    width = int(math.ceil(support)) * 2 + 1
    xsize = np.clip(xmax - xmin, 0, width)
    j = np.arange(width)
    offsets = ((j[None, :] + xmin[:, None]).astype(dt) - center[:, None] + dt(0.5)) * invscale
    valid = j[None, :] < xsize[:, None]
    w = np.where(valid, _aa_filter(mode, offsets).astype(dt), dt(0))
    total = w.sum(1, keepdims=True)
    w = np.where(total != 0, w / np.where(total != 0, total, 1), w)
    m = np.zeros((n_out, n_in))
    rows = np.broadcast_to(np.arange(n_out)[:, None], w.shape)
    m[rows[valid], (j[None, :] + xmin[:, None])[valid]] = w[valid]
    return m


def _modes_error(input: Tensor, mode: str) -> str:
    return (
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the "
        "modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
        f"nearest-exact (got {mode})"
    )


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
    nd = input.dim() - 2
    if nd < 1:
        raise NotImplementedError(_modes_error(input, mode))
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
    if antialias and not (mode in ("bilinear", "bicubic") and input.dim() == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            "requires a 4-D tensor as input"
        )
    if antialias:
        dt = np.float64 if input._data.dtype == np.float64 else np.float32
        mats = tuple(
            _aa_matrix(mode, n_in, n_out, align_corners, sc, dt)
            for n_in, n_out, sc in zip(input.shape[2:], out, scales)
        )
        return dispatch(_AA_OPS[mode], (input,), {"mats": mats, "nearest": False})
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
        raise NotImplementedError(_modes_error(input, mode))
    mats = tuple(
        _matrix(mode, n_in, n_out, align_corners, sc)
        for n_in, n_out, sc in zip(input.shape[2:], out, scales)
    )
    nearest = mode.startswith("nearest")
    return dispatch(_OPS[(mode, nd)], (input,), {"mats": mats, "nearest": nearest})


def _deprecated_alias(name: str, input: Tensor, **how) -> Tensor:
    # the three old names warn at the user's call (level 3: here, the alias, its caller) and
    # resample through interpolate
    warnings.warn(
        f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
        UserWarning,
        stacklevel=3,
    )
    return interpolate(input, **how)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Upsample the input (deprecated alias of :func:`interpolate`)."""
    return _deprecated_alias(
        "upsample",
        input,
        size=size,
        scale_factor=scale_factor,
        mode=mode,
        align_corners=align_corners,
    )


def upsample_nearest(input, size=None, scale_factor=None):
    """Upsample with nearest neighbours (deprecated: :func:`interpolate`)."""
    return _deprecated_alias("upsample_nearest", input, size=size, scale_factor=scale_factor)


def upsample_bilinear(input, size=None, scale_factor=None):
    """Upsample bilinearly with ``align_corners=True`` (deprecated: :func:`interpolate`)."""
    return _deprecated_alias(
        "upsample_bilinear",
        input,
        size=size,
        scale_factor=scale_factor,
        mode="bilinear",
        align_corners=True,
    )


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
# affine_grid and grid_sample (2D and 3D), compositions of ember ops: gradients w.r.t. the input,
# the grid and theta come from the ops they are made of (torch records single fused nodes).

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


def _base_coords(k: int, align_corners: bool, dtype) -> np.ndarray:
    # torch's linspace_from_neg_one, rounded as torch rounds it in theta's dtype (a grid point
    # one ulp off an integer pixel moves grid_sample's floor, and so the grid's gradient)
    import ember

    if k <= 1:
        return np.zeros(1, dtype=dtype)
    r = ember.linspace(-1.0, 1.0, k, dtype=ember.from_numpy(np.zeros(0, dtype)).dtype)._data
    if not align_corners:
        r = r * r.dtype.type(k - 1) / r.dtype.type(k)
    return r


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """Generate a 2D or 3D sampling grid, given a batch of affine matrices ``theta`` (N, 2, 3)
    for a 4D ``size`` (N, C, H, W) or (N, 3, 4) for a 5D ``size`` (N, C, D, H, W)."""
    import warnings

    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not (theta.dtype.is_floating_point or theta.dtype.is_complex):
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    dims = list(size)
    if len(dims) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(
                "Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                f"{size}. Got {theta.shape}."
            )
    elif len(dims) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(
                "Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                f"{size}. Got {theta.shape}."
            )
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if align_corners and min(dims[2:]) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(dims) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, spatial = dims[0], dims[2:]
    # base coordinates (x, y[, z], 1): x runs along the last dim
    dt = theta._data.dtype
    axes = np.meshgrid(*[_base_coords(k, align_corners, dt) for k in spatial], indexing="ij")
    coords = list(axes[::-1]) + [np.ones_like(axes[0])]
    npts = math.prod(spatial)
    base = np.stack(coords, -1).reshape(1, npts, len(coords)).astype(dt)
    shape = (n, *spatial, len(spatial))
    return dispatch(_affine_grid_op, (theta,), {"base": base, "shape": shape})


@op("affine_grid_generator", grad_fn="AffineGridGeneratorBackward0")
def _affine_grid_op(theta, *, base, shape):
    # (1, P, k + 1) @ (N, k + 1, k) -> (N, P, k), viewed as the grid
    return np.matmul(base, theta.transpose(0, 2, 1)).reshape(shape)


@_affine_grid_op.backward
def _(ctx, g, *, base, shape):
    import ember

    g = g.reshape(shape[0], -1, shape[-1])
    return ember.matmul(g.transpose(1, 2), ember.from_numpy(base.astype(g._data.dtype)))


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


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _pad_coord(c, size, padding_mode, align_corners):
    """torch's ``compute_coordinates``: clip (border) or reflect then clip (reflection)."""
    if padding_mode == "border":
        c = _clip(c, size)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = _clip(c, size)
    return c


def _clip(c, size):
    """Clamp to [0, size - 1] with torch's ``clip_coordinates_set_grad``: no gradient on the
    bounds themselves (``clamp`` would pass it there)."""
    import ember

    inside = (c > 0) & (c < size - 1)
    return ember.where(inside, c, c.detach().clamp(0, size - 1))


def _cubic_coeffs(t):
    """Return the four cubic-convolution weights (A = -0.75) of fractional offsets ``t``."""
    a = -0.75

    def c1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return (c2(t + 1), c1(t), c1(1 - t), c2(2 - t))


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Sample ``input`` (N, C, H, W) or (N, C, D, H, W) at the locations of ``grid``
    (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3) in [-1, 1]; 'bilinear' is trilinear for volumes."""
    import warnings

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
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    nd = input.dim() - 2
    shapes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid and input to have same batch size, but got {shapes}"
        )
    if grid.shape[-1] != nd:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid "
            f"with sizes {list(grid.shape)}"
        )
    for i in range(2, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input "
                f"has sizes {list(input.shape)} with dimension {i} being empty"
            )
    want = 4 if input.dim() == 4 else 5
    if input.dim() != want or grid.dim() != want:
        raise RuntimeError(
            f"grid_sampler(): expected {want}D input and grid with same number of dimensions, "
            f"but got {shapes}"
        )
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype != grid.dtype:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to have same dtype, but input has "
            f"{_dtype_name(input.dtype)} and grid has {_dtype_name(grid.dtype)}"
        )
    params = {"mode": mode, "padding_mode": padding_mode, "align_corners": bool(align_corners)}
    return dispatch(_GRID_OPS[nd], (input, grid), params)


def _dtype_name(dt) -> str:
    from ember._ops.registry import _type_name

    return _type_name(dt)


def _grid_sampler_op(nd: int):
    """One fused op per dimensionality, with torch's node name. The forward and the backward
    both run the composition of ember ops below: the backward differentiates it (through the
    saved input and grid when ``create_graph``, so double backward works)."""
    import ember

    @op(
        f"grid_sampler_{nd}d",
        grad_fn=f"GridSampler{nd}DBackward0",
        args=("input", "grid"),
        save=("input", "grid"),
    )
    def fwd(x, grid, *, mode, padding_mode, align_corners):
        with ember.no_grad():
            out = _grid_sample(_wrap(x), _wrap(grid), mode, padding_mode, align_corners)
        return np.ascontiguousarray(out._data)

    @fwd.backward
    def _(ctx, g, *, mode, padding_mode, align_corners):
        x, grid = ctx.saved_tensors
        needs = ctx.needs_input_grad
        create = ember.is_grad_enabled()
        if not create:
            x = x.detach().requires_grad_(needs[0])
            grid = grid.detach().requires_grad_(needs[1])
        wrt = [t for t, need in zip((x, grid), needs) if need]
        with ember.enable_grad():
            out = _grid_sample(x, grid, mode, padding_mode, align_corners)
        grads = iter(ember.autograd.grad(out, wrt, g, create_graph=create, allow_unused=True))
        res = []
        for t, need in zip((x, grid), needs):
            gi = next(grads) if need else None
            res.append(ember.zeros_like(t) if need and gi is None else gi)
        return tuple(res)

    return fwd


def _grid_sample(input, grid, mode, padding_mode, align_corners):
    """grid_sample as a composition of ember ops (checked arguments)."""
    import ember

    nd = input.dim() - 2
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])  # (H, W) or (D, H, W)
    out_sp = tuple(grid.shape[1:-1])
    npts = math.prod(out_sp)
    strides = [math.prod(sizes[k + 1 :]) for k in range(nd)]
    flat = input.reshape(n, c, math.prod(sizes))
    bidx = ember.arange(n).reshape(n, 1)
    # unnormalised coordinates per input dim (grid's last entry is x: the last input dim)
    raw = [
        _unnormalize(grid[..., nd - 1 - k], sizes[k], align_corners).reshape(n, npts)
        for k in range(nd)
    ]

    def tap(idx):
        # values (N, C, P) at integer positions ``idx`` (one per input dim), zero outside
        inside = None
        lin = None
        for k, (i, size) in enumerate(zip(idx, sizes)):
            ok = (i >= 0) & (i <= size - 1)
            inside = ok if inside is None else inside & ok
            term = i.clamp(0, size - 1).long() * strides[k]
            lin = term if lin is None else lin + term
        v = flat[bidx, :, lin].permute(0, 2, 1)
        return v * inside.unsqueeze(1).to(input.dtype)

    if mode == "bicubic":
        base = [ember.floor(r).detach() for r in raw]
        coeffs = [_cubic_coeffs(r - b) for r, b in zip(raw, base)]
        out = None
        for i in range(4):
            for j in range(4):
                pos = [base[0] - 1 + i, base[1] - 1 + j]
                pos = [_pad_coord(p, s_, padding_mode, align_corners) for p, s_ in zip(pos, sizes)]
                term = tap(pos) * (coeffs[0][i] * coeffs[1][j]).unsqueeze(1)
                out = term if out is None else out + term
        return out.reshape(n, c, *out_sp)
    src = [_pad_coord(r, s_, padding_mode, align_corners) for r, s_ in zip(raw, sizes)]
    if mode == "nearest":
        out = tap([ember.round(x).detach() for x in src])
        # torch gives the grid a zero gradient here (not None): keep it in the graph at 0
        never = ember.zeros((), dtype=ember.bool)
        total = src[0]
        for x in src[1:]:
            total = total + x
        out = out + ember.where(never, total.sum(), 0.0).to(out.dtype)
        return out.reshape(n, c, *out_sp)
    lo = [ember.floor(x).detach() for x in src]
    w1 = [x - f for x, f in zip(src, lo)]
    w0 = [1 - w for w in w1]
    out = None
    for corner in range(2**nd):
        bits = [(corner >> (nd - 1 - k)) & 1 for k in range(nd)]
        weight = None
        for k, bit in enumerate(bits):
            w = w1[k] if bit else w0[k]
            weight = w if weight is None else weight * w
        term = tap([lo[k] + bits[k] for k in range(nd)]) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape(n, c, *out_sp)


_GRID_OPS = {2: _grid_sampler_op(2), 3: _grid_sampler_op(3)}

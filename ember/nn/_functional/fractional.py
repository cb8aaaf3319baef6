"""Fractional max pooling (Graham, 2014) and the ``*_with_indices`` names of max pooling.

torch samples one pseudo-random number in [0, 1) per plane and spatial dim and turns it into
window starts with ``generate_intervals`` (ATen's FractionalMaxPool2d.cpp), computed in the
input's dtype: ``start[i] = int((i + u) * alpha) - int(u * alpha)`` with
``alpha = (in - k) / (out - 1)``, the last window ending at the input's end. Given the same
``_random_samples`` the windows, maxima and indices are torch's. The windows are gathered with
fancy indexing (no Python loop over outputs); the values are one gather through the flat
per-plane indices, whose backward scatters (adding where windows overlap) and whose double
backward gathers again, as max pooling's.
"""

from __future__ import annotations

import math

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember._ops import API
from ember._ops.registry import dispatch, op
from ember.nn._functional import pooling as _pooling
from ember.nn._functional import vision as _vision
from ember.nn._functional.pooling import _gather_forward, _scatter_forward

__all__ = [
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
    "native_channel_shuffle",
]


_BACK_ARGS = ("grad_output", "indices")  # the double-backward op: indices are an input


def _fractional_op(nd: int):
    name = f"fractional_max_pool{nd}d"
    grad_fn = f"FractionalMaxPool{nd}DBackward0"

    # ``empty``: a zero-size window, whose value is torch's initial -inf (index: the start)
    @op(name, grad_fn=grad_fn, args=("self", "result1"), save=("result1",))
    def fwd(x, idx, *, empty=False):
        if empty:  # the start index may lie past the input's end: nothing is read
            return np.full(idx.shape, -np.inf, dtype=x.dtype)
        return _gather_forward(x, idx, nd)

    @op(
        name + "_backward",
        grad_fn=grad_fn.replace("Backward0", "BackwardBackward0"),
        args=_BACK_ARGS,
        save=("indices",),
    )
    def scatter(g, idx, *, shape):
        return _scatter_forward(g, idx, shape, nd)

    @fwd.backward
    def _(ctx, g, *, empty=False):
        (idx,) = ctx.saved_tensors
        shape = tuple(ctx._input_meta[0][0])
        if empty:  # no input element was read
            return g.new_zeros(shape), None
        return dispatch(scatter, (g, idx), {"shape": shape}), None

    @scatter.backward
    def _(ctx, gg, *, shape):
        (idx,) = ctx.saved_tensors
        return dispatch(fwd, (gg, idx), {}), None

    return fwd


_OPS = {2: _fractional_op(2), 3: _fractional_op(3)}


def _intervals(u: np.ndarray, size: int, out: int, k: int) -> np.ndarray:
    """Return torch's window starts, shape ``u.shape + (out,)``, from the samples ``u``."""
    seq = np.empty(u.shape + (out,), dtype=np.int64)
    if out > 1:
        dt = u.dtype.type
        alpha = dt(size - k) / dt(out - 1)  # in the input's dtype, as ATen's scalar_t
        i = np.arange(out - 1).astype(u.dtype)
        first = ((i + u[..., None]) * alpha).astype(np.int64)
        seq[..., :-1] = first - (u * alpha).astype(np.int64)[..., None]
    if out > 0:
        seq[..., -1] = size - k
    return seq


def _fractional_indices(x: np.ndarray, samples: np.ndarray, kernel, out) -> np.ndarray:
    """Return the flat per-plane indices of the window maxima, shape ``lead + out``."""
    nd = len(kernel)
    size = x.shape[-nd:]
    lead = x.shape[:-nd]
    planes = math.prod(lead)
    xs = x.reshape((planes,) + size)
    u = samples.reshape(planes, nd)
    # the samples' order: (W, H) for 2D, (T, H, W) for 3D
    order = (1, 0) if nd == 2 else (0, 1, 2)
    starts = [_intervals(u[:, order[d]], size[d], out[d], kernel[d]) for d in range(nd)]
    kk = math.prod(kernel)
    if kk == 0 or planes == 0 or 0 in out:  # no window element: torch's index is the start
        flat = np.zeros((planes, *out), dtype=np.int64)
        for d in range(nd):
            shape = [planes] + [1] * nd
            shape[1 + d] = out[d]
            flat = flat * size[d] + starts[d].reshape(shape)
        return flat.reshape(lead + tuple(out))
    # every window element, broadcast: (planes, *out, *kernel)
    flat = np.zeros((), dtype=np.int64)
    for d in range(nd):
        shape = [planes] + [1] * (2 * nd)
        shape[1 + d], shape[1 + nd + d] = out[d], kernel[d]
        grid = starts[d][:, :, None] + np.arange(kernel[d])  # (planes, out_d, k_d)
        flat = flat * size[d] + grid.reshape(shape)
    flat = np.broadcast_to(flat, (planes, *out, *kernel)).reshape(planes, *out, kk)
    win = xs.reshape(planes, -1)[np.arange(planes).reshape((planes,) + (1,) * (nd + 1)), flat]
    pos = win.argmax(-1)  # the first maximum, as torch's ``val > maxVal``
    nan = np.isnan(win)
    if nan.any():  # torch keeps the last NaN of a window
        has = nan.any(-1)
        last = kk - 1 - nan[..., ::-1].argmax(-1)
        pos = np.where(has, last, pos)
    res = np.take_along_axis(flat, pos[..., None], -1)[..., 0]
    return res.reshape(lead + tuple(out))


def _fractional(nd, input, kernel_size, output_size, _random_samples):
    fn = f"fractional_max_pool{nd}d"
    kernel = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * nd
    if len(kernel) != nd:
        what = "tuple of Ints" if nd == 2 else "tuple of three Ints"
        raise RuntimeError(f"{fn}: kernel_size must either be a single Int or {what}")
    out = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * nd
    if len(out) != nd:
        what = "tuple of Ints" if nd == 2 else "tuple of three Ints"
        raise RuntimeError(f"{fn}: output_size must either be a single Int or {what}")
    kernel, out = tuple(int(k) for k in kernel), tuple(int(o) for o in out)
    where = fn + ("()" if nd == 2 else "_out()")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{fn}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}"
        )
    for i in range(1, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(
                f"{where}: Expected input to have non-zero size for non-batch dimensions, but "
                f"got{list(input.shape)} with dimension {i} being empty."
            )
    names = ("height", "width") if nd == 2 else ("time", "height", "width")
    # the last window must fit; ATen's 3-d kernel also refuses one ending exactly at the edge
    reach = 0 if nd == 2 else 1
    for name, o, k, size in zip(names, out, kernel, input.shape[-nd:]):
        if o + k - 1 + reach > size:
            raise RuntimeError(
                f"{where}: pool {name} {k} too large relative to input {name} {size}"
            )
    if any(o < 0 for o in out):  # torch fails allocating the output
        shape = [*input.shape[:-nd], *out]
        neg = next(o for o in shape if o < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg}: {shape}")
    samples = _random_samples  # then the kernel's checks, in its order
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    batched = input.dim() == nd + 2
    n = input.shape[0] if batched else 1
    if samples.shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != input.shape[-nd - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(
            f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}."
        )
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"{fn}_out_frame\" not implemented for '{_dtype_name(input.dtype)}'"
        )
    x = input._data
    u = samples._data[:n]
    idx = _fractional_indices(x, u if batched else u[0], kernel, out)
    idx_t = _wrap(np.ascontiguousarray(idx))
    params = {"empty": True} if 0 in kernel else {}
    vals = dispatch(_OPS[nd], (input, idx_t), params)
    return vals, idx_t


def _dtype_name(dtype) -> str:
    names = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte"}
    short = str(dtype).rsplit(".", 1)[-1]
    return names.get(short, "Bool" if short == "bool" else short)


def _tuple(v, n: int) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _samples(input: Tensor, nd: int) -> Tensor:
    n = 1 if input.dim() == nd + 1 else input.size(0)
    return API["rand"](n, input.size(-nd - 1), nd, dtype=input.dtype)


def _output_size(nd: int, input: Tensor, output_size, output_ratio) -> list[int]:
    # the output size given, or the ratio's share of each pooled input dim (rounded down)
    if output_size is not None:
        return output_size
    name = f"fractional_max_pool{nd}d"
    if output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if nd == 2 and len(output_ratio) > 2:  # a float ratio raises TypeError here, as in torch
        raise ValueError(
            f"{name} requires output_ratio to either be a single Int or tuple of Ints."
        )
    pooled = input.shape[-nd:]
    return [int(size * r) for size, r in zip(pooled, _tuple(output_ratio, nd))]


def _pool_with_indices(nd: int, input, kernel_size, output_size, output_ratio, samples):
    size = _output_size(nd, input, output_size, output_ratio)
    if samples is None:
        samples = _samples(input, nd)
    return _fractional(nd, input, kernel_size, size, samples)


def fractional_max_pool2d_with_indices(
    input: Tensor,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Apply 2D fractional max pooling; return the output and the flat per-plane indices."""
    return _pool_with_indices(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d_with_indices(
    input: Tensor,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Apply 3D fractional max pooling; return the output and the flat per-plane indices."""
    return _pool_with_indices(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(
    input: Tensor,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
):
    """Apply 2D fractional max pooling over an input signal composed of several input planes.

    Windows of ``kernel_size`` start at pseudo-random steps chosen so that the output has
    ``output_size`` (or ``output_ratio`` times the input size). Returns the indices too when
    ``return_indices``.
    """
    res = fractional_max_pool2d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )
    return res if return_indices else res[0]


def fractional_max_pool3d(
    input: Tensor,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
):
    """Apply 3D fractional max pooling over an input signal composed of several input planes."""
    res = fractional_max_pool3d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )
    return res if return_indices else res[0]


# ---------------------------------------------------------------------------------------------
# torch's ``*_with_indices`` names: always a (values, indices) pair


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """Apply 1D max pooling; return the output and the indices of the maxima."""
    return _pooling.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """Apply 2D max pooling; return the output and the indices of the maxima."""
    return _pooling.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """Apply 3D max pooling; return the output and the indices of the maxima."""
    return _pooling.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(
    input: Tensor, output_size, return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    """Apply 1D adaptive max pooling; return the output and the indices of the maxima."""
    return _pooling.adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(
    input: Tensor, output_size, return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    """Apply 2D adaptive max pooling; return the output and the indices of the maxima."""
    return _pooling.adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(
    input: Tensor, output_size, return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    """Apply 3D adaptive max pooling; return the output and the indices of the maxima."""
    return _pooling.adaptive_max_pool3d(input, output_size, True)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Return ``input`` with its channels shuffled in ``groups`` (``channel_shuffle``)."""
    return _vision.channel_shuffle(input, groups)

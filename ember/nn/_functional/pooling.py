"""Pooling: max, average, adaptive average/max, power-average pooling and max unpooling.

Windows are strided views of the padded input (no Python loop over output positions). Max
pooling records torch's flat indices; its backward scatters through them and the backward of
that is a gather, so double backward works. Average pooling and its backward are adjoint linear
maps, each the other's backward. Adaptive average pooling is separable: one small averaging
matrix per spatial dim. The 1D functions run the 2D ops on an unsqueezed input, as torch does.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap
from ember._core.threads import by_halves
from ember._ops.array_kernels import array_kernel
from ember._ops.copying import keep_layout_of
from ember._ops.registry import dispatch, op
from ember.nn._functional.conv import _ntuple, _pad_array, _windows

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
]


def _pool_out(size, kernel, stride, padding, dilation, ceil_mode):
    """Return torch's pooling output sizes (floor rule, or ceil rule with its correction)."""
    out = []
    for s, k, t, p, d in zip(size, kernel, stride, padding, dilation):
        num = s + 2 * p - d * (k - 1) - 1
        o = (-(-num // t) if ceil_mode else num // t) + 1
        if ceil_mode and (o - 1) * t >= s + p:
            o -= 1
        out.append(o)
    return tuple(out)


def _pads(size, kernel, stride, padding, dilation, out):
    # (lo, hi) pairs: hi grows when ceil_mode lets the last window run past the padded input
    return tuple(
        (p, max(p, (o - 1) * t + d * (k - 1) + 1 - s - p))
        for s, k, t, p, d, o in zip(size, kernel, stride, padding, dilation, out)
    )


# ---------------------------------------------------------------------------------------------
# max pooling: indices by argmax over a copy of the windows, values by a gather op


def _max_views(x, kernel, stride, padding, dilation, ceil_mode):
    """Return the plan of max pooling ``x`` and one strided view of the (padded) input per
    kernel offset, each of the output's shape."""
    nd = len(kernel)
    plan = _max_plan(
        x.shape[-nd:], tuple(kernel), tuple(stride), tuple(padding), tuple(dilation), ceil_mode
    )
    out, pads, offsets = plan[:3]
    fill = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf  # (bfloat16: kind V)
    w = _windows(_pad_array(x, pads, fill), kernel, stride, dilation, out)
    return plan, [w[(Ellipsis,) + k + (slice(None),) * nd] for k in offsets]


def _max_values(x, kernel, stride, padding, dilation, ceil_mode):
    """Return the window maxima of array ``x`` (NaN where a window holds one), no indices."""

    def part(lo, hi):
        return _max_values_whole(x[lo:hi], kernel, stride, padding, dilation, ceil_mode)

    return by_halves(part, x.shape[0] if x.ndim > len(kernel) else 1, x.size)


def _max_values_whole(x, kernel, stride, padding, dilation, ceil_mode):
    views = _max_views(x, kernel, stride, padding, dilation, ceil_mode)[1]
    best = views[0].copy()
    for v in views[1:]:
        np.maximum(best, v, out=best)
    return best


def _max_indices(x, kernel, stride, padding, dilation, ceil_mode):
    """Return torch's flat (per-plane) indices of the window maxima of array ``x``."""

    # the leading axis holds whole planes (samples or channels): the halves' indices are
    # the same as the whole's
    def part(lo, hi):
        return _max_indices_whole(x[lo:hi], kernel, stride, padding, dilation, ceil_mode)

    return by_halves(part, x.shape[0] if x.ndim > len(kernel) else 1, x.size)


def _max_indices_whole(x, kernel, stride, padding, dilation, ceil_mode):
    (_, _, _, koff, it, base), views = _max_views(x, kernel, stride, padding, dilation, ceil_mode)
    # whole-array passes per kernel offset (an argmax over a short last axis is slow, and so
    # are masked copies): a strictly greater value takes the window, so the first offset
    # reaching the max wins, as in torch; ``off += (koff - off) * greater`` in int32
    best = views[0].copy()
    off = np.full(best.shape, koff[0], dtype=it)
    gt = np.empty(best.shape, bool)
    step = np.empty(best.shape, dtype=it)
    for v, k in zip(views[1:], koff[1:]):
        np.greater(v, best, out=gt)
        np.maximum(best, v, out=best)  # propagates NaN, handled below
        np.subtract(it(k), off, out=step)
        np.multiply(step, gt, out=step)
        off += step
    if x.dtype.kind not in "iub":
        nan = np.isnan(best)
        if nan.any():  # a NaN wins the window (torch: the last one)
            for v, k in zip(views, koff):
                np.copyto(off, k, where=nan & np.isnan(v))
    idx = off.astype(np.int64)
    idx += base
    return idx


@functools.lru_cache(maxsize=256)
def _max_plan(size, kernel, stride, padding, dilation, ceil_mode):
    # what max pooling's indices depend on besides the data: computed once per geometry
    nd = len(kernel)
    out = _pool_out(size, kernel, stride, padding, dilation, ceil_mode)
    pads = _pads(size, kernel, stride, padding, dilation, out)
    # flat input offset of each kernel offset; the result is base(output position) + offset
    offsets = tuple(np.ndindex(*kernel))
    koff = tuple(
        sum(ki * d * math.prod(size[i + 1 :]) for i, (ki, d) in enumerate(zip(k, dilation)))
        for k in offsets
    )
    it = np.int32 if math.prod(size) + max(koff) < 2**31 else np.int64
    base = 0
    for i in range(nd):
        o = np.arange(out[i]).reshape((-1,) + (1,) * (nd - 1 - i))
        base = base * size[i] + (o * stride[i] - padding[i])
    base = np.asarray(base, dtype=np.int64)
    base.flags.writeable = False
    return out, pads, offsets, koff, it, base


def _plane_index(idx, shape, nd):
    """Return per-plane flat indices ``idx`` as indices into the whole flattened array."""
    m = math.prod(shape[: len(shape) - nd])
    sp = math.prod(shape[len(shape) - nd :])
    per = math.prod(idx.shape[idx.ndim - nd :])
    return idx.reshape(m, per) + (np.arange(m, dtype=np.int64) * sp)[:, None]


def _gather_forward(x, idx, nd):
    return x.reshape(-1).take(_plane_index(idx, x.shape, nd)).reshape(idx.shape)


def _scatter_forward(g, idx, shape, nd, unique=False):
    flat = _plane_index(idx, shape, nd).ravel()
    size = math.prod(shape)
    if unique:  # windows that do not overlap: each input element receives at most one value
        res = np.zeros(size, dtype=g.dtype)
        res[flat] = g.reshape(-1)
        return res.reshape(shape)
    res = np.bincount(flat, weights=g.reshape(-1), minlength=size)
    return res.astype(g.dtype, copy=False).reshape(shape)


_BACK_ARGS = ("grad_output", "indices")  # the double-backward op: indices are an input


def _gather_op(name, grad_fn):
    # ``unique``: the indices never repeat within a plane (max pooling windows that do not
    # overlap), so the backward scatter is a plain assignment
    @op(name, grad_fn=grad_fn, args=("self", "result1"), save=("result1",))
    def fwd(x, idx, *, nd, unique=False):
        return keep_layout_of(_gather_forward(x, idx, nd), x)

    # the backward is a scatter whose own backward is this gather (torch's XBackwardBackward0)
    @op(
        name + "_backward",
        grad_fn=grad_fn.replace("Backward0", "BackwardBackward0"),
        args=_BACK_ARGS,
        save=("indices",),
    )
    def scatter(g, idx, *, shape, nd, unique=False):
        return _scatter_forward(g, idx, shape, nd, unique)

    @fwd.backward
    def _(ctx, g, *, nd, unique=False):
        (idx,) = ctx.saved_tensors
        shape = tuple(ctx._input_meta[0][0])
        params = {"shape": shape, "nd": nd, "unique": unique}
        return dispatch(scatter, (g, idx), params), None

    @scatter.backward
    def _(ctx, gg, *, shape, nd, unique=False):
        (idx,) = ctx.saved_tensors
        return dispatch(fwd, (gg, idx), {"nd": nd, "unique": unique}), None

    return fwd


_GATHER = {
    2: _gather_op("max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0"),
    3: _gather_op("max_pool3d_with_indices", "MaxPool3DWithIndicesBackward0"),
    "adaptive": _gather_op("adaptive_max_pool2d", "AdaptiveMaxPool2DBackward0"),
    "adaptive3d": _gather_op("adaptive_max_pool3d", "AdaptiveMaxPool3DBackward0"),
}


def _values_op(nd: int):
    @op(f"max_pool{nd}d", differentiable=False)
    def values(x, *, kernel, stride, padding, dilation, ceil_mode):
        return keep_layout_of(_max_values(x, kernel, stride, padding, dilation, ceil_mode), x)

    return values


_VALUES = {2: _values_op(2), 3: _values_op(3)}


def _check_pool_args(nd, name, x, kernel, stride, padding, dilation):
    """torch's argument checks of max/avg pooling, in its order and with its messages."""
    ndim = x.dim()
    if ndim not in (nd + 1, nd + 2):
        if name == "avg_pool2d":
            if ndim == 0:
                raise IndexError("Dimension specified as -3 but tensor has no dimensions")
            if ndim < 3:  # torch reads input.size(-3) first
                raise IndexError(
                    f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                    f"but got -3)"
                )
            raise RuntimeError(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                f"but got:{list(x.shape)}"
            )
        raise RuntimeError(
            f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input"
        )
    if any(t == 0 for t in stride):
        raise RuntimeError("stride should not be zero")
    axes = "THW"[3 - nd :]
    if any(k <= 0 for k in kernel):
        raise RuntimeError(
            "kernel size should be greater than zero, but got "
            + " ".join(f"k{a}: {k}" for a, k in zip(axes, kernel))
        )
    if any(t < 0 for t in stride):
        raise RuntimeError(
            "stride should be greater than zero, but got "
            + " ".join(f"d{a}: {t}" for a, t in zip(axes, stride))
        )
    if any(d <= 0 for d in dilation):
        raise RuntimeError(
            "dilation should be greater than zero, but got "
            + " ".join(f"dilation{a}: {d}" for a, d in zip(axes, dilation))
        )
    planes = x.shape[-(nd + 1) :]
    if 0 in planes:
        if nd == 2:
            raise RuntimeError(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                f"but got:{list(x.shape)}"
            )
        fn = "avg_pool3d" if name == "avg_pool3d" else "max_pool3d_with_indices_out_cpu_template"
        raise RuntimeError(
            f"{fn}(): Expected input's non-batch dimensions to have positive length, but input "
            f"has a shape of {list(x.shape)} and non-batch dimension {list(planes).index(0)} has "
            "length zero!"
        )
    for p, k in zip(padding, kernel):
        if p > k // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={dilation[0]}"
            )


def _check_pool_out(nd, x, out) -> None:
    if any(o <= 0 for o in out):
        planes = x.shape[-(nd + 1) :]
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, planes))}). Calculated output size: "
            f"({'x'.join(map(str, (planes[0],) + tuple(out)))}). Output size is too small"
        )


def _max_pool_nd(nd, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    kernel = _ntuple(kernel_size, nd)
    stride = kernel if stride is None or stride == [] or stride == () else _ntuple(stride, nd)
    padding, dilation = _ntuple(padding, nd), _ntuple(dilation, nd)
    _check_pool_args(nd, f"max_pool{nd}d", x, kernel, stride, padding, dilation)
    out = _pool_out(x.shape[-nd:], kernel, stride, padding, dilation, ceil_mode)
    _check_pool_out(nd, x, out)
    if not return_indices and not (STATE.grad_enabled and x.requires_grad):
        # nothing will read the indices (inference): torch's max_pool2d op, values only
        params = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation}
        return dispatch(_VALUES[nd], (x,), {**params, "ceil_mode": ceil_mode})
    idx = _wrap(_recorded_max_indices(x, kernel, stride, padding, dilation, ceil_mode))
    # windows that do not overlap pick each input element at most once
    unique = all(t >= d * (k - 1) + 1 for t, d, k in zip(stride, dilation, kernel))
    vals = dispatch(_GATHER[nd], (x, idx), {"nd": nd, "unique": unique})
    return (vals, idx) if return_indices else vals


def _check_max_pool1d(input, k, s, p, d, ceil_mode) -> None:
    if input.dim() not in (2, 3) or 0 in input.shape[-2:]:
        raise RuntimeError(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
            f"for input, but got:{list(input.shape)}"
        )
    for what, v in (("kernel_size", k[0]), ("stride", s[0]), ("dilation", d)):
        if v <= 0:
            raise RuntimeError(f"max_pool1d() {what} must be greater than zero, but got {v}")
    if p > k[0] // 2:
        raise RuntimeError(
            f"max_pool1d() padding should be at most half of kernel size, but got padding={p} "
            f"and kernel_size={k[0]}"
        )
    out = _pool_out(input.shape[-1:], k, s, (p,), (d,), ceil_mode)[0]
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """Apply a 1D max pooling over an input signal composed of several input planes."""
    k, s = _ntuple(kernel_size, 1), None if stride is None else _ntuple(stride, 1)
    _check_max_pool1d(input, k, s or k, _ntuple(padding, 1)[0], _ntuple(dilation, 1)[0], ceil_mode)
    res = _max_pool_nd(
        2,
        input.unsqueeze(-2),
        (1,) + k,
        (1,) + (s or k),
        (0,) + _ntuple(padding, 1),
        (1,) + _ntuple(dilation, 1),
        ceil_mode,
        True,
    )
    vals, idx = res[0].squeeze(-2), res[1].squeeze(-2)
    return (vals, idx) if return_indices else vals


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """Apply a 2D max pooling over an input signal composed of several input planes."""
    return _max_pool_nd(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """Apply a 3D max pooling over an input signal composed of several input planes."""
    return _max_pool_nd(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


# ---------------------------------------------------------------------------------------------
# max unpooling: a scatter whose backward is a gather


def _unpool_op(nd: int):
    @op(
        f"max_unpool{nd}d",
        grad_fn=f"MaxUnpool{nd}DBackward0",
        args=("self", "indices"),
        save=("indices",),
    )
    def fwd(x, idx, *, shape):
        n, c = math.prod(shape[:-nd]), 1
        sp = math.prod(shape[-nd:])
        if idx.size and (idx.min() < 0 or idx.max() >= sp):
            bad = idx[(idx < 0) | (idx >= sp)].flat[0]
            raise RuntimeError(
                f"Found an invalid max index: {int(bad)} (output volumes are "
                f"of size {'x'.join(map(str, shape[-nd:]))})"
            )
        out = np.zeros((n, c, sp), dtype=x.dtype)
        np.put_along_axis(out, idx.reshape(n, c, -1), x.reshape(n, c, -1), -1)
        return out.reshape(shape)

    @fwd.backward
    def _(ctx, g, *, shape):
        (idx,) = ctx.saved_tensors
        return dispatch(_GATHER[nd], (g, idx), {"nd": nd}), None

    return fwd


_UNPOOL = {2: _unpool_op(2), 3: _unpool_op(3)}


def _max_unpool_nd(nd, x, indices, kernel_size, stride, padding, output_size):
    from ember._ops.registry import _type_name

    if indices.dtype != _long():
        got = f" but got: {_type_name(indices.dtype)}" if nd == 2 else ""  # torch's wording
        raise RuntimeError("elements in indices should be type int64" + got)
    if x.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a "
            f"tensor with {x.dim()} dimensions."
        )
    if tuple(x.shape) != tuple(indices.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor ({list(x.shape)}) "
            f"but got indices tensor with shape: {list(indices.shape)}"
        )
    kernel = _ntuple(kernel_size, nd)
    stride = kernel if stride is None else _ntuple(stride, nd)
    padding = _ntuple(padding, nd)
    default = tuple(
        (s - 1) * t + k - 2 * p for s, t, k, p in zip(x.shape[-nd:], stride, kernel, padding)
    )
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)
        if len(size) == nd + 2:
            size = size[2:]
        if len(size) != nd:
            raise ValueError(
                f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it "
                f"has a length of '{len(size)}'"
            )
        for i, (s, d, t) in enumerate(zip(size, default, stride)):
            if not d - t < s < d + t:
                raise ValueError(
                    f"invalid output_size {list(output_size)} (dim {i} must be between "
                    f"{d - t} and {d + t})"
                )
    return dispatch(_UNPOOL[nd], (x, indices), {"shape": tuple(x.shape[:-nd]) + size})


def _long():
    import ember

    return ember.int64


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Compute a partial inverse of :func:`max_pool1d`."""
    k = _ntuple(kernel_size, 1)
    s = k if stride is None else _ntuple(stride, 1)
    osz = None if output_size is None else (1, tuple(output_size)[-1])
    out = _max_unpool_nd(
        2,
        input.unsqueeze(-2),
        indices.unsqueeze(-2),
        (1,) + k,
        (1,) + s,
        (0,) + _ntuple(padding, 1),
        osz,
    )
    return out.squeeze(-2)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Compute a partial inverse of :func:`max_pool2d`."""
    return _max_unpool_nd(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Compute a partial inverse of :func:`max_pool3d`."""
    return _max_unpool_nd(3, input, indices, kernel_size, stride, padding, output_size)


# ---------------------------------------------------------------------------------------------
# average pooling: forward and backward are adjoint linear maps


def _avg_divisor(size, kernel, stride, padding, out, count_include_pad, divisor_override):
    if divisor_override:
        return float(divisor_override)
    div = 1.0
    for i, (s, k, t, p, o) in enumerate(zip(size, kernel, stride, padding, out)):
        start = np.arange(o) * t - p
        end = np.minimum(start + k, s + p)
        n = end - start if count_include_pad else np.minimum(end, s) - np.maximum(start, 0)
        div = div * n.reshape((-1,) + (1,) * (len(size) - 1 - i))
    return div


def _avg_forward(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    nd = len(kernel)
    size = x.shape[-nd:]
    ones = (1,) * nd
    out = _pool_out(size, kernel, stride, padding, ones, ceil_mode)
    pads = _pads(size, kernel, stride, padding, ones, out)
    w = _windows(_pad_array(x, pads), kernel, stride, ones, out)
    acc = None
    for k in np.ndindex(*kernel):  # prod(K) whole-array adds: faster than a strided sum
        v = w[(Ellipsis,) + k + (slice(None),) * nd]
        acc = v.copy() if acc is None else np.add(acc, v, out=acc)
    div = _avg_divisor(size, kernel, stride, padding, out, count_include_pad, divisor_override)
    acc /= np.asarray(div, dtype=x.dtype) if np.ndim(div) else x.dtype.type(div)
    return acc


def _avg_backward(
    g, shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    nd = len(kernel)
    size = shape[-nd:]
    ones = (1,) * nd
    out = g.shape[-nd:]
    pads = _pads(size, kernel, stride, padding, ones, out)
    div = _avg_divisor(size, kernel, stride, padding, out, count_include_pad, divisor_override)
    gd = g / (np.asarray(div, dtype=g.dtype) if np.ndim(div) else g.dtype.type(div))
    full = tuple(s + lo + hi for s, (lo, hi) in zip(size, pads))
    buf = np.zeros(tuple(shape[:-nd]) + full, dtype=g.dtype)
    for k in np.ndindex(*kernel):
        sl = tuple(slice(ki, ki + t * (o - 1) + 1, t) for ki, t, o in zip(k, stride, out))
        buf[(Ellipsis,) + sl] += gd
    crop = tuple(slice(lo, lo + s) for (lo, _), s in zip(pads, size))
    return np.ascontiguousarray(buf[(Ellipsis,) + crop])


def _avg_ops(nd):
    @op(f"avg_pool{nd}d", grad_fn=f"AvgPool{nd}DBackward0")
    def fwd(x, **p):
        return keep_layout_of(_avg_forward(x, **p), x)

    @op(f"avg_pool{nd}d_backward", grad_fn=f"AvgPool{nd}DBackwardBackward0")
    def bwd(g, *, shape, **p):
        return _avg_backward(g, shape, **p)

    @fwd.backward
    def _(ctx, g, **p):
        return dispatch(bwd, (g,), {"shape": ctx._input_meta[0][0], **p})

    @bwd.backward
    def _(ctx, gg, *, shape, **p):
        return dispatch(fwd, (gg,), p)

    return fwd


_AVG = {2: _avg_ops(2), 3: _avg_ops(3)}


def _avg_pool_nd(
    nd, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    kernel = _ntuple(kernel_size, nd)
    stride = kernel if stride is None or stride == [] or stride == () else _ntuple(stride, nd)
    padding = _ntuple(padding, nd)
    _check_pool_args(nd, f"avg_pool{nd}d", x, kernel, stride, padding, (1,) * nd)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    size = x.shape[-nd:]
    if nd == 3 and any(s < k for s, k in zip(size, kernel)):
        raise RuntimeError(
            f"input image (T: {size[0]} H: {size[1]} W: {size[2]}) smaller than kernel size "
            f"(kT: {kernel[0]} kH: {kernel[1]} kW: {kernel[2]})"
        )
    ones = (1,) * nd
    _check_pool_out(nd, x, _pool_out(size, kernel, stride, padding, ones, ceil_mode))
    params = {
        "kernel": kernel,
        "stride": stride,
        "padding": padding,
        "ceil_mode": bool(ceil_mode),
        "count_include_pad": bool(count_include_pad),
        "divisor_override": divisor_override,
    }
    return dispatch(_AVG[nd], (x,), params)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Apply a 1D average pooling over an input signal composed of several input planes."""
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
            "#1 'self' (while checking arguments for avg_pool1d)"
        )
    k = _ntuple(kernel_size, 1)
    s = k if stride is None else _ntuple(stride, 1)
    out = _avg_pool_nd(
        2,
        input.unsqueeze(-2),
        (1,) + k,
        (1,) + s,
        (0,) + _ntuple(padding, 1),
        ceil_mode,
        count_include_pad,
        None,
    )
    return out.squeeze(-2)


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Apply 2D average-pooling operation in kH x kW regions by step size sH x sW steps."""
    return _avg_pool_nd(
        2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Apply 3D average-pooling operation in kT x kH x kW regions by step size sT x sH x sW."""
    return _avg_pool_nd(
        3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )


def _lp_pool(nd, input, norm_type, kernel_size, stride, ceil_mode):
    from ember import abs as _abs
    from ember import relu, sign

    max_pool = (max_pool1d, max_pool2d, max_pool3d)[nd - 1]
    avg_pool = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    k = math.prod(_ntuple(kernel_size, nd))
    return (sign(out) * relu(_abs(out))).mul(k).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Apply a 1D power-average pooling over an input signal."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Apply a 2D power-average pooling over an input signal."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Apply a 3D power-average pooling over an input signal."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# ---------------------------------------------------------------------------------------------
# adaptive pooling


def _adaptive_bounds(s, o):
    i = np.arange(o)
    return (i * s) // o, -((-(i + 1) * s) // o)


def _avg_matrix(s, o, dtype):
    start, end = _adaptive_bounds(s, o)
    j = np.arange(s)
    m = (j >= start[:, None]) & (j < end[:, None])
    return (m / (end - start)[:, None]).astype(dtype)


def _apply_mats(x, mats):
    """Apply one matrix ``(out, in)`` along each of the last ``len(mats)`` dims of ``x``."""
    nd = len(mats)
    for i, m in enumerate(mats):
        axis = x.ndim - nd + i
        if axis == x.ndim - 1:
            x = np.matmul(x, m.T)
        elif axis == x.ndim - 2:
            x = np.matmul(m, x)
        else:
            x = np.moveaxis(np.tensordot(x, m, axes=([axis], [1])), -1, axis)
    return np.ascontiguousarray(x)


def _linear_ops(name, grad_fn):
    """Return a separable linear op (one matrix per spatial dim) and its adjoint."""

    @op(name, grad_fn=grad_fn)
    def fwd(x, *, mats):
        return keep_layout_of(_apply_mats(x, [m.astype(x.dtype, copy=False) for m in mats]), x)

    @op(name + "_backward", grad_fn=grad_fn[:-1] + "Backward0")
    def bwd(g, *, mats):
        return _apply_mats(g, [m.T.astype(g.dtype, copy=False) for m in mats])

    @fwd.backward
    def _(ctx, g, *, mats):
        return dispatch(bwd, (g,), {"mats": mats})

    @bwd.backward
    def _(ctx, gg, *, mats):
        return dispatch(fwd, (gg,), {"mats": mats})

    return fwd


_ADAPTIVE_AVG = {
    2: _linear_ops("adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0"),
    3: _linear_ops("adaptive_avg_pool3d", "AdaptiveAvgPool3DBackward0"),
}


def _out_sizes(x, output_size, nd):
    sizes = (
        _ntuple(output_size, nd)
        if not isinstance(output_size, (list, tuple))
        else tuple(output_size)
    )
    if len(sizes) == 1 and nd > 1:
        sizes = sizes * nd
    return tuple(x.shape[-nd + i] if s is None else int(s) for i, s in enumerate(sizes))


def _adaptive_avg_nd(nd, x, output_size):
    if x.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"adaptive_avg_pool{nd}d(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
            f"{list(x.shape)}"
        )
    sizes = _out_sizes(x, output_size, nd)
    if any(o < 0 for o in sizes):
        got = ", ".join(map(str, sizes)) if nd == 2 else ", ".join(map(str, sizes[:2]))
        if nd == 3:  # torch's 3-D message misses a space
            got += f",{sizes[2]}"
        raise RuntimeError(
            f"adaptive_avg_pool{nd}d: elements of output_size must be greater than or equal to 0 "
            f"but received {{{got}}}"
        )
    if nd == 2 and sizes == (1, 1):
        return x.mean((-2, -1), keepdim=True)  # torch's shortcut, and its grad_fn
    mats = tuple(_avg_matrix(s, o, np.float64) for s, o in zip(x.shape[-nd:], sizes))
    return dispatch(_ADAPTIVE_AVG[nd], (x,), {"mats": mats})


def adaptive_avg_pool1d(input, output_size) -> Tensor:
    """Apply a 1D adaptive average pooling over an input signal."""
    o = _ntuple(output_size, 1)
    return _adaptive_avg_nd(2, input.unsqueeze(-2), (1,) + o).squeeze(-2)


def adaptive_avg_pool2d(input, output_size) -> Tensor:
    """Apply a 2D adaptive average pooling over an input signal."""
    return _adaptive_avg_nd(2, input, output_size)


def adaptive_avg_pool3d(input, output_size) -> Tensor:
    """Apply a 3D adaptive average pooling over an input signal."""
    return _adaptive_avg_nd(3, input, output_size)


def _adaptive_max_indices(x, sizes):
    """Return flat indices of the maxima of the adaptive windows of array ``x``."""
    nd = len(sizes)
    size = x.shape[-nd:]
    grids = []
    for s, o in zip(size, sizes):
        start, end = _adaptive_bounds(s, o)
        length = int((end - start).max())
        j = start[:, None] + np.arange(length)
        grids.append(np.minimum(j, (end - 1)[:, None]))  # repeat the last index: same max
    # gather (N, C, o0, L0, o1, L1)
    if nd == 2:
        win = x[..., grids[0][:, :, None, None], grids[1][None, None, :, :]]
        o0, l0, o1, l1 = win.shape[-4:]
        lead = win.ndim - 4
        perm = tuple(range(lead)) + (lead, lead + 2, lead + 1, lead + 3)
        win = win.transpose(perm).reshape(x.shape[:lead] + (o0, o1, l0 * l1))
        a = win.argmax(-1)
        k0, k1 = np.unravel_index(a, (l0, l1))
        r = grids[0][np.arange(o0)[:, None], k0]
        c = grids[1][np.arange(o1)[None, :], k1]
        return (r * size[1] + c).astype(np.int64)
    if nd == 3:
        return _adaptive_max_indices_3d(x, grids, size, sizes)
    win = x[..., grids[0]]
    a = win.argmax(-1)
    return grids[0][np.arange(sizes[0]), a].astype(np.int64)


def _adaptive_max_indices_3d(x, grids, size, sizes):
    g0, g1, g2 = grids
    (o0, l0), (o1, l1), (o2, l2) = g0.shape, g1.shape, g2.shape
    win = x[
        ...,
        g0[:, :, None, None, None, None],
        g1[None, None, :, :, None, None],
        g2[None, None, None, None, :, :],
    ]  # (..., o0, L0, o1, L1, o2, L2)
    lead = win.ndim - 6
    perm = tuple(range(lead)) + tuple(lead + i for i in (0, 2, 4, 1, 3, 5))
    win = win.transpose(perm).reshape(x.shape[:lead] + (o0, o1, o2, l0 * l1 * l2))
    k0, k1, k2 = np.unravel_index(win.argmax(-1), (l0, l1, l2))
    d = g0[np.arange(o0)[:, None, None], k0]
    h = g1[np.arange(o1)[None, :, None], k1]
    w = g2[np.arange(o2)[None, None, :], k2]
    return ((d * size[1] + h) * size[2] + w).astype(np.int64)


def _check_nonempty(name: str, x) -> None:
    for i in range(1, x.dim()):
        if x.shape[i] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(x.shape)} with dimension {i} being empty"
            )


# the indices are computed on arrays: a compiled program records each as one kernel
_recorded_max_indices = array_kernel(_max_indices)
_recorded_adaptive_max_indices = array_kernel(_adaptive_max_indices)


def _adaptive_max_nd(nd, x, output_size, return_indices):
    if x.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"adaptive_max_pool{nd}d(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
            f"{list(x.shape)}"
        )
    _check_nonempty(f"adaptive_max_pool{nd}d", x)
    sizes = _out_sizes(x, output_size, nd)
    if any(o < 0 for o in sizes):  # torch fails creating the output
        shape = [*x.shape[:-nd], *sizes]
        neg = next(o for o in shape if o < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg}: {shape}")
    idx = _wrap(_recorded_adaptive_max_indices(x, sizes))
    vals = dispatch(_GATHER["adaptive3d" if nd == 3 else "adaptive"], (x, idx), {"nd": nd})
    return (vals, idx) if return_indices else vals


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Apply a 1D adaptive max pooling over an input signal."""
    o = _ntuple(output_size, 1)
    if input.dim() in (2, 3):
        _check_nonempty("adaptive_max_pool1d", input)
    vals, idx = _adaptive_max_nd(2, input.unsqueeze(-2), (1,) + o, True)
    vals, idx = vals.squeeze(-2), idx.squeeze(-2)
    return (vals, idx) if return_indices else vals


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Apply a 2D adaptive max pooling over an input signal."""
    return _adaptive_max_nd(2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Apply a 3D adaptive max pooling over an input signal."""
    return _adaptive_max_nd(3, input, output_size, return_indices)

"""Convolutions: conv1d/2d/3d, conv_transpose1d/2d/3d, unfold and fold.

One op, ``convolution`` (torch's ``aten::convolution``), does every forward. In general: im2col
through a strided view of the padded input, copied once into ``(groups, C/g * prod(K), N * P)``,
and ONE BLAS product with the weight, then one copy of the output into NCHW. Unit-stride 2-D
convolutions with enough channels (the bulk of CNN work) skip full im2col: ``_conv2d_rows``
copies the input once per kernel column and runs one batched GEMM per kernel row straight
into NCHW (height-major, ``_conv2d_hrows``, when the kernel is tall against the input, so that
no products go to rows the crop drops). The transposed convolution is the product the other
way round followed by a col2im scatter in a batch-innermost layout (one long strided add per
kernel offset; at unit stride width-major, ``_col2im_wmajor``), or, at unit stride, a
convolution with the flipped kernel. Backward is written with the same op (the
input gradient of a convolution is a transposed convolution and vice versa) and with
``convolution_weight``, the weight gradient, whose own backward is again two convolutions:
double backward works.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember._core.dtype import cpp_type_name, scalar_type_name
from ember._core.tensor import Tensor
from ember._core.threads import by_halves as _by_halves
from ember._ops.copying import keep_layout_of
from ember._ops.registry import AUTOCAST, autocast_inputs, dispatch, op

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "unfold",
    "fold",
]


def _ntuple(v, n: int) -> tuple:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    v = tuple(int(i) for i in v)
    return v * n if len(v) == 1 else v


def _pad_array(x: np.ndarray, pads, value=0.0) -> np.ndarray:
    """Return ``x`` padded by ``pads`` (one (lo, hi) pair per spatial dim) with ``value``."""
    if not any(lo or hi for lo, hi in pads):
        return x
    nd = len(pads)
    shape = x.shape[:-nd] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[-nd:], pads))
    out = np.full(shape, value, dtype=x.dtype)
    out[(...,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[-nd:], pads))] = x
    return out


def _windows(xp: np.ndarray, kernel, stride, dilation, out) -> np.ndarray:
    """Return the read-only view ``(..., *kernel, *out)`` of the windows of padded ``xp``."""
    nd = len(kernel)
    lead = xp.shape[:-nd]
    st = xp.strides
    sp = st[-nd:]
    shape = lead + tuple(kernel) + tuple(out)
    strides = (
        st[:-nd]
        + tuple(s * d for s, d in zip(sp, dilation))
        + tuple(s * t for s, t in zip(sp, stride))
    )
    return as_strided(xp, shape, strides, writeable=False)


def _batch_last(x: np.ndarray, pads=None) -> np.ndarray:
    """Return ``(N, C, *S)`` array ``x`` as ``(C, *S, N)``, zero-padded spatially (one copy).

    With the batch innermost, every window row a kernel offset reads (``(*out, N)`` for unit
    stride) is one contiguous run of memory, so im2col and col2im are a handful of long
    copies instead of millions of short ones.
    """
    shape = (x.shape[1],) + x.shape[2:] + (x.shape[0],)
    if pads is None or not any(lo or hi for lo, hi in pads):
        out = np.empty(shape, dtype=x.dtype)
        inner = out
    else:
        shape = (shape[0],) + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
        out = np.zeros(shape + (x.shape[0],), dtype=x.dtype)
        spans = tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], pads))
        inner = out[(slice(None),) + spans]
    np.copyto(inner, np.moveaxis(x, 0, -1))
    return out


def _offset_slices(k, dilation, stride, out) -> tuple:
    """The spatial slices of the padded input read by kernel offset ``k``."""
    return tuple(
        slice(ki * d, ki * d + t * (o - 1) + 1, t) for ki, d, t, o in zip(k, dilation, stride, out)
    )


def _cols(x, kernel, stride, padding, dilation, groups, out) -> np.ndarray:
    """Return im2col of ``x`` as ``(groups, C/g * prod(kernel), N * prod(out))``, contiguous.

    This layout makes the forward product one GEMM per group (a single one when groups=1)
    with the batch folded into the long dimension, which suits BLAS far better than N small
    products; the result is then moved to NCHW with one cheap copy of the output.
    """
    n, c = x.shape[:2]
    nd = len(kernel)
    p = math.prod(out)
    kk = math.prod(kernel)
    if kk == 1 and not any(lo or hi for lo, hi in padding) and all(s == 1 for s in stride):
        w = x.reshape((n, c) + (1,) * nd + tuple(out))  # 1x1 convolution: no window view
    else:
        w = _windows(_pad_array(x, padding), kernel, stride, dilation, out)
    perm = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
    return np.ascontiguousarray(w.transpose(perm)).reshape(groups, (c // groups) * kk, n * p)


def _conv_out(size, kernel, stride, padding, dilation):
    return tuple(
        (s + lo + hi - d * (k - 1) - 1) // t + 1
        for s, k, t, (lo, hi), d in zip(size, kernel, stride, padding, dilation)
    )


def _nchw(res: np.ndarray, b) -> np.ndarray:
    """Return ``(O, N, *S)`` array ``res`` as a contiguous ``(N, O, *S)`` array plus the bias
    ``b`` (one pass for the layout change and the bias)."""
    src = res.swapaxes(0, 1)
    if b is None:
        return np.ascontiguousarray(src)
    if math.prod(res.shape[2:]) < 16:  # short rows: NumPy's copy routine does the layout best
        out = np.ascontiguousarray(src)
        out += b.reshape((1, -1) + (1,) * (res.ndim - 2))
        return out
    # iterating in ``res``'s order reads it once and writes whole output rows
    out = np.empty(src.shape, dtype=np.result_type(res, b))
    np.add(res, b.reshape((-1,) + (1,) * (res.ndim - 1)), out=out.swapaxes(0, 1))
    return out


def _per_sample(x, kernel, out, groups) -> bool:
    """True when one GEMM per sample straight into NCHW beats one GEMM over the folded batch:
    few input channels (short im2col rows, ``C * prod(K) <= 64``) and many output positions
    (measured here: conv 1->16 5x5 on 64x1x28x28 1.9x faster forward, 1.8x weight gradient;
    3->32 3x3 on 32x32 1.5x)."""
    return groups == 1 and x.shape[1] * math.prod(kernel) <= 64 and math.prod(out) >= 64


def _sample_cols(x, kernel, stride, padding, dilation, out) -> np.ndarray:
    """Return im2col per sample, ``(N, C * prod(kernel), prod(out))``: the windows view copied
    in its own order (no transposition)."""
    w = _windows(_pad_array(x, padding), kernel, stride, dilation, out)
    return np.ascontiguousarray(w).reshape(x.shape[0], -1, math.prod(out))


def _conv_forward(x, w, b, stride, padding, dilation, groups):
    n = x.shape[0]
    o = w.shape[0]
    kernel = w.shape[2:]
    out = _conv_out(x.shape[2:], kernel, stride, padding, dilation)
    if _per_sample(x, kernel, out, groups):
        cols = _sample_cols(x, kernel, stride, padding, dilation, out)
        res = np.matmul(w.reshape(o, -1), cols)  # (N, O, P): NCHW already
        if b is not None:
            res += b.reshape(-1, 1)
        return res.reshape((n, o) + out)
    cols = _cols(x, kernel, stride, padding, dilation, groups, out)
    wm = np.ascontiguousarray(w).reshape(groups, o // groups, -1)
    res = np.matmul(wm, cols)  # (g, O/g, N*P)
    return _nchw(res.reshape((o, n) + out), b)


def _col2im_wmajor(x, wm, groups, cog, kernel, full, crop) -> np.ndarray:
    """A unit-stride 2-D transposed convolution by col2im, laid out width-major.

    The input is laid out ``(C, W, H, N)`` (columns outermost), so the product's block for
    kernel offset (i, j) adds into the ``(Cout, Wf, Hf, N)`` output at width offset j and
    height offset i: every add runs over whole ``H * N`` strips of contiguous memory, and the
    product has no zero padding. One GEMM per kernel row, into a reused buffer, keeps the
    block being added small (measured here, LeNet's conv2 input gradient: 3.1 ms, against 4.0
    with the rows padded to the output width). Returns the cropped NCHW output.
    """
    n, cin, h, wd = x.shape
    (kh, kw), (hf, wf) = kernel, full
    xm = np.ascontiguousarray(x.transpose(1, 3, 2, 0)).reshape(groups, cin // groups, -1)
    wr = wm.reshape(groups, kh, kw * cog, cin // groups)
    part = np.empty((groups, kw * cog, xm.shape[2]), dtype=np.result_type(wm, xm))
    blocks = part.reshape(groups, kw, cog, wd, h, n)
    buf = np.zeros((groups, cog, wf, hf, n), dtype=part.dtype)
    for i in range(kh):
        np.matmul(wr[:, i], xm, out=part)
        for j in range(kw):
            buf[:, :, j : j + wd, i : i + h] += blocks[:, j]
    buf = buf.reshape(groups * cog, wf, hf, n)[:, crop[1], crop[0]]
    return np.ascontiguousarray(buf.transpose(3, 0, 2, 1))


def _conv_transpose_forward(x, w, stride, padding, dilation, groups, output_size):
    n, cin = x.shape[:2]
    size = x.shape[2:]
    kernel = w.shape[2:]
    cog = w.shape[1]
    kk = math.prod(kernel)
    # (g, K*Cout/g, Cin/g): rows over (kernel offset, output channel)
    wm = w.reshape(groups, cin // groups, cog, kk).transpose(0, 3, 2, 1)
    wm = np.ascontiguousarray(wm).reshape(groups, kk * cog, cin // groups)
    full = tuple(
        max((s - 1) * t + d * (k - 1) + 1, lo + os)
        for s, t, d, k, (lo, _), os in zip(size, stride, dilation, kernel, padding, output_size)
    )
    crop = tuple(slice(lo, lo + os) for (lo, _), os in zip(padding, output_size))
    if len(size) == 2 and stride == (1, 1) and dilation == (1, 1):
        return _col2im_wmajor(x, wm, groups, cog, kernel, full, crop)
    xm = _batch_last(x).reshape(groups, cin // groups, -1)  # (g, Cin/g, P*N)
    cols = np.matmul(wm, xm).reshape((groups, kk, cog) + tuple(size) + (n,))
    # col2im: one strided add of a whole (C, *S, N) block per kernel offset
    buf = np.zeros((groups, cog) + full + (n,), dtype=x.dtype)
    for j, k in enumerate(np.ndindex(*kernel)):
        sl = _offset_slices(k, dilation, stride, size)
        buf[(slice(None), slice(None)) + sl] += cols[:, j]
    buf = buf.reshape((groups * cog,) + full + (n,))[(slice(None),) + crop]
    return np.ascontiguousarray(np.moveaxis(buf, -1, 0))


# ---------------------------------------------------------------------------------------------
# unit-stride 2-D convolutions: an implicit GEMM over column-shifted copies
#
# Full im2col copies the input prod(K) times. For a unit-stride, undilated, ungrouped 2-D
# convolution it is enough to copy it kw times, once per column shift j, into
# ``rows[c, j, n, h, q] = xpad[n, c, h, q + j]`` (rows over the padded height). Flattened to
# (C * kw, N * Hp * OW), the window of kernel row i is the same matrix shifted by i * OW
# columns: a plain strided view. So each kernel row is ONE GEMM over the whole batch,
# accumulated over the kh rows; it also computes the kh - 1 bottom rows of each padded sample,
# which the crop drops (a few percent more flops for no copies).


def _rows_apply(x, kw: int, out_channels: int, padding, stride, dilation, groups) -> bool:
    """True when the row-shift kernels apply and pay off (measured here: the GEMMs need at
    least 16 x 32 operands; smaller ones lose to one im2col GEMM)."""
    return (
        x.ndim == 4
        and groups == 1
        and stride == (1, 1)
        and dilation == (1, 1)
        and x.shape[1] * kw >= 16
        and out_channels >= 32
        and all(lo >= 0 and hi >= 0 for lo, hi in padding)
    )


def _shifted_rows(x, kh: int, kw: int, padding) -> tuple:
    """Return (flat rows ``(C * kw, N * Hp * OW + (kh - 1) * OW)``, (N, Hp, OW))."""
    n, c, h, wd = x.shape
    (pt, pb), (pl, pr) = padding
    hp, ow = h + pt + pb, wd + pl + pr - kw + 1
    span = n * hp * ow
    flat = np.empty((c * kw, span + (kh - 1) * ow), dtype=x.dtype)
    flat[:, span:] = 0  # read only by the rows the crop drops
    rows = flat[:, :span].reshape(c, kw, n, hp, ow)
    rows[:, :, :, :pt] = 0
    rows[:, :, :, pt + h :] = 0
    xt = x.transpose(1, 0, 2, 3)
    for j in range(kw):
        q0, q1 = max(0, pl - j), min(ow, wd + pl - j)  # output columns reading real input
        inner = rows[:, j, :, pt : pt + h]
        inner[..., :q0] = 0
        inner[..., q1:] = 0
        if q0 < q1:
            inner[..., q0:q1] = xt[..., q0 + j - pl : q1 + j - pl]
    return flat, (n, hp, ow)


def _conv2d_rows(x, w, padding, b=None) -> np.ndarray:
    c = x.shape[1]
    o, _, kh, kw = w.shape
    flat, (n, hp, ow) = _shifted_rows(x, kh, kw, padding)
    span = n * hp * ow
    # one GEMM for all kernel rows (M = kh * O suits BLAS better than kh GEMMs of M = O);
    # kernel row i then contributes its product shifted by i * OW columns
    wr = np.ascontiguousarray(w.transpose(2, 0, 1, 3)).reshape(kh * o, c * kw)
    y = np.matmul(wr, flat).reshape(kh, o, -1)
    out = y[0, :, :span]
    for i in range(1, kh):
        out += y[i, :, i * ow : i * ow + span]
    return _nchw(out.reshape(o, n, hp, ow)[:, :, : hp - kh + 1], b)


def _conv2d_rows_weight(x, g, weight_shape, padding) -> np.ndarray:
    c = x.shape[1]
    o, _, kh, kw = weight_shape
    flat, (n, hp, ow) = _shifted_rows(x, kh, kw, padding)
    span = n * hp * ow
    oh = g.shape[2]
    # kernel row i pairs the gradient at column p with the rows at p + i * OW: stack the
    # gradient shifted right by i * OW for each i, then ONE GEMM against the rows
    gs = np.zeros((kh, o, flat.shape[1]), dtype=g.dtype)
    for i in range(kh):
        # (the cropped bottom rows of each sample get zero gradient)
        gs[i, :, i * ow : i * ow + span].reshape(o, n, hp, ow)[:, :, :oh] = g.transpose(1, 0, 2, 3)
    gw = np.matmul(gs.reshape(kh * o, -1), flat.T)  # (kh * O, C * kw)
    return np.ascontiguousarray(gw.reshape(kh, o, c, kw).transpose(1, 2, 0, 3))


# Where the kernel is tall against the output (LeNet's conv2: 5 rows, 10 output rows of 14
# padded ones), the one-GEMM form above wastes (kh - 1) / OH of its products on the rows the
# crop drops. Laid out height-major instead, ``rows[c, j, h, n, q] = xpad[n, c, h, q + j]``,
# the window of kernel row i is the column block starting at i * N * OW, and the output's
# rows are exactly the first OH * N * OW columns: kh GEMMs, each straight on a column block
# of the rows (BLAS reads it in place), and nothing wasted. (The weight gradient the same way,
# kh GEMMs against column blocks, measured no faster than the one-GEMM form: not used.)


def _tall_kernel(kh: int, hp: int) -> bool:
    """True when the height-major kernels beat the one-GEMM row shifts (measured here: LeNet's
    conv2, kernel 5 on 14 padded rows, 2.8 ms against 3.3 forward; 64 channels 3x3 on 34
    padded rows, 9.3 against 8.3 ms)."""
    return (kh - 1) * 4 >= hp


def _hrows(x, kh: int, kw: int, padding) -> tuple:
    """Return (height-major rows ``(C * kw, Hp * N * OW)``, (N, Hp, OW))."""
    n, c, h, wd = x.shape
    (pt, pb), (pl, pr) = padding
    hp, ow = h + pt + pb, wd + pl + pr - kw + 1
    rows = np.empty((c, kw, hp, n, ow), dtype=x.dtype)
    rows[:, :, :pt] = 0
    rows[:, :, pt + h :] = 0
    xt = x.transpose(1, 2, 0, 3)  # (C, H, N, W)
    for j in range(kw):
        q0, q1 = max(0, pl - j), min(ow, wd + pl - j)  # output columns reading real input
        inner = rows[:, j, pt : pt + h]
        inner[..., :q0] = 0
        inner[..., q1:] = 0
        if q0 < q1:
            inner[..., q0:q1] = xt[..., q0 + j - pl : q1 + j - pl]
    return rows.reshape(c * kw, hp * n * ow), (n, hp, ow)


def _conv2d_hrows(x, w, padding, b=None) -> np.ndarray:
    o, c, kh, kw = w.shape
    flat, (n, hp, ow) = _hrows(x, kh, kw, padding)
    oh = hp - kh + 1
    step, span = n * ow, oh * n * ow
    wr = np.ascontiguousarray(w.transpose(2, 0, 1, 3)).reshape(kh, o, c * kw)
    res = np.matmul(wr[0], flat[:, :span])
    part = np.empty_like(res)
    for i in range(1, kh):
        np.matmul(wr[i], flat[:, i * step : i * step + span], out=part)
        res += part
    res = res.reshape(o, oh, n, ow)
    out = np.empty((n, o, oh, ow), dtype=res.dtype)
    if b is None:
        np.copyto(out.transpose(1, 2, 0, 3), res)
    else:  # the layout change and the bias in one pass
        np.add(res, b.reshape(-1, 1, 1, 1), out=out.transpose(1, 2, 0, 3))
    return out


def _conv2d_unit(x, w, padding, b=None) -> np.ndarray:
    """A unit-stride, ungrouped 2-D convolution by row shifts, height-major for tall kernels."""
    tall = _tall_kernel(w.shape[2], x.shape[2] + sum(padding[0]))
    return (_conv2d_hrows if tall else _conv2d_rows)(x, w, padding, b)


def _conv2d_rows_transpose(x, w, padding, output_size):
    """The unit-stride transposed convolution as a convolution with the flipped kernel, or
    None when its padding would be negative."""
    kh, kw = w.shape[2:]
    pads = tuple((k - 1 - lo, k - 1 - hi) for k, (lo, hi) in zip((kh, kw), padding))
    full = tuple(s + k - 1 - lo - hi for s, k, (lo, hi) in zip(x.shape[2:], (kh, kw), padding))
    if any(lo < 0 or hi < 0 for lo, hi in pads) or full != tuple(output_size):
        return None
    wf = np.ascontiguousarray(w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1])
    return _conv2d_unit(x, wf, pads)


@op(
    "convolution",
    grad_fn="ConvolutionBackward0",
    args=("input", "weight", "bias"),
    save=("input", "weight"),
)
def _convolution(x, w, b, *, stride, padding, dilation, transposed, output_size, groups):
    """Forward of every convolution; ``padding`` holds one (lo, hi) pair per spatial dim."""
    if transposed:
        work = x.size + math.prod(output_size) * w.shape[1] * groups * x.shape[0]

        def part(lo, hi):
            return _transposed_forward(x[lo:hi], w, padding, stride, dilation, groups, output_size)

        out = _by_halves(part, x.shape[0], work)
        if b is not None:
            out += b.reshape((1, -1) + (1,) * (out.ndim - 2))
    else:
        work = x.size * w.shape[0] // max(1, x.shape[1] // groups)

        def part(lo, hi):
            return _forward(x[lo:hi], w, b, stride, padding, dilation, groups)

        out = _by_halves(part, x.shape[0], work)
    return keep_layout_of(out, x, w)  # a channels-last input or weight: channels-last out


def _forward(x, w, b, stride, padding, dilation, groups):
    if _rows_apply(x, w.shape[-1], w.shape[0], padding, stride, dilation, groups):
        return _conv2d_unit(x, w, padding, b)
    return _conv_forward(x, w, b, stride, padding, dilation, groups)


def _transposed_forward(x, w, padding, stride, dilation, groups, output_size):
    out = None
    if _rows_apply(x, w.shape[-1], w.shape[1], padding, stride, dilation, groups) and (
        math.prod(output_size) <= 1.5 * math.prod(x.shape[2:])
    ):
        # the flipped-kernel convolution works per OUTPUT position, col2im per input
        # position: when the output is much larger (a 5x5 kernel's input gradient from a
        # 10x10 map is 14x14), most of the former's products are with zero padding
        # (LeNet's conv2 input gradient: 8.5 ms that way, 4.5 ms by col2im)
        out = _conv2d_rows_transpose(x, w, padding, output_size)
    if out is None:
        out = _conv_transpose_forward(x, w, stride, padding, dilation, groups, output_size)
    return out


@_convolution.backward
def _(ctx, g, *, stride, padding, dilation, transposed, output_size, groups):
    x, w = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = gw = gb = None
    if not transposed:
        if need[0]:
            gx = convolution(g, w, None, stride, padding, dilation, True, x.shape[2:], groups)
        if need[1]:
            gw = convolution_weight(x, g, tuple(w.shape), stride, padding, dilation, groups)
    else:
        if need[0]:
            gx = convolution(g, w, None, stride, padding, dilation, False, None, groups)
        if need[1]:
            gw = convolution_weight(g, x, tuple(w.shape), stride, padding, dilation, groups)
    if need[2]:
        gb = g.sum(dim=(0,) + tuple(range(2, g.dim())))
    return gx, gw, gb


@op(
    "convolution_weight",
    grad_fn="ConvolutionBackwardBackward0",
    args=("input", "grad_output"),
    save=("input", "grad_output"),
)
def _convolution_weight(x, g, *, weight_shape, stride, padding, dilation, groups):
    """Return the weight gradient of ``convolution(x, w)`` under upstream gradient ``g``."""

    def part(lo, hi):
        return _weight_grad(x[lo:hi], g[lo:hi], weight_shape, stride, padding, dilation, groups)

    return _by_halves(part, x.shape[0], x.size + g.size, total=True)


def _weight_grad(x, g, weight_shape, stride, padding, dilation, groups):
    if _rows_apply(x, weight_shape[-1], weight_shape[0], padding, stride, dilation, groups):
        return _conv2d_rows_weight(x, g, weight_shape, padding)
    out = g.shape[2:]
    kernel = weight_shape[2:]
    if _per_sample(x, kernel, out, groups):
        cols = _sample_cols(x, kernel, stride, padding, dilation, out)  # (N, CK, P)
        n, o = g.shape[:2]
        gw = np.matmul(g.reshape(n, o, -1), cols.transpose(0, 2, 1))  # (N, O, CK)
        return gw.sum(0).reshape(weight_shape)
    cols = _cols(x, kernel, stride, padding, dilation, groups, out)  # (g, CgK, N*P)
    # (g, N*P, O/g): small copy; both operands C-contiguous so that matmul uses BLAS
    n, o = g.shape[:2]
    gmt = g.reshape(n, groups, o // groups, -1).transpose(1, 0, 3, 2)
    gmt = np.ascontiguousarray(gmt).reshape(groups, -1, o // groups)
    gwt = np.matmul(cols, gmt)  # (g, CgK, O/g)
    return np.ascontiguousarray(gwt.swapaxes(1, 2)).reshape(weight_shape)


@_convolution_weight.backward
def _(ctx, ggw, *, weight_shape, stride, padding, dilation, groups):
    x, g = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx = gg = None
    if need[0]:
        gx = convolution(g, ggw, None, stride, padding, dilation, True, x.shape[2:], groups)
    if need[1]:
        gg = convolution(x, ggw, None, stride, padding, dilation, False, None, groups)
    return gx, gg


def convolution(x, w, b, stride, padding, dilation, transposed, output_size, groups) -> Tensor:
    """Run the ``convolution`` op (no argument checking: internal entry point)."""
    params = {
        "stride": tuple(stride),
        "padding": tuple(padding),
        "dilation": tuple(dilation),
        "transposed": transposed,
        "output_size": None if output_size is None else tuple(output_size),
        "groups": groups,
    }
    return dispatch(_convolution, (x, w, b), params)


def convolution_weight(x, g, weight_shape, stride, padding, dilation, groups) -> Tensor:
    params = {
        "weight_shape": weight_shape,
        "stride": tuple(stride),
        "padding": tuple(padding),
        "dilation": tuple(dilation),
        "groups": groups,
    }
    return dispatch(_convolution_weight, (x, g), params)


# ---------------------------------------------------------------------------------------------
# argument checking, as torch does it

_TYPE = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}


def _check_dtypes(x: Tensor, w: Tensor, b) -> None:
    # torch checks the bias first (naming the dtypes in lower case), then the weight
    if b is not None and b._data.dtype != x._data.dtype:
        raise RuntimeError(
            f"Input type ({cpp_type_name(x.dtype)}) and bias type ({cpp_type_name(b.dtype)}) "
            "should be the same"
        )
    if w._data.dtype != x._data.dtype:
        want = _TYPE.get(x._data.dtype.name, scalar_type_name(x.dtype))
        got = _TYPE.get(w._data.dtype.name, scalar_type_name(w.dtype))
        raise RuntimeError(f"expected scalar type {want} but found {got}")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"\"conv_forward\" not implemented for '{x.dtype}'")


def _check_geometry(nd: int, stride: tuple, padding, dilation: tuple, output_padding=()) -> None:
    """torch's checks of stride, numeric padding and dilation, in its order and words."""
    if not isinstance(padding, str):
        given = [int(padding)] if isinstance(padding, (int, np.integer)) else list(padding)
        if len(given) not in (1, nd):
            raise RuntimeError(
                "expected padding to be a single integer value or a list of "
                f"{nd} values to match the convolution dimensions, but got padding={given}"
            )
        if any(p < 0 for p in _ntuple(padding, nd)):
            raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")


def _check_zero_dilation(nd: int, dilation: tuple, transposed: bool) -> None:
    # (checked after the channels; torch runs a 1-d convolution as a 2-d one of height 1)
    if 0 in dilation:
        shown = (1,) + tuple(dilation) if nd == 1 else tuple(dilation)
        if transposed:
            names = ("depth", "height", "width")[3 - len(shown) :]
            got = ", ".join(f"dilation_{n}: {d}" for n, d in zip(names, shown))
        else:
            got = str(list(shown))
        raise RuntimeError(f"dilation should be greater than zero, but got {got}")


def _batched(x: Tensor, nd: int, name: str):
    dim = x.dim()
    if dim == nd + 1:
        return x.unsqueeze(0), True
    if dim != nd + 2:
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got "
            f"input of size: {list(x.shape)}"
        )
    return x, False


def _check_channels(x, w, groups, transposed):
    c = x.shape[1]
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if transposed:
        if w.shape[0] != c:
            raise RuntimeError(
                f"Given transposed=1, weight of size {list(w.shape)}, expected input"
                f"{list(x.shape)} to have {w.shape[0]} channels, but got {c} channels instead"
            )
    elif w.shape[1] * groups != c:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(w.shape)}, expected input"
            f"{list(x.shape)} to have {w.shape[1] * groups} channels, but got {c} channels "
            "instead"
        )
    elif w.shape[0] % groups:
        raise RuntimeError(
            "Given groups=" + str(groups) + ", expected weight to be divisible by "
            f"{groups} at dimension 0, but got weight of size {list(w.shape)} "
            "instead"
        )


def _conv(nd, name, input, weight, bias, stride, padding, dilation, groups) -> Tensor:
    if AUTOCAST:
        input, weight, bias = autocast_inputs(_convolution, (input, weight, bias))
    _check_dtypes(input, weight, bias)
    _check_geometry(nd, _ntuple(stride, nd), padding, _ntuple(dilation, nd))
    x, unbatched = _batched(input, nd, name)
    if weight.dim() != nd + 2:
        raise RuntimeError(
            "weight should have at least three dimensions"
            if weight.dim() < 3
            else f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional input "
            f"{list(x.shape)}, but got {weight.dim()}-dimensional weight of size "
            f"{list(weight.shape)} instead"
        )
    _check_channels(x, weight, groups, False)
    _check_zero_dilation(nd, _ntuple(dilation, nd), False)
    stride = _ntuple(stride, nd)
    dilation = _ntuple(dilation, nd)
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            tot = [d * (k - 1) for d, k in zip(dilation, kernel)]
            pads = tuple((t // 2, t - t // 2) for t in tot)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = tuple((p, p) for p in _ntuple(padding, nd))
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError(
            f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
            f"{weight.shape[0]} elements, but got bias of size {list(bias.shape)} instead"
        )
    padded = [s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads)]
    eff = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    if any(p < e for p, e in zip(padded, eff)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than "
            "actual input size"
        )
    out = convolution(x, weight, bias, stride, pads, dilation, False, None, groups)
    return out.squeeze(0) if unbatched else out


def _conv_transpose(
    nd, name, input, weight, bias, stride, padding, output_padding, groups, dilation
) -> Tensor:
    if AUTOCAST:
        input, weight, bias = autocast_inputs(_convolution, (input, weight, bias))
    _check_dtypes(input, weight, bias)
    stride = _ntuple(stride, nd)
    dilation = _ntuple(dilation, nd)
    padding = _ntuple(padding, nd)
    output_padding = _ntuple(output_padding, nd)
    _check_geometry(nd, stride, padding, dilation, output_padding)
    x, unbatched = _batched(input, nd, name)
    _check_channels(x, weight, groups, True)
    _check_zero_dilation(nd, dilation, True)
    for op_, s, d in zip(output_padding, stride, dilation):
        if op_ >= s and op_ >= d:
            names = ["depth", "height", "width"][3 - nd :]
            raise RuntimeError(
                "output padding must be smaller than either stride or dilation, but got "
                + " ".join(f"output_padding_{n}: {v}" for n, v in zip(names, output_padding))
                + " "
                + " ".join(f"stride_{n}: {v}" for n, v in zip(names, stride))
                + " "
                + " ".join(f"dilation_{n}: {v}" for n, v in zip(names, dilation))
            )
    kernel = weight.shape[2:]
    size = tuple(
        (s - 1) * t - 2 * p + d * (k - 1) + o + 1
        for s, t, p, d, k, o in zip(x.shape[2:], stride, padding, dilation, kernel, output_padding)
    )
    if any(s < 0 for s in size):
        raise RuntimeError(
            f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated "
            f"output size per channel: ({' x '.join(map(str, size))}). Output size is too small"
        )
    pads = tuple((p, p) for p in padding)
    out = convolution(x, weight, bias, stride, pads, dilation, True, size, groups)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """Apply a 1D convolution over an input signal composed of several input planes."""
    return _conv(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """Apply a 2D convolution over an input image composed of several input planes."""
    return _conv(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """Apply a 3D convolution over an input image composed of several input planes."""
    return _conv(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """Apply a 1D transposed convolution operator ("deconvolution")."""
    return _conv_transpose(
        1,
        "conv_transpose1d",
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """Apply a 2D transposed convolution operator ("deconvolution")."""
    return _conv_transpose(
        2,
        "conv_transpose2d",
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """Apply a 3D transposed convolution operator ("deconvolution")."""
    return _conv_transpose(
        3,
        "conv_transpose3d",
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


# ---------------------------------------------------------------------------------------------
# unfold (im2col) and fold (col2im): each is the other's backward


@op("im2col", grad_fn="Im2ColBackward0")
def _im2col(x, *, kernel_size, dilation, padding, stride):
    n, c = x.shape[:2]
    pads = tuple((p, p) for p in padding)
    out = _conv_out(x.shape[2:], kernel_size, stride, pads, dilation)
    w = _windows(_pad_array(x, pads), kernel_size, stride, dilation, out)
    return w.reshape(n, c * math.prod(kernel_size), math.prod(out))


@_im2col.backward
def _(ctx, g, *, kernel_size, dilation, padding, stride):
    (shape, _) = ctx._input_meta[0]
    return _col2im_call(g, shape[2:], kernel_size, dilation, padding, stride)


@op("col2im", grad_fn="Col2ImBackward0")
def _col2im(x, *, output_size, kernel_size, dilation, padding, stride):
    n = x.shape[0]
    kk = math.prod(kernel_size)
    c = x.shape[1] // kk
    pads = tuple((p, p) for p in padding)
    blocks = _conv_out(output_size, kernel_size, stride, pads, dilation)
    cols = x.reshape((n, c) + tuple(kernel_size) + blocks)
    full = tuple(s + 2 * p for s, p in zip(output_size, padding))
    buf = np.zeros((n, c) + full, dtype=x.dtype)
    for k in np.ndindex(*kernel_size):
        sl = tuple(
            slice(ki * d, ki * d + t * (b - 1) + 1, t)
            for ki, d, t, b in zip(k, dilation, stride, blocks)
        )
        buf[(slice(None), slice(None)) + sl] += cols[(slice(None), slice(None)) + k]
    crop = tuple(slice(p, p + s) for p, s in zip(padding, output_size))
    return np.ascontiguousarray(buf[(slice(None), slice(None)) + crop])


@_col2im.backward
def _(ctx, g, *, output_size, kernel_size, dilation, padding, stride):
    return dispatch(
        _im2col,
        (g,),
        {"kernel_size": kernel_size, "dilation": dilation, "padding": padding, "stride": stride},
    )


def _col2im_call(x, output_size, kernel_size, dilation, padding, stride):
    params = {
        "output_size": tuple(output_size),
        "kernel_size": kernel_size,
        "dilation": dilation,
        "padding": padding,
        "stride": stride,
    }
    return dispatch(_col2im, (x,), params)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding local blocks from a batched input tensor."""
    if input.dim() not in (3, 4):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got: {list(input.shape)}"
        )
    x, unbatched = (input.unsqueeze(0), True) if input.dim() == 3 else (input, False)
    params = {
        "kernel_size": _ntuple(kernel_size, 2),
        "dilation": _ntuple(dilation, 2),
        "padding": _ntuple(padding, 2),
        "stride": _ntuple(stride, 2),
    }
    out = dispatch(_im2col, (x,), params)
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Combine an array of sliding local blocks into a large containing tensor."""
    if input.dim() not in (2, 3):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    x, unbatched = (input.unsqueeze(0), True) if input.dim() == 2 else (input, False)
    ks = _ntuple(kernel_size, 2)
    dil, pad, st = _ntuple(dilation, 2), _ntuple(padding, 2), _ntuple(stride, 2)
    osz = _ntuple(output_size, 2)
    kk = ks[0] * ks[1]
    if x.shape[1] % kk:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={ks}"
        )
    blocks = _conv_out(osz, ks, st, tuple((p, p) for p in pad), dil)
    if math.prod(blocks) != x.shape[2]:
        raise RuntimeError(
            f"Given output_size={osz}, kernel_size={ks}, dilation={dil}, padding={pad}, "
            f"stride={st}, expected size of input's dimension 2 to match the calculated number "
            f"of sliding blocks {blocks[0]} * {blocks[1]} = {math.prod(blocks)}, but got "
            f"input.size(2)={x.shape[2]}."
        )
    out = _col2im_call(x, osz, ks, dil, pad, st)
    return out.squeeze(0) if unbatched else out

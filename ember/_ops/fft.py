"""Discrete Fourier transforms: the three primitives torch builds ``torch.fft`` from.

``_fft_c2c`` (complex to complex), ``_fft_r2c`` (real to complex, optionally one-sided) and
``_fft_c2r`` (one-sided complex to real) run NumPy's pocketfft and carry torch's grad_fn names
(FftC2CBackward0, FftR2CBackward0, FftC2RBackward0). Their backwards are each other (torch's
fft_r2c_backward / fft_c2r_backward), so gradients of any order follow. The public functions in
``ember.fft`` compose them exactly as torch's SpectralOps.cpp does: the same promotion
(integers to the default float, float32 -> complex64), padding/trimming for ``n``/``s``,
normalisation modes, conjugations, and result layout.
"""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap
from ember._ops import linalg_util as U
from ember._ops.linalg_util import out_ as _out
from ember._ops.registry import dispatch, op
from ember._ops.unary import conj

# torch's normalisation modes: none, by_root_n, by_n
NONE, BY_ROOT_N, BY_N = 0, 1, 2
_NP_FORWARD = {NONE: "backward", BY_ROOT_N: "ortho", BY_N: "forward"}
_NP_INVERSE = {NONE: "forward", BY_ROOT_N: "ortho", BY_N: "backward"}


def _layout(r: np.ndarray, x: np.ndarray, dims: tuple, last_inner: bool) -> np.ndarray:
    """Lay out ``r`` as torch's CPU FFT does: the untransformed dims outermost in the input's
    memory order, then the transformed ones (the last transformed dim innermost for r2c/c2r)."""
    nd = r.ndim
    if nd < 2:
        return np.ascontiguousarray(r)
    st = x.strides if x.ndim == nd else tuple(range(nd, 0, -1))

    def by_stride(ds):
        return sorted(ds, key=lambda d: -abs(st[d]))

    batch = by_stride([d for d in range(nd) if d not in dims])
    if last_inner:
        order = batch + by_stride(list(dims[:-1])) + [dims[-1]]
    else:
        order = batch + by_stride(list(dims))
    if order == list(range(nd)):
        return np.ascontiguousarray(r)
    return np.ascontiguousarray(r.transpose(order)).transpose(np.argsort(order))


@op("_fft_c2c", grad_fn="FftC2CBackward0")
def _c2c(x, dims, norm, forward):
    f = np.fft.fftn if forward else np.fft.ifftn
    r = f(x, axes=dims, norm=(_NP_FORWARD if forward else _NP_INVERSE)[norm])
    return _layout(r.astype(x.dtype, copy=False), x, dims, False)


@_c2c.backward
def _(ctx, g, dims, norm, forward):
    return c2c(g, dims, norm, not forward)


@op("_fft_r2c", grad_fn="FftR2CBackward0")
def _r2c(x, dims, norm, onesided):
    f = np.fft.rfftn if onesided else np.fft.fftn
    r = f(x, axes=dims, norm=_NP_FORWARD[norm])
    cdt = np.complex64 if x.dtype == np.float32 else np.complex128
    return _layout(r.astype(cdt, copy=False), x, dims, True)


@_r2c.backward
def _(ctx, g, dims, norm, onesided):
    if onesided:
        last = dims[-1]
        full = ctx._input_meta[0][0][last]
        missing = full - g.shape[last]
        if missing > 0:
            from ember._ops.cat_split import cat

            shape = list(g.shape)
            shape[last] = missing
            g = cat([g, g.new_zeros(shape)], last)
    return U.real(c2c(g, dims, norm, False))


@op("_fft_c2r", grad_fn="FftC2RBackward0")
def _c2r(x, dims, norm, last_dim_size):
    s = [x.shape[d] for d in dims[:-1]] + [last_dim_size]
    r = np.fft.irfftn(x, s=s, axes=dims, norm=_NP_INVERSE[norm])
    rdt = np.float32 if x.dtype == np.complex64 else np.float64
    return _layout(r.astype(rdt, copy=False), x, dims, True)


@_c2r.backward
def _(ctx, g, dims, norm, last_dim_size):
    gI = r2c(g, dims, norm, True)
    last = dims[-1]
    double = g.shape[last] - gI.shape[last]
    if double > 0:
        # the one-sided bins 1 .. n - onesided stand for their mirror images too
        scale = np.ones(gI.shape[last], dtype=g._data.dtype)
        scale[1 : 1 + double] = 2
        shape = [1] * gI.ndim
        shape[last] = gI.shape[last]
        gI = gI * _wrap(scale.reshape(shape))
    return gI


def c2c(x: Tensor, dims: tuple, norm: int, forward: bool) -> Tensor:
    return dispatch(_c2c, (x,), {"dims": tuple(dims), "norm": norm, "forward": forward})


def r2c(x: Tensor, dims: tuple, norm: int, onesided: bool) -> Tensor:
    return dispatch(_r2c, (x,), {"dims": tuple(dims), "norm": norm, "onesided": onesided})


def c2r(x: Tensor, dims: tuple, norm: int, last_dim_size: int) -> Tensor:
    return dispatch(
        _c2r, (x,), {"dims": tuple(dims), "norm": norm, "last_dim_size": int(last_dim_size)}
    )


# ------------------------------------------------------------------------------ the public layer


def norm_mode(norm: str | None, forward: bool) -> int:
    """Return torch's normalisation enum for a NumPy-style ``norm`` string and direction."""
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def promote(x: Tensor, require_complex: bool) -> Tensor:
    """Return ``x`` promoted as torch's FFTs do: ints to the default float, then complex."""
    if not isinstance(x, Tensor):
        raise TypeError(f"fft(): argument 'input' must be Tensor, not {type(x).__name__}")
    dt = x.dtype
    if dt.is_complex:
        return x
    if not dt.is_floating_point:
        x = x.to(D.get_default_dtype())
        dt = x.dtype
    if dt is D.float16 or dt is D.bfloat16:
        raise RuntimeError(f"Unsupported dtype {U.type_name(dt)}")
    return U.to_complex(x) if require_complex else x


def wrap(dim: int, ndim: int) -> int:
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got "
            f"{dim})"
        )
    return dim % ndim


def resize(x: Tensor, dims, sizes) -> Tensor:
    """Return ``x`` trimmed or zero-padded so that ``x.shape[dims[i]] == sizes[i]``."""
    for d, n in zip(dims, sizes):
        cur = x.shape[d]
        if n < cur:
            x = x.narrow(d, 0, n)
        elif n > cur:
            from ember._ops.cat_split import cat

            shape = list(x.shape)
            shape[d] = n - cur
            x = cat([x, x.new_zeros(shape)], d)
    return x


def check_n(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def canonicalize(x: Tensor, s, dim) -> tuple:
    """Return (shape, dims) of an n-dimensional transform (torch's defaults and checks)."""
    nd = x.ndim
    if dim is not None:
        dims = [wrap(int(d), nd) for d in ((dim,) if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = [int(v) for v in ((s,) if isinstance(s, int) else s)]
        if dim is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > nd:
            raise RuntimeError(
                f"Got shape with {len(s)} values but input tensor only has {nd} dimensions."
            )
        if dim is None:
            dims = list(range(nd - len(s), nd))
        shape = [x.shape[d] if v == -1 else v for v, d in zip(s, dims)]
    elif dim is None:
        dims, shape = list(range(nd)), list(x.shape)
    else:
        shape = [x.shape[d] for d in dims]
    for v in shape:
        check_n(v)
    return shape, dims


def c2c_1d(fname, x, n, dim, norm, forward, out):
    dim = wrap(dim, x.ndim)
    if n is not None:
        check_n(n)
        x = resize(x, [dim], [n])
    else:
        check_n(x.shape[dim])
    return _out(c2c(x, (dim,), norm_mode(norm, forward), forward), out)


def r2c_1d(fname, x, n, dim, norm, forward, onesided, out):
    if x.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a real input tensor, but got {U.type_name(x.dtype)}")
    x = promote(x, False)
    dim = wrap(dim, x.ndim)
    if n is not None:
        check_n(n)
        x = resize(x, [dim], [n])
    else:
        check_n(x.shape[dim])
    r = r2c(x, (dim,), norm_mode(norm, forward), onesided)
    return _out(r if forward else conj(r), out)


def c2r_1d(fname, x, n, dim, norm, forward, out):
    x = promote(x, True)
    dim = wrap(dim, x.ndim)
    last = n if n is not None else 2 * (x.shape[dim] - 1)
    check_n(last)
    if n is not None:
        x = resize(x, [dim], [n // 2 + 1])
    if forward:
        x = conj(x)
    return _out(c2r(x, (dim,), norm_mode(norm, forward), last), out)


def c2r_shape(fname, x, s, dim):
    shape, dims = canonicalize(x, s, dim)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    if s is None or list((s,) if isinstance(s, int) else s)[-1] == -1:
        last = 2 * (x.shape[dims[-1]] - 1)
    else:
        last = shape[-1]
    check_n(last)
    shape[-1] = last // 2 + 1
    return shape, dims, last


# ------------------------------------------------------------------------------ torch.fft


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    """Return the one-dimensional discrete Fourier transform of ``input`` along ``dim``."""
    if isinstance(input, Tensor) and input.dtype.is_complex:
        return c2c_1d("fft", input, n, dim, norm, True, out)
    return r2c_1d("fft", input, n, dim, norm, True, False, out)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    """Return the one-dimensional inverse discrete Fourier transform along ``dim``."""
    if isinstance(input, Tensor) and input.dtype.is_complex:
        return c2c_1d("ifft", input, n, dim, norm, False, out)
    return r2c_1d("ifft", input, n, dim, norm, False, False, out)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    """Return the one-sided Fourier transform of a real signal (``n // 2 + 1`` frequencies)."""
    return r2c_1d("rfft", input, n, dim, norm, True, True, out)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    """Return the real signal of length ``n`` (default ``2 * (size - 1)``) whose one-sided
    transform is ``input``."""
    return c2r_1d("irfft", input, n, dim, norm, False, out)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    """Return the (real) transform of a Hermitian-symmetric signal given by its first half."""
    return c2r_1d("hfft", input, n, dim, norm, True, out)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    """Return the inverse of :func:`hfft`: the one-sided inverse transform of a real signal."""
    return r2c_1d("ihfft", input, n, dim, norm, False, True, out)


def fftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None):
    """Return the n-dimensional discrete Fourier transform over ``dim`` (all dims by default)."""
    shape, dims = canonicalize(input, s, dim)
    x = resize(promote(input, True), dims, shape)
    return _out(c2c(x, dims, norm_mode(norm, True), True), out)


def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None):
    """Return the n-dimensional inverse discrete Fourier transform."""
    shape, dims = canonicalize(input, s, dim)
    x = resize(promote(input, True), dims, shape)
    return _out(c2c(x, dims, norm_mode(norm, False), False), out)


def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None):
    """Return the n-dimensional transform of a real signal, one-sided in the last dim."""
    if isinstance(input, Tensor) and input.dtype.is_complex:
        raise RuntimeError(
            f"rfftn expects a real-valued input tensor, but got {U.type_name(input.dtype)}"
        )
    shape, dims = canonicalize(input, s, dim)
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    x = resize(promote(input, False), dims, shape)
    return _out(r2c(x, dims, norm_mode(norm, True), True), out)


def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None):
    """Return the inverse of :func:`rfftn`: a real n-dimensional signal."""
    shape, dims, last = c2r_shape("irfftn", input, s, dim)
    x = resize(promote(input, True), dims, shape)
    return _out(c2r(x, dims, norm_mode(norm, False), last), out)


def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None):
    """Return the n-dimensional transform of a Hermitian-symmetric signal (real result)."""
    shape, dims, last = c2r_shape("hfftn", input, s, dim)
    x = resize(promote(input, True), dims, shape)
    mode = norm_mode(norm, True)
    if len(dims) > 1:
        x = c2c(x, dims[:-1], mode, True)
    return _out(c2r(conj(x), dims[-1:], mode, last), out)


def ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None):
    """Return the inverse of :func:`hfftn`: one-sided in the last transformed dim."""
    shape, dims = canonicalize(input, s, dim)
    if not dims:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = resize(promote(input, False), dims, shape)
    mode = norm_mode(norm, False)
    tmp = r2c(x, dims[-1:], mode, True)
    if len(dims) == 1:
        return _out(conj(tmp), out)
    return _out(c2c(conj(tmp), dims[:-1], mode, False), out)


def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None):
    """Return the two-dimensional discrete Fourier transform (over the last two dims)."""
    return fftn(input, s, dim, norm, out=out)


def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None):
    """Return the two-dimensional inverse discrete Fourier transform."""
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None):
    """Return the two-dimensional transform of a real signal, one-sided in the last dim."""
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None):
    """Return the inverse of :func:`rfft2`."""
    return irfftn(input, s, dim, norm, out=out)


def hfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None):
    """Return the two-dimensional transform of a Hermitian-symmetric signal."""
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None):
    """Return the inverse of :func:`hfft2`."""
    return ihfftn(input, s, dim, norm, out=out)


def _freq(values: np.ndarray, n: int, d: float, dtype, requires_grad: bool) -> Tensor:
    dt = dtype or D.get_default_dtype()
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError("fftfreq requires a floating point or complex dtype")
    npdt = dt.np
    t = _wrap(np.asarray(values, dtype=npdt) * np.asarray(1.0 / (n * d), dtype=npdt))
    return t.requires_grad_(requires_grad) if requires_grad else t


def fftfreq(
    n: int,
    d: float = 1.0,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the sample frequencies of a length-``n`` transform with sample spacing ``d``."""
    k = np.arange(n)
    k[(n + 1) // 2 :] -= n
    return _out(_freq(k, n, d, dtype, requires_grad), out)


def rfftfreq(
    n: int,
    d: float = 1.0,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the sample frequencies of :func:`rfft` for a length-``n`` signal."""
    return _out(_freq(np.arange(n // 2 + 1), n, d, dtype, requires_grad), out)


def _shift(x: Tensor, dim, up: bool) -> Tensor:
    if dim is None:
        dims = list(range(x.ndim))
    else:
        dims = [wrap(int(d), x.ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
    shifts = [(x.shape[d] + 1) // 2 if up else x.shape[d] // 2 for d in dims]
    return U.roll(x, shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """Return ``input`` with the zero frequency moved to the centre (roll by size // 2)."""
    return _shift(input, dim, False)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """Return the inverse of :func:`fftshift`."""
    return _shift(input, dim, True)

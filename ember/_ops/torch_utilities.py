"""torch-level utilities: ``is_signed``, ``typename``, ``scalar_tensor``, ``empty_strided``,
``range``, ``isin``, ``unravel_index``, ``trapezoid``/``cumulative_trapezoid``, ``vander``,
``histogram``, ``frombuffer``, ``spmm``, ``frobenius_norm``/``nuclear_norm``, ``svd_lowrank``/
``pca_lowrank`` (``to_dlpack`` is ``utils.dlpack``'s).
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import dispatch, op, publish


def _ember():
    import ember  # (the package: its public functions, imported on first call)

    return ember


# --- small utilities ----------------------------------------------------------------------------


def is_signed(input: Tensor) -> bool:
    """Return True if the dtype of ``input`` is a signed type."""
    return input.is_signed()


def typename(obj) -> str:
    """Return the type name of ``obj``: ``'torch.FloatTensor'`` for a tensor, else its class."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=False,
                  requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Return a 0-dim tensor holding ``s`` (of the default float dtype unless ``dtype``)."""
    ember = _ember()
    dt = D.get_default_dtype() if dtype is None else dtype
    if isinstance(s, Tensor):
        s = s.item()
    if isinstance(s, complex) and not dt.is_complex:
        raise RuntimeError(
            f"value cannot be converted to type {D.cpp_type_name(dt)} without overflow"
        )
    return ember.tensor(s, dtype=dt, device=device, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return an uninitialized tensor of ``size`` laid out with ``stride`` (in elements)."""
    from ember._core.device import as_device

    as_device(device)
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
            f"({len(stride)})"
        )
    dt = D.get_default_dtype() if dtype is None else dtype
    n = 0 if 0 in size else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    buf = np.empty(n, dt.np)
    arr = np.lib.stride_tricks.as_strided(buf, size, tuple(st * buf.itemsize for st in stride))
    t = _wrap(arr)
    return t.requires_grad_(True) if requires_grad else t


_RANGE_WARNING = (
    "torch.range is deprecated and will be removed in a future release because its behavior "
    "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
    "values in [start, end)."
)


def range_(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Return ``[start, start + step, ..., end]`` with ``end`` included (deprecated; warns).

    The size is ``floor((end - start) / step) + 1``; the dtype the default float dtype
    unless ``dtype``. Prefer :func:`arange`.
    """
    from ember._core.device import as_device

    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warnings.warn(_RANGE_WARNING, UserWarning, stacklevel=2)
    dt = D.get_default_dtype() if dtype is None else dtype
    if not (dt.is_floating_point or dt.is_complex):
        start, end, step = int(start), int(end), int(step)  # torch casts the bounds first
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(np.floor((end - start) / step)) + 1
    values = (start + np.arange(n, dtype=np.float64) * step).astype(dt.np)
    as_device(device)
    result = _ember().from_numpy(values)
    if out is not None:
        out.resize_(n).copy_(result)
        return out
    return result.requires_grad_(True) if requires_grad else result


# named ``range_`` here so the builtin ``range`` stays usable in this module
range_.__name__ = range_.__qualname__ = "range"
publish(None, range_, name="range", method=False)
for _fn in (is_signed, typename, scalar_tensor, empty_strided):
    publish(None, _fn, method=False)


# --- isin, unravel_index ------------------------------------------------------------------------


@op("isin")
def _isin(elements, test_elements, assume_unique, invert):
    return np.isin(elements, test_elements, assume_unique=assume_unique, invert=invert)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Return a bool tensor: True where an element of ``elements`` is in ``test_elements``.

    Either argument may be a number (not both); ``invert`` negates the result.
    """
    ember = _ember()
    from ember._ops.registry import _integer_operand, check_python_int

    for t in (elements, test_elements):
        if type(t) is int:
            check_python_int(t)  # (torch's argument parser, before anything else)
    for t in (elements, test_elements):
        kind = t.dtype if isinstance(t, Tensor) else D.bool if type(t) is bool else None
        if kind is not None and (kind is D.bool or kind.is_complex):
            raise RuntimeError(
                "Unsupported input type encountered for isin(): " + D.scalar_type_name(kind)
            )

    def number(x, other):
        # a number past int64 is converted to the other side's integer dtype as C does
        if type(x) is int and not -(1 << 63) <= x < 1 << 63:
            if isinstance(other, Tensor) and other._data.dtype.kind in "iu":
                return ember.tensor(_integer_operand(x, other._data.dtype).item())
            return ember.tensor(float(x))
        return ember.tensor(x)

    a = elements if isinstance(elements, Tensor) else number(elements, test_elements)
    b = test_elements if isinstance(test_elements, Tensor) else number(test_elements, elements)
    dt = ember.result_type(a, b)
    a, b = a.to(dt), b.to(dt)
    return dispatch(_isin, (a, b), {"assume_unique": assume_unique, "invert": invert})


def unravel_index(indices, shape) -> tuple:
    """Return a tuple of int64 tensors: the coordinates in ``shape`` of the flat ``indices``.

    As torch, out-of-range indices wrap (no error).
    """
    import itertools
    import operator

    ember = _ember()
    if not isinstance(indices, Tensor):
        raise AttributeError(f"'{type(indices).__name__}' object has no attribute 'is_complex'")
    if indices.dtype is D.bool or indices.dtype.is_floating_point or indices.dtype.is_complex:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    for dim in shape:
        if not isinstance(dim, int):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(dim)}")
    if any(dim < 0 for dim in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coefs = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)), operator.mul))))
    res = indices.unsqueeze(-1).floor_divide(ember.tensor(coefs, dtype=ember.int64))
    return (res % ember.tensor(shape, dtype=ember.int64)).unbind(-1)


def _assert(condition, message: str) -> None:
    """A wrapper around Python's assert which is symbolically traceable (``torch._assert``)."""
    if not condition:
        raise AssertionError(message)


publish(None, isin, method=False)
publish(None, unravel_index, method=False)
publish(None, _assert, method=False)


# --- integration, vander ------------------------------------------------------------------------


def _float_like(x):
    return x.astype(D.get_default_dtype().np) if x.dtype.kind in "biu" else x


@op("mul", grad_fn="MulBackward1")
def _mul_scalar(x, other):
    x = _float_like(x) if isinstance(other, float) else x
    return x * np.asarray(other, x.dtype)


_mul_scalar.backward(lambda ctx, g, other: g * other)


@op("div", grad_fn="DivBackward1")
def _div_scalar(x, other):
    x = _float_like(x)
    return x / np.asarray(other, x.dtype)


_div_scalar.backward(lambda ctx, g, other: g / other)


def _mul(t: Tensor, number: float) -> Tensor:
    # ATen's ``mul.Scalar`` (MulBackward1), as C++ code multiplying by a double records
    return dispatch(_mul_scalar, (t,), {"other": number})


def _div(t: Tensor, number: float) -> Tensor:
    return dispatch(_div_scalar, (t,), {"other": number})


def _zeros_except(y: Tensor, dim: int) -> Tensor:
    sizes = list(y.shape)
    del sizes[dim]
    return _ember().zeros(sizes, dtype=y.dtype)


def _sample_dx(y: Tensor, x: Tensor, dim: int, fname: str) -> Tensor:
    # ATen: a 1-d ``x`` lies along ``dim``; a lower-rank one is padded with leading 1s
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{fname}: There must be one `x` value for each sample point")
        sizes = [1] * y.dim()
        sizes[dim] = x.shape[0]
        x = x.view(sizes)
    elif x.dim() < y.dim():
        x = x.view([1] * (y.dim() - x.dim()) + list(x.shape))
    return _slice(x, dim, 1, None) - _slice(x, dim, 0, -1)


def _check_dx(dx, fname: str) -> float:
    if isinstance(dx, (bool, complex)):
        raise RuntimeError(f"{fname}: Currently, we only support dx as a real number.")
    return float(dx)


def _slice(t: Tensor, dim: int, start, stop) -> Tensor:
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _pair_sums(y: Tensor, dim: int) -> Tensor:
    return _slice(y, dim, 1, None) + _slice(y, dim, 0, -1)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Return the trapezoidal-rule integral of ``y`` along ``dim`` (spacing ``x`` or ``dx``)."""
    from ember._core.tensor import wrap_dim

    dim = wrap_dim(dim, y.dim())
    if y.shape[dim] == 0:
        return _zeros_except(y, dim)
    if y.dtype is D.bool:
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    if x is not None:
        if x.dtype is D.bool:
            raise RuntimeError(
                "trapezoid: received a bool input for `x`, but bool is not supported"
            )
        d = _sample_dx(y, x, dim, "trapezoid")
        return _div((d * _pair_sums(y, dim)).sum(dim), 2.0)
    dx = _check_dx(1 if dx is None else dx, "trapezoid")
    return _mul(y.sum(dim) - _mul(y.select(dim, 0) + y.select(dim, -1), 0.5), dx)


def trapz(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Alias of :func:`trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Return the cumulative trapezoidal-rule integral of ``y`` along ``dim``."""
    from ember._core.tensor import wrap_dim

    dim = wrap_dim(dim, y.dim())
    if x is not None:
        d = _sample_dx(y, x, dim, "cumulative_trapezoid")
        return _div((d * _pair_sums(y, dim)).cumsum(dim), 2.0)
    dx = _check_dx(1 if dx is None else dx, "cumulative_trapezoid")
    return _mul(_pair_sums(y, dim), dx / 2.0).cumsum(dim)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Return the Vandermonde matrix of the 1-d ``x``: columns ``x**(N-1), ..., x, 1``
    (``increasing`` reverses them); integer and bool inputs give int64."""
    ember = _ember()
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = ember.promote_types(x.dtype, ember.int64)
    result = ember.empty((x.shape[0], n), dtype=dt)
    if n > 0:
        result.fill_(1)
        if n > 1:
            result[:, 1:].copy_(x.unsqueeze(1))
            result[:, 1:].copy_(ember.cumprod(result[:, 1:], 1))
    return result if increasing else ember.flip(result, (1,))


for _fn in (trapezoid, trapz, cumulative_trapezoid, vander):
    publish(None, _fn, method=False)


# --- histogram ----------------------------------------------------------------------------------


@op("histogram", grad_fn="NotImplemented")
def _histogram(x, edges, weight=None, density=False):
    x, n = x.reshape(-1), edges.shape[0] - 1
    hist = np.zeros(max(n, 0), dtype=x.dtype)
    if n > 0 and x.size:
        keep = (x >= edges[0]) & (x <= edges[-1])
        pos = np.minimum(np.searchsorted(edges, x[keep], side="right") - 1, n - 1)
        w = None if weight is None else weight.reshape(-1)[keep]
        hist = np.bincount(pos, weights=w, minlength=n).astype(x.dtype)
    if density:
        hist = (hist / (hist.sum() * np.diff(edges))).astype(x.dtype)
    return hist, np.array(edges)


@_histogram.backward
def _(ctx, *grads, **params):
    raise RuntimeError("derivative for aten::histogram is not implemented")


def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None,
              density: bool = False, out=None):  # fmt: skip
    """Return ``(hist, bin_edges)``: counts (or summed ``weight``) of ``input`` in ``bins``.

    ``bins`` is a count of equal bins over ``range`` (default: the data's min and max) or a
    1-d tensor of edges. Each bin is half open but the last, which includes its right edge;
    values outside the edges are not counted. ``density`` normalises to a density.
    """
    from ember import return_types

    ember = _ember()
    dt = input.dtype
    if not dt.is_floating_point:
        raise NotImplementedError(
            f"\"histogramdd\" not implemented for '{D.scalar_type_name(dt)}'"
        )  # fmt: skip
    if weight is not None and weight.dtype is not dt:
        raise RuntimeError(
            "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
            f"should have the same dtype, but got input({D.cpp_type_name(dt)}), and "
            f"weight({D.cpp_type_name(weight.dtype)})"
        )
    x = input._data.reshape(-1)
    if isinstance(bins, Tensor):
        edges_t = bins.to(dt)
    else:
        if bins <= 0:
            raise RuntimeError(
                f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0"
            )  # fmt: skip
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.size:
            lo, hi = float(x.min()), float(x.max())
        else:
            lo, hi = 0.0, 1.0
        if lo > hi:
            raise RuntimeError(
                "torch.histogramdd: min should not exceed max, but got min "
                f"{lo:g} max {hi:g} for dimension 0"
            )
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(
                f"torch.histogramdd: dimension 0's range [{lo:g}, {hi:g}] is not finite"
            )  # fmt: skip
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges_t = ember.linspace(lo, hi, bins + 1, dtype=dt)
    inputs = (input, edges_t) if weight is None else (input, edges_t, weight)
    hist, edges_t = dispatch(_histogram, inputs, {"density": density})
    result = return_types.histogram((hist, edges_t))
    if out is not None:
        for o, r in zip(out, result):
            o.resize_(r.shape).copy_(r)
        return return_types.histogram(tuple(out))
    return result


publish(None, histogram)


# --- frombuffer ---------------------------------------------------------------------------------

_READONLY_WARNING = (
    "The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
    "means you can write to the underlying (supposedly non-writable) buffer using the tensor. "
    "You may want to copy the buffer to protect its data or make it writable before converting "
    "it to a tensor. This type of warning will be suppressed for the rest of this program."
)
_warned_readonly = [False]


def frombuffer(buffer, *, dtype=None, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Return a 1-d tensor sharing memory with an object of the buffer protocol.

    ``count`` elements of ``dtype`` (all that follow ``offset`` bytes when -1) are read. A
    read-only buffer (``bytes``) gives a read-only tensor (torch would let you write into it).
    """

    if dtype is None:
        raise TypeError('frombuffer() missing 1 required positional arguments: "dtype"')
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length, item = view.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
            f"({length} bytes) minus 1"
        )
    if count < 0:
        if (length - offset) % item:
            raise ValueError(
                f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be "
                f"a multiple of element size ({item})"
            )
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(
            f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) "
            f"must not be greater than actual buffer length ({length} bytes)"
        )
    if view.readonly and not _warned_readonly[0]:
        _warned_readonly[0] = True
        warnings.warn(_READONLY_WARNING, UserWarning, stacklevel=2)
    arr = np.frombuffer(view.cast("B"), dtype=dtype.np, count=count, offset=offset)
    t = _wrap(arr)
    return t.requires_grad_(True) if requires_grad else t


publish(None, frombuffer, method=False)


def is_storage(obj) -> bool:
    """Return True if ``obj`` is a storage (``UntypedStorage`` or ``TypedStorage``)."""
    from ember._core.storage import UntypedStorage
    from ember._ops.tensor_extras import TypedStorage

    return isinstance(obj, (UntypedStorage, TypedStorage))


publish(None, is_storage, method=False)


# --- deprecated and low-rank linear algebra -----------------------------------------------------


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Return ``input @ mat2`` (torch's sparse-dense product; ember's tensors are dense)."""
    from ember._ops.linalg import mm

    return mm(input, mat2)


def frobenius_norm(input: Tensor, dim=(-2, -1), keepdim: bool = False) -> Tensor:
    """Return the Frobenius norm over ``dim`` (deprecated: use ``linalg.vector_norm``)."""
    warnings.warn(
        "at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be "
        "removed in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, "
        "keepdim)` instead",
        UserWarning,
        stacklevel=2,
    )
    return _ember().norm(input, 2, dim, keepdim)


def nuclear_norm(input: Tensor, dim=(-2, -1), keepdim: bool = False) -> Tensor:
    """Return the nuclear norm over ``dim`` (deprecated: use ``linalg.matrix_norm``)."""
    warnings.warn(
        "at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be "
        "removed in a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, "
        "keepdim)` instead",
        UserWarning,
        stacklevel=2,
    )
    return _ember().linalg.matrix_norm(input, "nuc", dim, keepdim)


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    """Return ``(U, S, V)``, an estimate of the ``q`` leading singular triplets of ``A - M``.

    Randomized subspace iteration (Halko, Martinsson and Tropp, 2009, algorithms 4.4 and 5.1):
    a Gaussian ``(n, q)`` test matrix drawn from the global generator spans a sample of the
    range of ``A - M``; ``niter`` power passes sharpen it; the SVD of the small projection
    gives the triplets. Tall and wide inputs are handled through the transpose, so the test
    matrix is drawn for the shorter side, as torch draws it.
    """
    em = _ember()
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if m < n:
        U, S, V = svd_lowrank(A.mT, q, niter, None if M is None else M.mT)
        return V, S, U

    def times(right):  # (A - M) @ right, without forming A - M
        return A @ right if M is None else A @ right - M @ right

    def adjoint_times(Q):  # (A - M)^H @ Q
        return A.mH @ Q if M is None else A.mH @ Q - M.mH @ Q

    test_matrix = em.randn(n, q, dtype=A.dtype)
    Q = em.linalg.qr(times(test_matrix)).Q
    for _ in range(niter):
        Q = em.linalg.qr(adjoint_times(Q)).Q
        Q = em.linalg.qr(times(Q)).Q
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = em.linalg.svd(B, full_matrices=False)
    return Q @ U, S, Vh.mH


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """Return ``(U, S, V)`` of the ``q`` leading principal components of ``A`` (rows are
    samples): ``A - mean ~= U diag(S) V^T``, estimated as ``svd_lowrank`` estimates it."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    if center:
        A = A - A.mean(dim=-2, keepdim=True)
    return svd_lowrank(A, q, niter)


for _fn in (spmm, frobenius_norm, nuclear_norm, svd_lowrank, pca_lowrank):
    publish(None, _fn, method=False)

"""``assert_close``: torch.testing's comparison of tensors, numbers and nested containers.

Inputs are paired up recursively through sequences and mappings; each pair (None, bool, number,
tensor-like) is checked with torch's rules and default tolerances per dtype, and a failure
raises torch's exception with torch's report::

    Tensor-likes are not close!

    Mismatched elements: 1 / 3 (33.3%)
    Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.25 at index (1,) (up to 1.3e-06 allowed)
"""

from __future__ import annotations

import cmath
import collections.abc
import contextlib
import warnings
from typing import Any

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, _wrap

# {dtype name: (rtol, atol)}; other dtypes compare exactly
_DTYPE_PRECISIONS = {
    "float16": (0.001, 1e-5),
    "bfloat16": (0.016, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
_NUMBER_DTYPES = {int: D.int64, float: D.float64, complex: D.complex128}


class _Failure(Exception):
    """A comparison failure: the exception type to raise, its message and the item path."""

    def __init__(self, type_: type, msg: str, id_: tuple = ()):
        super().__init__(msg)
        self.type, self.msg, self.id = type_, msg, id_

    def to_error(self, msg=None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                path = "".join(str([item]) for item in self.id)
                generated += f"\n\nThe failure occurred for item {path}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    pass


def default_tolerances(*inputs) -> tuple:
    """Return the loosest default ``(rtol, atol)`` of the inputs' dtypes (Tensors or dtypes)."""
    rtols, atols = [], []
    for x in inputs:
        if isinstance(x, Tensor):
            x = x.dtype
        if not isinstance(x, D.dtype):
            raise TypeError(f"Expected a torch.Tensor or a torch.dtype, but got {type(x)} instead.")
        r, a = _DTYPE_PRECISIONS.get(x.name, (0.0, 0.0))
        rtols.append(r)
        atols.append(a)
    return max(rtols), max(atols)


def _tolerances(*inputs, rtol, atol, id_=()) -> tuple:
    if (rtol is None) ^ (atol is None):
        raise _Failure(
            ValueError,
            "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
            f"{'rtol' if rtol is None else 'atol'}.",
            id_,
        )
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*inputs)


# ------------------------------------------------------------------------------ messages


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol) -> str:
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        if idx is None:
            msg = f"{kind.title()} difference: {diff}"
        else:
            msg = f"Greatest {kind} difference: {diff} at index {idx}"
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(
        "Scalars",
        f"Expected {expected} but got {actual}.",
        abs_diff,
        None,
        atol,
        rel_diff,
        None,
        rtol,
    )


def _tensor_mismatch_msg(a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol, atol) -> str:
    n = matches.size
    mismatched = n - int(np.count_nonzero(matches))
    extra = f"Mismatched elements: {mismatched} / {n} ({mismatched / n:.1%})"
    a, e, m = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if a.dtype.kind in "biu":
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[m] = 0
        denom = np.abs(e)
        if abs_diff.dtype.kind in "iu":  # torch's int / int: true division in float32
            rel_diff = abs_diff.astype(np.float32) / denom.astype(np.float32)
        else:
            rel_diff = abs_diff / denom
        rel_diff[m] = 0
    ia, ir = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))

    def index(flat):
        return tuple(int(i) for i in np.unravel_index(flat, matches.shape))

    return _mismatch_msg(
        "Tensor-likes",
        extra,
        abs_diff[ia].item(),
        index(ia),
        atol,
        rel_diff[ir].item(),
        index(ir),
        rtol,
    )


# ------------------------------------------------------------------------------ pairs


class _NonePair:
    def __init__(self, actual, expected, **_):
        if not (actual is None or expected is None):
            raise _Unsupported
        self.actual, self.expected = actual, expected

    def compare(self, id_):
        # one side is None (the constructor made sure): they match only if both are
        if self.actual is not self.expected:
            raise _Failure(
                AssertionError, f"None mismatch: {self.actual} is not {self.expected}", id_
            )


class _BooleanPair:
    def __init__(self, actual, expected, **_):
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _Unsupported
        self.actual, self.expected = bool(actual), bool(expected)

    def compare(self, id_):
        if self.actual is not self.expected:
            raise _Failure(
                AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}", id_
            )


class _NumberPair:
    def __init__(self, actual, expected, *, id_, rtol, atol, equal_nan, check_dtype, **_):
        kinds = (int, float, complex, np.number)
        if not all(isinstance(x, kinds) for x in (actual, expected)):
            raise _Unsupported
        self.actual, self.expected = (
            x.item() if isinstance(x, np.number) else x for x in (actual, expected)
        )
        dtypes = [_NUMBER_DTYPES[type(x)] for x in (self.actual, self.expected)]
        self.rtol, self.atol = _tolerances(*dtypes, rtol=rtol, atol=atol, id_=id_)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self, id_):
        a, e = self.actual, self.expected
        if self.check_dtype and type(a) is not type(e):
            raise _Failure(
                AssertionError, f"The (d)types do not match: {type(a)} != {type(e)}.", id_
            )
        if a == e:
            return
        if self.equal_nan and cmath.isnan(a) and cmath.isnan(e):
            return
        diff = abs(a - e)
        if cmath.isfinite(diff) and diff <= self.atol + self.rtol * abs(e):
            return
        raise _Failure(AssertionError, _scalar_mismatch_msg(a, e, self.rtol, self.atol), id_)


class _TensorLikePair:
    def __init__(
        self,
        actual,
        expected,
        *,
        id_,
        allow_subclasses,
        rtol,
        atol,
        equal_nan,
        check_device,
        check_dtype,
        check_layout,
        check_stride,
        **_,
    ):
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or (not allow_subclasses and type(actual) is not type(expected)):
            raise _Unsupported
        self.actual, self.expected = (self._to_tensor(x) for x in (actual, expected))
        self.rtol, self.atol = _tolerances(
            self.actual, self.expected, rtol=rtol, atol=atol, id_=id_
        )
        self.equal_nan = equal_nan
        self.checks = (check_device, check_dtype, check_layout, check_stride)

    @staticmethod
    def _to_tensor(x) -> Tensor:
        if isinstance(x, Tensor):
            return x
        try:
            from ember._ops.registry import API

            return API["as_tensor"](x)
        except Exception:
            raise _Unsupported from None

    def compare(self, id_):
        a, e = self.actual, self.expected
        check_device, check_dtype, check_layout, check_stride = self.checks

        def mismatch(name, av, ev):
            raise _Failure(
                AssertionError,
                f"The values for attribute '{name}' do not match: {av} != {ev}.",
                id_,
            )

        if a.shape != e.shape:
            mismatch("shape", a.shape, e.shape)
        if check_layout and a.layout != e.layout:
            mismatch("layout", a.layout, e.layout)
        if check_stride and a.stride() != e.stride():
            mismatch("stride()", a.stride(), e.stride())
        if check_device and a.device != e.device:
            mismatch("device", a.device, e.device)
        if check_dtype and a.dtype is not e.dtype:
            mismatch("dtype", a.dtype, e.dtype)
        av, ev = a._data, e._data
        if a.dtype is not e.dtype:
            common = D.promote_types(a.dtype, e.dtype).np
            av, ev = av.astype(common), ev.astype(common)
        matches = _isclose(av, ev, self.rtol, self.atol, self.equal_nan)
        if matches.all():
            return
        if av.ndim == 0:
            msg = _scalar_mismatch_msg(_wrap(av).item(), _wrap(ev).item(), self.rtol, self.atol)
        else:
            msg = _tensor_mismatch_msg(av, ev, matches, self.rtol, self.atol)
        raise _Failure(AssertionError, msg, id_)


def _isclose(a: np.ndarray, e: np.ndarray, rtol, atol, equal_nan) -> np.ndarray:
    """torch.isclose on arrays of one dtype: ``|a - e| <= atol + |rtol * e|``, exact for zero
    tolerances; infinities must match; NaN match only with ``equal_nan``."""
    close = np.asarray(a == e)
    floating = a.dtype.kind in "fcV"
    if equal_nan and floating:
        close = close | (np.isnan(a) & np.isnan(e))
    if rtol == 0 and atol == 0:
        return close
    if a.dtype == np.bool_:
        a, e = a.astype(np.float32), e.astype(np.float32)
    elif not floating:
        e = e.astype(np.float32)  # int * float scalar: torch's default float dtype
    with np.errstate(all="ignore"):
        allowed = atol + np.abs(rtol * e)
        actual = np.abs(a - e)
    return close | (np.isfinite(actual) & (actual <= allowed))


_PAIRS = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _originate(actual, expected, id_, options) -> list:
    seq, mapping = collections.abc.Sequence, collections.abc.Mapping
    if (
        isinstance(actual, seq)
        and not isinstance(actual, str)
        and isinstance(expected, seq)
        and not isinstance(expected, str)
    ):
        if len(actual) != len(expected):
            raise _Failure(
                AssertionError,
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                id_,
            )
        pairs = []
        for i in range(len(actual)):
            pairs.extend(_originate(actual[i], expected[i], (*id_, i), options))
        return pairs
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        ak, ek = set(actual.keys()), set(expected.keys())
        if ak != ek:
            raise _Failure(
                AssertionError,
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(ek - ak)}\n"
                f"Additional keys in the actual mapping: {sorted(ak - ek)}",
                id_,
            )
        keys = ak
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        pairs = []
        for k in keys:
            pairs.extend(_originate(actual[k], expected[k], (*id_, k), options))
        return pairs
    for pair_type in _PAIRS:
        try:
            return [(pair_type(actual, expected, id_=id_, **options), id_)]
        except _Unsupported:
            continue
    raise _Failure(
        TypeError,
        f"No comparison pair was able to handle inputs of type {type(actual)} and "
        f"{type(expected)}.",
        id_,
    )


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg=None,
) -> None:
    """Assert that ``actual`` and ``expected`` are close: ``|actual - expected| <= atol + rtol *
    |expected|`` elementwise, with torch's default ``rtol``/``atol`` per dtype (exact for
    integers and bool). Tensors, NumPy arrays, numbers, None and (nested) sequences and mappings
    of them are compared; on failure raise torch's exception and report (or ``msg``: a string, or
    a callable given the report)."""
    options = {
        "allow_subclasses": allow_subclasses,
        "rtol": rtol,
        "atol": atol,
        "equal_nan": equal_nan,
        "check_device": check_device,
        "check_dtype": check_dtype,
        "check_layout": check_layout,
        "check_stride": check_stride,
    }
    try:
        pairs = _originate(actual, expected, (), options)
    except _Failure as failure:
        raise failure.to_error() from None
    for pair, id_ in pairs:
        try:
            pair.compare(id_)
        except _Failure as failure:
            raise failure.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg="") -> None:
    """Deprecated: use :func:`assert_close`. Compare with looser defaults and dtype promotion."""
    warnings.warn(
        "`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a "
        "future release. Please use `torch.testing.assert_close()` instead. You can find "
        "detailed upgrade instructions in https://github.com/pytorch/pytorch/issues/61844.",
        FutureWarning,
        stacklevel=2,
    )
    from ember._ops.registry import API

    if not isinstance(actual, Tensor):
        actual = API["tensor"](actual)
    if not isinstance(expected, Tensor):
        expected = API["tensor"](expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        loose = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        rtol = max(loose.get(t.dtype.name, (0.0, 0.0))[0] for t in (actual, expected))
        atol = max(loose.get(t.dtype.name, (0.0, 0.0))[1] for t in (actual, expected))
    assert_close(
        actual,
        expected,
        rtol=rtol,
        atol=atol,
        equal_nan=equal_nan,
        check_device=True,
        check_dtype=False,
        check_stride=False,
        msg=msg or None,
    )

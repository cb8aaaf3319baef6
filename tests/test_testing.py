"""ember.testing (assert_close, make_tensor) and thread settings, compared with torch's."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.testing
from ember._core import threads

torch = pytest.importorskip("torch")

NAN, INF = math.nan, math.inf


def _convert(lib, obj):
    """Turn NumPy arrays (possibly nested in lists/tuples/dicts) into tensors of ``lib``."""
    if isinstance(obj, np.ndarray):
        return lib.from_numpy(obj.copy())
    if isinstance(obj, list):
        return [_convert(lib, o) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_convert(lib, o) for o in obj)
    if isinstance(obj, dict):
        return {k: _convert(lib, v) for k, v in obj.items()}
    return obj


def _outcome(lib, actual, expected, **kw):
    testing = lib.testing
    try:
        testing.assert_close(_convert(lib, actual), _convert(lib, expected), **kw)
    except Exception as e:  # noqa: BLE001 - the exception is the result under test
        return type(e), str(e)
    return None


def same(actual, expected, **kw):
    t = _outcome(torch, actual, expected, **kw)
    e = _outcome(ember, actual, expected, **kw)
    if t is not None and e is not None:
        e = (e[0], e[1].replace("ember.Tensor", "torch.Tensor"))
    assert e == t
    return t


def f32(*v):
    return np.array(v, dtype=np.float32)


CASES = [
    (f32(1, 2, 3), f32(1, 2, 3), {}),
    (f32(1, 2, 3), f32(1, 2.5, 3), {}),
    (f32(1, 2, 3), f32(1, 2 + 1e-6, 3), {}),
    (f32(1, 2, 3), f32(1, 2.5, 3), {"rtol": 0.3, "atol": 0}),
    (f32(1, 2, 3), f32(1, 2.5, 3), {"rtol": 0.1}),
    (f32(1, 2, 3), f32(1, 2.5, 3), {"atol": 0.1}),
    (f32(1, 2, 3), f32(1, 2.5, 3), {"msg": "custom"}),
    (f32(1, 2, 3), f32(1, 2.5, 3), {"msg": lambda m: "wrapped: " + m}),
    (f32(1, NAN, 3), f32(1, NAN, 3), {}),
    (f32(1, NAN, 3), f32(1, NAN, 3), {"equal_nan": True}),
    (f32(1, INF, 3), f32(1, INF, 3), {}),
    (f32(1, INF, 3), f32(1, -INF, 3), {}),
    (f32(0, 1, 2), f32(1e-3, 1, 2), {}),
    (f32(1, 2), f32(1, 2, 3), {}),
    (f32(1, 2), np.array([1, 2], dtype=np.float64), {}),
    (f32(1, 2), np.array([1, 2.5], dtype=np.float64), {"check_dtype": False}),
    (np.array([1, 2, 3]), np.array([1, 3, 3]), {}),
    (np.array([1, 2, 3]), np.array([1, 0, 3]), {}),
    (np.array([True, False]), np.array([True, True]), {}),
    (np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 2.0], [3.0, 4.1]]), {}),
    (np.array(2.0), np.array(2.5), {}),
    (np.array(2.0, np.float32), np.array(0.0, np.float32), {}),
    (np.array([1 + 1j, 2j], np.complex64), np.array([1 + 1j, 2.5j], np.complex64), {}),
    (f32(1, 2, 3).astype(np.float16), f32(1, 2.01, 3).astype(np.float16), {}),
    ([f32(1, 2), f32(3)], [f32(1, 2), f32(3.5)], {}),
    ((f32(1), 2, 3.0), (f32(1), 2, 3.5), {}),
    ({"a": f32(1), "b": f32(2)}, {"a": f32(1), "b": f32(2.5)}, {}),
    ({"a": f32(1)}, {"b": f32(1)}, {}),
    ([f32(1)], [f32(1), f32(2)], {}),
    (1, 1, {}),
    (1, 2, {}),
    (1.0, 1.0 + 1e-9, {}),
    (1.0, 1.5, {}),
    (1, 1.0, {}),
    (True, True, {}),
    (True, False, {}),
    (None, None, {}),
    (None, 1, {}),
    ("a", "a", {}),
    (f32(1, 2), [1.0, 2.0], {}),
    (np.array([1.0, 2.0]), np.array([1.0, 2.0]), {}),
    (f32(1, 2), f32(1, 2)[::-1].copy()[::-1], {"check_stride": True}),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_assert_close_matches_torch(i):
    actual, expected, kw = CASES[i]
    same(actual, expected, **kw)


def test_assert_close_stride_and_layout():
    e = _outcome(ember, None, None)
    assert e is None
    a = ember.zeros(3, 2).t()
    b = ember.zeros(2, 3)
    ember.testing.assert_close(a, b)
    with pytest.raises(AssertionError, match=r"attribute 'stride\(\)' do not match"):
        ember.testing.assert_close(a, b, check_stride=True)
    ta, tb = torch.zeros(3, 2).t(), torch.zeros(2, 3)
    with pytest.raises(AssertionError) as te:
        torch.testing.assert_close(ta, tb, check_stride=True)
    with pytest.raises(AssertionError) as ee:
        ember.testing.assert_close(a, b, check_stride=True)
    assert str(ee.value) == str(te.value)


def test_assert_close_many_mismatches_report():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5, 6)).astype(np.float32)
    b = a.copy()
    b[rng.random(b.shape) < 0.3] += 0.01
    b[1, 2, 3] = 100.0
    same(a, b)
    same(a.astype(np.float64), b.astype(np.float64))
    same(a.astype(np.int64), (b * 10).astype(np.int64))


def test_assert_allclose_deprecated():
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.testing.assert_allclose(lib.tensor([1.0, 2.0]), [1.0, 2.00001])
        assert w and w[0].category is FutureWarning


# ------------------------------------------------------------------------------ make_tensor


@pytest.mark.parametrize(
    "dtype",
    [
        "bool",
        "uint8",
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ],
)
def test_make_tensor(dtype):
    dt = getattr(ember, dtype)
    t = ember.testing.make_tensor(3, 4, dtype=dt, device="cpu")
    tt = torch.testing.make_tensor(3, 4, dtype=getattr(torch, dtype), device="cpu")
    assert t.dtype is dt and tuple(t.shape) == tuple(tt.shape) == (3, 4)
    assert t.is_contiguous()
    vals = t._data.astype(np.complex128 if "complex" in dtype else np.float64)
    parts = [vals.real, vals.imag] if "complex" in dtype else [vals]
    low, high = {"bool": (0, 1), "uint8": (0, 9)}.get(dtype, (-9, 9))
    for p in parts:
        assert p.min() >= low and p.max() <= high
    t = ember.testing.make_tensor(
        (2, 3),
        dtype=dt,
        device="cpu",
        noncontiguous=True,
        exclude_zero=True,
        low=1 if dtype == "bool" else None,
    )
    tt = torch.testing.make_tensor(
        (2, 3), dtype=getattr(torch, dtype), device="cpu", noncontiguous=True, exclude_zero=True
    )
    assert t.stride() == tt.stride() and not t.is_contiguous()
    assert np.all(t._data != 0)
    if dtype.startswith(("float", "complex", "bfloat")):
        assert ember.testing.make_tensor(
            2, dtype=dt, device="cpu", requires_grad=True
        ).requires_grad


def test_make_tensor_ranges_and_errors():
    t = ember.testing.make_tensor(1000, dtype=ember.float32, device="cpu", low=2, high=3)
    assert 2 <= t.min().item() and t.max().item() < 3
    t = ember.testing.make_tensor(1000, dtype=ember.int64, device="cpu", low=-2.5, high=1.2)
    assert set(np.unique(t._data)) <= {-2, -1, 0, 1}
    t = ember.testing.make_tensor(50, dtype=ember.float64, device="cpu", low=-math.inf)
    assert np.isfinite(t._data).all()
    for kw in [
        dict(dtype=ember.int32, requires_grad=True),
        dict(dtype=ember.float32, low=3, high=2),
        dict(dtype=ember.float32, low=math.nan),
        dict(dtype=ember.uint8, high=-1),
        dict(dtype=ember.float32, noncontiguous=True, memory_format=ember.contiguous_format),
    ]:
        tkw = {
            k: (
                getattr(torch, v.name)
                if isinstance(v, ember.dtype)
                else torch.contiguous_format
                if k == "memory_format"
                else v
            )
            for k, v in kw.items()
        }
        with pytest.raises(ValueError) as te:
            torch.testing.make_tensor(2, 3, device="cpu", **tkw)
        with pytest.raises(ValueError) as ee:
            ember.testing.make_tensor(2, 3, device="cpu", **kw)
        assert str(ee.value) == str(te.value)


# ------------------------------------------------------------------------------ threads


def test_num_threads_roundtrip():
    before = threads.get_num_threads()
    assert isinstance(before, int) and before >= 1
    try:
        threads.set_num_threads(1)
        assert threads.get_num_threads() == 1
        threads.set_num_threads(2)
        assert threads.get_num_threads() == 2
    finally:
        threads.set_num_threads(before)
    assert threads.get_num_threads() == before


def test_num_threads_errors_match_torch():
    for bad in (0, -1):
        with pytest.raises(RuntimeError) as te:
            torch.set_num_threads(bad)
        with pytest.raises(RuntimeError) as ee:
            threads.set_num_threads(bad)
        assert str(ee.value) == str(te.value)
    for bad in (1.5, "2"):
        with pytest.raises(RuntimeError) as te:
            torch.set_num_threads(bad)
        with pytest.raises(RuntimeError) as ee:
            threads.set_num_threads(bad)
        assert str(ee.value) == str(te.value)


def test_num_threads_reaches_blas():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = threads.get_num_threads()
    try:
        threads.set_num_threads(1)
        blas = [p for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
        assert blas and all(p["num_threads"] == 1 for p in blas)
    finally:
        threads.set_num_threads(before)


def test_num_threads_without_threadpoolctl(monkeypatch):
    monkeypatch.setattr(threads, "_threadpool_limits", lambda: None)
    before = threads.get_num_threads()
    try:
        threads.set_num_threads(3)
        assert threads.get_num_threads() == 3
    finally:
        threads.set_num_threads(before)

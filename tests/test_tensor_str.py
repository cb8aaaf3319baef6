"""ember._core.tensor_str against real torch's repr (torch is only a test oracle)."""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

torch = pytest.importorskip("torch")

from ember._core import tensor_str as ts
from ember._core.tensor_str import (
    dtype_shown,
    format_tensor,
    get_printoptions,
    printoptions,
    set_printoptions,
)

BF16 = np.dtype(ml_dtypes.bfloat16)

FLOAT_DTYPES = [np.float16, np.float32, np.float64, BF16]
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8]
COMPLEX_DTYPES = [np.complex64, np.complex128]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + COMPLEX_DTYPES + [np.bool_]


@pytest.fixture(autouse=True)
def _restore_print_options():
    set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    yield
    set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)


def _both_options(**kwargs):
    set_printoptions(**kwargs)
    torch.set_printoptions(**kwargs)


def to_torch(arr: np.ndarray):
    arr = np.asarray(arr)
    if arr.dtype == BF16:
        return torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(arr)).reshape(arr.shape)


def to_numpy(t) -> np.ndarray:
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(BF16)
    return t.numpy()


def dtype_name(t) -> str:
    return str(t.dtype).removeprefix("torch.")


def ember_repr(t, **kwargs) -> str:
    """format_tensor for the values/metadata of torch tensor ``t``."""
    name = dtype_name(t)
    default = dtype_name(torch.empty(0))
    grad_fn = type(t.grad_fn).__name__ if t.grad_fn is not None else None
    return format_tensor(
        to_numpy(t),
        dtype_name=name,
        show_dtype=dtype_shown(name, default, empty=t.numel() == 0),
        requires_grad=t.requires_grad,
        grad_fn=grad_fn,
        **kwargs,
    )


def check(arr: np.ndarray) -> None:
    t = to_torch(arr)
    assert ember_repr(t) == repr(t)
    # The same values handed over as a non-contiguous view must print identically.
    if arr.ndim >= 2:
        tt = to_torch(np.ascontiguousarray(arr.swapaxes(0, -1)))
        assert ember_repr(tt) == repr(tt)


def _cast(values, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(values).astype(dtype)


# ----------------------------------------------------------------------------
# Hand-picked cases
# ----------------------------------------------------------------------------

FLOAT_CASES = [
    0.0,
    -0.0,
    1.5,
    [1.0, 2.0, 3.0],
    [-1.0, 2.0, -3.0],
    [0.0, 0.0],
    [-0.0, 0.0, 1.0],
    [-0.0, 0.25],
    [1.0, np.nan],
    [np.nan, np.inf, -np.inf],
    [np.nan, 0.5, -np.inf, -0.0],
    [1e-5, 1.0],
    [1e-4, 1.0],
    [1e9, 1.0],
    [1e8, 2e8],
    [1.0, 1000.0],
    [1.0, 1000.5],
    [1.0, 1001.0],
    [0.001, 1.0],
    [0.0011, 1.0],
    [1e-30, 1e30],
    [123456789.0],
    [1e100, -1e-100],
    [1e300, 1e-300],
    [0.00005, 0.5],
    [0.99995, 1.0],
    [9.99995, -1.5],
    [65504.0, -65504.0],
    [12345.678, -0.001],
    [3.0, -7.0, 100.0, np.nan],
    [[1.0, -2.5], [np.inf, 1e-7]],
    np.linspace(-3, 3, 37),
    np.arange(100.0),
    np.arange(100.0) * 1.5,
    np.arange(-40.0, 40.0) / 7,
    np.arange(24.0).reshape(2, 3, 4),
    np.arange(120.0).reshape(2, 3, 4, 5) - 60,
    np.arange(240.0).reshape(2, 3, 40) / 3,
    np.geomspace(1e-10, 1e10, 21),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("case", range(len(FLOAT_CASES)))
def test_float_cases(dtype, case):
    check(_cast(FLOAT_CASES[case], dtype))


INT_CASES = [
    5,
    0,
    [0, 1, 2],
    [-1, 0, 1],
    [[1, 22], [333, -4]],
    np.arange(100),
    np.arange(60).reshape(3, 4, 5),
    np.arange(-30, 30).reshape(2, 3, 2, 5),
    [127, -128],
]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
@pytest.mark.parametrize("case", range(len(INT_CASES)))
def test_int_cases(dtype, case):
    check(_cast(INT_CASES[case], dtype))


def test_int64_extremes():
    check(np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0]))


@pytest.mark.parametrize(
    "values",
    [True, False, [True, False], [True, True], [[True], [False]], np.arange(50) % 3 == 0],
)
def test_bool(values):
    check(np.array(values, dtype=bool))


COMPLEX_CASES = [
    1 + 2j,
    -0.0 - 0.0j,
    [1 + 2j, 3 - 4j],
    [1.5 - 0.25j, -2 + 0j, 0 - 0j],
    [complex(0.0, -0.0), complex(-0.0, 0.0)],
    [complex(np.nan, 1), complex(1, np.inf), complex(-np.inf, np.nan)],
    [1e-6 + 1j, 1e6 - 1e-6j],
    [[1 + 1j, 2 + 2j], [3 + 3j, 4 + 4j]],
    np.arange(40) * (1 + 0.5j) - 20j,
    (np.arange(60) - 30.5j).reshape(3, 4, 5),
]


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("case", range(len(COMPLEX_CASES)))
def test_complex_cases(dtype, case):
    check(np.array(COMPLEX_CASES[case], dtype=dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3), (0, 3, 4), (3, 0, 1, 2)], ids=str)
def test_empty(dtype, shape):
    check(np.zeros(shape, dtype=dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_large_summarized(dtype):
    rng = np.random.default_rng(0)
    for shape in [(1001,), (2000,), (40, 30), (5, 300), (11, 12, 13), (3, 4, 5, 20)]:
        values = rng.standard_normal(shape) * 10
        if np.dtype(dtype).kind == "c":
            values = values + 1j * rng.standard_normal(shape)
        check(_cast(values, dtype))


def test_large_summarized_is_fast_and_right():
    values = np.arange(4_000_000, dtype=np.float32).reshape(2000, 2000) / 7
    start = time.perf_counter()
    text = format_tensor(values, dtype_name="float32", show_dtype=False)
    assert time.perf_counter() - start < 0.5
    assert text == repr(torch.from_numpy(values))


def test_summarized_only_shown_values_choose_the_format():
    # The hidden middle element would force sci mode if it were considered.
    values = np.ones(2001)
    values[1000] = 1e20
    check(values)
    values[0] = 0.5
    check(values)


def test_long_rows_wrap():
    check(np.arange(300.0) * 1.001)
    check(np.full((2, 2, 30), -1234.5678))
    check(np.array([1e-10] * 30 + [np.nan]))


# ----------------------------------------------------------------------------
# Suffixes
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 5, 8, 9, 10, 11, 12, 30])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.complex64])
def test_requires_grad_and_grad_fn(n, dtype):
    leaf = torch.linspace(-2, 3, n).to(dtype).requires_grad_()
    assert ember_repr(leaf) == repr(leaf)
    for out in (leaf * 2, leaf.sum(), leaf.reshape(1, -1) + 1, leaf[:0]):
        assert ember_repr(out) == repr(out)


def test_suffix_wrapping_boundaries():
    # Vary the line length around linewidth so the suffix wrap rule is hit on both sides.
    for n in range(1, 40):
        for dtype in (torch.float64, torch.int32):
            t = torch.arange(n, dtype=dtype)
            assert ember_repr(t) == repr(t)
            if dtype.is_floating_point:
                g = t.requires_grad_() * 1
                assert ember_repr(g) == repr(g)


def test_grad_fn_wins_over_requires_grad():
    text = format_tensor(np.ones(2), dtype_name="float32", show_dtype=False, grad_fn="AddBackward0")
    assert text == "tensor([1., 1.], grad_fn=<AddBackward0>)"
    text = format_tensor(
        np.ones(2), dtype_name="float32", show_dtype=False, requires_grad=True, grad_fn="X"
    )
    assert text == "tensor([1., 1.], grad_fn=<X>)"


def test_device_suffix():
    text = format_tensor(
        np.array([1.0, 2.0]), dtype_name="float32", show_dtype=False, device="cuda:0"
    )
    assert text == "tensor([1., 2.], device='cuda:0')"
    text = format_tensor(
        np.array([1, 2], dtype=np.int32),
        dtype_name="int32",
        show_dtype=True,
        device="cuda:1",
        requires_grad=True,
    )
    assert text == "tensor([1, 2], device='cuda:1', dtype=torch.int32, requires_grad=True)"


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 4)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_meta_device(shape, dtype):
    t = torch.empty(shape, dtype=dtype, device="meta")
    name = dtype_name(t)
    mine = format_tensor(
        np.empty(shape),
        dtype_name=name,
        show_dtype=dtype_shown(name, "float32", meta=True),
        device="meta",
    )
    assert mine == repr(t)
    if dtype.is_floating_point:
        t.requires_grad_()
        mine = format_tensor(
            np.empty(shape),
            dtype_name=name,
            show_dtype=dtype_shown(name, "float32", meta=True),
            device="meta",
            requires_grad=True,
        )
        assert mine == repr(t)


def test_custom_prefix_indents_like_torch():
    class MyTensor(torch.Tensor):
        pass

    for t in (torch.arange(60.0).reshape(3, 20) / 3, torch.arange(30).reshape(2, 15)):
        sub = t.as_subclass(MyTensor)
        assert ember_repr(t, prefix="MyTensor(") == repr(sub)


# ----------------------------------------------------------------------------
# dtype_shown
# ----------------------------------------------------------------------------

TORCH_DTYPES = [
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
    torch.complex64,
    torch.complex128,
]


@pytest.mark.parametrize("default", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_dtype_shown_matches_torch(default, dtype):
    torch.set_default_dtype(default)
    default_name = dtype_name(torch.empty(0))
    name = dtype_name(torch.empty(0, dtype=dtype))
    for shape, empty in [((2,), False), ((), False), ((0,), True), ((0, 2), True)]:
        t = torch.zeros(shape, dtype=dtype)
        assert (f"dtype={t.dtype}" in repr(t)) == dtype_shown(name, default_name, empty=empty)
        assert ember_repr(t) == repr(t)
    meta = torch.empty(2, dtype=dtype, device="meta")
    assert (f"dtype={meta.dtype}" in repr(meta)) == dtype_shown(name, default_name, meta=True)


def test_dtype_shown_rule():
    assert not dtype_shown("float32", "float32")
    assert not dtype_shown("int64", "float32")
    assert not dtype_shown("bool", "float32")
    assert not dtype_shown("complex64", "float32")
    assert dtype_shown("complex128", "float32")
    assert dtype_shown("float64", "float32")
    assert not dtype_shown("complex128", "float64")
    assert dtype_shown("complex64", "float64")
    assert dtype_shown("int64", "float32", empty=True)
    assert dtype_shown("bool", "float32", empty=True)
    assert dtype_shown("complex64", "float32", empty=True)
    assert not dtype_shown("float32", "float32", empty=True)


# ----------------------------------------------------------------------------
# Print options
# ----------------------------------------------------------------------------


def test_printoption_defaults_and_profiles():
    assert get_printoptions() == torch._tensor_str.get_printoptions()
    assert get_printoptions() == {
        "precision": 4,
        "threshold": 1000,
        "edgeitems": 3,
        "linewidth": 80,
        "sci_mode": None,
    }
    for kwargs in (
        {"profile": "short"},
        {"profile": "full"},
        {"profile": "full", "precision": 7},
        {"precision": 2, "sci_mode": True},
        {"profile": "default"},
        {"profile": "no-such-profile"},
        {"linewidth": 120, "edgeitems": 1},
        {"threshold": 10},
    ):
        _both_options(**kwargs)
        assert get_printoptions() == torch._tensor_str.get_printoptions(), kwargs


def test_printoptions_context_manager_restores():
    set_printoptions(precision=6, sci_mode=False)
    before = get_printoptions()
    with printoptions(precision=1, threshold=5, sci_mode=True):
        assert get_printoptions()["precision"] == 1
        assert get_printoptions()["sci_mode"] is True
    assert get_printoptions() == before
    with pytest.raises(RuntimeError), printoptions(edgeitems=1):
        raise RuntimeError
    assert get_printoptions() == before


OPTION_CASES = [
    {"precision": 0},
    {"precision": 1},
    {"precision": 2},
    {"precision": 8},
    {"threshold": 0},
    {"threshold": 5},
    {"threshold": 5, "edgeitems": 1},
    {"threshold": 5, "edgeitems": 0},
    {"edgeitems": 0},
    {"threshold": 20, "edgeitems": 10},
    {"linewidth": 10},
    {"linewidth": 40},
    {"linewidth": 200},
    {"sci_mode": True},
    {"sci_mode": False},
    {"sci_mode": True, "precision": 0},
    {"profile": "short"},
    {"profile": "full"},
    {"profile": "short", "linewidth": 30},
]

OPTION_VALUES = [
    np.array(1.5),
    np.array(0.0),
    np.array(7),
    np.arange(10.0),
    np.arange(30) - 15,
    np.linspace(-1, 1, 12),
    np.array([0.0, 0.0, 1e-20]),
    np.array([np.nan, 1e10, -3.0]),
    np.array([0.0, -0.0]),
    np.arange(2500.0).reshape(50, 50) / 9,
    np.arange(60.0).reshape(3, 4, 5) * 1e5,
    np.arange(10) % 2 == 0,
    np.arange(12).reshape(3, 4) * (1 - 2j),
    np.zeros((0, 2)),
]


@pytest.mark.parametrize("options", OPTION_CASES, ids=str)
def test_print_options_match_torch(options):
    _both_options(**options)
    for values in OPTION_VALUES:
        check(values)
        check(values.astype(np.float32) if values.dtype.kind == "f" else values)


# ----------------------------------------------------------------------------
# Property-based comparisons
# ----------------------------------------------------------------------------

_shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6)
_float_elements = st.one_of(
    st.floats(-10, 10, allow_nan=False, width=32),
    st.integers(-1000, 1000).map(float),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-5, 1e9, 0.5]),
)


@st.composite
def _arrays(draw):
    dtype = draw(st.sampled_from(ALL_DTYPES))
    shape = draw(_shapes)
    kind = np.dtype(dtype).kind
    if kind in "iu":
        info = np.iinfo(dtype)
        elements = st.integers(int(max(info.min, -(10**6))), int(min(info.max, 10**6)))
        return draw(hnp.arrays(dtype, shape, elements=elements))
    if kind == "b":
        return draw(hnp.arrays(np.bool_, shape))
    real = draw(hnp.arrays(np.float64, shape, elements=_float_elements))
    if kind == "c":
        values = np.empty(shape, dtype=np.complex128)
        values.real = real
        values.imag = draw(hnp.arrays(np.float64, shape, elements=_float_elements))
        return _cast(values, dtype)
    scale = draw(st.sampled_from([1.0, 1.0, 1e-6, 1e6, 1e12]))
    return _cast(real * scale, dtype)


_options = st.fixed_dictionaries(
    {},
    optional={
        "precision": st.integers(0, 10),
        "threshold": st.integers(0, 60),
        "edgeitems": st.integers(0, 4),
        "linewidth": st.integers(5, 150),
        "sci_mode": st.sampled_from([None, True, False]),
    },
)

_fast = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_fast
@given(_arrays())
def test_random_arrays(values):
    check(values)


@_fast
@given(_arrays(), _options)
def test_random_arrays_with_options(values, options):
    try:
        _both_options(**options)
        t = to_torch(values)
        assert ember_repr(t) == repr(t)
    finally:
        _both_options(profile="default")


@settings(max_examples=60, deadline=None)
@given(_arrays(), st.booleans(), st.integers(0, 90))
def test_random_suffixes(values, use_grad_fn, linewidth):
    if values.dtype.kind not in "fc" and values.dtype != BF16:
        return
    try:
        _both_options(linewidth=linewidth)
        t = to_torch(values).requires_grad_()
        if use_grad_fn:
            t = t * 1
        assert ember_repr(t) == repr(t)
    finally:
        _both_options(profile="default")


def test_module_does_not_import_torch():
    with open(ts.__file__) as f:
        source = f.read()
    assert "import torch" not in source

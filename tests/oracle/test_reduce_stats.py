"""Oracle tests: std, var, std_mean, var_mean, median, nanmedian, mode, quantile, nanquantile."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.oracle.helper import check, check_raises, rand, torch
from tests.oracle.test_reduce_basic import _out_case, check_grad2, ints

pytestmark = [
    pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True"),
    pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0"),
]

NAN = np.nan

# ------------------------------------------------------------------------------ std, var

VAR_CASES = {
    "std": lambda lib, x: x.std(),
    "var": lambda lib, x: lib.var(x),
    "std_dim": lambda lib, x: x.std(1),
    "var_neg_keep": lambda lib, x: x.var(-1, keepdim=True),
    "std_tuple": lambda lib, x: lib.std(x, (0, 2)),
    "std_unbiased_false": lambda lib, x: x.std(0, False),
    "std_bool_only": lambda lib, x: x.std(False),
    "var_pos_keep": lambda lib, x: lib.var(x, [1, 2], True, True),
    "std_correction0": lambda lib, x: x.std(dim=1, correction=0),
    "var_correction2": lambda lib, x: x.var(correction=2, keepdim=True),
    "var_correction_float": lambda lib, x: x.var(0, correction=1.5),
    "std_none_kw": lambda lib, x: x.std(dim=None, unbiased=False),
    "std_empty_tuple": lambda lib, x: x.std(()),
    "std_mean": lambda lib, x: lib.std_mean(x),
    "std_mean_dim": lambda lib, x: lib.std_mean(x, 1, keepdim=True),
    "var_mean": lambda lib, x: lib.var_mean(x, (0, 2), correction=0),
    "var_mean_unbiased": lambda lib, x: lib.var_mean(x, -1, False),
    "std_mean_only_mean": lambda lib, x: lib.std_mean(x, 0)[1],
    "var_mean_only_var": lambda lib, x: lib.var_mean(x, 0)[0] * 2,
}


@pytest.mark.parametrize("name", VAR_CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_std_var(name, dtype):
    check(VAR_CASES[name], [rand(3, 4, 2, dtype=dtype)])


@pytest.mark.parametrize("name", VAR_CASES)
def test_std_var_double_backward(name):
    check_grad2(VAR_CASES[name], [rand(3, 4, 2, dtype="float64")])


@pytest.mark.parametrize("shape", [(), (1,), (1, 3), (0, 3), (2, 0)])
@pytest.mark.parametrize(
    "name",
    [
        "std",
        "var",
        "std_dim",
        "var_neg_keep",
        "std_correction0",
        "var_correction2",
        "std_mean_dim",
        "var_mean",
    ],
)
def test_std_var_degenerate(shape, name):
    x = rand(*shape, dtype="float64")
    try:
        VAR_CASES[name](torch, torch.from_numpy(x))
    except IndexError:
        check_raises(VAR_CASES[name], [x], match_message=True)
        return
    check(VAR_CASES[name], [x])


def test_std_var_zero_spread():
    x = np.ones((3, 4))  # std == 0: torch's gradient is 0 there, not nan
    for name in ("std", "std_dim", "std_mean", "var"):
        check(VAR_CASES[name], [x])


def test_std_var_dtypes_and_errors():
    check(lambda lib, x: x.std(0), [rand(3, 4, dtype="float16")], rtol=2e-3)
    check(lambda lib, x: x.var(), [rand(3, 4, dtype="complex128")], grad=False)
    check(lambda lib, x: x.std(1), [rand(3, 4, dtype="complex64")], grad=False)
    for dtype in ["int32", "bool", "int64"]:
        check_raises(lambda lib, x: x.std(), [rand(3, dtype=dtype)], match_message=True)
        check_raises(lambda lib, x: lib.var_mean(x), [rand(3, dtype=dtype)], match_message=True)
    check_raises(lambda lib, x: x.std(2), [rand(2, 3)], match_message=True)
    check_raises(lambda lib, x: x.std(0, True, correction=1), [rand(2, 3)])
    check_raises(lambda lib, x: x.var(0, 0.5), [rand(2, 3)])


def test_dof_warning():
    msgs = {}
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.ones(1, 3).std(0)
            lib.ones(3).var(correction=3)
        msgs[lib] = [str(m.message).split(" (Triggered")[0] for m in w if m.category is UserWarning]
    assert msgs[ember] == msgs[torch] and len(msgs[ember]) == 2


# ------------------------------------------------------------------------------ median, mode

MEDIAN_CASES = {
    "median": lambda lib, x: x.median(),
    "median_dim": lambda lib, x: x.median(1),
    "median_keep": lambda lib, x: lib.median(x, -1, keepdim=True),
    "median_kw": lambda lib, x: x.median(dim=0),
    "nanmedian": lambda lib, x: lib.nanmedian(x),
    "nanmedian_dim": lambda lib, x: x.nanmedian(2, True),
    "mode": lambda lib, x: x.mode(),
    "mode_dim": lambda lib, x: lib.mode(x, 0),
    "mode_keep": lambda lib, x: x.mode(1, keepdim=True),
}


@pytest.mark.parametrize("name", MEDIAN_CASES)
@pytest.mark.parametrize("kind", ["random", "ties", "nan"])
def test_median_mode(name, kind):
    if kind == "random":
        x = rand(4, 6, 5, dtype="float64")
    else:
        x = ints(4, 6, 5, low=-2, high=3)
        if kind == "nan":
            if name.startswith("mode"):
                return  # torch's mode sorts NaN with an invalid ordering: unspecified
            x[0, 1, 2] = x[1, 2, 3] = x[1, 2, 0] = NAN
            x[2, :, 1] = NAN
            if not name.startswith("nanmedian"):
                x[3, 4, :] = NAN  # nanmedian: see test_nanmedian_all_nan
    check(MEDIAN_CASES[name], [x])


def test_nanmedian_all_nan():
    # torch's index for an all-NaN slice comes out of nth_element with an invalid ordering
    # (0 for up to 3 elements, then 2, 2, 3, 5...): values agree, and ember's index is a NaN's
    x = ints(3, 5)
    x[1] = NAN
    ev, ei = ember.from_numpy(x).nanmedian(1)
    tv, ti = torch.from_numpy(x).nanmedian(1)
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    assert np.isnan(x[1, ei[1].item()]) and ei[0].item() == ti[0].item()
    check(lambda lib, x: x.nanmedian(1), [x[:, :3]])


@pytest.mark.parametrize("name", MEDIAN_CASES)
def test_median_mode_double_backward(name):
    check_grad2(MEDIAN_CASES[name], [ints(4, 6, 5, low=-2, high=3)])


@pytest.mark.parametrize("n", [1, 2, 5, 8, 16])
def test_median_mode_tie_indices(n):
    rng = np.random.default_rng(n)
    for _ in range(5):
        x = rng.integers(0, max(2, n // 3), (7, n)).astype("float32")
        check(lambda lib, x: x.median(1), [x])
        check(lambda lib, x: x.nanmedian(1), [x])
        check(lambda lib, x: x.mode(1), [x])  # up to 16 elements torch's sort is stable


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "float16", "bool"])
def test_median_mode_dtypes(dtype):
    x = rand(4, 5, 3, dtype=dtype, low=0, high=4)
    for name, fn in MEDIAN_CASES.items():
        if dtype == "bool" and name.startswith(("median", "nanmedian")):
            check_raises(fn, [x], match_message=True)
        else:
            check(fn, [x], grad=dtype.startswith("float"))


@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (3, 0)])
def test_median_mode_degenerate(shape):
    x = rand(*shape, dtype="float64")
    for fn in [
        lambda lib, x: x.median(),
        lambda lib, x: x.nanmedian(),
        lambda lib, x: x.median(-1),
        lambda lib, x: x.mode(),
        lambda lib, x: x.mode(0),
        lambda lib, x: x.nanmedian(0, True),
    ]:
        try:
            fn(torch, torch.from_numpy(x))
        except (IndexError, RuntimeError):
            check_raises(fn, [x], match_message=True)
            continue
        check(fn, [x])


def test_median_errors():
    check_raises(lambda lib, x: x.median(2), [rand(2, 3)], match_message=True)
    check_raises(lambda lib, x: x.median((0,)), [rand(2, 3)])
    check_raises(lambda lib, x: x.mode(-3), [rand(2, 3)], match_message=True)


def test_median_out():
    x = rand(3, 4)
    for n in (3, 0):
        res = {}
        for lib in (torch, ember):
            outs = (lib.zeros(n), lib.zeros(n, dtype=lib.int64))
            r = lib.median(lib.from_numpy(x.copy()), 1, out=outs)
            assert r.values is outs[0]
            res[lib] = [t.tolist() for t in outs] + [type(r).__name__]
        assert res[torch] == res[ember]
    check_raises(lambda lib, x: lib.median(x, out=lib.empty(0)), [x], match_message=True)


# ------------------------------------------------------------------------------ quantile

Q_CASES = {
    "q_scalar": lambda lib, x: x.quantile(0.3),
    "q_dim": lambda lib, x: lib.quantile(x, 0.75, dim=1),
    "q_keep": lambda lib, x: x.quantile(0.5, -1, True),
    "q_none_keep": lambda lib, x: x.quantile(0.1, keepdim=True),
    "q_tensor": lambda lib, x: x.quantile(lib.tensor([0.0, 0.25, 1.0], dtype=x.dtype), dim=0),
    "q_tensor_keep": lambda lib, x: lib.quantile(
        x, lib.tensor([0.4, 0.6], dtype=x.dtype), 2, keepdim=True
    ),
    "q_tensor_all": lambda lib, x: x.quantile(lib.tensor([0.33, 0.9], dtype=x.dtype)),
    "q_0d_tensor": lambda lib, x: x.quantile(lib.tensor(0.6, dtype=x.dtype), 1),
    "nanq": lambda lib, x: x.nanquantile(0.3),
    "nanq_dim": lambda lib, x: lib.nanquantile(x, lib.tensor([0.2, 0.8], dtype=x.dtype), 1),
}


@pytest.mark.parametrize("name", Q_CASES)
@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("kind", ["random", "nan", "nan_slices"])
def test_quantile(name, interp, kind):
    x = rand(3, 5, 4, dtype="float64")
    if kind == "nan":
        x[1, 2, 3] = NAN
    elif kind == "nan_slices":
        # several NaN in one sorted slice: torch's unstable std::sort (over 16 elements) decides
        # which one a NaN quantile's gradient reaches, so only along short dims
        if name in ("q_scalar", "q_none_keep", "q_tensor_all"):
            return
        x[0, 1, 2] = x[1, 2, 3] = NAN
        x[2, :, 1] = NAN
    fn = Q_CASES[name]
    check(lambda lib, x: _with_interpolation(fn, lib, x, interp), [x])
    if kind == "random" and interp == "linear":
        check(fn, [x.astype("float32")])
        check_grad2(fn, [x])


def _with_interpolation(fn, lib, x, interp):
    real = lib.Tensor.quantile, lib.Tensor.nanquantile, lib.quantile, lib.nanquantile
    try:
        lib.Tensor.quantile = lambda *a, **k: real[0](*a, interpolation=interp, **k)
        lib.Tensor.nanquantile = lambda *a, **k: real[1](*a, interpolation=interp, **k)
        lib.quantile = lambda *a, **k: real[2](*a, interpolation=interp, **k)
        lib.nanquantile = lambda *a, **k: real[3](*a, interpolation=interp, **k)
        return fn(lib, x)
    finally:
        lib.Tensor.quantile, lib.Tensor.nanquantile, lib.quantile, lib.nanquantile = real


def test_quantile_ties_small():
    check(lambda lib, x: x.quantile(0.4), [np.array([1.0, 2, 2, 2, 3])])
    check(
        lambda lib, x: x.quantile(lib.tensor([0.3, 0.45], dtype=lib.float64)),
        [np.array([2.0, 2, 1, 2, 3])],
    )


def test_quantile_degenerate_and_errors():
    check(lambda lib, x: x.quantile(0.5), [rand(dtype="float64")])
    check(lambda lib, x: x.quantile(0.5, 0), [rand(dtype="float64")])
    check(lambda lib, x: x.nanquantile(0.5), [np.array([NAN, NAN])])
    check(lambda lib, x: x.nanquantile(0.5, 1), [np.array([[NAN, NAN], [1.0, NAN]])])
    for fn, x in [
        (lambda lib, x: x.quantile(0.5), rand(0)),
        (lambda lib, x: x.quantile(1.5), rand(3)),
        (lambda lib, x: x.quantile(0.5), rand(3, dtype="int32")),
        (lambda lib, x: x.quantile(0.5), rand(3, dtype="float16")),
        (lambda lib, x: x.quantile(lib.tensor([0.5, 1.5])), rand(3)),
        (lambda lib, x: x.quantile(lib.tensor([[0.5]])), rand(3)),
        (lambda lib, x: x.quantile(lib.tensor([0.5], dtype=lib.float64)), rand(3)),
        (lambda lib, x: x.quantile(0.4, interpolation="bad"), rand(3)),
        (lambda lib, x: x.quantile(0.4, dim=2), rand(3, 2)),
        (lambda lib, x: lib.quantile(x, 0.5, 0, out=lib.empty(2, dtype=lib.float64)), rand(3, 2)),
    ]:
        check_raises(fn, [x], match_message=True)
    check_raises(lambda lib, x: x.quantile(0.5, dim=(0, 1)), [rand(3, 2)])


def test_quantile_out():
    _out_case(lambda lib, x, o: lib.quantile(x, 0.3, 1, out=o), rand(3, 4), "float32", (3,))
    _out_case(lambda lib, x, o: lib.nanquantile(x, 0.3, out=o), rand(3, 4), "float32", (2,))


# ------------------------------------------------------------------------------ hypothesis


@settings(max_examples=150, deadline=None)
@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
    data=st.data(),
    op=st.sampled_from(["std", "var_mean", "median", "nanmedian", "mode", "quantile"]),
)
def test_stats_hypothesis(shape, data, op):
    nd = len(shape)
    dim = data.draw(st.integers(-nd, nd - 1))
    keep = data.draw(st.booleans())
    q = data.draw(st.floats(0, 1))
    x = ints(*shape, low=-2, high=3) if data.draw(st.booleans()) else rand(*shape, dtype="float64")
    fns = {
        "std": lambda lib, x: x.std(dim, keepdim=keep),
        "var_mean": lambda lib, x: lib.var_mean(x, dim, keepdim=keep, correction=0),
        "median": lambda lib, x: x.median(dim, keep),
        "nanmedian": lambda lib, x: x.nanmedian(dim, keepdim=keep),
        "mode": lambda lib, x: x.mode(dim, keep),
        "quantile": lambda lib, x: x.quantile(q, dim, keep),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(fns[op], [x])


def test_mode_long_rows_values():
    # beyond 16 elements torch's unstable sort picks some index of the mode: values still agree
    x = ints(6, 40, low=0, high=4)
    ev, ei = ember.from_numpy(x).mode(1)
    tv, ti = torch.from_numpy(x).mode(1)
    assert ev.tolist() == tv.tolist()
    assert (x[np.arange(6), ei.numpy()] == ev.numpy()).all()


@pytest.mark.parametrize(
    "fn,dt",
    [
        (lambda lib, x, o: lib.std(x, 1, out=o), "float32"),
        (lambda lib, x, o: lib.var(x, 0, correction=0, out=o), "float64"),
        (lambda lib, x, o: lib.nanmean(x, 1, out=o), "float32"),
    ],
)
def test_std_var_nanmean_out(fn, dt):
    for n in (4, 0, 2):
        _out_case(fn, rand(4, 4), dt, (n,))


def test_mode_aminmax_out():
    x = ints(3, 4, low=0, high=3).astype("float32")
    res = {}
    for lib in (torch, ember):
        t = lib.from_numpy(x.copy())
        outs = (lib.zeros(0), lib.zeros(0, dtype=lib.int64))
        r = lib.mode(t, 1, out=outs)
        mm = (lib.zeros(2), lib.zeros(2))
        r2 = lib.aminmax(t, dim=0, out=mm)
        res[lib] = [o.tolist() for o in (*r, *r2)] + [type(r).__name__, type(r2).__name__]
        assert r.values is outs[0] and r2.min is mm[0]
    assert res[ember] == res[torch]

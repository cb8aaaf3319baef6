"""Oracle tests: cumsum, cumprod, cummax, cummin, logcumsumexp, diff (and cumsum_, cumprod_)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.oracle.helper import check, check_raises, rand, torch
from tests.oracle.test_reduce_basic import _out_case, check_grad2, ints

pytestmark = pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")

NAN = np.nan

SCAN_CASES = {
    "cumsum": lambda lib, x: x.cumsum(1),
    "cumsum_neg": lambda lib, x: lib.cumsum(x, -1),
    "cumsum_dtype": lambda lib, x: x.cumsum(0, dtype=lib.float64),
    "cumprod": lambda lib, x: x.cumprod(2),
    "cumprod_fn": lambda lib, x: lib.cumprod(x, dim=0),
    "cummax": lambda lib, x: x.cummax(1),
    "cummin": lambda lib, x: lib.cummin(x, -1),
    "logcumsumexp": lambda lib, x: x.logcumsumexp(1),
    "logcumsumexp_fn": lambda lib, x: lib.logcumsumexp(x, dim=0),
    "diff": lambda lib, x: x.diff(),
    "diff_n2_dim0": lambda lib, x: lib.diff(x, n=2, dim=0),
    "diff_prepend": lambda lib, x: lib.diff(x, dim=1, prepend=x[:, :2] * 2),
    "diff_append": lambda lib, x: x.diff(1, -1, append=x[..., :1]),
    "diff_both_n3": lambda lib, x: x.diff(3, 0, x[:1], x[1:] + 1),
    "diff_n0": lambda lib, x: x.diff(0),
    "diff_big_n": lambda lib, x: x.diff(9),
}


@pytest.mark.parametrize("name", SCAN_CASES)
@pytest.mark.parametrize("kind", ["random", "ties", "nan", "transposed"])
def test_scans(name, kind):
    if kind == "random":
        x = rand(3, 4, 5, dtype="float64")
    elif kind == "ties":
        x = ints(3, 4, 5, low=-1, high=2)  # ties and zeros
    elif kind == "nan":
        x = ints(3, 4, 5, low=-1, high=2)
        x[0, 1, 2] = x[1, 2, 3] = x[2, 0, 0] = NAN
    else:
        x = (
            np.ascontiguousarray(rand(5, 4, 3, dtype="float64").transpose(2, 1, 0))
            .transpose(2, 1, 0)
            .transpose(2, 1, 0)
        )
        # ember's cat keeps a transposed layout where torch's is contiguous (shape.py's)
        strides = not name.startswith(("diff_prepend", "diff_append", "diff_both"))
        check(lambda lib, x: SCAN_CASES[name](lib, x.transpose(0, 2)), [x], strides=strides)
        return
    check(SCAN_CASES[name], [x])


@pytest.mark.parametrize("name", SCAN_CASES)
@pytest.mark.parametrize("kind", ["random", "ties"])
def test_scans_double_backward(name, kind):
    x = rand(3, 4, 5, dtype="float64") if kind == "random" else ints(3, 4, 5, low=-1, high=2)
    check_grad2(SCAN_CASES[name], [x])


@pytest.mark.parametrize("zeros", [[5], [5, 7], [0, 1, 2, 3, 4], [4, 9, 14]])
def test_cumprod_zeros(zeros):
    x = rand(3, 5, dtype="float64", low=0.5, high=1.5)
    x.reshape(-1)[zeros] = 0
    check(lambda lib, x: x.cumprod(1), [x])
    check(lambda lib, x: x.cumprod(0), [x])
    check_grad2(lambda lib, x: x.cumprod(1), [x])
    check_grad2(lambda lib, x: x.cumprod(0), [x])


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool", "float16", "int8"])
def test_scan_dtypes(dtype):
    x = rand(3, 4, 5, dtype=dtype, low=0, high=3)
    cases = {k: v for k, v in SCAN_CASES.items() if k.startswith(("cum", "diff"))}
    for name, fn in cases.items():
        if name == "cumsum_dtype" and dtype == "float16":
            continue
        check(fn, [x], grad=dtype == "float16", rtol=2e-3 if dtype == "float16" else None)
    if dtype != "float16":
        check_raises(lambda lib, x: x.logcumsumexp(0), [x], match_message=True)
    check(lambda lib, x: x.cumsum(1, dtype=lib.int8), [x], grad=False)
    check(lambda lib, x: x.cumprod(0, dtype=lib.float32), [x], grad=False)


def test_scan_degenerate():
    for shape in [(), (0,), (0, 3), (3, 0), (1,)]:
        x = rand(*shape, dtype="float64")
        for name in ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]:
            fn = {
                "cumsum": lambda lib, x: x.cumsum(0),
                "cumprod": lambda lib, x: x.cumprod(-1),
                "cummax": lambda lib, x: x.cummax(0),
                "cummin": lambda lib, x: x.cummin(-1),
                "logcumsumexp": lambda lib, x: x.logcumsumexp(0),
            }[name]
            check(fn, [x])
        if shape:
            check(lambda lib, x: x.diff(), [x])
    check(
        lambda lib, x: x.logcumsumexp(1),
        [np.array([[-np.inf, -np.inf, 1.0, -np.inf], [np.inf, 1.0, np.inf, 2.0]])],
    )


def test_scan_errors():
    for fn in [
        lambda lib, x: x.cumsum(2),
        lambda lib, x: x.cumprod(-3),
        lambda lib, x: x.cummax(2),
        lambda lib, x: x.logcumsumexp(5),
        lambda lib, x: x.diff(dim=2),
        lambda lib, x: x.diff(n=-1),
        lambda lib, x: x.diff(prepend=x[0]),
        lambda lib, x: x.diff(dim=0, append=x[:, :1]),
    ]:
        check_raises(fn, [rand(2, 3)], match_message=True)
    check_raises(lambda lib, x: x.diff(), [rand(dtype="float64")], match_message=True)
    check_raises(lambda lib, x: x.cumsum(1), [rand(dtype="float64")], match_message=True)
    for fn in [
        lambda lib, x: x.cumsum(),
        lambda lib, x: x.cumsum(None),
        lambda lib, x: x.cumsum((0,)),
    ]:
        check_raises(fn, [rand(2, 3)])


def test_inplace_scans():
    check(lambda lib, x: (x * 1).cumsum_(1), [rand(3, 4, dtype="float64")])
    check(lambda lib, x: (x * 1).cumprod_(0), [rand(3, 4, dtype="float64")])
    check(lambda lib, x: x.cumsum_(0), [rand(3, 4, dtype="int32")], grad=False)


@pytest.mark.parametrize(
    "name,fn,dt",
    [
        ("cumsum", lambda lib, x, o: lib.cumsum(x, 1, out=o), "float64"),
        ("cumprod", lambda lib, x, o: lib.cumprod(x, 0, out=o), "float32"),
        ("logcumsumexp", lambda lib, x, o: lib.logcumsumexp(x, 1, out=o), "float32"),
        ("diff", lambda lib, x, o: lib.diff(x, out=o), "float64"),
    ],
)
def test_scan_out(name, fn, dt):
    for shape in [(3, 3), (0,), (3, 2)]:
        _out_case(fn, rand(3, 3), dt, shape)


def test_cummax_out_and_types():
    for lib in (torch,):
        assert type(lib.cummax(lib.ones(3), 0)).__name__ == "cummax"
    res = {}
    import ember

    for lib in (torch, ember):
        outs = (lib.zeros(0), lib.zeros(0, dtype=lib.int64))
        r = lib.cummin(lib.tensor([3.0, 1.0, 2.0, 1.0]), 0, out=outs)
        res[lib] = [t.tolist() for t in r] + [type(r).__name__, r.values is outs[0]]
    assert res[torch] == res[ember]


@settings(max_examples=150, deadline=None)
@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5),
    data=st.data(),
    op=st.sampled_from(["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff"]),
)
def test_scans_hypothesis(shape, data, op):
    nd = len(shape)
    dim = data.draw(st.integers(-nd, nd - 1))
    n = data.draw(st.integers(0, 3))
    x = ints(*shape, low=-2, high=3) if data.draw(st.booleans()) else rand(*shape, dtype="float64")
    fns = {
        "cumsum": lambda lib, x: x.cumsum(dim),
        "cumprod": lambda lib, x: x.cumprod(dim),
        "cummax": lambda lib, x: x.cummax(dim),
        "cummin": lambda lib, x: x.cummin(dim),
        "logcumsumexp": lambda lib, x: x.logcumsumexp(dim),
        "diff": lambda lib, x: x.diff(n, dim),
    }
    check(fns[op], [x])

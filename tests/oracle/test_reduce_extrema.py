"""Oracle tests: max, min, amax, amin, aminmax, argmax, argmin and the named result tuples."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.oracle.helper import check, check_raises, rand, torch
from tests.oracle.test_reduce_basic import _out_case, check_grad2, ints

pytestmark = pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")

NAN = np.nan

CASES = {
    "max": lambda lib, x: x.max(),
    "min": lambda lib, x: lib.min(x),
    "max_dim": lambda lib, x: x.max(1),
    "max_neg_keep": lambda lib, x: lib.max(x, -1, keepdim=True),
    "max_kw": lambda lib, x: x.max(dim=0, keepdim=False),
    "min_dim": lambda lib, x: x.min(0),
    "min_keep": lambda lib, x: lib.min(x, 2, True),
    "amax": lambda lib, x: x.amax(),
    "amax_dim": lambda lib, x: x.amax(1),
    "amax_tuple": lambda lib, x: lib.amax(x, (0, 2), keepdim=True),
    "amax_empty_tuple": lambda lib, x: x.amax(()),
    "amin": lambda lib, x: lib.amin(x, -1),
    "amin_tuple": lambda lib, x: x.amin((1, 0)),
    "aminmax": lambda lib, x: lib.aminmax(x),
    "aminmax_dim": lambda lib, x: lib.aminmax(x, dim=1, keepdim=True),
    "aminmax_method": lambda lib, x: x.aminmax(dim=-1),
    "argmax": lambda lib, x: x.argmax(),
    "argmax_dim": lambda lib, x: lib.argmax(x, 1),
    "argmax_keep": lambda lib, x: x.argmax(-1, keepdim=True),
    "argmax_none_keep": lambda lib, x: x.argmax(None, True),
    "argmin": lambda lib, x: lib.argmin(x),
    "argmin_dim": lambda lib, x: x.argmin(dim=0, keepdim=True),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("kind", ["random", "ties", "nan"])
def test_extrema(name, kind):
    if kind == "random":
        x = rand(3, 4, 5, dtype="float64")
    elif kind == "ties":
        x = ints(3, 4, 5, low=-1, high=2)  # many ties
    else:
        x = ints(3, 4, 5, low=-1, high=2)
        x[0, 1, 2] = x[1, 2, 3] = x[1, 2, 0] = x[2, :, 1] = NAN
    check(CASES[name], [x])


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "int64", "float16", "bool"])
def test_extrema_dtypes(name, dtype):
    x = rand(3, 4, 5, dtype=dtype, low=0, high=3)
    if dtype == "bool" and name.startswith("arg"):
        check_raises(CASES[name], [x], match_message=True)
        return
    check(CASES[name], [x], grad=dtype.startswith("float"))


@pytest.mark.parametrize("name", [n for n in CASES if not n.startswith("arg")])
def test_extrema_double_backward(name):
    check_grad2(CASES[name], [ints(3, 4, 5, low=-1, high=2)])
    check_grad2(CASES[name], [rand(3, 4, 5, dtype="float64")])


def test_tie_breaking_indices():
    x = np.array([[1.0, 3, 3, 0, 3], [2, 2, 1, 1, 5], [4, 4, 4, 4, 4], [NAN, 1, NAN, 9, 9]])
    for fn in [
        lambda lib, x: x.max(1),
        lambda lib, x: x.min(1),
        lambda lib, x: x.argmax(1),
        lambda lib, x: x.argmin(1),
        lambda lib, x: x.argmax(),
        lambda lib, x: x.max(0),
    ]:
        check(fn, [x])


@pytest.mark.parametrize("shape", [(), (1,), (0, 3), (3, 0)])
def test_extrema_degenerate(shape):
    x = rand(*shape, dtype="float64")
    for name, fn in CASES.items():
        try:
            torch_ok = fn(torch, torch.from_numpy(x)) is not None
        except (RuntimeError, IndexError):
            torch_ok = False
        if torch_ok:
            check(fn, [x])
        else:
            check_raises(fn, [x], match_message=not name.startswith("aminmax"))


def test_extrema_errors():
    for fn in [
        lambda lib, x: x.max(2),
        lambda lib, x: x.min(-3),
        lambda lib, x: x.amax(2),
        lambda lib, x: x.argmax(5),
        lambda lib, x: x.amin((0, 0)),
        lambda lib, x: x.amax((1, -1)),
        lambda lib, x: lib.aminmax(x, dim=2),
    ]:
        check_raises(fn, [rand(2, 3)], match_message=True)
    for fn in [
        lambda lib, x: x.max(dim=None),
        lambda lib, x: x.argmax((0, 1)),
        lambda lib, x: x.max((0, 1)),
    ]:
        check_raises(fn, [rand(2, 3)])
    check_raises(lambda lib, x: x.max(1), [rand(dtype="float64")], match_message=True)


def test_max_binary():
    check(lambda lib, x, y: lib.max(x, y), [rand(3, 4), rand(4)])
    check(lambda lib, x, y: x.min(y), [rand(3, 4), rand(3, 1)])
    check(lambda lib, x, y: lib.max(x, other=y), [rand(3, 4), rand(4)])


def test_return_types():
    for lib in (torch, ember):
        r = lib.max(lib.tensor([[1.0, 5.0], [3.0, 2.0]]), 1)
        assert type(r).__name__ == "max" and isinstance(r, tuple) and len(r) == 2
        v, i = r
        assert r[0] is v and r.values is v and r.indices is i
        assert r.n_fields == 2 and r.n_sequence_fields == 2
    er = ember.max(ember.tensor([[1.0, 5.0], [3.0, 2.0]]), 1)
    tr = torch.max(torch.tensor([[1.0, 5.0], [3.0, 2.0]]), 1)
    assert repr(er) == repr(tr)
    assert str(ember.return_types.max((1, 2))) == str(torch.return_types.max((1, 2)))
    assert repr(ember.aminmax(ember.tensor([1.0, 2.0]))) == repr(
        torch.aminmax(torch.tensor([1.0, 2.0]))
    )
    back = pickle.loads(pickle.dumps(er))
    assert type(back) is type(er) and back.indices.tolist() == [1, 0]
    for lib in (torch, ember):
        with pytest.raises(AttributeError):
            lib.return_types.max((1, 2)).values = 3
        with pytest.raises(TypeError, match="takes a 2-sequence"):
            lib.return_types.max((1, 2, 3))
    assert (ember.return_types.median((1, 2)) + (3,)) == (1, 2, 3)


@pytest.mark.parametrize(
    "fn,dtypes",
    [
        (lambda lib, x, o: lib.max(x, 0, out=o), ("float32", "int64")),
        (lambda lib, x, o: lib.min(x, 1, keepdim=True, out=o), ("float32", "int64")),
    ],
)
def test_out_pairs(fn, dtypes):
    x = rand(3, 4)
    for lib_out in [(3,), (0,)]:
        res = {}
        for lib in (torch, ember):
            outs = (
                lib.zeros(lib_out, dtype=getattr(lib, dtypes[0])),
                lib.zeros(lib_out, dtype=getattr(lib, dtypes[1])),
            )
            r = fn(lib, lib.from_numpy(x.copy()), outs)
            assert r[0] is outs[0] and r[1] is outs[1]
            res[lib] = [t.tolist() for t in outs] + [type(r).__name__]
        assert res[torch] == res[ember]


def test_out_errors():
    x = rand(3, 4)
    for fn in [
        lambda lib, x: lib.max(x, 0, out=(lib.empty(4), lib.empty(4))),
        lambda lib, x: lib.max(
            x, 0, out=(lib.empty(4, dtype=lib.float64), lib.empty(4, dtype=lib.int64))
        ),
        lambda lib, x: lib.amax(x, 0, out=lib.empty(4, dtype=lib.float64)),
        lambda lib, x: lib.argmax(x, 0, out=lib.empty(4)),
    ]:
        check_raises(fn, [x], match_message=True)
    check_raises(
        lambda lib, x: lib.max(x, 0, out=(lib.empty(4), lib.empty(4, dtype=lib.int64))),
        [x],
        grad=True,
        match_message=True,
    )


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x, o: lib.amax(x, 1, out=o),
        lambda lib, x, o: lib.argmin(x, 0, out=o),
        lambda lib, x, o: lib.max(x, out=o),
    ],
)
def test_out_single(fn):
    x = rand(3, 3)
    dt = "int64" if "argmin" in fn.__code__.co_names else "float32"
    for n in (3, 0):
        _out_case(fn, x, dt, (n,))


@settings(max_examples=150, deadline=None)
@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4),
    data=st.data(),
    op=st.sampled_from(["max", "min", "amax", "amin", "argmax", "aminmax"]),
)
def test_extrema_hypothesis(shape, data, op):
    nd = len(shape)
    dim = data.draw(st.integers(-nd, nd - 1))
    keep = data.draw(st.booleans())
    x = ints(*shape, low=-2, high=3)  # ties everywhere
    fns = {
        "max": lambda lib, x: x.max(dim, keep),
        "min": lambda lib, x: x.min(dim, keepdim=keep),
        "amax": lambda lib, x: x.amax((dim,), keep),
        "amin": lambda lib, x: x.amin(dim, keep),
        "argmax": lambda lib, x: x.argmax(dim, keep),
        "aminmax": lambda lib, x: lib.aminmax(x, dim=dim, keepdim=keep),
    }
    check(fns[op], [x])

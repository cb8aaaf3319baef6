"""Oracle tests: sort, argsort, msort, topk, kthvalue, unique, unique_consecutive, searchsorted,
bucketize, histc, bincount."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

pytestmark = pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")


def _distinct(*shape):
    # distinct values: sort/topk/kthvalue indices are then unique in both libraries
    rng = np.random.default_rng(0)
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.5 - n / 4).reshape(shape).astype(np.float64)


X = _distinct(3, 4, 5)
TIES = np.array([[1.0, 0.0, 1.0, 0.0, 2.0, 1.0], [3.0, 3.0, np.nan, 1.0, np.nan, 3.0]])

CASES = {
    "sort": lambda lib, x: x.sort(),
    "sort_dim0": lambda lib, x: lib.sort(x, 0),
    "sort_desc": lambda lib, x: x.sort(-2, descending=True),
    "sort_kw": lambda lib, x: lib.sort(x, dim=1, descending=False),
    "sort_stable": lambda lib, x: lib.sort(x, stable=True, dim=1),
    "sort_stable_desc": lambda lib, x: x.sort(stable=True, descending=True),
    "msort": lambda lib, x: lib.msort(x),
    "topk": lambda lib, x: x.topk(2),
    "topk_small": lambda lib, x: lib.topk(x, 3, dim=0, largest=False),
    "topk_neg": lambda lib, x: x.topk(1, -2),
    "topk_zero": lambda lib, x: x.topk(0),
    "kthvalue": lambda lib, x: x.kthvalue(2),
    "kthvalue_keep": lambda lib, x: lib.kthvalue(x, 3, 0, True),
    "kthvalue_neg": lambda lib, x: x.kthvalue(1, dim=-2),
}


@pytest.mark.parametrize("name", CASES)
def test_forward_backward(name):
    check(CASES[name], [X])


@pytest.mark.parametrize("name", CASES)
def test_double_backward(name):
    check_double_backward(CASES[name], [X[:, :2]])


@pytest.mark.parametrize("name", ["sort_stable", "sort_stable_desc"])
def test_stable_ties_and_nan(name):
    check(CASES[name], [TIES])
    check(CASES[name], [np.tile(TIES, (1, 10))])  # past torch's small-size path


def test_argsort():
    check(lambda lib, x: x.argsort(), [X], grad=False)
    check(lambda lib, x: lib.argsort(x, 0, descending=True), [X], grad=False)
    check(lambda lib, x: lib.argsort(x, stable=True), [TIES], grad=False)
    check(lambda lib, x: x.argsort(dim=1, descending=True, stable=True), [TIES], grad=False)


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "uint8", "bool"])
def test_sort_dtypes(dtype):
    x = np.abs(TIES[:1]).astype(dtype)
    check(lambda lib, x: lib.sort(x, stable=True), [x], grad=False)
    check(lambda lib, x: lib.sort(x, stable=True, descending=True), [x], grad=False)
    if dtype != "bool":
        y = (X * 2 + 30).astype(dtype)  # distinct, non-negative
        check(lambda lib, x: x.topk(1), [y], grad=False)
        check(lambda lib, x: x.kthvalue(2, 0), [y], grad=False)


def test_size_zero_and_scalar():
    for fn in [lambda lib, x: x.sort(), lambda lib, x: x.argsort(0), lambda lib, x: x.topk(0)]:
        check(fn, [rand(0, 3, dtype="float64")])
    for fn in [lambda lib, x: x.sort(), lambda lib, x: x.topk(1), lambda lib, x: x.kthvalue(1)]:
        check(fn, [np.array(2.0)])


BAD = {
    "sort_dim": lambda lib, x: x.sort(3),
    "topk_k": lambda lib, x: x.topk(6),
    "topk_dim": lambda lib, x: x.topk(1, 4),
    "kthvalue_k": lambda lib, x: x.kthvalue(0),
    "kthvalue_big": lambda lib, x: x.kthvalue(9, 1),
    "histc_int": lambda lib, x: lib.histc(x.long()),
    "bincount_neg": lambda lib, x: lib.bincount(lib.tensor([-1, 2])),
    "bincount_2d": lambda lib, x: lib.bincount(x.long()),
    "bincount_float": lambda lib, x: lib.bincount(x[0, 0]),
    "searchsorted_shape": lambda lib, x: lib.searchsorted(x, x[0]),
    "searchsorted_side": lambda lib, x: lib.searchsorted(x[0, 0], x[0, 0], side="mid"),
}
MATCH = ["topk_k", "kthvalue_big", "histc_int", "bincount_neg", "bincount_2d"]


@pytest.mark.parametrize("name", BAD)
def test_errors(name):
    check_raises(BAD[name], [X])
    if name in MATCH:
        check_raises(BAD[name], [X], match_message=True)


V = np.array([[3, 1, 3, 2], [3, 1, 3, 2], [0, 1, 0, 0]])


@pytest.mark.parametrize("x", [V, V.astype(np.float64) / 2, V > 1, np.zeros((0, 3))])
def test_unique(x):
    for kw in [{}, {"return_inverse": True}, {"return_counts": True}, {"sorted": True}]:
        check(lambda lib, x, kw=kw: lib.unique(x, **kw), [x], grad=False)
    check(lambda lib, x: x.unique(return_inverse=True, return_counts=True), [x], grad=False)
    if x.size:
        for d in (0, 1, -1):
            check(
                lambda lib, x, d=d: lib.unique(x, dim=d, return_inverse=True, return_counts=True),
                [x],
                grad=False,
            )


def test_unique_grad_fn():
    # torch records a node without a derivative: same names, same error on backward
    x = V.astype(np.float64)
    check(lambda lib, x: lib.unique(x, return_counts=True), [x], grad=False)
    for fn in [
        lambda lib, x: x.unique(),
        lambda lib, x: x.unique(dim=1),
        lambda lib, x: x.unique_consecutive(),
        lambda lib, x: x.unique_consecutive(dim=0),
    ]:
        check(fn, [x], grad=False)
        names = []
        for lib in (torch, ember):
            out = fn(lib, lib.tensor(x, requires_grad=True))
            names.append((type(out.grad_fn).__name__, out.requires_grad))
        assert names[0] == names[1]
        check_raises(lambda lib, x, fn=fn: fn(lib, x).sum().backward(), [x], grad=True)


@pytest.mark.parametrize("x", [np.array([1, 1, 2, 2, 3, 1, 1, 2]), V, np.zeros(0)])
def test_unique_consecutive(x):
    fn = lambda lib, x: lib.unique_consecutive(x, return_inverse=True, return_counts=True)  # noqa
    check(fn, [x], grad=False)
    check(lambda lib, x: x.unique_consecutive(), [x], grad=False)
    if x.ndim == 2:
        for d in (0, 1, -1):
            check(lambda lib, x, d=d: lib.unique_consecutive(x, True, True, d), [x], grad=False)


SEQ = np.array([1.0, 3.0, 3.0, 5.0, 7.0])
VALS = np.array([[0.0, 3.0, 4.0], [7.0, 8.0, 5.0]])


def test_searchsorted_bucketize():
    for kw in [{}, {"right": True}, {"side": "right"}, {"out_int32": True}]:
        check(lambda lib, s, v, kw=kw: lib.searchsorted(s, v, **kw), [SEQ, VALS], grad=False)
        check(lambda lib, s, v, kw=kw: lib.searchsorted(s, 3.0, **kw), [SEQ, VALS], grad=False)
    seq2 = np.stack([SEQ[:3], SEQ[2:]])
    check(lambda lib, s, v: lib.searchsorted(s, v), [seq2, VALS], grad=False)
    check(lambda lib, s, v: lib.searchsorted(s, v, right=True), [seq2, VALS], grad=False)
    perm = np.array([3, 0, 4, 1, 2])
    check(
        lambda lib, s, v, p: lib.searchsorted(s, v, sorter=p),
        [SEQ[perm], VALS, np.argsort(SEQ[perm], kind="stable")],
        grad=False,
    )
    for kw in [{}, {"right": True}, {"out_int32": True}]:
        check(lambda lib, v, s, kw=kw: lib.bucketize(v, s, **kw), [VALS, SEQ], grad=False)
        check(
            lambda lib, v, s, kw=kw: lib.bucketize(v, s, **kw),
            [VALS.astype(np.int64), SEQ],
            grad=False,
        )
        check(lambda lib, s, kw=kw: lib.bucketize(4, s, **kw), [SEQ], grad=False)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc(dtype):
    x = rand(50, dtype=dtype)
    check(lambda lib, x: lib.histc(x), [x], grad=False)
    check(lambda lib, x: x.histc(bins=7, min=-1, max=1), [x], grad=False)
    check(lambda lib, x: x.histc(4, 0, 4), [np.arange(5.0).astype(dtype)], grad=False)
    check(lambda lib, x: x.histc(3), [np.ones(4, dtype)], grad=False)
    check(lambda lib, x: x.histc(3), [np.zeros(0, dtype)], grad=False)


def test_bincount():
    x = np.array([1, 4, 1, 0, 4, 4])
    check(lambda lib, x: lib.bincount(x), [x], grad=False)
    check(lambda lib, x: x.bincount(minlength=8), [x], grad=False)
    check(lambda lib, x: x.bincount(minlength=8), [x[:0]], grad=False)
    for w in [rand(6), rand(6, dtype="float64"), np.arange(6)]:
        check(lambda lib, x, w: lib.bincount(x, w), [x, w], grad=False)


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(0, 5), min_size=1, max_size=3),
    dim=st.integers(-3, 2),
    desc=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_sort_hypothesis(shape, dim, desc, seed):
    dim = dim % len(shape)
    x = np.random.default_rng(seed).integers(0, 3, shape).astype(np.float64)  # many ties
    check(lambda lib, x: lib.sort(x, dim=dim, descending=desc, stable=True), [x])
    n = shape[dim]
    if n:
        y = _distinct(*shape)
        k = seed % n + 1
        check(lambda lib, x: x.topk(k, dim, largest=desc), [y])
        check(lambda lib, x: x.kthvalue(k, dim, keepdim=desc), [y])


def _pair(lib, dt):
    return (lib.empty(0, dtype=dt), lib.empty(0, dtype=lib.int64))


OUT = {
    "sort": lambda lib, x: lib.sort(x, 1, out=_pair(lib, x.dtype)),
    "topk": lambda lib, x: lib.topk(x, 2, out=_pair(lib, x.dtype)),
    "kthvalue": lambda lib, x: lib.kthvalue(x, 2, 0, out=_pair(lib, x.dtype)),
    "msort": lambda lib, x: lib.msort(x, out=lib.empty(0, dtype=x.dtype)),
    "searchsorted": lambda lib, x: lib.searchsorted(
        lib.tensor([1.0, 2.0]), x, out=lib.empty(0, dtype=lib.int64)
    ),
    "bucketize": lambda lib, x: lib.bucketize(
        x, lib.tensor([1.0, 2.0]), out=lib.empty(0, dtype=lib.int64)
    ),
    "histc": lambda lib, x: lib.histc(x, 5, out=lib.empty(0, dtype=x.dtype)),
}


@pytest.mark.parametrize("name", OUT)
def test_out(name):
    out = check(OUT[name], [X], grad=False)
    assert type(out[0]).__name__ == type(out[1]).__name__
    if name in ("sort", "topk", "kthvalue", "msort"):
        check_raises(OUT[name], [X], grad=True)

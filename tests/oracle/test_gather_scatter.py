"""Oracle tests: gather, scatter, scatter_add, index_select, index_add, masked_*, take, put,
take_along_dim, nonzero, argwhere."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

pytestmark = pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")

I34 = np.array([[1, 2, 0, 1], [2, 0, 2, 2]])  # gather/scatter index for a (3, 4) input
IDX = np.array([2, 0, 2])  # index_select/index_add index (repeats)
MASK = np.array([[True, False, True, False], [False, False, True, True], [True] * 4])
FLAT = np.array([[0, 11], [5, 3]])

CASES = {
    "gather0": (lambda lib, x, i: x.gather(0, i), [rand(3, 4, dtype="float64"), I34]),
    "gather1": (lambda lib, x, i: lib.gather(x, -1, i), [rand(2, 5, dtype="float64"), I34]),
    "gather_int32": (
        lambda lib, x, i: x.gather(0, i.int()),
        [rand(3, 4, dtype="float64"), I34],
    ),
    "scatter_int32": (
        lambda lib, x, i, s: x.scatter(0, i.int(), s),
        [rand(3, 4, dtype="float64"), I34, rand(2, 4, dtype="float64")],
    ),
    "gather_small": (
        lambda lib, x, i: lib.gather(x, 1, i[:, :2]),
        [rand(4, 6, dtype="float64"), I34],
    ),
    "scatter_src": (
        lambda lib, x, i, s: x.scatter(0, i, s),
        [rand(3, 4, dtype="float64"), np.array([[1, 2, 0, 1]]), rand(1, 4, dtype="float64")],
    ),
    "scatter_src_big": (
        lambda lib, x, i, s: lib.scatter(x, 1, i, s),
        [rand(2, 4, dtype="float64"), np.array([[3, 1], [0, 2]]), rand(2, 2, dtype="float64")],
    ),
    "scatter_value": (lambda lib, x, i: x.scatter(0, i, 2.5), [rand(3, 4, dtype="float64"), I34]),
    "scatter_value_kw": (
        lambda lib, x, i: lib.scatter(x, -2, i, value=-1),
        [rand(3, 4, dtype="float64"), I34],
    ),
    "scatter_add": (
        lambda lib, x, i, s: x.scatter_add(0, i, s),
        [rand(3, 4, dtype="float64"), I34, rand(2, 4, dtype="float64")],
    ),
    "scatter_add_fn": (
        lambda lib, x, i, s: lib.scatter_add(x, 1, i, s),
        [rand(2, 3, dtype="float64"), I34, rand(2, 4, dtype="float64")],
    ),
    "index_select": (
        lambda lib, x, i: x.index_select(0, i),
        [rand(3, 4, dtype="float64"), IDX],
    ),
    "index_select_neg": (
        lambda lib, x, i: lib.index_select(x, -1, i),
        [rand(2, 3, dtype="float64"), IDX],
    ),
    "index_add": (
        lambda lib, x, i, s: x.index_add(1, i, s),
        [rand(2, 3, dtype="float64"), IDX, rand(2, 3, dtype="float64")],
    ),
    "index_add_alpha": (
        lambda lib, x, i, s: lib.index_add(x, 0, i, s, alpha=2.0),
        [rand(3, 2, dtype="float64"), IDX, rand(3, 2, dtype="float64")],
    ),
    "index_copy": (
        lambda lib, x, i, s: x.index_copy(1, i, s),
        [rand(2, 4, dtype="float64"), IDX[1:], rand(2, 2, dtype="float64")],
    ),
    "index_copy_fn": (
        lambda lib, x, i, s: lib.index_copy(x, 0, i, s),
        [rand(3, 2, dtype="float64"), np.array([2, 0]), rand(2, 2, dtype="float64")],
    ),
    "index_fill": (lambda lib, x, i: x.index_fill(0, i, -2.0), [rand(3, 4, dtype="float64"), IDX]),
    "index_fill_wrap": (
        lambda lib, x, i: x.index_fill(0, i - 3, -2.0),
        [rand(3, 4, dtype="float64"), IDX],
    ),
    "index_fill_neg": (
        lambda lib, x, i: lib.index_fill(x, -1, i, 1),
        [rand(2, 3, dtype="float64"), IDX],
    ),
    "index_fill_tensor": (
        lambda lib, x, i, v: x.index_fill(1, i, v),
        [rand(2, 3, dtype="float64"), IDX, np.array(0.5)],
    ),
    "masked_fill": (
        lambda lib, x, m: x.masked_fill(m, 3.0),
        [rand(3, 4, dtype="float64"), MASK],
    ),
    "masked_fill_bcast": (
        lambda lib, x, m: lib.masked_fill(x, m[0], -1),
        [rand(3, 4, dtype="float64"), MASK],
    ),
    "masked_fill_bcast_self": (
        lambda lib, x, m, v: x.masked_fill(m, v),
        [rand(4, dtype="float64"), MASK, np.array(1.5)],
    ),
    "masked_scatter_bcast": (
        lambda lib, x, m, s: x.masked_scatter(m, s),
        [rand(4, dtype="float64"), MASK, rand(12, dtype="float64")],
    ),
    "masked_fill_tensor": (
        lambda lib, x, m, v: x.masked_fill(m, v),
        [rand(3, 4, dtype="float64"), MASK, np.array(1.5)],
    ),
    "masked_select": (
        lambda lib, x, m: x.masked_select(m),
        [rand(3, 4, dtype="float64"), MASK],
    ),
    "masked_select_bcast": (
        lambda lib, x, m: lib.masked_select(x, m),
        [rand(4, dtype="float64"), MASK],
    ),
    "masked_scatter": (
        lambda lib, x, m, s: x.masked_scatter(m, s),
        [rand(3, 4, dtype="float64"), MASK, rand(4, 4, dtype="float64")],
    ),
    "take": (lambda lib, x, i: x.take(i), [rand(3, 4, dtype="float64"), FLAT]),
    "take_neg": (lambda lib, x, i: lib.take(x, -i - 1), [rand(3, 4, dtype="float64"), FLAT]),
    "put": (
        lambda lib, x, i, s: x.put(i, s),
        [rand(3, 4, dtype="float64"), FLAT, rand(2, 2, dtype="float64")],
    ),
    "put_acc": (
        lambda lib, x, i, s: lib.put(x, i.reshape(-1) % 3, s.reshape(-1), accumulate=True),
        [rand(3, 4, dtype="float64"), FLAT, rand(2, 2, dtype="float64")],
    ),
    "take_along_dim": (
        lambda lib, x, i: lib.take_along_dim(x, i, 0),
        [rand(3, 4, dtype="float64"), I34],
    ),
    "take_along_dim_bcast": (
        lambda lib, x, i: x.take_along_dim(i[:, :1], dim=-1),
        [rand(2, 4, dtype="float64"), I34],
    ),
    "take_along_dim_flat": (
        lambda lib, x, i: lib.take_along_dim(x, i),
        [rand(3, 4, dtype="float64"), FLAT],
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_forward_backward(name):
    fn, inputs = CASES[name]
    check(fn, inputs)


@pytest.mark.parametrize("name", CASES)
def test_double_backward(name):
    fn, inputs = CASES[name]
    check_double_backward(fn, inputs)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize(
    "name", ["gather0", "scatter_value", "index_select", "masked_fill", "take"]
)
def test_dtypes(name, dtype):
    fn, inputs = CASES[name]
    x = (inputs[0] * 3).astype(dtype)
    check(fn, [x, *inputs[1:]], grad=False)


def test_tutorial_scatter():
    fn = lambda lib, x: lib.zeros(3, 5).scatter(  # noqa: E731
        0, lib.tensor([[1, 2, 1, 1, 2], [2, 0, 2, 1, 0]]), lib.arange(10.0).reshape(2, 5)
    )
    check(fn, [np.zeros(1)], grad=False)


def test_inplace():
    x, s = rand(3, 4, dtype="float64"), rand(2, 4, dtype="float64")
    check(lambda lib, x, i, s: (x * 1).scatter_(0, i, s), [x, I34, s])
    check(lambda lib, x, i: (x * 1).scatter_(1, i, 4.0), [x, I34])
    check(lambda lib, x, i, s: (x * 1).scatter_add_(0, i, s), [x, I34, s])
    check(
        lambda lib, x, i, s: (x * 1).index_add_(0, i, s[:3] if s.shape[0] > 2 else s),
        [rand(3, 4, dtype="float64"), IDX[:2], s],
    )
    check(lambda lib, x, m: (x * 1).masked_fill_(m, 0.5), [x, MASK])
    check(lambda lib, x, i: (x * 1).index_fill_(1, i, 0.5), [x, IDX])
    check(lambda lib, x, i, s: (x * 1).index_copy_(0, i, s[:2]), [x, IDX[1:], s])
    check(lambda lib, x, m, s: (x * 1).masked_scatter_(m, s), [x, MASK, rand(9, dtype="float64")])
    check(lambda lib, x, i, s: (x * 1).put_(i, s), [x, FLAT, rand(2, 2, dtype="float64")])
    y = rand(3, 4, dtype="float64")
    check(lambda lib, x, m: x.masked_fill_(m, 1.0), [y, MASK], grad=False)
    check(lambda lib, x, i: x.scatter_(0, i, 1.0, reduce="add"), [y, I34], grad=False)
    check(lambda lib, x, i: x.scatter_(0, i, 2.0, reduce="multiply"), [y, I34], grad=False)


def test_legacy_reduce():
    x, s = rand(3, 4, dtype="float64"), rand(2, 4, dtype="float64")
    with pytest.warns(UserWarning):
        torch.zeros(1).scatter(0, torch.tensor([0]), torch.ones(1), reduce="add")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda lib, x, i, s: x.scatter(0, i, s, reduce="add"), [x, I34, s], grad=False)
        check(lambda lib, x, i, s: x.scatter(0, i, s, reduce="multiply"), [x, I34, s], grad=False)


def test_src_larger_than_index():
    # torch's own ScatterBackward0 fails here (src grad has index's shape): forward only
    i = np.array([[3, 1], [0, 2]])
    x, s = rand(2, 4, dtype="float64"), rand(3, 3, dtype="float64")
    check(lambda lib, x, i, s: x.scatter(1, i, s), [x, i, s], grad=False)
    check(lambda lib, x, i, s: x.scatter_add(1, i, s), [x, i, s], grad=False)


def test_size_zero():
    e = np.zeros((0, 4), dtype=np.int64)
    check(lambda lib, x, i: x.gather(0, i), [rand(3, 4, dtype="float64"), e])
    check(lambda lib, x, i: x.scatter(0, i, 1.0), [rand(3, 4, dtype="float64"), e])
    check(lambda lib, x, i: x.index_select(1, i), [rand(3, 4, dtype="float64"), e[:, 0]])
    check(lambda lib, x, m: x.masked_select(m), [rand(0, 4, dtype="float64"), e.astype(bool)])
    check(lambda lib, x: x.nonzero(), [np.zeros((0, 3))], grad=False)


NZ = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, -1.0]])


@pytest.mark.parametrize(
    "x", [NZ, NZ > 0, NZ.astype(np.int64), np.array(3.0), np.array(0.0), np.zeros((2, 0))]
)
def test_nonzero(x):
    check(lambda lib, x: x.nonzero(), [x], grad=False)
    check(lambda lib, x: lib.nonzero(x, as_tuple=True), [x], grad=False)
    check(lambda lib, x: lib.argwhere(x), [x], grad=False)
    if x.dtype == bool:
        check(lambda lib, x: lib.where(x), [x], grad=False)


BAD = {
    "gather_oob": (lambda lib, x, i: x.gather(0, i + 5), [rand(3, 4), I34]),
    "gather_ndim": (lambda lib, x, i: x.gather(0, i[0]), [rand(3, 4), I34]),
    "gather_dim": (lambda lib, x, i: x.gather(2, i), [rand(3, 4), I34]),
    "gather_size": (lambda lib, x, i: x.gather(0, i), [rand(3, 2), I34]),
    "scatter_dtype": (lambda lib, x, i: x.scatter(0, i, x.double()), [rand(3, 4), I34]),
    "scatter_oob": (lambda lib, x, i: x.scatter(0, i - 4, 1.0), [rand(3, 4), I34]),
    "scatter_add_dtype": (lambda lib, x, i: x.scatter_add(0, i, x.double()), [rand(3, 4), I34]),
    "index_select_oob": (lambda lib, x, i: x.index_select(0, i + 1), [rand(3, 4), IDX]),
    "index_select_2d": (lambda lib, x, i: x.index_select(0, i), [rand(3, 4), I34]),
    "index_add_dtype": (lambda lib, x, i: x.index_add(0, i, x.double()), [rand(3, 4), IDX]),
    "index_copy_int32": (lambda lib, x, i: x.index_copy(0, i.int(), x[:3]), [rand(3, 4), IDX]),
    "index_fill_oob": (lambda lib, x, i: x.index_fill(0, i + 2, 1.0), [rand(3, 4), IDX]),
    "index_fill_int32": (lambda lib, x, i: x.index_fill(0, i.int(), 1.0), [rand(3, 4), IDX]),
    "index_add_shape": (lambda lib, x, i: x.index_add(0, i, x[:3, :3]), [rand(3, 4), IDX]),
    "index_add_count": (lambda lib, x, i: x.index_add(0, i, x[:2]), [rand(3, 4), IDX]),
    "index_copy_shape": (lambda lib, x, i: x.index_copy(0, i[:1], x[:1, :3]), [rand(3, 4), IDX]),
    "index_copy_count": (lambda lib, x, i: x.index_copy(0, i[:2], x[:1]), [rand(3, 4), IDX]),
    "masked_scatter_dtype": (lambda lib, x, m: x.masked_scatter(m, x.double()), [rand(3, 4), MASK]),
    "scatter_neg": (lambda lib, x, i: x.scatter(0, i - 1, 1.0), [rand(3, 4), I34]),
    "scatter_add_neg": (lambda lib, x, i: x.scatter_add(0, i - 1, x[:2]), [rand(3, 4), I34]),
    "index_select_neg": (lambda lib, x, i: x.index_select(0, i - 1), [rand(3, 4), IDX]),
    "index_add_neg": (lambda lib, x, i: x.index_add(0, i - 1, x), [rand(3, 4), IDX]),
    "index_add_oob": (lambda lib, x, i: x.index_add(0, i + 1, x), [rand(3, 4), IDX]),
    "index_copy_neg": (lambda lib, x, i: x.index_copy(0, i - 1, x), [rand(3, 4), IDX]),
    "masked_fill_long": (lambda lib, x, m: x.masked_fill(m.long(), 1.0), [rand(3, 4), MASK]),
    "masked_fill_1d_value": (lambda lib, x, m: x.masked_fill(m, x[0]), [rand(3, 4), MASK]),
    "masked_select_long": (lambda lib, x, m: x.masked_select(m.long()), [rand(3, 4), MASK]),
    "take_oob": (lambda lib, x, i: x.take(i + 12), [rand(3, 4), FLAT]),
    "put_numel": (lambda lib, x, i: x.put(i, x[0, :3]), [rand(3, 4), FLAT]),
    "take_int32": (lambda lib, x, i: x.take(i.int()), [rand(3, 4), FLAT]),
    "gather_int16": (lambda lib, x, i: x.gather(0, i.short()), [rand(3, 4), I34]),
    "index_select_int16": (lambda lib, x, i: x.index_select(0, i.short()), [rand(3, 4), IDX]),
    "take_along_int32": (lambda lib, x, i: x.take_along_dim(i.int(), 0), [rand(3, 4), I34]),
}


@pytest.mark.parametrize("name", BAD)
def test_errors(name):
    fn, inputs = BAD[name]
    check_raises(fn, inputs)


MATCH = [
    "gather_int16",
    "gather_dim",
    "gather_oob",
    "put_numel",
    "take_int32",
    "index_select_int16",
    "masked_select_long",
    "scatter_dtype",
    "scatter_add_dtype",
    "take_oob",
    "masked_fill_long",
    "scatter_neg",
    "index_select_neg",
    "index_add_neg",
    "index_add_oob",
    "index_copy_neg",
    "index_add_shape",
    "index_add_count",
    "index_copy_shape",
    "index_copy_count",
    "masked_scatter_dtype",
    "index_select_oob",
    "take_along_int32",
]


@pytest.mark.parametrize("name", MATCH)
def test_error_messages(name):
    fn, inputs = BAD[name]
    check_raises(fn, inputs, match_message=True)


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    dim=st.integers(-3, 2),
    seed=st.integers(0, 1000),
)
def test_gather_scatter_add_hypothesis(shape, dim, seed):
    nd = len(shape)
    dim = dim % nd - (nd if dim < 0 else 0)
    d = dim % nd
    rng = np.random.default_rng(seed)
    ishape = [rng.integers(1, n + 1) for n in shape]
    ishape[d] = rng.integers(0, 5)
    idx = rng.integers(0, shape[d], ishape)
    x = rng.standard_normal(shape)
    src = rng.standard_normal(ishape)
    check(lambda lib, x, i: x.gather(dim, i), [x, idx])
    check(lambda lib, x, i, s: x.scatter_add(dim, i, s), [x, idx, src])


def _o(lib, shape, dtype=None):
    return lib.empty(shape, dtype=dtype or lib.float32)


OUT_CASES = {
    "gather": (lambda lib, x, i: lib.gather(x, 0, i, out=_o(lib, (2, 4))), [rand(3, 4), I34]),
    "index_select": (
        lambda lib, x, i: lib.index_select(x, 1, i, out=_o(lib, 0)),
        [rand(3, 4), IDX],
    ),
    "masked_select": (
        lambda lib, x, m: lib.masked_select(x, m, out=_o(lib, 7)),
        [rand(3, 4), MASK],
    ),
    "take_along_dim": (
        lambda lib, x, i: lib.take_along_dim(x, i, 0, out=_o(lib, (2, 4))),
        [rand(3, 4), I34],
    ),
    "nonzero": (lambda lib, x: lib.nonzero(x, out=_o(lib, 1, lib.int64)), [NZ]),
}


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("name", OUT_CASES)
def test_out(name):
    fn, inputs = OUT_CASES[name]
    # torch resizes nonzero's out= in a transposed layout; ember's stays row-major
    check(fn, inputs, grad=False, strides=name != "nonzero")
    if name != "nonzero":
        check_raises(fn, inputs, grad=True)  # out= with an input requiring grad


def test_out_dtype_error():
    fn = lambda lib, x, i: lib.gather(x, 0, i, out=_o(lib, (2, 4), lib.float64))  # noqa: E731
    check_raises(fn, [rand(3, 4), I34], match_message=True)


def test_inplace_on_views():
    x, s = rand(3, 4, dtype="float64"), rand(2, 4, dtype="float64")
    check(
        lambda lib, x, i, s: _view_op(x, lambda v: v.scatter_add_(0, i[:, :2], s[:, :2])),
        [x, I34, s],
    )
    check(lambda lib, x, i: _view_op(x, lambda v: v.index_fill_(0, i[:2], 0.5)), [x, IDX])
    check(lambda lib, x, m: _view_op(x, lambda v: v.masked_fill_(m[:, 1:3], 1.0)), [x, MASK])
    check(lambda lib, x, i, s: _view_op(x, lambda v: v.put_(i[:1] % 6, s[0, :2])), [x, FLAT, s])


def _view_op(x, f):
    y = x * 1
    f(y[:, 1:3])
    return y


def test_legacy_reduce_grad_fn():
    import warnings

    x = rand(3, 4, dtype="float64")
    names = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lib in (torch, ember):
            out = lib.tensor(x, requires_grad=True).scatter(0, lib.tensor(I34), 2.0, reduce="add")
            names.append((type(out.grad_fn).__name__, out.requires_grad))
            with pytest.raises(RuntimeError):
                out.sum().backward()
    assert names[0] == names[1]


ZERO_D = {
    "index_select": lambda lib, x: x.index_select(0, lib.tensor([0])),
    "index_select_0d": lambda lib, x: x.index_select(0, lib.tensor(0)),
    "gather": lambda lib, x: x.gather(0, lib.tensor(0)),
    "gather_1d": lambda lib, x: x.gather(-1, lib.tensor([0, 0])),
    "scatter": lambda lib, x: x.scatter(0, lib.tensor(0), 5.0),
    "index_fill": lambda lib, x: x.index_fill(0, lib.tensor([0]), 1.0),
    "take": lambda lib, x: x.take(lib.tensor([0, 0])),
    "masked_select": lambda lib, x: x.masked_select(lib.tensor([True, False])),
    "masked_fill": lambda lib, x: x.masked_fill(lib.tensor(True), 1.0),
}


@pytest.mark.parametrize("name", ZERO_D)
def test_zero_dim(name):
    check(ZERO_D[name], [np.array(2.0)])

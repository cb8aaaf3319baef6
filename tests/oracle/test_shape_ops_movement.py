"""Oracle tests: flip/roll/rot90, repeat/tile/repeat_interleave, tril/triu, the diag family,
trace, ravel, narrow_copy, and the view ops of shape.py that issue 3 lists by other names."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.oracle.helper import (
    assert_same,
    check,
    check_double_backward,
    check_raises,
    rand,
    torch,
)

F64 = "float64"

# (fn, input shapes) for every op: values, dtype, strides, grad_fn, first-order gradients
CASES = [
    (lambda L, x: L.flip(x, (0,)), [(3, 4)]),
    (lambda L, x: L.flip(x, (-1, 0)), [(3, 4, 2)]),
    (lambda L, x: x.flip(1, 2), [(2, 3, 4)]),
    (lambda L, x: x.flip(()), [(2, 3)]),
    (lambda L, x: L.flip(x, (0,)), [()]),
    (lambda L, x: L.flip(x, (0,)), [(0, 3)]),
    (lambda L, x: x.t().flip(0), [(3, 4)]),
    (lambda L, x: L.fliplr(x), [(3, 4)]),
    (lambda L, x: L.flipud(x), [(3,)]),
    (lambda L, x: x.fliplr(), [(2, 3, 4)]),
    (lambda L, x: L.roll(x, 1, 0), [(3, 4)]),
    (lambda L, x: L.roll(x, -5), [(3, 4)]),
    (lambda L, x: x.roll((1, -2), (-1, 0)), [(3, 4, 2)]),
    (lambda L, x: x.roll(7, 1), [(2, 3)]),
    (lambda L, x: x.t().roll(1, 0), [(3, 4)]),
    (lambda L, x: L.roll(x, 2), [(0, 3)]),
    (lambda L, x: L.roll(x, 2), [()]),
    (lambda L, x: L.rot90(x), [(3, 4)]),
    (lambda L, x: L.rot90(x, 2), [(3, 4)]),
    (lambda L, x: L.rot90(x, 3), [(3, 4)]),
    (lambda L, x: L.rot90(x, -1), [(3, 4)]),
    (lambda L, x: L.rot90(x, 0), [(3, 4)]),
    (lambda L, x: L.rot90(x, 5, (2, 0)), [(2, 3, 4)]),
    (lambda L, x: x.rot90(1, [-1, -2]), [(2, 3, 4)]),
    (lambda L, x: x.t().rot90(2), [(3, 4)]),
    (lambda L, x: x.repeat(2, 3), [(3, 4)]),
    (lambda L, x: x.repeat(2, 1, 3), [(3, 4)]),
    (lambda L, x: x.repeat(0, 2), [(3, 4)]),
    (lambda L, x: x.repeat(2, 2), [()]),
    (lambda L, x: x.repeat(2), [(0,)]),
    (lambda L, x: x.repeat(()), [()]),
    (lambda L, x: x.t().repeat(1, 1), [(3, 4)]),
    (lambda L, x: L.tile(x, (2,)), [(3, 4)]),
    (lambda L, x: L.tile(x, (2, 1, 2)), [(3, 4)]),
    (lambda L, x: x.tile(2, 3), [(3,)]),
    (lambda L, x: x.tile((2,)), [()]),
    (lambda L, x: L.repeat_interleave(x, 2), [(3, 4)]),
    (lambda L, x: L.repeat_interleave(x, 3, 0), [(3, 4)]),
    (lambda L, x: x.repeat_interleave(2, -1), [(2, 3, 4)]),
    (lambda L, x: x.repeat_interleave(0, 1), [(2, 3)]),
    (lambda L, x: x.repeat_interleave(2), [()]),
    (lambda L, x: L.tril(x), [(3, 4)]),
    (lambda L, x: L.tril(x, 1), [(2, 3, 4)]),
    (lambda L, x: L.tril(x, -2), [(4, 3)]),
    (lambda L, x: x.triu(), [(3, 4)]),
    (lambda L, x: x.triu(-1), [(2, 4, 3)]),
    (lambda L, x: x.triu(10), [(3, 4)]),
    (lambda L, x: x.t().tril(), [(3, 4)]),
    (lambda L, x: x.triu(), [(0, 3)]),
    (lambda L, x: L.diag(x), [(4,)]),
    (lambda L, x: L.diag(x, 2), [(3,)]),
    (lambda L, x: L.diag(x, -1), [(3,)]),
    (lambda L, x: L.diag(x), [(3, 4)]),
    (lambda L, x: x.diag(1), [(3, 4)]),
    (lambda L, x: x.diag(-2), [(4, 3)]),
    (lambda L, x: x.diag(9), [(3, 4)]),
    (lambda L, x: L.diag(x), [(0,)]),
    (lambda L, x: L.diag_embed(x), [(2, 3)]),
    (lambda L, x: L.diag_embed(x, 1), [(3,)]),
    (lambda L, x: L.diag_embed(x, -1, 0, 2), [(2, 3)]),
    (lambda L, x: x.diag_embed(2, -1, 0), [(2, 3)]),
    (lambda L, x: x.diag_embed(0, 2, 1), [(2, 3)]),
    (lambda L, x: L.diagflat(x), [(2, 3)]),
    (lambda L, x: L.diagflat(x, -2), [(3,)]),
    (lambda L, x: x.diagflat(1), [()]),
    (lambda L, x: L.trace(x), [(3, 4)]),
    (lambda L, x: x.trace(), [(4, 2)]),
    (lambda L, x: L.trace(x), [(0, 3)]),
    (lambda L, x: L.ravel(x), [(3, 4)]),
    (lambda L, x: x.t().ravel(), [(3, 4)]),
    (lambda L, x: x.ravel(), [()]),
    (lambda L, x: L.narrow_copy(x, 0, 1, 2), [(3, 4)]),
    (lambda L, x: x.narrow_copy(-1, -3, 2), [(3, 4)]),
    (lambda L, x: x.narrow_copy(1, 4, 0), [(3, 4)]),
    (lambda L, x: x.t().narrow_copy(1, 1, 2), [(3, 4)]),
    # shape.py ops listed in issue 3 under these names
    (lambda L, x: L.swapaxes(x, 0, -1), [(2, 3, 4)]),
    (lambda L, x: x.swapdims(1, 0), [(2, 3)]),
    (lambda L, x: L.moveaxis(x, (0, 1), (-1, 0)), [(2, 3, 4)]),
    (lambda L, x: x.moveaxis(-1, 0), [(2, 3, 4)]),
    (lambda L, x: L.squeeze(x, (0, -1)), [(1, 3, 1)]),
    (lambda L, x: x.squeeze((1, 2)), [(1, 3, 1)]),
    (lambda L, x: x.squeeze(()), [(1, 3)]),
    (lambda L, x: L.clone(x), [(3, 4)]),
    (lambda L, x: x.clone(), [()]),
]


@pytest.mark.parametrize("fn, shapes", CASES)
def test_forward_and_grad(fn, shapes):
    check(fn, [rand(*s) for s in shapes])


@pytest.mark.parametrize("fn, shapes", CASES)
def test_double_backward(fn, shapes):
    check_double_backward(fn, [rand(*s, dtype=F64) for s in shapes])


def test_clone_noncontiguous():
    fn = lambda L, x: x.t().clone()  # noqa: E731
    check(fn, [rand(3, 4)], strides=False)
    check_double_backward(fn, [rand(3, 4, dtype=F64)])


def test_clone_keeps_layout():
    check(lambda L, x: x.t().clone(), [rand(3, 4)])


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "float16", "complex64"])
@pytest.mark.parametrize(
    "fn",
    [
        lambda L, x: x.flip(0),
        lambda L, x: x.roll(1, 1),
        lambda L, x: x.rot90(),
        lambda L, x: x.repeat(2, 1),
        lambda L, x: x.tril(),
        lambda L, x: x.triu(1),
        lambda L, x: x.diag(),
        lambda L, x: x.ravel(),
        lambda L, x: x.narrow_copy(0, 1, 1),
        lambda L, x: L.diag_embed(x),
        lambda L, x: x.repeat_interleave(2, 0),
    ],
)
def test_dtypes(fn, dtype):
    check(fn, [rand(3, 4, dtype=dtype, low=-5, high=5)], grad=False)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float32"])
def test_trace_dtype(dtype):
    check(lambda L, x: x.trace(), [rand(3, 3, dtype=dtype, low=0, high=5)], grad=False)


# ------------------------------------------------------------------------------ in-place


@pytest.mark.parametrize("name", ["tril_", "triu_"])
@pytest.mark.parametrize("k", [0, 1, -1])
def test_inplace_tri(name, k):
    def fn(L, x):
        y = x * 1
        out = getattr(y, name)(k)
        assert out is y
        return y

    check(fn, [rand(3, 4)])
    check_double_backward(fn, [rand(2, 3, 4, dtype=F64)])


def test_inplace_tri_on_view():
    def fn(L, x):
        y = x * 1
        y[1:].tril_()
        return y

    check(fn, [rand(4, 3)])


def test_inplace_tri_version():
    for lib in (torch, ember):
        x = lib.ones(3, 3)
        x.triu_()
        assert x._version == 1
    check(lambda L, x: x.tril_(), [rand(3, 3)], grad=False)


# ------------------------------------------------------------------------------ repeat_interleave


def test_repeat_interleave_tensor_repeats():
    r = np.array([1, 0, 3], dtype=np.int64)
    check(lambda L, x, r: L.repeat_interleave(x, r, 0), [rand(3, 2), r])
    check(lambda L, x, r: x.repeat_interleave(r, dim=1), [rand(2, 3), r])
    check(lambda L, x: x.repeat_interleave(L.tensor(2), 0), [rand(2, 3)])
    check(lambda L, r: L.repeat_interleave(r), [r])


# ------------------------------------------------------------------------------ tril/triu_indices


@pytest.mark.parametrize("fn", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize(
    "args", [(3, 3), (4, 3, 1), (3, 5, -1), (0, 3), (3, 0), (2, 2, 5), (5, 2, -8)]
)
def test_tri_indices(fn, args):
    check(lambda L: getattr(L, fn)(*args), [])
    check(lambda L: getattr(L, fn)(*args, dtype=L.int32), [])


# ------------------------------------------------------------------------------ hypothesis


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=4),
    data=st.data(),
)
def test_hypothesis_flip_roll(shape, data):
    nd = len(shape)
    dims = data.draw(st.lists(st.integers(-nd, nd - 1), unique_by=lambda d: d % nd, max_size=nd))
    shifts = data.draw(st.lists(st.integers(-6, 6), min_size=len(dims), max_size=len(dims)))
    x = rand(*shape)
    check(lambda L, x: L.flip(x, dims), [x])
    if dims:
        check(lambda L, x: L.roll(x, shifts, dims), [x])


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(0, 3), min_size=0, max_size=3),
    reps=st.lists(st.integers(0, 3), min_size=0, max_size=4),
)
def test_hypothesis_tile(shape, reps):
    check(lambda L, x: L.tile(x, reps), [rand(*shape)])
    if len(reps) >= len(shape):
        check(lambda L, x: x.repeat(reps), [rand(*shape)])


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=2, max_size=4),
    k=st.integers(-5, 5),
)
def test_hypothesis_tri(shape, k):
    check(lambda L, x: L.tril(x, k), [rand(*shape)])
    check(lambda L, x: L.triu(x, k), [rand(*shape)])


# ------------------------------------------------------------------------------ errors

ERRORS = [
    (lambda L, x: x.flip(0, 0), (3, 4)),
    (lambda L, x: x.flip(2), (3, 4)),
    (lambda L, x: L.fliplr(x), (3,)),
    (lambda L, x: L.flipud(x), ()),
    (lambda L, x: x.roll(1, (0, 1)), (3, 4)),
    (lambda L, x: x.roll((1, 2), (0,)), (3, 4)),
    (lambda L, x: x.roll(1, 3), (3, 4)),
    (lambda L, x: x.rot90(1, [0]), (3, 4)),
    (lambda L, x: x.rot90(), (3,)),
    (lambda L, x: x.rot90(1, [0, 0]), (3, 4)),
    (lambda L, x: x.rot90(1, [0, -2]), (3, 4)),
    (lambda L, x: x.rot90(1, [0, 2]), (3, 4)),
    (lambda L, x: x.repeat(2), (3, 4)),
    (lambda L, x: x.repeat(-1, 1), (3, 4)),
    (lambda L, x: x.repeat_interleave(-1), (3, 4)),
    (lambda L, x: x.repeat_interleave(2, 2), (3, 4)),
    (lambda L, x: x.tril(), (3,)),
    (lambda L, x: x.triu(), ()),
    (lambda L, x: x.tril_(), (3,)),
    (lambda L, x: L.diag(x), (2, 2, 2)),
    (lambda L, x: L.diag(x), ()),
    (lambda L, x: L.diag_embed(x, 0, 0, 0), (3,)),
    (lambda L, x: L.diag_embed(x, 0, 0, 3), (3,)),
    (lambda L, x: x.trace(), (3,)),
    (lambda L, x: x.trace(), (2, 2, 2)),
    (lambda L, x: (x > 0).trace(), (2, 2)),
    (lambda L, x: x.narrow_copy(0, 5, 1), (3, 4)),
    (lambda L, x: x.narrow_copy(0, 2, 2), (3, 4)),
    (lambda L, x: x.narrow_copy(0, 0, -1), (3, 4)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, shape = ERRORS[i]
    check_raises(fn, [rand(*shape)], match_message=True)


def test_tri_indices_errors():
    check_raises(lambda L: L.tril_indices(-1, 3), [], match_message=True)
    check_raises(lambda L: L.triu_indices(3, -2), [], match_message=True)


def test_tensor_method_and_function_agree():
    x = ember.arange(12.0).reshape(3, 4)
    assert_same(x.flip(0), torch.arange(12.0).reshape(3, 4).flip(0))
    assert_same(ember.trace(x), torch.trace(torch.arange(12.0).reshape(3, 4)))


# ------------------------------------------------------------------------------ input layouts

LAYOUTS = {
    "transposed": lambda x: x.transpose(0, 1),
    "permuted": lambda x: x.permute(2, 0, 1),
    "sliced": lambda x: x[:, ::2],
    "expanded": lambda x: x[:, :1].expand(3, 4, 2),
    "offset": lambda x: x[1:],
}
MOVES = {
    "flip0": lambda L, x: x.flip(0),
    "flip_all": lambda L, x: x.flip(0, 1, 2),
    "roll": lambda L, x: x.roll(1, 1),
    "roll_flat": lambda L, x: x.roll(3),
    "rot90": lambda L, x: x.rot90(1, (0, 2)),
    "rot180": lambda L, x: x.rot90(2),
    "repeat": lambda L, x: x.repeat(1, 2, 1),
    "tril": lambda L, x: x.tril(),
    "triu": lambda L, x: x.triu(1),
    "diag_embed": lambda L, x: L.diag_embed(x),
    "ravel": lambda L, x: x.ravel(),
    "narrow_copy": lambda L, x: x.narrow_copy(1, 0, 1),
    "repeat_interleave": lambda L, x: x.repeat_interleave(2, 1),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("move", list(MOVES))
def test_layouts(layout, move):
    lay, fn = LAYOUTS[layout], MOVES[move]
    check(lambda L, x: fn(L, lay(x)), [rand(3, 4, 2)])


def test_keyword_arguments():
    check(lambda L, x: x.flip(dims=(0,)), [rand(3, 4)])
    check(lambda L, x: L.flip(x, dims=[1, 0]), [rand(3, 4)])
    check(lambda L, x: L.roll(x, shifts=2, dims=None), [rand(3, 4)])
    check(lambda L, x: L.roll(x, shifts=(1,), dims=(1,)), [rand(3, 4)])
    check(lambda L, x: x.tile(dims=(2,)), [rand(3, 4)])
    check(lambda L, x: L.rot90(x, k=1, dims=[1, 0]), [rand(3, 4)])
    check(lambda L, x: L.tril(x, diagonal=1), [rand(3, 4)])
    check(lambda L, x: L.diag_embed(x, offset=1, dim1=0, dim2=2), [rand(3, 4)])
    check(lambda L, x: L.repeat_interleave(x, repeats=2, dim=1, output_size=8), [rand(3, 4)])


def test_more_errors():
    check_raises(lambda L: L.tril_indices(3, 3, dtype=L.float32), [], match_message=True)
    check_raises(lambda L: L.triu_indices(3, 3, dtype=L.int16), [], match_message=True)
    check_raises(lambda L, x: x.tril_(), [rand(3, 3)], grad=True, match_message=True)
    r = np.array([1, 2], dtype=np.int64)
    check_raises(lambda L, x, r: x.repeat_interleave(r), [rand(3), r], match_message=True)
    neg = np.array([1, -2, 3], dtype=np.int64)
    check_raises(lambda L, x, r: x.repeat_interleave(r), [rand(3), neg], match_message=True)
    check_raises(lambda L, r: L.repeat_interleave(r), [neg], match_message=True)
    fr = np.array([1.0, 2.0, 3.0])
    check_raises(lambda L, x, r: x.repeat_interleave(r), [rand(3), fr], match_message=True)
    check_raises(lambda L, r: L.repeat_interleave(r), [fr], match_message=True)


def test_diag_1d_dtypes():
    for dtype in ("bool", "int32", "complex128"):
        check(lambda L, x: L.diag(x, 1), [rand(3, dtype=dtype)], grad=False)
        check(lambda L, x: L.diagflat(x), [rand(2, 2, dtype=dtype)], grad=False)


def test_diag_out_with_grad_raises():
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.diag(ember.ones(3, requires_grad=True), out=ember.empty(0))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_grads(dtype):
    for fn in (
        lambda L, x: x.flip(0),
        lambda L, x: x.roll(1, 0),
        lambda L, x: x.repeat(2, 1),
        lambda L, x: x.tril(),
        lambda L, x: x.trace(),
        lambda L, x: L.diag_embed(x),
    ):
        check(fn, [rand(3, 3, dtype=dtype)])


def test_repeat_interleave_tensor_double_backward():
    r = np.array([2, 0, 1], dtype=np.int64)
    check_double_backward(lambda L, x, r: x.repeat_interleave(r, 1), [rand(2, 3, dtype=F64), r])


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(0, 3), min_size=1, max_size=3),
    offset=st.integers(-3, 3),
    data=st.data(),
)
def test_hypothesis_diag_embed(shape, offset, data):
    nd = len(shape) + 1
    d1 = data.draw(st.integers(-nd, nd - 1))
    d2 = data.draw(st.integers(-nd, nd - 1).filter(lambda d: d % nd != d1 % nd))
    check(lambda L, x: L.diag_embed(x, offset, d1, d2), [rand(*shape)])


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(0, 3), min_size=2, max_size=4),
    k=st.integers(-5, 5),
    data=st.data(),
)
def test_hypothesis_rot90(shape, k, data):
    nd = len(shape)
    d0 = data.draw(st.integers(-nd, nd - 1))
    d1 = data.draw(st.integers(-nd, nd - 1).filter(lambda d: d % nd != d0 % nd))
    check(lambda L, x: L.rot90(x, k, (d0, d1)), [rand(*shape)])


# ------------------------------------------------------------------------------ out=

OUT_FNS = {
    "tril": (lambda L, x, out: L.tril(x, 1, out=out), (3, 4)),
    "triu": (lambda L, x, out: L.triu(x, out=out), (2, 3, 4)),
    "diag2d": (lambda L, x, out: L.diag(x, -1, out=out), (3, 4)),
    "diag1d": (lambda L, x, out: L.diag(x, 1, out=out), (3,)),
    "narrow_copy": (lambda L, x, out: L.narrow_copy(x, 1, 1, 2, out=out), (3, 4)),
}


@pytest.mark.parametrize("name", list(OUT_FNS))
@pytest.mark.parametrize("out_shape", [(0,), (2, 2)])
@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
def test_out(name, out_shape):
    fn, shape = OUT_FNS[name]

    def run(L, x):
        out = L.zeros(out_shape)
        assert fn(L, x, out) is out
        return out

    check(run, [rand(*shape)], grad=False)


@pytest.mark.parametrize("name", list(OUT_FNS))
@pytest.mark.parametrize("out_dtype", ["int64", "float64"])
def test_out_errors(name, out_dtype):
    fn, shape = OUT_FNS[name]
    dt = lambda L: getattr(L, out_dtype)  # noqa: E731
    check_raises(lambda L, x: fn(L, x, L.empty(0, dtype=dt(L))), [rand(*shape)], match_message=True)
    if not name.startswith("diag"):
        # torch.diag(x, out=) with x requiring grad gives a NotImplemented grad_fn: ember
        # raises there, as torch's other out= ops do
        check_raises(
            lambda L, x: fn(L, x, L.empty(0)), [rand(*shape)], grad=True, match_message=True
        )
    check_raises(
        lambda L, x: fn(L, x, L.empty(0, requires_grad=True)), [rand(*shape)], match_message=True
    )

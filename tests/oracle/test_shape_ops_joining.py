"""Oracle tests: hstack/vstack/dstack/column_stack, atleast_nd, tensor_split, broadcasting
(broadcast_to/tensors/shapes, meshgrid), kron, block_diag, cartesian_prod, combinations."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

F64 = "float64"

CASES = [
    (lambda L, a, b: L.hstack([a, b]), [(3,), (2,)]),
    (lambda L, a, b: L.hstack((a, b)), [(3, 2), (3, 4)]),
    (lambda L, a, b: L.hstack([a, b]), [(), ()]),
    (lambda L, a, b: L.vstack([a, b]), [(3,), (3,)]),
    (lambda L, a, b: L.vstack([a, b]), [(2, 3), (3,)]),
    (lambda L, a, b: L.row_stack([a, b]), [(2, 3), (1, 3)]),
    (lambda L, a, b: L.dstack([a, b]), [(3,), (3,)]),
    (lambda L, a, b: L.dstack([a, b]), [(2, 3), (2, 3, 2)]),
    (lambda L, a, b: L.dstack([a, b]), [(), ()]),
    (lambda L, a, b: L.column_stack([a, b]), [(3,), (3, 2)]),
    (lambda L, a, b: L.column_stack([a, b]), [(), ()]),
    (lambda L, a, b: L.column_stack([a, b]), [(0,), (0, 2)]),
    (lambda L, a: L.atleast_1d(a), [()]),
    (lambda L, a: L.atleast_1d(a), [(2, 3)]),
    (lambda L, a, b: L.atleast_1d(a, b), [(), (3,)]),
    (lambda L, a, b: L.atleast_1d([a, b]), [(), (3,)]),
    (lambda L, a: L.atleast_2d(a), [()]),
    (lambda L, a: L.atleast_2d(a), [(3,)]),
    (lambda L, a: L.atleast_2d(a), [(2, 3, 4)]),
    (lambda L, a, b: L.atleast_2d((a, b)), [(3,), (2, 2)]),
    (lambda L, a: L.atleast_3d(a), [()]),
    (lambda L, a: L.atleast_3d(a), [(3,)]),
    (lambda L, a: L.atleast_3d(a), [(2, 3)]),
    (lambda L, a: L.atleast_3d(a), [(2, 3, 4, 1)]),
    (lambda L, a: L.tensor_split(a, 3), [(7, 2)]),
    (lambda L, a: a.tensor_split(4, 1), [(2, 3)]),
    (lambda L, a: L.tensor_split(a, [1, 4], -1), [(2, 6)]),
    (lambda L, a: L.tensor_split(a, (5, 2, 9)), [(6,)]),
    (lambda L, a: L.tensor_split(a, [-2, -1]), [(6,)]),
    (lambda L, a: L.tensor_split(a, []), [(3,)]),
    (lambda L, a: L.tensor_split(a, 2), [(0, 3)]),
    (lambda L, a: L.tensor_split(a, L.tensor(2)), [(5,)]),
    (lambda L, a: L.tensor_split(a, L.tensor([1, 3])), [(5,)]),
    (lambda L, a: L.broadcast_to(a, (2, 3)), [(3,)]),
    (lambda L, a: a.broadcast_to((4, 2, 1, 3)), [(2, 1, 3)]),
    (lambda L, a: L.broadcast_to(a, (2, -1)), [(1, 3)]),
    (lambda L, a: L.broadcast_to(a, (0, 3)), [(3,)]),
    (lambda L, a: L.broadcast_to(a, (2, 2)), [()]),
    (lambda L, a, b: L.broadcast_tensors(a, b), [(3, 1), (4,)]),
    (lambda L, a, b: L.broadcast_tensors(a, b), [(3, 4), (1,)]),
    (lambda L, a, b, c: L.broadcast_tensors(a, b, c), [(2, 1, 1), (3, 1), ()]),
    (lambda L, a: L.broadcast_tensors(a), [(2, 3)]),
    (lambda L, a, b: L.meshgrid(a, b, indexing="ij"), [(3,), (4,)]),
    (lambda L, a, b: L.meshgrid(a, b, indexing="xy"), [(3,), (4,)]),
    (lambda L, a, b, c: L.meshgrid([a, b, c], indexing="xy"), [(2,), (), (4,)]),
    (lambda L, a, b, c: L.meshgrid(a, b, c, indexing="ij"), [(2,), (0,), (4,)]),
    (lambda L, a: L.meshgrid(a, indexing="xy"), [(3,)]),
    (lambda L, a, b: L.kron(a, b), [(2, 3), (3, 2)]),
    (lambda L, a, b: L.kron(a, b), [(3,), (2,)]),
    (lambda L, a, b: a.kron(b), [(2, 3), (2,)]),
    (lambda L, a, b: L.kron(a, b), [(2,), (2, 1, 3)]),
    (lambda L, a, b: L.kron(a, b), [(), (2, 2)]),
    (lambda L, a, b: L.kron(a, b), [(0, 2), (2, 2)]),
    (lambda L, a, b, c: L.block_diag(a, b, c), [(2, 3), (3,), ()]),
    (lambda L, a, b: L.block_diag(a, b), [(0, 2), (2, 0)]),
    (lambda L, a: L.block_diag(a), [(2, 2)]),
    (lambda L, a, b: L.cartesian_prod(a, b), [(3,), (2,)]),
    (lambda L, a, b, c: L.cartesian_prod(a, b, c), [(2,), (3,), (2,)]),
    (lambda L, a: L.cartesian_prod(a), [(3,)]),
    (lambda L, a, b: L.cartesian_prod(a, b), [(0,), (2,)]),
    (lambda L, a: L.combinations(a), [(4,)]),
    (lambda L, a: L.combinations(a, 3), [(5,)]),
    (lambda L, a: L.combinations(a, 2, with_replacement=True), [(3,)]),
    (lambda L, a: L.combinations(a, 3, True), [(3,)]),
    (lambda L, a: L.combinations(a, 4), [(3,)]),
    (lambda L, a: L.combinations(a, 1), [(3,)]),
    (lambda L, a: L.combinations(a, 0), [(3,)]),
    (lambda L, a: L.combinations(a), [(0,)]),
]


def _ins(shapes, dtype="float32"):
    return [rand(*s, dtype=dtype) for s in shapes]


@pytest.mark.parametrize("fn, shapes", CASES)
def test_forward_and_grad(fn, shapes):
    check(fn, _ins(shapes))


@pytest.mark.parametrize("fn, shapes", CASES)
def test_double_backward(fn, shapes):
    check_double_backward(fn, _ins(shapes, F64))


@pytest.mark.parametrize(
    "fn",
    [
        lambda L, a, b: L.hstack([a, b]),
        lambda L, a, b: L.vstack([a, b]),
        lambda L, a, b: L.dstack([a, b]),
        lambda L, a, b: L.column_stack([a, b]),
        lambda L, a, b: L.kron(a, b),
        lambda L, a, b: L.block_diag(a, b),
    ],
)
@pytest.mark.parametrize("dtypes", [("int64", "float32"), ("int32", "int64"), ("bool", "int32")])
def test_promotion(fn, dtypes):
    check(fn, [rand(2, 3, dtype=dtypes[0]), rand(2, 3, dtype=dtypes[1])], grad=False)


@pytest.mark.parametrize("dtype", ["int64", "bool", "float16"])
def test_other_dtypes(dtype):
    a, b = rand(3, dtype=dtype), rand(2, dtype=dtype)
    check(lambda L, a, b: L.cartesian_prod(a, b), [a, b], grad=False)
    check(lambda L, a: L.combinations(a), [a], grad=False)
    check(lambda L, a, b: L.meshgrid(a, b, indexing="ij"), [a, b], grad=False)
    check(lambda L, a: L.tensor_split(a, 2), [a], grad=False)


def test_meshgrid_default_warns():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="indexing"):
            lib.meshgrid(lib.ones(2), lib.ones(3))


def test_tensor_split_views():
    for lib in (torch, ember):
        x = lib.arange(6.0)
        parts = lib.tensor_split(x, 2)
        assert all(p._is_view() for p in parts)


def test_block_diag_empty():
    check(lambda L: L.block_diag(), [])


def test_broadcast_tensors_identity():
    for lib in (torch, ember):
        x = lib.ones(2, 3)
        assert lib.broadcast_tensors(x, lib.ones(3))[0] is x


@pytest.mark.parametrize(
    "shapes",
    [((2, 3), (3,)), ((1,), (4, 1)), (2, (2, 1)), ((), (3,)), ((0, 1), (3,)), ()],
)
def test_broadcast_shapes(shapes):
    assert tuple(ember.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))
    assert isinstance(ember.broadcast_shapes(*shapes), ember.Size)


# ------------------------------------------------------------------------------ hypothesis


@settings(max_examples=40, deadline=None)
@given(
    a=st.lists(st.integers(0, 3), max_size=3),
    b=st.lists(st.integers(0, 3), max_size=3),
)
def test_hypothesis_kron(a, b):
    check(lambda L, x, y: L.kron(x, y), [rand(*a), rand(*b)])


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 7),
    spec=st.one_of(st.integers(1, 5), st.lists(st.integers(-8, 8), max_size=4).map(tuple)),
)
def test_hypothesis_tensor_split(n, spec):
    check(lambda L, x: L.tensor_split(x, spec), [rand(n, 2)])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 5), r=st.integers(0, 4), rep=st.booleans())
def test_hypothesis_combinations(n, r, rep):
    check(lambda L, x: L.combinations(x, r, rep), [rand(n)])


@settings(max_examples=40, deadline=None)
@given(
    shapes=st.lists(st.lists(st.integers(1, 3), max_size=3), min_size=1, max_size=3),
    out=st.lists(st.integers(1, 3), min_size=3, max_size=3),
)
def test_hypothesis_broadcast(shapes, out):
    # make each shape broadcastable to ``out`` by keeping a dim or setting it to 1
    shapes = [
        tuple(out[len(out) - len(s) + i] if v > 1 else 1 for i, v in enumerate(s)) for s in shapes
    ]
    check(lambda L, *xs: L.broadcast_tensors(*xs), [rand(*s) for s in shapes])
    assert tuple(ember.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))


# ------------------------------------------------------------------------------ errors

ERRORS = [
    (lambda L: L.hstack([]), []),
    (lambda L: L.vstack([]), []),
    (lambda L: L.dstack([]), []),
    (lambda L: L.column_stack([]), []),
    (lambda L, a, b: L.hstack([a, b]), [(3,), (2, 2)]),
    (lambda L, a, b: L.vstack([a, b]), [(3,), (2,)]),
    (lambda L, a: L.tensor_split(a, 0), [(3,)]),
    (lambda L, a: L.tensor_split(a, 2), [()]),
    (lambda L, a: L.tensor_split(a, 2, 1), [(3,)]),
    (lambda L, a: L.tensor_split(a, L.tensor([[1]])), [(3,)]),
    (lambda L, a: L.tensor_split(a, L.tensor([1.0])), [(3,)]),
    (lambda L, a: L.tensor_split(a, L.tensor([1], dtype=L.int32)), [(3,)]),
    (lambda L, a: L.broadcast_to(a, (2,)), [(3, 4)]),
    (lambda L, a: L.broadcast_to(a, (2, 5)), [(3,)]),
    (lambda L, a, b: L.broadcast_tensors(a, b), [(3,), (4,)]),
    (lambda L, a, b: L.meshgrid(a, b, indexing="foo"), [(3,), (3,)]),
    (lambda L, a: L.combinations(a), [(3, 4)]),
    (lambda L, a: L.combinations(a, -1), [(3,)]),
    (lambda L, a: L.block_diag(a), [(1, 1, 1)]),
    (lambda L, a, b: L.cartesian_prod(a, b), [(3,), (2, 2)]),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, shapes = ERRORS[i]
    check_raises(fn, _ins(shapes), match_message=True)


def test_broadcast_shapes_errors():
    with pytest.raises(RuntimeError) as t:
        torch.broadcast_shapes((2, 3), (4,))
    with pytest.raises(RuntimeError) as e:
        ember.broadcast_shapes((2, 3), (4,))
    assert str(e.value) == str(t.value)


def test_meshgrid_errors():
    check_raises(lambda L, a, b: L.meshgrid(a, b.int(), indexing="ij"), [rand(3), rand(2)])
    check_raises(lambda L, a: L.meshgrid(a, indexing="ij"), [rand(2, 2)])


# ------------------------------------------------------------------------------ out=

OUT_FNS = [
    lambda L, a, b, out: L.hstack([a, b], out=out),
    lambda L, a, b, out: L.vstack([a, b], out=out),
    lambda L, a, b, out: L.dstack([a, b], out=out),
    lambda L, a, b, out: L.column_stack([a, b], out=out),
    lambda L, a, b, out: L.kron(a, b, out=out),
]


@pytest.mark.parametrize("fn", OUT_FNS)
@pytest.mark.parametrize("out_shape", [(0,), (2, 2)])
@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
def test_out(fn, out_shape):
    def run(L, a, b):
        out = L.zeros(out_shape, dtype=L.float64)
        res = fn(L, a, b, out)
        assert res is out
        return out

    check(run, [rand(2, 3), rand(2, 3)], grad=False)


@pytest.mark.parametrize("fn", OUT_FNS)
def test_out_errors(fn):
    check_raises(
        lambda L, a, b: fn(L, a, b, L.empty(0, dtype=L.int64)),
        [rand(2, 3), rand(2, 3)],
        match_message=True,
    )
    check_raises(
        lambda L, a, b: fn(L, a, b, L.empty(0)),
        [rand(2, 3), rand(2, 3)],
        grad=True,
        match_message=True,
    )


def test_keyword_arguments():
    check(lambda L, x: L.tensor_split(x, sections=2), [rand(5)])
    check(lambda L, x: L.tensor_split(x, indices=[1, 3], dim=1), [rand(2, 5)])
    check(lambda L, x: x.tensor_split(tensor_indices_or_sections=L.tensor([2])), [rand(5)])
    check(lambda L, x: L.combinations(x, r=3, with_replacement=True), [rand(3)])
    check(lambda L, x: L.broadcast_to(x, size=(2, 3)), [rand(3)])

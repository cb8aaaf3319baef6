"""Oracle tests: comparisons (functions, aliases, operators), equal/allclose/isclose, the
classification tests (isnan...signbit), logical and bitwise ops with their operators."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.oracle.helper import check, check_raises, rand, torch

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "uint8", "int8", "bool"]

COMPARE = {
    "eq": lambda lib, x, y: lib.eq(x, y),
    "ne": lambda lib, x, y: lib.ne(x, y),
    "lt": lambda lib, x, y: lib.lt(x, y),
    "le": lambda lib, x, y: lib.le(x, y),
    "gt": lambda lib, x, y: lib.gt(x, y),
    "ge": lambda lib, x, y: lib.ge(x, y),
    "greater": lambda lib, x, y: lib.greater(x, y),
    "greater_equal": lambda lib, x, y: x.greater_equal(y),
    "less": lambda lib, x, y: lib.less(x, y),
    "less_equal": lambda lib, x, y: x.less_equal(y),
    "not_equal": lambda lib, x, y: lib.not_equal(x, y),
    "op_eq": lambda lib, x, y: x == y,
    "op_ne": lambda lib, x, y: x != y,
    "op_lt": lambda lib, x, y: x < y,
    "op_le": lambda lib, x, y: x <= y,
    "op_gt": lambda lib, x, y: x > y,
    "op_ge": lambda lib, x, y: x >= y,
}


def _ints(*shape, dtype):
    return rand(*shape, dtype=dtype, low=0, high=3)


@pytest.mark.parametrize("name", list(COMPARE))
@pytest.mark.parametrize(
    "shapes", [((), ()), ((4,), (4,)), ((2, 3), (3,)), ((0, 2), (2,)), ((3, 1), (1, 2))]
)
def test_compare_shapes(name, shapes):
    x, y = _ints(*shapes[0], dtype="float64"), _ints(*shapes[1], dtype="float64")
    check(COMPARE[name], [x, y], grad=False)


@pytest.mark.parametrize("name", ["eq", "lt", "op_ge", "op_ne"])
@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", ["float32", "int64", "bool", "uint8"])
def test_compare_dtypes(name, da, db):
    check(COMPARE[name], [_ints(5, dtype=da), _ints(5, dtype=db)], grad=False)


@pytest.mark.parametrize("name", list(COMPARE))
@pytest.mark.parametrize("scalar", [1, 1.5, True, -2])
def test_compare_scalars(name, scalar):
    f = COMPARE[name]
    check(lambda lib, x: f(lib, x, scalar), [_ints(5, dtype="int64")], grad=False)
    check(lambda lib, x: f(lib, x, scalar), [_ints(5, dtype="float32")], grad=False)
    if name.startswith("op_"):
        check(lambda lib, x: f(lib, scalar, x), [_ints(5, dtype="float32")], grad=False)


def test_compare_nan_and_complex():
    x = np.array([np.nan, 1.0, np.inf, -np.inf, 0.0, -0.0])
    for f in COMPARE.values():
        check(f, [x, x[::-1].copy()], grad=False)
    z = rand(3, dtype="complex64")
    check(COMPARE["eq"], [z, z], grad=False)
    check(COMPARE["op_ne"], [z, z + 1], grad=False)
    for name in ("lt", "op_ge", "greater"):
        check_raises(COMPARE[name], [z, z], match_message=True)


def test_compare_non_numbers():
    x = rand(3)
    for lib in (torch, ember):
        t = lib.from_numpy(x)
        assert (t == None) is False  # noqa: E711 - the comparison under test
        assert (t != None) is True  # noqa: E711
        assert (t == "a") is False
    check_raises(lambda lib, x: x < None, [x], match_message=True)
    check_raises(lambda lib, x: x >= "a", [x], match_message=True)
    check_raises(lambda lib, x, y: x == y, [rand(3), rand(4)], match_message=True)


def test_compare_inplace_and_out():
    x, y = _ints(2, 3, dtype="float64"), _ints(3, dtype="float64")
    for name in ("eq", "ne", "lt", "le", "gt", "ge", "greater", "less_equal", "not_equal"):
        check(lambda lib, x, y, name=name: getattr(x, name + "_")(y), [x, y], grad=False)
        check(
            lambda lib, x, y, name=name: getattr(lib, name)(
                x, y, out=lib.empty(2, 3, dtype=lib.float32)
            ),
            [x, y],
            grad=False,
        )
    check(lambda lib, x, y: lib.eq(x, y, out=lib.empty(0, dtype=lib.bool)), [x, y], grad=False)
    # comparisons need no grad: out= works with inputs that require grad
    check(lambda lib, x, y: lib.lt(x, y, out=lib.empty(2, 3, dtype=lib.bool)), [x, y], grad=False)


def test_equal():
    a = rand(3, 4)
    for lib in (torch, ember):
        t = lib.from_numpy(a)
        assert lib.equal(t, t.clone())
        assert not lib.equal(t, t[:2])
        assert lib.equal(t.double(), t)
        assert not lib.equal(lib.tensor([float("nan")]), lib.tensor([float("nan")]))
        assert lib.equal(lib.tensor([1, 2]), lib.tensor([1.0, 2.0]))
        assert not lib.equal(lib.ones(1, 3), lib.ones(3))
    check_raises(lambda lib, x: lib.equal(x, 1.0), [a])


ISCLOSE_CASES = [
    ({}, "float64"),
    ({"rtol": 0.1}, "float32"),
    ({"atol": 0.5}, "float64"),
    ({"rtol": 0, "atol": 0}, "float64"),
    ({"equal_nan": True}, "float64"),
    ({"atol": 1}, "int64"),
    ({}, "bool"),
    ({"rtol": 0.2, "atol": 0.3}, "float16"),
    ({"equal_nan": True}, "complex64"),
]


@pytest.mark.parametrize("kwargs,dtype", ISCLOSE_CASES)
def test_isclose_allclose(kwargs, dtype):
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, 1e-9, 2.0, 3.0, np.inf])
    y = np.array([1.0 + 1e-6, np.nan, np.inf, np.inf, 1e-8, 0.0, 2.5, 3.0, np.nan])
    if dtype in ("int64", "bool"):
        x, y = _ints(9, dtype=dtype), _ints(9, dtype=dtype)
    else:
        x, y = x.astype(dtype), y.astype(dtype)
    check(lambda lib, x, y: lib.isclose(x, y, **kwargs), [x, y], grad=False)
    check(lambda lib, x, y: x.isclose(y, **kwargs), [x, y], grad=False)
    for lib in (torch, ember):
        got = lib.allclose(lib.from_numpy(x), lib.from_numpy(y), **kwargs)
        assert isinstance(got, bool)
    assert ember.allclose(ember.from_numpy(x), ember.from_numpy(y), **kwargs) == torch.allclose(
        torch.from_numpy(x), torch.from_numpy(y), **kwargs
    )


def test_isclose_errors_and_broadcast():
    check(lambda lib, x, y: lib.isclose(x, y), [rand(3, 1), rand(2)], grad=False)
    check_raises(
        lambda lib, x, y: lib.isclose(x, y), [rand(3), rand(3, dtype="float64")], match_message=True
    )
    check_raises(
        lambda lib, x, y: lib.allclose(x, y), [rand(3), rand(3, dtype="int64")], match_message=True
    )
    check_raises(lambda lib, x: lib.isclose(x, x, rtol=-1), [rand(3)], match_message=True)
    check_raises(lambda lib, x: lib.isclose(x, x, atol=-1e-3), [rand(3)], match_message=True)
    check_raises(lambda lib, x: lib.isclose(x, 1.0), [rand(3)], match_message=True)


# ------------------------------------------------------------------------------ classification

CLASSIFY = ["isnan", "isinf", "isposinf", "isneginf", "isfinite", "isreal", "signbit"]
SPECIAL = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-310])


@pytest.mark.parametrize("name", CLASSIFY)
@pytest.mark.parametrize("dtype", DTYPES + ["complex64"])
def test_classify(name, dtype):
    f = lambda lib, x: getattr(lib, name)(x)  # noqa: E731
    if dtype == "complex64":
        x = (SPECIAL + 1j * SPECIAL[::-1]).astype(dtype)
    elif dtype in ("float64", "float32", "float16"):
        x = SPECIAL.astype(dtype)
    else:
        x = rand(8, dtype=dtype, low=-2 if dtype.startswith("int") else 0, high=3)
    try:
        f(torch, torch.from_numpy(x.copy()) if dtype != "bfloat16" else torch.ones(1))
    except Exception:  # noqa: BLE001
        check_raises(f, [x], match_message=True)
        return
    check(f, [x], grad=False)
    check(lambda lib, x: getattr(x, name)(), [x], grad=False)


def test_classify_shapes_and_out():
    for shape in ((), (0,), (2, 3)):
        x = rand(*shape, dtype="float64")
        for name in CLASSIFY:
            check(lambda lib, x, name=name: getattr(lib, name)(x), [x], grad=False)
    x = SPECIAL.copy()
    for name in ("isposinf", "isneginf", "signbit"):
        check(
            lambda lib, x, name=name: getattr(lib, name)(x, out=lib.empty(8, dtype=lib.bool)),
            [x],
            grad=False,
        )
    check_raises(lambda lib, x: lib.isnan(1.0), [])


# ------------------------------------------------------------------------------ logical

LOGICAL = ["logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("name", LOGICAL)
@pytest.mark.parametrize("da", ["bool", "float32", "int64", "uint8", "complex64"])
@pytest.mark.parametrize("db", ["bool", "float64", "int32"])
def test_logical(name, da, db):
    x, y = _ints(2, 3, dtype=da), _ints(3, dtype=db)
    check(lambda lib, x, y: getattr(lib, name)(x, y), [x, y], grad=False)
    check(lambda lib, x, y: getattr(x, name)(y), [x, y], grad=False)


@pytest.mark.parametrize("name", LOGICAL)
def test_logical_inplace_out(name):
    x, y = _ints(2, 3, dtype="float32"), _ints(3, dtype="bool")
    check(lambda lib, x, y: getattr(x, name + "_")(y), [x, y], grad=False)
    check(
        lambda lib, x, y: getattr(lib, name)(x, y, out=lib.empty(2, 3, dtype=lib.float64)),
        [x, y],
        grad=False,
    )
    check_raises(lambda lib, x: getattr(lib, name)(x, True), [x], match_message=True)


def test_logical_not():
    for dtype in ("bool", "float32", "int64", "complex64"):
        x = _ints(5, dtype=dtype)
        check(lambda lib, x: lib.logical_not(x), [x], grad=False)
        check(lambda lib, x: x.logical_not(), [x], grad=False)
        check(lambda lib, x: x.logical_not_(), [x], grad=False)
        check(lambda lib, x: lib.logical_not(x, out=lib.empty(5, dtype=lib.int32)), [x], grad=False)


# ------------------------------------------------------------------------------ bitwise

BITWISE = {
    "bitwise_and": lambda lib, x, y: lib.bitwise_and(x, y),
    "bitwise_or": lambda lib, x, y: x.bitwise_or(y),
    "bitwise_xor": lambda lib, x, y: lib.bitwise_xor(x, y),
    "bitwise_left_shift": lambda lib, x, y: lib.bitwise_left_shift(x, y),
    "bitwise_right_shift": lambda lib, x, y: x.bitwise_right_shift(y),
    "and": lambda lib, x, y: x & y,
    "or": lambda lib, x, y: x | y,
    "xor": lambda lib, x, y: x ^ y,
    "lshift": lambda lib, x, y: x << y,
    "rshift": lambda lib, x, y: x >> y,
}


@pytest.mark.parametrize("name", list(BITWISE))
@pytest.mark.parametrize("da", ["int64", "int32", "int8", "uint8", "bool", "float32"])
@pytest.mark.parametrize("db", ["int64", "uint8", "bool"])
def test_bitwise(name, da, db):
    f = BITWISE[name]
    x = rand(6, dtype=da, low=-20 if da.startswith("int") else 0, high=20)
    y = rand(6, dtype=db, low=0, high=6)
    try:
        f(torch, torch.from_numpy(x.copy()), torch.from_numpy(y.copy()))
    except Exception:  # noqa: BLE001
        check_raises(f, [x, y], match_message=True)
        return
    check(f, [x, y], grad=False)


def test_shift_edges():
    x = np.array([1, 1, 1, -8, 5, -8, 8, 3])
    y = np.array([63, 64, 100, 1, -1, 70, 70, 0])
    check(BITWISE["lshift"], [x, y], grad=False)
    check(BITWISE["rshift"], [x, y], grad=False)
    u = np.array([1, 255, 128, 7], dtype=np.uint8)
    v = np.array([7, 8, 9, 1], dtype=np.uint8)
    check(BITWISE["lshift"], [u, v], grad=False)
    check(BITWISE["rshift"], [u, v], grad=False)
    i8 = np.array([-128, 127, 64, -1], dtype=np.int8)
    check(BITWISE["lshift"], [i8, v.astype(np.int8)], grad=False)
    check(BITWISE["rshift"], [i8, v.astype(np.int8)], grad=False)


@pytest.mark.parametrize("scalar", [3, True, 1])
def test_bitwise_scalars(scalar):
    x = rand(5, dtype="int64", low=-9, high=9)
    for f in (
        lambda lib, x: x & scalar,
        lambda lib, x: scalar | x,
        lambda lib, x: x ^ scalar,
        lambda lib, x: x << scalar,
        lambda lib, x: scalar << x.abs(),
        lambda lib, x: x >> scalar,
        lambda lib, x: scalar >> x.abs(),
        lambda lib, x: lib.bitwise_left_shift(scalar, x.abs()),
    ):
        check(f, [x], grad=False)
    b = rand(5, dtype="bool")
    check(lambda lib, x: x & True, [b], grad=False)
    check(lambda lib, x: ~x, [b], grad=False)
    check(lambda lib, x: ~x, [x], grad=False)
    check_raises(lambda lib, x: x & 1.5, [x], match_message=True)
    check_raises(lambda lib, x: ~x, [rand(3)], match_message=True)
    check(lambda lib, x: x << 1, [b], grad=False)
    check_raises(lambda lib, x: x << x, [b], match_message=True)


def test_bitwise_inplace_out():
    x, y = rand(2, 3, dtype="int64", low=-9, high=9), rand(3, dtype="int64", low=0, high=4)
    for name in (
        "bitwise_and_",
        "bitwise_or_",
        "bitwise_xor_",
        "bitwise_left_shift_",
        "bitwise_right_shift_",
        "__iand__",
        "__ior__",
        "__ixor__",
        "__ilshift__",
        "__irshift__",
    ):
        check(lambda lib, x, y, name=name: getattr(x, name)(y), [x, y], grad=False)
    check(lambda lib, x: x.bitwise_not_(), [x], grad=False)
    for name in (
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_left_shift",
        "bitwise_right_shift",
    ):
        check(
            lambda lib, x, y, name=name: getattr(lib, name)(
                x, y, out=lib.empty(2, 3, dtype=lib.int64)
            ),
            [x, y],
            grad=False,
        )
    check(lambda lib, x: lib.bitwise_not(x, out=lib.empty(0, dtype=lib.int64)), [x], grad=False)
    check_raises(
        lambda lib, x, y: x.bitwise_and_(y), [rand(3, dtype="int32"), rand(3, dtype="float32")]
    )


# ------------------------------------------------------------------------------ hypothesis

_shapes = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)


@settings(max_examples=60, deadline=None)
@given(
    shapes=_shapes,
    name=st.sampled_from(list(COMPARE) + list(BITWISE) + LOGICAL),
    da=st.sampled_from(["int64", "int32", "uint8", "bool", "float32"]),
    db=st.sampled_from(["int64", "int8", "bool", "float64"]),
)
def test_compare_hypothesis(shapes, name, da, db):
    f = COMPARE.get(name) or BITWISE.get(name)
    if f is None:
        f = lambda lib, x, y: getattr(lib, name)(x, y)  # noqa: E731
    sa, sb = shapes.input_shapes
    x, y = rand(*sa, dtype=da, low=0, high=5), rand(*sb, dtype=db, low=0, high=5)
    try:
        f(torch, torch.from_numpy(x.copy()), torch.from_numpy(y.copy()))
    except Exception:  # noqa: BLE001
        check_raises(f, [x, y])
        return
    check(f, [x, y], grad=False)


def test_isclose_zero_dim_and_complex():
    # 0-d operands (NumPy hands back scalars there) and complex differences
    out = []
    for lib in (torch, ember):
        a, b = lib.tensor(1.0), lib.tensor(1.0 + 1e-9)
        c = lib.tensor([1 + 1j, 2 - 1j])
        out.append(
            (
                lib.isclose(a, b).item(),
                lib.isclose(a, lib.tensor(float("inf"))).item(),
                lib.isclose(c, c + 1e-9).tolist(),
            )
        )
    assert out[0] == out[1]

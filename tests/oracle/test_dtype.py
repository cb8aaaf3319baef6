"""Oracle tests: dtypes, aliases, default dtype, finfo/iinfo, promotion, result_type, can_cast."""

import copy
import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.oracle.helper import torch

NAMES = [
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
]
ALIASES = ["float", "double", "half", "long", "int", "short", "cfloat", "cdouble"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def _name(d) -> str:
    return str(d).replace("torch.", "")


@pytest.fixture
def default_dtype():
    """Restore the default dtype of both libraries after the test."""
    yield
    torch.set_default_dtype(torch.float32)
    ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("name", NAMES + ALIASES)
def test_dtype_attributes(name):
    t, e = getattr(torch, name), getattr(ember, name)
    assert repr(e) == repr(t)
    assert str(e) == str(t)
    for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize", "abbr"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert _name(e.to_real()) == _name(t.to_real())
    assert isinstance(e, ember.dtype)
    assert e == getattr(ember, _name(t))
    assert hash(e) == hash(getattr(ember, _name(t)))


@pytest.mark.parametrize("name", NAMES)
def test_dtype_to_complex(name):
    t, e = getattr(torch, name), getattr(ember, name)
    try:
        want = _name(t.to_complex())
    except RuntimeError:
        with pytest.raises(RuntimeError):
            e.to_complex()
        return
    if want == "complex32":  # ember has no complex32 (NumPy has no complex half)
        want = "complex64"
    assert e.to_complex().name == want


@pytest.mark.parametrize("name", NAMES)
def test_dtype_pickle_and_copy(name):
    e = getattr(ember, name)
    assert pickle.loads(pickle.dumps(e)) is e
    assert copy.deepcopy(e) is e
    assert copy.copy(e) is e


def test_aliases_are_identical():
    for alias in ALIASES:
        assert getattr(ember, alias) is getattr(ember, _name(getattr(torch, alias)))


def test_dtype_not_ordered():
    with pytest.raises(TypeError):
        ember.float32 < ember.float64  # noqa: B015


# ------------------------------------------------------------------------------ default dtype


@pytest.mark.parametrize("name", FLOATS)
def test_set_default_dtype(name, default_dtype):
    torch.set_default_dtype(getattr(torch, name))
    ember.set_default_dtype(getattr(ember, name))
    assert ember.get_default_dtype() is getattr(ember, name)
    cases = [
        lambda lib: lib.tensor([1.5, 2.0]).dtype,
        lambda lib: lib.tensor(1.5).dtype,
        lambda lib: lib.tensor([1, 2]).dtype,
        lambda lib: lib.tensor([True]).dtype,
        lambda lib: lib.zeros(2).dtype,
        lambda lib: lib.ones(2, 3).dtype,
        lambda lib: lib.empty(0).dtype,
        lambda lib: lib.full((2,), 1.5).dtype,
        lambda lib: lib.full((2,), 1).dtype,
        lambda lib: lib.arange(3.0).dtype,
        lambda lib: lib.arange(3).dtype,
        lambda lib: lib.linspace(0, 1, 3).dtype,
        lambda lib: lib.logspace(0, 1, 3).dtype,
        lambda lib: lib.eye(2).dtype,
        lambda lib: lib.rand(2).dtype,
        lambda lib: lib.randn(2).dtype,
        lambda lib: lib.Tensor(2).dtype,
        lambda lib: lib.Tensor([1, 2]).dtype,
        lambda lib: (lib.ones(2, dtype=lib.int64) / 2).dtype,
        lambda lib: lib.finfo().dtype,
        lambda lib: (lib.ones(2, dtype=lib.float32) + 1.5).dtype,
        lambda lib: lib.result_type(lib.tensor(3), 1.5),
    ]
    if name != "bfloat16":  # see test_bfloat16_times_python_float
        cases.append(lambda lib: (lib.tensor(3) * 1.5).dtype)
        cases.append(lambda lib: (lib.ones(2, dtype=lib.int32) + 1.5).dtype)
    if name == "bfloat16":
        for lib in (torch, ember):
            with pytest.raises(RuntimeError, match="invalid default scalar type for complex"):
                lib.tensor([1j])
    if name not in ("float16", "bfloat16"):  # torch makes complex32 from a float16 default
        cases.append(lambda lib: lib.tensor([1j]).dtype)
    if name != "float16":
        cases.append(lambda lib: (lib.ones(2, dtype=lib.int32) * 1j).dtype)
    for case in cases:
        assert _name(case(ember)) == _name(case(torch))


def test_bfloat16_times_python_float(default_dtype):
    x = ember.ones(2, dtype=ember.bfloat16)
    assert (x * 1.5).dtype is ember.bfloat16
    assert (x + 0.5).dtype is ember.bfloat16
    ember.set_default_dtype(ember.bfloat16)
    assert (ember.tensor(3) * 1.5).dtype is ember.bfloat16
    assert (ember.ones(2, dtype=ember.int32) + 1.5).dtype is ember.bfloat16


@pytest.mark.parametrize(
    "bad", ["int32", "int64", "bool", "uint8", "complex64", "complex128", "str", "none", "float"]
)
def test_set_default_dtype_errors(bad, default_dtype):
    def arg(lib):
        special = {"str": "float32", "none": None, "float": float}
        return special[bad] if bad in special else getattr(lib, bad)

    with pytest.raises(TypeError) as t:
        torch.set_default_dtype(arg(torch))
    with pytest.raises(TypeError) as e:
        ember.set_default_dtype(arg(ember))
    assert "only floating-point types are supported as the default type" in str(e.value)
    assert "only floating-point types" in str(t.value)
    assert ember.get_default_dtype() is ember.float32


# ------------------------------------------------------------------------------ finfo / iinfo


@pytest.mark.parametrize("name", NAMES)
def test_finfo(name):
    t, e = getattr(torch, name), getattr(ember, name)
    try:
        ti = torch.finfo(t)
    except TypeError:
        with pytest.raises(TypeError):
            ember.finfo(e)
        return
    ei = ember.finfo(e)
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ei, attr) == getattr(ti, attr), attr
        assert type(getattr(ei, attr)) is type(getattr(ti, attr)), attr
    assert repr(ei) == repr(ti)
    assert str(ei) == str(ti)


@pytest.mark.parametrize("name", NAMES)
def test_iinfo(name):
    t, e = getattr(torch, name), getattr(ember, name)
    try:
        ti = torch.iinfo(t)
    except TypeError as exc:
        with pytest.raises(TypeError) as eexc:
            ember.iinfo(e)
        if name == "bool":
            assert str(eexc.value) == str(exc)
        return
    ei = ember.iinfo(e)
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(ei, attr) == getattr(ti, attr), attr
        assert type(getattr(ei, attr)) is type(getattr(ti, attr)), attr
    assert repr(ei) == repr(ti)


def test_finfo_default_and_equality(default_dtype):
    assert repr(ember.finfo()) == repr(torch.finfo())
    assert ember.finfo(ember.float32) == ember.finfo(ember.complex64)
    assert ember.finfo(ember.float32) != ember.finfo(ember.float64)
    assert ember.iinfo(ember.int8) == ember.iinfo(ember.int8)
    torch.set_default_dtype(torch.float64)
    ember.set_default_dtype(ember.float64)
    assert repr(ember.finfo()) == repr(torch.finfo())


# ------------------------------------------------------------------------------ promotion


def test_promote_types_all_pairs():
    for a, b in itertools.product(NAMES, NAMES):
        want = _name(torch.promote_types(getattr(torch, a), getattr(torch, b)))
        got = ember.promote_types(getattr(ember, a), getattr(ember, b))
        assert got.name == want, (a, b)


def test_can_cast_all_pairs():
    for a, b in itertools.product(NAMES, NAMES):
        want = torch.can_cast(getattr(torch, a), getattr(torch, b))
        assert ember.can_cast(getattr(ember, a), getattr(ember, b)) is want, (a, b)


def test_promote_types_errors():
    for args in [(1, 2), ("float32", "float32")]:
        with pytest.raises(TypeError):
            torch.promote_types(*args)
        with pytest.raises(TypeError):
            ember.promote_types(*args)
    with pytest.raises(TypeError):
        ember.can_cast(1, ember.float32)


SCALARS = [True, False, 0, 2, -3, 2.5, -0.0, 1 + 2j]


def _operands(lib):
    ops = []
    for n in NAMES:
        ops.append((f"t1[{n}]", lib.ones(2, dtype=getattr(lib, n))))
        ops.append((f"t0[{n}]", lib.ones((), dtype=getattr(lib, n))))
        ops.append((f"t_empty[{n}]", lib.ones(0, dtype=getattr(lib, n))))
    for s in SCALARS:
        ops.append((repr(s), s))
    return ops


def _result_type(lib, a, b):
    try:
        return _name(lib.result_type(a, b))
    except Exception as exc:  # noqa: BLE001 - compared by class
        return "raises " + type(exc).__name__


@pytest.mark.parametrize("default", FLOATS)
def test_result_type_all_pairs(default, default_dtype):
    torch.set_default_dtype(getattr(torch, default))
    ember.set_default_dtype(getattr(ember, default))
    bad = []
    for (na, ta), (_, ea) in zip(_operands(torch), _operands(ember)):
        for (nb, tb), (_, eb) in zip(_operands(torch), _operands(ember)):
            want = _result_type(torch, ta, tb)
            if want == "complex32":  # ember has no complex32
                want = "complex64"
            got = _result_type(ember, ea, eb)
            if got != want:
                bad.append((na, nb, want, got))
    assert not bad, bad[:10]


def test_result_type_numpy_scalars():
    # torch reads NumPy scalars as Python numbers: np.bool_ counts as a *float* scalar
    scalars = [
        np.float64(2.0),
        np.float32(2.0),
        np.int64(3),
        np.int8(1),
        np.bool_(True),
        np.complex128(1j),
        np.float16(1.0),
    ]
    for n in NAMES:
        for s in scalars:
            want = _result_type(torch, torch.ones(2, dtype=getattr(torch, n)), s)
            if want == "complex32":
                want = "complex64"
            got = _result_type(ember, ember.ones(2, dtype=getattr(ember, n)), s)
            assert got == want, (n, s)


_kind = st.sampled_from(["dim", "zero", "empty", "scalar"])


@st.composite
def _operand(draw):
    kind = draw(_kind)
    if kind == "scalar":
        return kind, draw(
            st.one_of(
                st.booleans(),
                st.integers(-5, 5),
                st.floats(-4, 4, allow_nan=False),
                st.complex_numbers(max_magnitude=4, allow_nan=False),
            )
        )
    return kind, draw(st.sampled_from(NAMES))


def _build(lib, spec):
    kind, v = spec
    if kind == "scalar":
        return v
    shape = {"dim": (3,), "zero": (), "empty": (0,)}[kind]
    return lib.ones(shape, dtype=getattr(lib, v))


@settings(max_examples=150, deadline=None)
@given(a=_operand(), b=_operand(), default=st.sampled_from(["float32", "float64", "bfloat16"]))
def test_result_type_hypothesis(a, b, default):
    torch.set_default_dtype(getattr(torch, default))
    ember.set_default_dtype(getattr(ember, default))
    try:
        ta, tb = _build(torch, a), _build(torch, b)
        ea, eb = _build(ember, a), _build(ember, b)
        want = _result_type(torch, ta, tb)
        want = "complex64" if want == "complex32" else want  # ember has no complex32
        assert _result_type(ember, ea, eb) == want
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)


# ------------------------------------------------------------------------------ predicates


@pytest.mark.parametrize("name", NAMES)
def test_is_floating_point_is_complex(name):
    t = torch.ones(2, dtype=getattr(torch, name))
    e = ember.ones(2, dtype=getattr(ember, name))
    assert ember.is_floating_point(e) == torch.is_floating_point(t)
    assert ember.is_complex(e) == torch.is_complex(t)
    assert e.is_floating_point() == t.is_floating_point()
    assert e.is_complex() == t.is_complex()
    assert e.is_signed() == t.is_signed()
    assert e.element_size() == t.element_size()
    assert e.itemsize == t.itemsize
    assert e.nbytes == t.nbytes


def test_result_type_rejects_non_numbers():
    for args in [("a", 1), (None, 1.0), ([1], 2)]:
        with pytest.raises(TypeError):
            torch.result_type(*args)
        with pytest.raises(TypeError):
            ember.result_type(*args)


def test_predicates_reject_non_tensors():
    for fn in ("is_floating_point", "is_complex"):
        with pytest.raises(TypeError):
            getattr(torch, fn)(1.5)
        with pytest.raises(TypeError):
            getattr(ember, fn)(1.5)

"""Oracle tests: binary and ternary pointwise ops (arithmetic, division family, powers, min/max,
clamp, lerp, addcmul/addcdiv, atan2, hypot, logaddexp, xlogy, copysign, heaviside, nextafter,
ldexp, frexp) compared with torch: values, dtypes, broadcasting, gradients (ties and boundaries
included), double backward, in-place, out=, errors."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

pytestmark = [
    pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

# name -> (fn, (low, high) of x, (low, high) of y, differentiable)
BINARY = {
    "add": (lambda lib, x, y: lib.add(x, y, alpha=-1.5), (-2, 2), (-2, 2), True),
    "sub": (lambda lib, x, y: lib.subtract(x, y), (-2, 2), (-2, 2), True),
    "mul": (lambda lib, x, y: lib.multiply(x, y), (-2, 2), (-2, 2), True),
    "div": (lambda lib, x, y: lib.divide(x, y), (-2, 2), (0.5, 2), True),
    "true_divide": (lambda lib, x, y: lib.true_divide(x, y), (-2, 2), (0.5, 2), True),
    "div_trunc": (lambda lib, x, y: lib.div(x, y, rounding_mode="trunc"), (-5, 5), (0.3, 2), True),
    "div_floor": (lambda lib, x, y: x.div(y, rounding_mode="floor"), (-5, 5), (-2, -0.3), True),
    "fmod": (lambda lib, x, y: lib.fmod(x, y), (-5, 5), (0.3, 2), True),
    "remainder": (lambda lib, x, y: lib.remainder(x, y), (-5, 5), (-2, -0.3), True),
    "mod_op": (lambda lib, x, y: x % y, (-5, 5), (0.3, 2), True),
    "pow": (lambda lib, x, y: lib.pow(x, y), (0.2, 2), (-2, 2), True),
    "float_power": (lambda lib, x, y: lib.float_power(x, y), (0.2, 2), (-2, 2), True),
    "atan2": (lambda lib, x, y: lib.atan2(x, y), (-2, 2), (-2, 2), True),
    "arctan2": (lambda lib, x, y: lib.arctan2(x, y), (-2, 2), (-2, 2), True),
    "hypot": (lambda lib, x, y: lib.hypot(x, y), (-2, 2), (-2, 2), True),
    "logaddexp": (lambda lib, x, y: lib.logaddexp(x, y), (-3, 3), (-3, 3), True),
    "logaddexp2": (lambda lib, x, y: lib.logaddexp2(x, y), (-3, 3), (-3, 3), True),
    "xlogy": (lambda lib, x, y: lib.xlogy(x, y), (-2, 2), (0.2, 3), True),
    "copysign": (lambda lib, x, y: lib.copysign(x, y), (-2, 2), (-2, 2), True),
    "nextafter": (lambda lib, x, y: lib.nextafter(x, y), (-2, 2), (-2, 2), True),
    "ldexp": (lambda lib, x, y: lib.ldexp(x, y), (-2, 2), (-3, 3), True),
    "maximum": (lambda lib, x, y: lib.maximum(x, y), (-2, 2), (-2, 2), True),
    "minimum": (lambda lib, x, y: lib.minimum(x, y), (-2, 2), (-2, 2), True),
    "fmax": (lambda lib, x, y: lib.fmax(x, y), (-2, 2), (-2, 2), True),
    "fmin": (lambda lib, x, y: lib.fmin(x, y), (-2, 2), (-2, 2), True),
    "max_binary": (lambda lib, x, y: lib.max(x, y), (-2, 2), (-2, 2), True),
    "clamp_min_t": (lambda lib, x, y: lib.clamp_min(x, y), (-2, 2), (-2, 2), True),
    "clamp_max_t": (lambda lib, x, y: x.clamp_max(y), (-2, 2), (-2, 2), True),
    "clamp_t": (lambda lib, x, y: lib.clamp(x, min=y), (-2, 2), (-2, 2), True),
    "clip_t": (lambda lib, x, y: lib.clip(x, max=y), (-2, 2), (-2, 2), True),
    "lerp_t": (lambda lib, x, y: lib.lerp(x, y, y.sigmoid()), (-2, 2), (-2, 2), True),
    "lerp_s": (lambda lib, x, y: lib.lerp(x, y, 0.7), (-2, 2), (-2, 2), True),
    "heaviside": (lambda lib, x, y: lib.heaviside(x, y), (-2, 2), (-2, 2), False),
    "floor_divide": (lambda lib, x, y: lib.floor_divide(x, y), (-5, 5), (0.3, 2), False),
}
NO_DOUBLE = {"div_trunc", "div_floor", "heaviside", "floor_divide", "nextafter"}
SHAPES = [
    ((), ()),
    ((4,), (4,)),
    ((2, 3), (3,)),
    ((3, 1, 2), (4, 1)),
    ((0, 3), (3,)),
    ((2, 3), ()),
    ((1,), (2, 1)),
]


def _xy(name, sa, sb, dtype="float64"):
    _, (xl, xh), (yl, yh), _ = BINARY[name]
    return rand(*sa, dtype=dtype, low=xl, high=xh), rand(*sb, dtype=dtype, low=yl, high=yh)


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("shapes", SHAPES)
def test_binary_float64(name, shapes):
    f, _, _, diff = BINARY[name]
    check(f, list(_xy(name, *shapes)), grad=diff)


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_binary_float_dtypes(name, dtype):
    f, _, _, diff = BINARY[name]
    if name in ("float_power",):
        diff = dtype != "bfloat16"
    check(f, list(_xy(name, (3, 4), (4,), dtype)), grad=diff)


@pytest.mark.parametrize("name", [n for n in BINARY if n not in NO_DOUBLE])
def test_binary_double_backward(name):
    f = BINARY[name][0]
    check_double_backward(f, list(_xy(name, (3, 4), (4,))))


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize(
    "dtypes",
    [
        ("int64", "int64"),
        ("int32", "float32"),
        ("bool", "int64"),
        ("uint8", "int8"),
        ("int64", "float64"),
        ("float16", "float32"),
        ("bool", "bool"),
    ],
)
def test_binary_dtype_promotion(name, dtypes):
    f = BINARY[name][0]
    x = rand(5, dtype=dtypes[0], low=1, high=4)
    y = rand(5, dtype=dtypes[1], low=1, high=4)
    try:
        f(torch, torch.from_numpy(x.copy()), torch.from_numpy(y.copy()))
    except Exception:  # noqa: BLE001 - torch rejects it: ember must raise the same class
        check_raises(f, [x, y])
        return
    check(f, [x, y], grad=False, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_complex(name):
    f = BINARY[name][0]
    x, y = (
        rand(4, dtype="complex128", low=0.3, high=1),
        rand(4, dtype="complex128", low=0.3, high=1),
    )
    try:
        f(torch, torch.from_numpy(x.copy()), torch.from_numpy(y.copy()))
    except Exception:  # noqa: BLE001
        check_raises(f, [x, y])
        return
    check(f, [x, y], grad=False)


# ------------------------------------------------------------------------------ scalar operands

SCALAR = {
    "add_s": lambda lib, x: lib.add(x, 2, alpha=3),
    "rsub": lambda lib, x: lib.rsub(x, 2.5),
    "rsub_t": lambda lib, x: lib.rsub(x, x * 2),
    "div_s_floor": lambda lib, x: lib.div(x, 0.7, rounding_mode="floor"),
    "div_s_trunc": lambda lib, x: lib.div(x, -0.7, rounding_mode="trunc"),
    "fmod_s": lambda lib, x: lib.fmod(x, 0.7),
    "remainder_s": lambda lib, x: lib.remainder(x, -0.7),
    "rremainder": lambda lib, x: lib.remainder(1.5, x),
    "rmod": lambda lib, x: 1.5 % x,
    "pow_s": lambda lib, x: lib.pow(x.abs(), 2.5),
    "rpow": lambda lib, x: lib.pow(2.5, x),
    "rpow0": lambda lib, x: lib.pow(0, x),
    "square": lambda lib, x: lib.square(x),
    "float_power_s": lambda lib, x: lib.float_power(x.abs(), 1.5),
    "rfloat_power": lambda lib, x: lib.float_power(2, x),
    "xlogy_s": lambda lib, x: lib.xlogy(x, 3.0),
    "xlogy_rs": lambda lib, x: lib.xlogy(2.0, x.abs()),
    "copysign_s": lambda lib, x: lib.copysign(x, -1.0),
    "clamp_s": lambda lib, x: lib.clamp(x, -0.5, 0.5),
    "clamp_min_s": lambda lib, x: lib.clamp(x, min=-0.5),
    "clamp_max_s": lambda lib, x: x.clamp(max=0.5),
    "clamp_inverted": lambda lib, x: lib.clamp(x, 1.0, -1.0),
    "clip_s": lambda lib, x: x.clip(-0.5, 0.5),
    "clamp_min_fn": lambda lib, x: lib.clamp_min(x, 0.2),
    "clamp_max_fn": lambda lib, x: lib.clamp_max(x, 0.2),
    "clamp_mixed": lambda lib, x: lib.clamp(x, min=-0.5, max=lib.tensor(0.5, dtype=x.dtype)),
    "addcmul": lambda lib, x: lib.addcmul(x, x * 2, x + 1, value=0.5),
    "addcdiv": lambda lib, x: lib.addcdiv(x, x * 2, x * x + 1, value=-2),
    "addcmul_m": lambda lib, x: x.addcmul(x, x),
    "frexp": lambda lib, x: lib.frexp(x * 10),
    "frexp_m": lambda lib, x: x.frexp().mantissa * 2,
}
SCALAR_NODIFF = {"rremainder", "rmod", "frexp_exp"}


@pytest.mark.parametrize("name", list(SCALAR))
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (0,)])
def test_scalar_operands(name, shape):
    check(SCALAR[name], [rand(*shape, dtype="float64")], grad=name not in SCALAR_NODIFF)


@pytest.mark.parametrize("name", [n for n in SCALAR if n not in SCALAR_NODIFF])
def test_scalar_operands_double_backward(name):
    check_double_backward(SCALAR[name], [rand(3, 2, dtype="float64")])


def test_not_implemented_derivatives():
    for f in (
        lambda lib, x: lib.remainder(1.5, x),
        lambda lib, x: lib.floor_divide(x, 0.3),
        lambda lib, x: lib.heaviside(x, x),
    ):
        check_raises(
            lambda lib, x, f=f: f(lib, x).sum().backward(),
            [rand(3, dtype="float64")],
            grad=True,
            match_message=True,
        )


# ------------------------------------------------------------------------------ gradients at ties

TIES = np.array([1.0, 2.0, -1.0, 0.0, np.nan, 3.0, np.nan])
TIES_Y = np.array([1.0, 1.0, -1.0, 0.5, 1.0, np.nan, np.nan])


@pytest.mark.parametrize(
    "name",
    [
        "maximum",
        "minimum",
        "fmax",
        "fmin",
        "clamp_min_t",
        "clamp_max_t",
        "clamp_t",
        "clip_t",
        "max_binary",
    ],
)
def test_ties_and_nan(name):
    check(BINARY[name][0], [TIES, TIES_Y])


def test_clamp_boundaries():
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, np.nan])
    check(lambda lib, x: lib.clamp(x, -0.5, 0.5), [x])
    check(lambda lib, x: lib.clamp(x, min=0.5), [x])
    lo = np.array([-0.5, -0.5, 0.0, 1.0, 2.0, 0.0])
    hi = np.array([0.5, -0.5, 0.0, 0.5, 1.0, 1.0])
    check(lambda lib, x, lo, hi: lib.clamp(x, lo, hi), [x, lo, hi])
    check(lambda lib, x, lo, hi: lib.clamp(x, min=lo, max=hi), [x, hi, lo])
    check_double_backward(lambda lib, x, lo, hi: lib.clamp(x, lo, hi) ** 2, [x[:5], lo[:5], hi[:5]])


def test_clamp_dtypes():
    check(lambda lib, x: lib.clamp(x, min=0.5), [rand(4, dtype="int64")], grad=False)
    check(lambda lib, x: lib.clamp(x, 0, 1), [rand(4, dtype="int64", low=-3, high=3)], grad=False)
    check(lambda lib, x: lib.clamp(x, min=0), [rand(4, dtype="bool")], grad=False)
    check(lambda lib, x, y: lib.clamp(x, min=y), [rand(4, dtype="int64"), rand(4)], grad=False)
    check(lambda lib, x, y: lib.clamp(x, min=y), [rand(4, dtype="float16"), rand(4)])
    check(lambda lib, x: lib.clamp(x, min=0.3), [rand(4, dtype="bfloat16")])
    check_raises(lambda lib, x: lib.clamp(x), [rand(3)], match_message=True)
    check_raises(
        lambda lib, x: lib.clamp(x, min=False), [rand(3, dtype="bool")], match_message=True
    )
    check_raises(lambda lib, x: lib.clamp(x, max=True), [rand(3, dtype="bool")], match_message=True)
    check_raises(
        lambda lib, x: lib.clamp(x, 0, 1), [rand(3, dtype="complex64")], match_message=True
    )
    check_raises(lambda lib, x: x.clamp_(min=0.5), [rand(3, dtype="int64")])
    check_raises(lambda lib, x: lib.clamp_min(x, None), [rand(3)])


def test_lerp_rules():
    check(lambda lib, x, y: lib.lerp(x, y, 0.5), [rand(3, 1), rand(1, 2)])
    check(lambda lib, x, y, w: lib.lerp(x, y, w), [rand(3, 1), rand(2), rand(3, 2)])
    check(lambda lib, x, y: lib.lerp(x, y, lib.tensor(0.25, dtype=lib.float64)), [rand(3), rand(3)])
    check_raises(
        lambda lib, x, y: lib.lerp(x, y, 0.5),
        [rand(3), rand(3, dtype="float64")],
        match_message=True,
    )
    check_raises(
        lambda lib, x, y, w: lib.lerp(x, y, w),
        [rand(3), rand(3), rand(3, dtype="float64")],
        match_message=True,
    )
    check_raises(
        lambda lib, x, y: lib.lerp(x, y, 0.5), [rand(3, dtype="int64")] * 2, match_message=True
    )


def test_addcmul_addcdiv_rules():
    i = rand(4, dtype="int64", low=1, high=5)
    check(lambda lib, x: lib.addcmul(x, x, x, value=2), [i], grad=False)
    check(lambda lib, x: lib.addcmul(x, x, x, value=0.5), [i], grad=False)
    check(lambda lib, x, y: lib.addcmul(x, y, x), [i, rand(4)], grad=False)
    check(lambda lib, x, y, z: lib.addcdiv(x, y, z), [rand(2, 1), rand(3), rand(2, 3)])
    check_raises(lambda lib, x: lib.addcdiv(x, x, x), [i], match_message=True)


def test_pow_rules():
    i = np.array([2, 0, -1, 1, 3])
    check(lambda lib, x: lib.pow(x, 2), [i], grad=False)
    check(lambda lib, x: lib.pow(x, 0.5), [i], grad=False)
    check(lambda lib, x, y: lib.pow(x, y), [i, np.array([-1, -2, -3, -1, 2])], grad=False)
    check(lambda lib, x: lib.pow(2, x), [i], grad=False)
    check(lambda lib, x: 2**x, [i], grad=False)
    check(lambda lib, x: lib.pow(x, 2), [rand(3, dtype="bool")], grad=False)
    check_raises(lambda lib, x: lib.pow(x, -1), [i], match_message=True)
    check_raises(lambda lib, x: x**-2, [i], match_message=True)
    x = np.array([0.0, 0.5, 2.0, 0.0])
    check(lambda lib, x, y: lib.pow(x, y), [x, np.array([0.0, 0.0, 2.0, 2.0])])
    check(lambda lib, x: lib.pow(0.0, x), [np.array([0.0, 1.0, 2.0, -1.0])])
    check(lambda lib, x: lib.pow(x, 0), [x])
    check(lambda lib, x: lib.float_power(x, 2), [i], grad=False)
    check(lambda lib, x: lib.float_power(x, 2j), [rand(3)], grad=False)


def test_division_rules():
    i = np.array([7, -7, 7, -7, 0])
    j = np.array([2, 2, -2, -2, 3])
    for mode in ("trunc", "floor"):
        check(lambda lib, x, y, m=mode: lib.div(x, y, rounding_mode=m), [i, j], grad=False)
        check_raises(
            lambda lib, x, y, m=mode: lib.div(x, y, rounding_mode=m),
            [i, np.zeros(5, dtype=np.int64)],
            match_message=True,
        )
        check_raises(
            lambda lib, x, m=mode: lib.div(x, x, rounding_mode=m),
            [rand(3, dtype="bool")],
            match_message=True,
        )
    check(lambda lib, x, y: x // y, [i, j], grad=False)
    check(lambda lib, x: lib.div(x, 0.1, rounding_mode="floor"), [np.array([1.0, -1.0, 0.3])])
    check(lambda lib, x: x // 0.1, [np.array([1.0, -1.0, 0.3])], grad=False)
    check(lambda lib, x: lib.fmod(x, 0.0), [rand(3)])
    check(lambda lib, x: lib.remainder(x, 0.0), [rand(3)])
    check(lambda lib, x, y: lib.fmod(x, y), [i, j], grad=False)
    check(lambda lib, x, y: lib.remainder(x, y), [i, j], grad=False)
    for f in (
        lambda lib, x: lib.fmod(x, 0),
        lambda lib, x: lib.remainder(x, 0),
        lambda lib, x: lib.floor_divide(x, 0),
    ):
        check_raises(f, [i], match_message=True)
    check_raises(lambda lib, x: lib.div(x, 2, rounding_mode="round"), [rand(3)], match_message=True)
    check_raises(lambda lib, x: lib.fmod(x, x), [rand(3, dtype="bool")], match_message=True)


def test_alpha_rules():
    i = rand(3, dtype="int64")
    check_raises(lambda lib, x: lib.add(x, 1, alpha=0.5), [i], match_message=True)
    check_raises(lambda lib, x: lib.sub(x, 1, alpha=True), [i], match_message=True)
    check(lambda lib, x: lib.add(x, True, alpha=True), [rand(3, dtype="bool")], grad=False)
    check(lambda lib, x: lib.add(x, 2, alpha=3), [i], grad=False)


def test_xlogy_special_points():
    x = np.array([0.0, 0.0, 1.0, 2.0, 0.0, 3.0])
    y = np.array([0.0, np.nan, 0.0, -1.0, 2.0, 2.0])
    check(lambda lib, x, y: lib.xlogy(x, y), [x, y])
    check(lambda lib, x: lib.xlogy(x, 0.0), [x])


def test_copysign_heaviside_nextafter():
    x = np.array([0.0, -0.0, 1.0, -2.0, np.nan])
    y = np.array([-1.0, 1.0, -0.0, 0.0, -1.0])
    check(lambda lib, x, y: lib.copysign(x, y), [x, y])
    check(lambda lib, x, y: lib.heaviside(x, y), [x, y], grad=False)
    check(
        lambda lib, x, y: lib.heaviside(x, y),
        [rand(4, dtype="int64"), rand(1, dtype="int64")],
        grad=False,
    )
    check_raises(
        lambda lib, x, y: lib.heaviside(x, y),
        [rand(3), rand(3, dtype="float64")],
        match_message=True,
    )
    check(lambda lib, x, y: lib.nextafter(x, y), [x, y])
    check(lambda lib, x: lib.signbit(x), [x], grad=False)


def test_logaddexp_extremes():
    x = np.array([np.inf, -np.inf, np.inf, 1000.0, -1000.0, 0.0])
    y = np.array([np.inf, -np.inf, -np.inf, 1000.0, -1000.0, -800.0])
    check(lambda lib, x, y: lib.logaddexp(x, y), [x, y], grad=False)
    check(lambda lib, x, y: lib.logaddexp2(x, y), [x, y], grad=False)
    check(lambda lib, x, y: lib.logaddexp(x, y), [x[3:], y[3:]])


def test_ldexp_frexp():
    check(lambda lib, x, e: lib.ldexp(x, e), [rand(4), rand(4, dtype="int64", low=-3, high=4)])
    check(
        lambda lib, x, e: lib.ldexp(x, e),
        [rand(4, dtype="int32"), rand(4, dtype="int64")],
        grad=False,
    )
    v = np.array([8.0, 0.3, 0.0, -5.5, np.inf, 1e-310])
    for dtype in ("float64", "float32", "float16", "bfloat16"):
        check(
            lambda lib, x: lib.frexp(x),
            [v.astype(np.float32).astype(np.float32 if dtype == "bfloat16" else dtype)],
            grad=False,
        )
    check_raises(lambda lib, x: lib.frexp(x), [rand(3, dtype="int64")], match_message=True)

    def named(lib, x):
        r = lib.frexp(x)
        assert type(r).__name__ == "frexp" and r.exponent.dtype == lib.int32
        return r.mantissa, r[1]

    check(named, [rand(3, dtype="float64")])


# ------------------------------------------------------------------------------ in-place

INPLACE = {
    "fmod_": lambda x, y: x.fmod_(y),
    "remainder_": lambda x, y: x.remainder_(0.7),
    "imod": lambda x, y: x.__imod__(y),
    "floor_divide_": lambda x, y: x.floor_divide_(y),
    "atan2_": lambda x, y: x.atan2_(y),
    "arctan2_": lambda x, y: x.arctan2_(y),
    "hypot_": lambda x, y: x.hypot_(y),
    "xlogy_": lambda x, y: x.xlogy_(y.abs()),
    "xlogy_s_": lambda x, y: x.xlogy_(2.0),
    "copysign_": lambda x, y: x.copysign_(y),
    "copysign_s_": lambda x, y: x.copysign_(-1.0),
    "nextafter_": lambda x, y: x.nextafter_(y),
    "ldexp_": lambda x, y: x.ldexp_(y),
    "clamp_": lambda x, y: x.clamp_(-0.5, 0.5),
    "clamp_t_": lambda x, y: x.clamp_(min=y),
    "clip_": lambda x, y: x.clip_(max=0.3),
    "clamp_min_": lambda x, y: x.clamp_min_(0.1),
    "clamp_max_t_": lambda x, y: x.clamp_max_(y),
    "lerp_": lambda x, y: x.lerp_(y, 0.3),
    "lerp_t_": lambda x, y: x.lerp_(y, y.sigmoid()),
    "addcmul_": lambda x, y: x.addcmul_(y, y, value=2),
    "addcdiv_": lambda x, y: x.addcdiv_(y, y * y + 1),
    "pow_": lambda x, y: x.abs_().pow_(y),
    "square_": lambda x, y: x.square_(),
    "float_power_": lambda x, y: x.float_power_(2),
    "heaviside_": lambda x, y: x.heaviside_(y),
    "div_floor_": lambda x, y: x.div_(y, rounding_mode="floor"),
}
INPLACE_NODIFF = {"floor_divide_", "heaviside_", "nextafter_"}


@pytest.mark.parametrize("name", list(INPLACE))
def test_binary_inplace(name):
    x, y = rand(2, 3, dtype="float64"), rand(3, dtype="float64", low=0.5, high=2)
    f = INPLACE[name]
    check(lambda lib, x, y: f(x, y), [x, y], grad=False)
    if name not in INPLACE_NODIFF:
        check(lambda lib, x, y: f(x * 1, y), [x, y])


def test_inplace_errors():
    check_raises(lambda lib, x: x.float_power_(2), [rand(3)], match_message=True)
    check_raises(lambda lib, x, y: x.hypot_(y), [rand(3), rand(2, 3)])
    check_raises(lambda lib, x, y: x.copysign_(y), [rand(3, dtype="int64"), rand(3)])
    check_raises(lambda lib, x, y: x.atan2_(y), [rand(3, dtype="int64")] * 2)
    check_raises(lambda lib, x: x.maximum_(x), [rand(3)]) if hasattr(
        torch.Tensor, "maximum_"
    ) else None


# ------------------------------------------------------------------------------ out=

OUT = [
    "add",
    "sub",
    "mul",
    "div",
    "fmod",
    "remainder",
    "pow",
    "atan2",
    "hypot",
    "logaddexp",
    "xlogy",
    "copysign",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "nextafter",
    "ldexp",
    "floor_divide",
    "heaviside",
    "float_power",
]


@pytest.mark.parametrize("name", OUT)
def test_binary_out(name):
    x, y = rand(2, 3, dtype="float64", low=0.2, high=2), rand(3, dtype="float64", low=0.5, high=2)

    def f(lib, x, y):
        out = lib.empty(2, 3, dtype=lib.float64)
        r = getattr(lib, name)(x, y, out=out)
        assert r is out
        return out

    check(f, [x, y], grad=False)

    def resized(lib, x, y):
        out = lib.empty(5, dtype=lib.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(lib, name)(x, y, out=out)
        return out

    check(resized, [x, y], grad=False)
    with_grad = lambda lib, x, y: getattr(lib, name)(x, y, out=lib.empty(2, 3))  # noqa: E731
    if name == "floor_divide":  # not differentiable: torch allows out= with inputs needing grad
        res = [
            with_grad(lib, lib.from_numpy(x).requires_grad_(), lib.from_numpy(y))
            for lib in (torch, ember)
        ]
        np.testing.assert_array_equal(res[1].numpy(), res[0].detach().numpy())
    else:
        check_raises(with_grad, [x, y], grad=True)


def test_ternary_out():
    x, y, z = rand(2, 3, dtype="float64"), rand(3, dtype="float64"), rand(2, 1, dtype="float64")
    check(
        lambda lib, x, y, z: lib.lerp(x, y, 0.3, out=lib.empty(2, 3, dtype=lib.float64)),
        [x, y, z],
        grad=False,
    )
    check(
        lambda lib, x, y, z: lib.addcmul(x, y, z, out=lib.empty(0, dtype=lib.float64)),
        [x, y, z],
        grad=False,
    )
    check(
        lambda lib, x, y, z: lib.clamp(x, y, z + 1, out=lib.empty(2, 3, dtype=lib.float64)),
        [x, y, z],
        grad=False,
    )
    check(
        lambda lib, x, y, z: lib.clamp(x, -0.1, 0.1, out=lib.empty(2, 3, dtype=lib.float64)),
        [x, y, z],
        grad=False,
    )

    def frexp_out(lib, x, y, z):
        m, e = lib.empty(2, 3, dtype=lib.float64), lib.empty(2, 3, dtype=lib.int32)
        r = lib.frexp(x, out=(m, e))
        assert r[0] is m and r[1] is e
        return m, e, type(r).__name__

    check(frexp_out, [x, y, z], grad=False)
    check_raises(lambda lib, x: lib.add(x, 1, out=lib.empty(2, 3, dtype=lib.int64)), [x])


# ------------------------------------------------------------------------------ argument errors


def test_tensor_arguments_required():
    x = rand(3)
    for name in (
        "maximum",
        "minimum",
        "fmax",
        "fmin",
        "hypot",
        "logaddexp",
        "logaddexp2",
        "atan2",
        "nextafter",
        "ldexp",
        "heaviside",
    ):
        check_raises(lambda lib, x, name=name: getattr(lib, name)(x, 1.5), [x], match_message=True)
        check_raises(lambda lib, x, name=name: getattr(lib, name)(1.5, x), [x], match_message=True)
    check_raises(lambda lib, x: lib.maximum(x, x, out=x.numpy()), [x])
    check_raises(lambda lib, x, y: x + y, [rand(3), rand(4)], match_message=True)
    check_raises(lambda lib, x: lib.maximum(x, x), [rand(3, dtype="complex64")], match_message=True)


# ------------------------------------------------------------------------------ hypothesis

_shapes = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4)
_dtypes = st.sampled_from(["float64", "float32", "int64", "int32", "bool", "float16"])


@settings(max_examples=80, deadline=None)
@given(shapes=_shapes, name=st.sampled_from(list(BINARY)), da=_dtypes, db=_dtypes)
def test_binary_hypothesis(shapes, name, da, db):
    f, (xl, xh), (yl, yh), diff = BINARY[name]
    sa, sb = shapes.input_shapes
    x = rand(*sa, dtype=da, low=xl if da != "bool" else 0, high=xh)
    y = rand(*sb, dtype=db, low=yl if db != "bool" else 0, high=yh)
    if da.startswith(("int", "bool")):
        x = rand(*sa, dtype=da, low=1, high=4)
    if db.startswith(("int", "bool")):
        y = rand(*sb, dtype=db, low=1, high=4)
    try:
        f(torch, torch.from_numpy(x.copy()), torch.from_numpy(y.copy()))
    except Exception:  # noqa: BLE001
        check_raises(f, [x, y])
        return
    grad = diff and da == db == "float64"
    check(
        f,
        [x, y],
        grad=grad,
        rtol=1e-3 if "float16" in (da, db) else 1e-6,
        atol=1e-3 if "float16" in (da, db) else 1e-6,
    )


def test_ember_namespace_has_the_pointwise_ops():
    names = (
        "float_power fmax fmin lerp addcmul addcdiv hypot logaddexp logaddexp2 xlogy "
        "copysign heaviside nextafter ldexp frexp clamp clip clamp_min clamp_max"
    ).split()
    for n in names:
        assert callable(getattr(ember, n)), n
        assert callable(getattr(ember.Tensor, n)), n


# ------------------------------------------------------------------------------ temporaries

BIG = 1 << 17  # above the size where operators reuse a temporary's memory


def test_temporaries_reused_named_tensors_untouched(monkeypatch):
    from ember._ops import operators

    reused = []
    real = operators._reusable
    monkeypatch.setattr(
        operators, "_reusable", lambda t, o: reused.append(real(t, o)) or reused[-1]
    )
    a = np.random.default_rng(3).standard_normal(BIG).astype(np.float32)
    b = np.random.default_rng(4).standard_normal(BIG).astype(np.float32)
    x, y = ember.from_numpy(a.copy()), ember.from_numpy(b.copy())
    ref = (a * 2.5 + 1.0) / (b * b + 1.5) - a
    t = x * 2.5
    out = (x * 2.5 + 1.0) / (y * y + 1.5) - x
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal(y.numpy(), b)
    np.testing.assert_array_equal(t.numpy(), a * np.float32(2.5))
    # reflected and second-operand temporaries; a named operand is never written
    s = 2.0 - (x * 3)
    u = x - (y * 3)
    v = 1.5 * (x + 1) + t
    np.testing.assert_allclose(s.numpy(), 2 - a * 3, rtol=1e-6)
    np.testing.assert_allclose(u.numpy(), a - b * 3, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), 1.5 * (a + 1) + a * 2.5, rtol=1e-6)
    np.testing.assert_array_equal(t.numpy(), a * np.float32(2.5))
    # the buffer of a temporary is reused, a named tensor's never
    reused.clear()
    w = x * 2
    assert (w + 1).data_ptr() != w.data_ptr()
    assert reused == []
    r = (x * 2) + 1
    assert reused == [True] and r.data_ptr() != x.data_ptr()


def test_temporaries_not_reused_with_autograd_or_views():
    a = np.random.default_rng(5).standard_normal(BIG)
    for lib in (ember,):
        x = lib.from_numpy(a.copy()).requires_grad_()
        y = ((x * 2) * (x * 3) + 1).sum()
        (g,) = lib.autograd.grad(y, x)
        np.testing.assert_allclose(g.numpy(), 12 * a, rtol=1e-12)
        z = lib.from_numpy(a.copy())
        v = z * 1
        view = v[::2]
        r = v + 1  # v is named and viewed: never written
        assert np.array_equal(view.numpy(), a[::2])
        assert np.array_equal(r.numpy(), a + 1)
        # a temporary view of a temporary is not written either
        q = (z * 1)[::2] + 1
        np.testing.assert_array_equal(q.numpy(), a[::2] + 1)


def test_temporaries_dtypes_and_broadcast_match_torch():
    for dt in ("float32", "float64", "float16", "int64"):
        x = rand(BIG // 4, 4, dtype=dt, low=1, high=3)
        y = rand(4, dtype=dt, low=1, high=3)
        check(
            lambda lib, x, y: (x * 2 + y) * (y + 1) - 3,
            [x, y],
            grad=False,
            rtol=1e-3 if dt == "float16" else None,
            atol=1e-2 if dt == "float16" else None,
        )
        check(
            lambda lib, x, y: (y + 1) / (x * 2),
            [x, y],
            grad=False,
            rtol=1e-3 if dt == "float16" else None,
            atol=1e-2 if dt == "float16" else None,
        )
    # the temporary is smaller than the result: no reuse, same answer
    check(lambda lib, x, y: (y * 2) + x, [rand(BIG // 4, 4), rand(4)], grad=False)


def test_inplace_methods_compute_in_place():
    a = np.random.default_rng(6).standard_normal(1000)
    x = ember.from_numpy(a.copy())
    ptr = x.data_ptr()
    x.mul_(2).add_(1, alpha=3).sub_(0.5).div_(2).clamp_(-1, 1).exp_().sqrt_()
    assert x.data_ptr() == ptr and x._version == 7
    np.testing.assert_allclose(x.numpy(), np.sqrt(np.exp(np.clip((a * 2 + 3 - 0.5) / 2, -1, 1))))
    check_raises(lambda lib, x, y: x.mul_(y), [rand(3), rand(2, 3)], match_message=True)
    check_raises(lambda lib, x, y: x.add_(y), [rand(3, dtype="int64"), rand(3)], match_message=True)


def test_clamp_inplace_0d():
    check(lambda lib, x: x.clamp_(0, 1), [np.asarray(1.5)], grad=False)
    check(lambda lib, x: x.clamp_(min=0.25), [np.asarray(-1.5)], grad=False)

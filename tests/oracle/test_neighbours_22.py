"""Issue 22's neighbouring bugs, against torch: half math beside a Python number (mul/div,
addcmul), clamp with a signed-zero bound, remainder's zero sign, pow of bool by a bool, Python
ints past int64 in tensor data, the profiler's random factories, logical ops of 0-d integer
tensors."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import ember
from tests.oracle.helper import torch


def _show(lib, fn):
    """A call's (dtype, values as repr: signed zeros told apart) or (error class, message)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(lib)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e)
    v = r.tolist()
    flat = list(np.ravel(np.array(v, dtype=object))) if isinstance(v, list) else [v]
    return str(r.dtype).split(".")[-1], [repr(a) for a in flat]


def _same(fn):
    assert _show(ember, fn) == _show(torch, fn)


HALF_VALUES = [0.0, 1e-4, 1.0, -2.0, 3.0, 60000.0, 1e-7, 2048.0]
HALF_OPS = {
    "mul": lambda x, s: x * s,
    "rmul": lambda x, s: s * x,
    "mul_": lambda x, s: x.clone().mul_(s),
    "div": lambda x, s: x / s,
    "rdiv": lambda x, s: s / x,
    "div_": lambda x, s: x.clone().div_(s),
    "floordiv": lambda x, s: x // s,
    "div_trunc": lambda x, s: x.div(s, rounding_mode="trunc"),
    "add": lambda x, s: x + s,
    "sub": lambda x, s: x - s,
    "pow": lambda x, s: x.abs() ** s,
}


@pytest.mark.parametrize("name", sorted(HALF_OPS))
def test_float16_math_with_python_number_computes_in_float(name):
    # torch's mul/div kernels take the number as a float32 beside float16 data
    f = HALF_OPS[name]
    for s in [2**31, 70000.0, 1e5, 1e-8, 1e-5, 3.3, 0.9999, 65536, 2**20 + 1, 1e39]:
        _same(lambda L, s=s: f(L.tensor(HALF_VALUES, dtype=L.float16), s))


def test_float16_math_random_values_bitwise():
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(3000) * [1, 100, 1e4, 1e-3][0]).astype(np.float16)
    a = np.concatenate([a, (rng.standard_normal(1000) * 1e4).astype(np.float16)])
    for s in [0.1, 1 / 3, 3.3, 1e5, 1e-5, 7.77]:
        for f in (HALF_OPS["mul"], HALF_OPS["div"], HALF_OPS["rdiv"], HALF_OPS["floordiv"]):
            got = f(ember.tensor(a), s).numpy()
            want = f(torch.tensor(a), s).numpy()
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_addcmul_of_reduced_floats_fuses_in_float32(dt):
    rng = np.random.default_rng(0)
    x, a, b = (rng.standard_normal(2000).astype(np.float32) * 10 for _ in range(3))
    for v in [0.1, 1 / 3, 3.3, 1.0, 1e10, -2.5]:

        def run(L, v=v):
            t = [L.tensor(arr).to(getattr(L, dt)) for arr in (x, a, b)]
            return L.addcmul(*t, value=v).float().numpy(), t[0].addcmul_(t[1], t[2], value=v)

        (eo, ei), (to, ti) = run(ember), run(torch)
        np.testing.assert_array_equal(eo, to)
        np.testing.assert_array_equal(ei.float().numpy(), ti.float().numpy())


def test_pow_exponent_range_checked_for_reduced_floats():
    for dt, e in itertools.product(["float16", "bfloat16", "float32"], [1e39, 70000.0, -1e39]):
        _same(lambda L, dt=dt, e=e: L.pow(L.tensor([0.5], dtype=getattr(L, dt)), e))
        _same(lambda L, dt=dt, e=e: L.tensor([0.5], dtype=getattr(L, dt)).pow_(e))


def _clamp_cases(dt, lo, hi):
    vals = [0.0, -0.0, -1.0, 1.0, math.nan]

    def x(L):
        return L.tensor(vals, dtype=getattr(L, dt))

    def t(L, b):
        return None if b is None else L.tensor(b, dtype=getattr(L, dt))

    def inplace(L):
        y = x(L)
        y.clamp_(lo, hi)
        return y

    def into(L):
        o = L.empty(5, dtype=getattr(L, dt))
        L.clamp(x(L), lo, hi, out=o)
        return o

    return [lambda L: x(L).clamp(lo, hi), inplace, into,
            lambda L: L.clamp(x(L), t(L, lo), t(L, hi))]  # fmt: skip


@pytest.mark.parametrize("dt", ["float32", "float16", "float64", "bfloat16"])
def test_clamp_keeps_input_on_a_signed_zero_tie(dt):
    for lo, hi in itertools.product([None, 0.0, -0.0, math.nan], [None, 0.0, -0.0]):
        if lo is not None or hi is not None:
            for case in _clamp_cases(dt, lo, hi):
                _same(case)
    vals = [0.0, -0.0, -1.0, 1.0, math.nan]
    _same(lambda L: L.clamp_min(L.tensor(vals), -0.0))
    _same(lambda L: L.clamp_max(L.tensor(vals), L.tensor(-0.0)))


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64"])
def test_remainder_zero_takes_the_dividends_sign(dt):
    data = [-2.0, 2.0, -0.0, 0.0, 4.0, -4.0, 5.5, -5.5, math.inf, 1.0]
    for d in (2, -2, 2.0, -2.5, math.inf):
        _same(lambda L, d=d: L.remainder(L.tensor(data, dtype=getattr(L, dt)), d))
        _same(lambda L, d=d: L.tensor(data, dtype=getattr(L, dt)) % d)
        _same(lambda L, d=d: L.tensor(data, dtype=getattr(L, dt)).remainder_(L.tensor(d)))
    _same(lambda L: 7.0 % L.tensor([2.0, -2.0, -7.0, 7.0], dtype=getattr(L, dt)))


def test_remainder_random_values_float32():
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(5000) * 100).astype(np.float32)
    b = (rng.standard_normal(5000) * 3).astype(np.float32)
    got = ember.remainder(ember.tensor(a), ember.tensor(b)).numpy()
    want = torch.remainder(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


POW_BOOL = [
    lambda L: L.pow(L.tensor([True, False]), True),
    lambda L: L.pow(L.tensor([True, False]), False),
    lambda L: L.tensor([True, False]) ** True,
    lambda L: L.tensor([True, False]).pow_(True),
    lambda L: L.tensor([True, False]).pow_(False),
    lambda L: L.pow(L.tensor([True, False]), True, out=L.empty(2, dtype=L.bool)),
    lambda L: L.pow(L.tensor([True, False]), L.tensor([True, False])),
    lambda L: L.pow(L.tensor([True, False]), L.tensor(True)),
    lambda L: L.pow(True, L.tensor([True, False])),
    lambda L: L.pow(L.tensor([True, False]), 1),
    lambda L: L.pow(L.tensor([2, 3], dtype=L.uint8), True),
]


@pytest.mark.parametrize("case", range(len(POW_BOOL)))
def test_pow_bool_by_bool(case):
    _same(POW_BOOL[case])


BIG_DATA = [
    [[1, 2**63]], [2**64 - 1], [2**64], [-1], [-(2**63)], [1, -(2**63) - 1], 2**63,
    [2**63, 1.5], [[2**63], [-1]], [2**70], [True, 2**63], [70000], [-70000], [-256],
    [-255], [1.5, -1], [-1.0], [70000.0], [1.5], [1.5, 2], 1.5,
]  # fmt: skip
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]


@pytest.mark.parametrize("dt", [*INT_DTYPES, "float32", None])
def test_tensor_data_past_int64(dt):
    for data in BIG_DATA:
        if dt is None:
            _same(lambda L, data=data: L.tensor(data))
        else:
            _same(lambda L, data=data: L.tensor(data, dtype=getattr(L, dt)))
    _same(lambda L: L.as_tensor([2**63], dtype=L.uint64))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda L: L.randn(3, 4), "aten::randn"),
        (lambda L: L.rand(3), "aten::rand"),
        (lambda L: L.randint(0, 5, (3,)), "aten::randint"),
        (lambda L: L.randperm(4), "aten::randperm"),
        (lambda L: L.randn_like(L.zeros(2)), "aten::randn_like"),
        (lambda L: L.rand_like(L.zeros(2)), "aten::rand_like"),
        (lambda L: L.normal(0.0, 1.0, (3,)), "aten::normal"),
    ],
)
def test_profiler_records_random_factories(call, name):
    def top(lib):
        x = lib.zeros(2)
        with lib.profiler.profile(record_shapes=True) as p:
            call(lib) if "like" not in name else getattr(lib, name[6:])(x)
        return [(e.name, e.input_shapes) for e in p.events() if e.name == name]

    got, want = top(ember), top(torch)
    assert len(got) == 1 and got[0] == want[0]  # (torch's randperm calls itself once more)


LOGICAL = ["logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("fn", LOGICAL)
def test_logical_ops_with_0d_integer_tensors(fn):
    for a, b in [(3, [0, 1, 2]), (0, [1.5, 0.0]), (2, [True, False])]:
        for da in ["int64", "int8", "uint8", "float32", "bool"]:
            _same(
                lambda L, a=a, b=b, da=da: getattr(L, fn)(
                    L.tensor(a, dtype=getattr(L, da)), L.tensor(b)
                )
            )
            _same(
                lambda L, a=a, b=b, da=da: getattr(L.tensor(b), fn + "_")(
                    L.tensor(a, dtype=getattr(L, da))
                )
            )
            _same(
                lambda L, a=a, b=b, da=da: getattr(L, fn)(
                    L.tensor(b), L.tensor(a, dtype=getattr(L, da)),
                    out=L.empty(len(b), dtype=L.float32),
                )
            )  # fmt: skip

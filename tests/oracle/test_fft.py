"""Oracle tests: ember.fft against torch.fft: values, dtypes (complex64 from float32), shapes,
strides, grad_fn (FftR2CBackward0, FftC2CBackward0, FftC2RBackward0, ConjBackward0,
RollBackward0), gradients of real-valued losses (torch's conjugate Wirtinger convention), float64
second order, errors."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.fft  # noqa: F401  (the submodule, until ember/__init__ imports it)
from tests.oracle import helper
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

F64 = "float64"


@pytest.fixture(autouse=True)
def _resolve_conj(monkeypatch):
    # torch's conj is lazy (a conjugate bit); NumPy cannot read such a tensor without resolving
    # it. Proposed for helper._np itself: ``t = t.detach().resolve_conj()``.
    orig = helper._np

    def _np(t):
        if isinstance(t, torch.Tensor):
            t = t.detach().resolve_conj()
        return orig(t)

    monkeypatch.setattr(helper, "_np", _np)


NORMS = [None, "backward", "ortho", "forward"]
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
TWO_D = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]
REAL_IN = {"rfft", "ihfft", "rfftn", "ihfftn", "rfft2", "ihfft2"}
REAL_OUT = {"irfft", "hfft", "irfftn", "hfftn", "irfft2", "hfft2"}


def _loss(name):
    # complex results are compared through a real function of them (abs): the harness checks
    # gradients of real outputs; the complex values themselves are compared separately
    if name in REAL_OUT:
        return lambda t: t
    return lambda t: t.abs()


def _inputs(name, shape, dtype):
    if name in REAL_IN:
        return rand(*shape, dtype=dtype)
    return rand(*shape, dtype={"float32": "complex64", F64: "complex128"}[dtype])


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n,dim", [(None, -1), (None, 0), (7, -1), (3, 1), (10, 0)])
def test_one_dimensional(name, norm, n, dim):
    x = _inputs(name, (4, 6), F64)
    f = _loss(name)
    check(lambda lib, x: getattr(lib.fft, name)(x, n=n, dim=dim, norm=norm), [x], grad=False)
    check(lambda lib, x: f(getattr(lib.fft, name)(x, n=n, dim=dim, norm=norm)), [x])


@pytest.mark.parametrize("name", ["fft", "ifft", "irfft", "hfft"])
def test_real_input_promoted(name):
    # fft/ifft of a real tensor go through r2c; irfft/hfft of a real tensor promote to complex
    x = rand(4, 6)
    f = _loss(name)
    check(lambda lib, x: getattr(lib.fft, name)(x), [x], grad=False)
    check(lambda lib, x: f(getattr(lib.fft, name)(x)), [x])


@pytest.mark.parametrize("name", ONE_D)
def test_float32_dtypes(name):
    x = _inputs(name, (3, 8), "float32")
    check(lambda lib, x: getattr(lib.fft, name)(x), [x], grad=False)
    check(lambda lib, x: _loss(name)(getattr(lib.fft, name)(x)), [x])


def test_integer_input():
    check(lambda lib, x: lib.fft.fft(x), [rand(5, dtype="int64")], grad=False)
    check(lambda lib, x: lib.fft.rfftn(x), [rand(2, 5, dtype="int32")], grad=False)


@pytest.mark.parametrize("name", N_D + TWO_D)
@pytest.mark.parametrize(
    "s,dim",
    [
        (None, None),
        (None, (0, 2)),
        (None, (2, 0)),
        ((4, 6), None),
        ((5, -1), (1, 2)),
        (None, (1,)),
        ((3, 4), (0, 1)),
    ],
)
def test_n_dimensional(name, s, dim):
    if name in TWO_D and dim is not None and len(dim) != 2:
        return
    if name in TWO_D and dim is None:
        dim = (-2, -1)
    x = _inputs(name, (3, 4, 5), F64)
    f = _loss(name)
    check(lambda lib, x: getattr(lib.fft, name)(x, s=s, dim=dim, norm="ortho"), [x], grad=False)
    check(lambda lib, x: f(getattr(lib.fft, name)(x, s=s, dim=dim)), [x])


@pytest.mark.parametrize("name", ["fftn", "ifftn", "fft2"])
def test_n_dimensional_real_input(name):
    check(lambda lib, x: getattr(lib.fft, name)(x).abs(), [rand(3, 4)])


def test_non_contiguous_input_layout():
    z = rand(4, 5, dtype="complex128").T
    check(lambda lib, x: lib.fft.fft(x), [z], grad=False)
    check(lambda lib, x: lib.fft.fft(x.mT, dim=0), [rand(3, 4, 5, dtype="complex128")], grad=False)
    check(lambda lib, x: lib.fft.rfft(x.mT), [rand(3, 4, 5)], grad=False)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(N_D),
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    data=st.data(),
)
def test_layout_hypothesis(name, shape, data):
    nd = len(shape)
    dims = data.draw(st.permutations(range(nd)))
    dims = dims[: data.draw(st.integers(1, nd))]
    x = _inputs(name, tuple(shape), F64)
    if name in ("irfftn", "hfftn") and shape[dims[-1]] == 1:
        return  # no data points in the hermitian dim: torch raises
    check(lambda lib, x: getattr(lib.fft, name)(x, dim=tuple(dims)), [x], grad=False)


def test_complex_gradients():
    # a real loss of complex inputs: torch's convention (conjugate Wirtinger)
    z = rand(5, dtype="complex128")
    check(lambda lib, z: lib.fft.fft(z).abs(), [z])
    check(lambda lib, z: lib.fft.ifft(z, norm="ortho").abs(), [z])
    check(lambda lib, z: lib.fft.irfft(z, n=8), [z])
    check(lambda lib, z: lib.fft.hfft(z, n=9), [z])


def test_freq_and_shift():
    for n, d in [(5, 1.0), (6, 0.3), (1, 2.0)]:
        check(lambda lib, n=n, d=d: lib.fft.fftfreq(n, d), [], grad=False)
        check(lambda lib, n=n, d=d: lib.fft.rfftfreq(n, d), [], grad=False)
    check(lambda lib: lib.fft.fftfreq(4, dtype=lib.float64), [], grad=False)
    check(lambda lib: lib.fft.rfftfreq(7, 0.5, dtype=lib.float64), [], grad=False)
    for dim in [None, 0, (0, 1), -1]:
        check(lambda lib, x, dim=dim: lib.fft.fftshift(x, dim=dim), [rand(4, 5, dtype=F64)])
        check(lambda lib, x, dim=dim: lib.fft.ifftshift(x, dim=dim), [rand(4, 5, dtype=F64)])
    check(lambda lib, x: lib.fft.ifftshift(lib.fft.fftshift(x)), [rand(3, 6)])


# ------------------------------------------------------------------------------ second order


def test_double_backward():
    x, z = rand(6, dtype=F64), rand(5, dtype="complex128")
    # products of transforms, ending in a real transform: every primitive at second order
    check_double_backward(lambda lib, x: lib.fft.irfft(lib.fft.rfft(x) ** 2, n=6), [x])
    check_double_backward(
        lambda lib, x: lib.fft.irfft(lib.fft.rfft(x, norm="ortho") ** 2), [rand(2, 7, dtype=F64)]
    )
    check_double_backward(lambda lib, x: lib.fft.hfft(lib.fft.fft(x) * lib.fft.ifft(x)), [x])
    check_double_backward(lambda lib, x: lib.fft.fft(x).abs() ** 2, [x])
    check_double_backward(
        lambda lib, x: lib.fft.irfftn(lib.fft.fftn(x) ** 2, s=(4, 6)), [rand(4, 5, dtype=F64)]
    )
    check_double_backward(lambda lib, x: lib.fft.hfft(x, n=8) ** 2, [rand(5, dtype=F64)])
    check_double_backward(lambda lib, x: lib.fft.fftshift(x) ** 2, [x])
    assert z is not None


# ------------------------------------------------------------------------------ errors

ERRORS = [
    (lambda lib, x: lib.fft.rfft(x), [rand(4, dtype="complex64")]),
    (lambda lib, x: lib.fft.fft(x, n=0), [rand(4)]),
    (lambda lib, x: lib.fft.fft(x, norm="bad"), [rand(4)]),
    (lambda lib, x: lib.fft.fft(x, dim=2), [rand(4, 3)]),
    (lambda lib, x: lib.fft.fft(x), [rand()]),
    (lambda lib, x: lib.fft.fft(x), [rand(4, dtype="float16")]),
    (lambda lib, x: lib.fft.fftn(x, s=(2, 2), dim=(0,)), [rand(4, 3)]),
    (lambda lib, x: lib.fft.fftn(x, dim=(0, 0)), [rand(4, 3)]),
    (lambda lib, x: lib.fft.fftn(x, s=(2, 2, 2)), [rand(4, 3)]),
    (lambda lib, x: lib.fft.rfftn(x), [rand(4, dtype="complex64")]),
    (lambda lib, x: lib.fft.irfft(x), [rand(1, dtype="complex64")]),
    (lambda lib, x: lib.fft.irfftn(x, dim=(0,)), [rand(1, 3, dtype="complex64")]),
    (lambda lib, x: lib.fft.ihfft(x), [rand(3, dtype="complex64")]),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    fn, ins = ERRORS[case]
    check_raises(fn, ins, match_message=True)


def test_namespace():
    for name in ONE_D + N_D + TWO_D + ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]:
        assert callable(getattr(ember.fft, name)), name

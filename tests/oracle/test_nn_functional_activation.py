"""Oracle tests: activations and the softmax family of nn.functional against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch


def F(lib):
    return torch.nn.functional if lib is torch else EF


X = rand(4, 6, dtype="float64", low=-4, high=4)
X32 = rand(4, 6, dtype="float32", low=-4, high=4)

CASES = {
    "relu": lambda f, x: f.relu(x),
    "relu6": lambda f, x: f.relu6(x * 3),
    "leaky_relu": lambda f, x: f.leaky_relu(x, 0.2),
    "elu": lambda f, x: f.elu(x, 0.7),
    "selu": lambda f, x: f.selu(x),
    "celu": lambda f, x: f.celu(x, 1.5),
    "gelu": lambda f, x: f.gelu(x),
    "gelu_tanh": lambda f, x: f.gelu(x, approximate="tanh"),
    "silu": lambda f, x: f.silu(x),
    "mish": lambda f, x: f.mish(x),
    "hardtanh": lambda f, x: f.hardtanh(x, -0.5, 2.0),
    "hardswish": lambda f, x: f.hardswish(x),
    "hardsigmoid": lambda f, x: f.hardsigmoid(x),
    "hardshrink": lambda f, x: f.hardshrink(x, 0.7),
    "softshrink": lambda f, x: f.softshrink(x, 0.7),
    "tanhshrink": lambda f, x: f.tanhshrink(x),
    "softplus": lambda f, x: f.softplus(x),
    "softplus_beta": lambda f, x: f.softplus(x, beta=3, threshold=2),
    "softsign": lambda f, x: f.softsign(x),
    "threshold": lambda f, x: f.threshold(x, 0.3, -2.0),
    "sigmoid": lambda f, x: f.sigmoid(x),
    "logsigmoid": lambda f, x: f.logsigmoid(x),
    "tanh": lambda f, x: f.tanh(x),
    "rrelu_eval": lambda f, x: f.rrelu(x),
    "glu": lambda f, x: f.glu(x),
    "glu0": lambda f, x: f.glu(x, 0),
    "softmax0": lambda f, x: f.softmax(x, 0),
    "softmax1": lambda f, x: f.softmax(x, dim=-1),
    "log_softmax": lambda f, x: f.log_softmax(x, 1),
    "log_softmax0": lambda f, x: f.log_softmax(x, 0),
    "softmin": lambda f, x: f.softmin(x, 1),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_activation(name, dtype):
    x = X if dtype == "float64" else X32
    check(lambda lib, t: CASES[name](F(lib), t), [x])


@pytest.mark.parametrize("name", sorted(CASES))
def test_activation_double_backward(name):
    if name in ("hardsigmoid", "hardswish"):
        pytest.skip("torch has no double backward for these")
    check_double_backward(lambda lib, t: CASES[name](F(lib), t), [X])


@pytest.mark.parametrize(
    "name", ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "hardtanh", "threshold"]
)
def test_inplace(name):
    calls = {
        "relu": lambda f, y: f.relu(y, inplace=True),
        "relu6": lambda f, y: f.relu6(y, inplace=True),
        "leaky_relu": lambda f, y: f.leaky_relu(y, 0.1, inplace=True),
        "elu": lambda f, y: f.elu(y, inplace=True),
        "selu": lambda f, y: f.selu(y, inplace=True),
        "celu": lambda f, y: f.celu(y, 2.0, inplace=True),
        "hardtanh": lambda f, y: f.hardtanh(y, inplace=True),
        "threshold": lambda f, y: f.threshold(y, 0.1, 5.0, inplace=True),
    }

    def fn(lib, x):
        y = x * 1
        out = calls[name](F(lib), y)
        assert out is y
        return out

    check(fn, [X])


def test_prelu():
    w1 = rand(1, dtype="float64")
    w6 = rand(6, dtype="float64")
    check(lambda lib, x, w: F(lib).prelu(x, w), [X, w1])
    check(lambda lib, x, w: F(lib).prelu(x, w), [X, w6])
    x4 = rand(2, 3, 4, 5, dtype="float64")
    check(lambda lib, x, w: F(lib).prelu(x, w), [x4, rand(3, dtype="float64")])
    check_raises(lambda lib, x, w: F(lib).prelu(x, w), [X, rand(4, dtype="float64")])


def test_softmax_dtype_and_implicit_dim():
    check(lambda lib, x: F(lib).softmax(x, 1, dtype=lib.float64), [X32])
    check(lambda lib, x: F(lib).log_softmax(x, 0, dtype=lib.float64), [X32])
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        e = EF.softmax(ember.from_numpy(X))
    t = torch.nn.functional.softmax(torch.from_numpy(X), 1)
    np.testing.assert_allclose(e.numpy(), t.numpy())


def _implicit_dim_warning_site(lib, name, **kw):
    import warnings

    fn = getattr(lib.nn.functional, name)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        fn(lib.ones(2, 3), **kw)  # the line torch's warning points at with _stacklevel=3
    (w,) = got
    return w.filename, w.lineno


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_implicit_dim_warning_points_at_the_caller(name):
    # _stacklevel counts frames as torch's: 3 is the caller's line, 4 the caller's caller
    assert _implicit_dim_warning_site(ember, name) == _implicit_dim_warning_site(torch, name)
    site = _implicit_dim_warning_site(ember, name)
    assert site[0] == __file__
    sites = [_implicit_dim_warning_site(lib, name, _stacklevel=4) for lib in (ember, torch)]
    assert sites[0] == sites[1]  # (this line)


def test_softmax_stable_and_edge():
    big = np.array([[1000.0, 0.0, -1000.0], [-np.inf, 0.0, 1.0]])
    check(lambda lib, x: F(lib).softmax(x, 1), [big])
    check(lambda lib, x: F(lib).log_softmax(x, 1), [big])
    check(lambda lib, x: F(lib).softmax(x, 0), [np.array(2.5)])
    check(lambda lib, x: F(lib).log_softmax(x, 0), [np.array(2.5)])
    check_raises(lambda lib, x: F(lib).softmax(x, 2), [X])
    check_raises(lambda lib, x: F(lib).softmax(x, 0), [np.arange(3)])
    check_raises(lambda lib, x: F(lib).glu(x, 0), [rand(3, 2)])
    check_raises(lambda lib, x: F(lib).relu(x), [[1.0]])


def test_softmax_3d():
    x = rand(2, 3, 4, dtype="float64")
    for d in (0, 1, 2, -1):
        check(lambda lib, t, d=d: F(lib).softmax(t, d), [x])
        check(lambda lib, t, d=d: F(lib).log_softmax(t, d), [x])


def test_rrelu_training():
    ember.manual_seed(0)
    x = ember.from_numpy(X).requires_grad_()
    y = EF.rrelu(x, 0.1, 0.3, training=True)
    assert y.grad_fn.name() == "RreluWithNoiseBackward0"
    xn, yn = X, y.detach().numpy()
    assert np.array_equal(yn[xn > 0], xn[xn > 0])
    ratio = yn[xn < 0] / xn[xn < 0]
    assert np.all((ratio >= 0.1) & (ratio <= 0.3))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy()[xn < 0], ratio)


def test_gumbel_softmax():
    ember.manual_seed(0)
    logits = ember.from_numpy(X).requires_grad_()
    y = EF.gumbel_softmax(logits, tau=0.5)
    assert y.grad_fn.name() == "SoftmaxBackward0"
    np.testing.assert_allclose(y.detach().numpy().sum(1), 1.0)
    h = EF.gumbel_softmax(logits, hard=True)
    hn = h.detach().numpy()
    assert set(np.unique(hn)) <= {0.0, 1.0} and np.all(hn.sum(1) == 1)
    h.sum().backward()
    assert logits.grad is not None
    # statistics: argmax frequencies follow softmax(logits)
    lg = ember.tensor([[0.0, 1.0, 2.0]]).expand(4000, 3)
    freq = EF.gumbel_softmax(lg, hard=True).sum(0).numpy() / 4000
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(freq, p, atol=0.04)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_as_torch_function_and_method(name):
    x = rand(3, 5)
    check(lambda lib, x: getattr(lib, name)(x, 1), [x])
    check(lambda lib, x: getattr(x, name)(-1, dtype=lib.float64), [x])
    check(lambda lib, x: getattr(x, name)(dim=0), [x])

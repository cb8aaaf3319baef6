"""nn.init: gains and fans against torch, exact fillers, distribution tests for random ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.nn import init

torch = pytest.importorskip("torch")


def err(fn):
    try:
        fn()
    except Exception as ex:  # noqa: BLE001
        return type(ex).__name__, str(ex)
    return None


@pytest.mark.parametrize(
    "args",
    [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",),
     ("leaky_relu", 0.2), ("leaky_relu", 1), ("selu",), ("conv_transpose3d",)],
)  # fmt: skip
def test_calculate_gain(args):
    assert init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


def test_calculate_gain_errors():
    for args in (("foo",), ("leaky_relu", "x"), ("leaky_relu", True)):
        assert err(lambda args=args: init.calculate_gain(*args)) == err(
            lambda args=args: torch.nn.init.calculate_gain(*args)
        )


@pytest.mark.parametrize("shape", [(3, 4), (5, 2, 3), (6, 4, 3, 3), (2, 3, 1, 2, 2), (3,)])
def test_fans(shape):
    e = ember.empty(shape)
    t = torch.empty(shape)
    assert err(lambda: init._calculate_fan_in_and_fan_out(e)) == err(
        lambda: torch.nn.init._calculate_fan_in_and_fan_out(t)
    )
    if len(shape) >= 2:
        assert init._calculate_fan_in_and_fan_out(e) == (
            torch.nn.init._calculate_fan_in_and_fan_out(t)
        )


def test_exact_fillers():
    for e_fn, t_fn, shape in (
        (lambda x: init.constant_(x, 0.3), lambda x: torch.nn.init.constant_(x, 0.3), (2, 3)),
        (init.ones_, torch.nn.init.ones_, (4,)),
        (init.zeros_, torch.nn.init.zeros_, (2, 2)),
        (init.eye_, torch.nn.init.eye_, (3, 5)),
        (init.eye_, torch.nn.init.eye_, (5, 2)),
        (init.dirac_, torch.nn.init.dirac_, (4, 3, 3)),
        (init.dirac_, torch.nn.init.dirac_, (2, 4, 3, 3)),
        (lambda x: init.dirac_(x, 2), lambda x: torch.nn.init.dirac_(x, 2), (6, 3, 3, 3, 3)),
    ):
        e = ember.nn.Parameter(ember.empty(shape))
        t = torch.nn.Parameter(torch.empty(shape))
        r = e_fn(e)
        t_fn(t)
        assert r is e and e.requires_grad and e.grad_fn is None
        np.testing.assert_array_equal(e._data, t.detach().numpy())
    for args in ((3,), (2, 2, 2, 2, 2, 2)):
        assert err(lambda args=args: init.eye_(ember.empty(*args))) == err(
            lambda args=args: torch.nn.init.eye_(torch.empty(*args))
        )
        assert err(lambda args=args: init.dirac_(ember.empty(*args))) == err(
            lambda args=args: torch.nn.init.dirac_(torch.empty(*args))
        )


def stats(a):
    return a.min(), a.max(), a.mean(), a.std()


def test_uniform_normal_trunc_normal():
    ember.manual_seed(0)
    x = ember.empty(200, 300)
    lo, hi, mean, std = stats(init.uniform_(x, -2.0, 3.0)._data)
    assert -2 <= lo < -1.99 and 2.99 < hi < 3 and abs(mean - 0.5) < 0.02
    assert abs(std - 5 / math.sqrt(12)) < 0.02
    lo, hi, mean, std = stats(init.normal_(x, 1.0, 0.5)._data)
    assert abs(mean - 1.0) < 0.01 and abs(std - 0.5) < 0.01
    lo, hi, mean, std = stats(init.trunc_normal_(x, 0.0, 1.0, -1.0, 2.0)._data)
    assert lo >= -1.0 and hi <= 2.0 and lo < -0.99 and hi > 1.99
    # mean/std of N(0,1) truncated to [-1, 2]
    t = torch.empty(200, 300)
    torch.manual_seed(0)
    torch.nn.init.trunc_normal_(t, 0.0, 1.0, -1.0, 2.0)
    assert abs(mean - t.mean().item()) < 0.01 and abs(std - t.std().item()) < 0.01
    g = ember.Generator().manual_seed(3)
    a = init.uniform_(ember.empty(5), generator=g)._data.copy()
    b = init.uniform_(ember.empty(5), generator=ember.Generator().manual_seed(3))._data
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape", [(256, 512), (64, 32, 3, 3)])
def test_xavier_kaiming(shape):
    ember.manual_seed(1)
    x = ember.empty(shape)
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(x)
    a = math.sqrt(6 / (fan_in + fan_out)) * 2
    lo, hi, mean, std = stats(init.xavier_uniform_(x, gain=2)._data)
    assert -a <= lo and hi <= a and hi > 0.98 * a
    assert abs(std - a / math.sqrt(3)) < 0.02 * a
    s = math.sqrt(2 / (fan_in + fan_out))
    *_, std = stats(init.xavier_normal_(x)._data)
    assert abs(std - s) < 0.02 * s
    bound = math.sqrt(2) * math.sqrt(3 / fan_in)
    lo, hi, mean, std = stats(init.kaiming_uniform_(x, nonlinearity="relu")._data)
    assert -bound <= lo and hi <= bound and hi > 0.98 * bound
    s = math.sqrt(2 / (1 + 0.1**2)) / math.sqrt(fan_out)
    *_, std = stats(init.kaiming_normal_(x, a=0.1, mode="fan_out")._data)
    assert abs(std - s) < 0.02 * s
    assert err(lambda: init.kaiming_normal_(x, mode="x")) == err(
        lambda: torch.nn.init.kaiming_normal_(torch.empty(shape), mode="x")
    )


def test_kaiming_zero_element_warns():
    for lib in (ember, torch):
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            lib.nn.init.kaiming_uniform_(lib.empty(0, 3))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (4, 2, 3)])
def test_orthogonal(shape):
    ember.manual_seed(2)
    x = init.orthogonal_(ember.empty(shape), gain=1.5)
    m = x._data.reshape(shape[0], -1).astype(np.float64)
    rows, cols = m.shape
    gram = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(gram, 2.25 * np.eye(min(rows, cols)), atol=1e-5)
    assert err(lambda: init.orthogonal_(ember.empty(3))) == err(
        lambda: torch.nn.init.orthogonal_(torch.empty(3))
    )


def test_sparse():
    ember.manual_seed(3)
    x = init.sparse_(ember.empty(20, 30), sparsity=0.3, std=0.5)._data
    zeros_per_col = (x == 0).sum(axis=0)
    assert (zeros_per_col == math.ceil(0.3 * 20)).all()
    nz = x[x != 0]
    assert abs(nz.std() - 0.5) < 0.1
    assert err(lambda: init.sparse_(ember.empty(3), 0.1)) == err(
        lambda: torch.nn.init.sparse_(torch.empty(3), 0.1)
    )


def test_deprecated_aliases_warn():
    with pytest.warns(FutureWarning, match="nn.init.uniform"):
        init.uniform(ember.empty(2))

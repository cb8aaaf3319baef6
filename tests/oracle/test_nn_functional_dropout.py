"""Dropout family: statistics (zeros at rate p, survivors scaled), eval identity, torch's
grad_fn names and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from tests.oracle.helper import check_raises, rand, torch


def F(lib):
    return torch.nn.functional if lib is torch else EF


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_dropout_statistics(p):
    ember.manual_seed(0)
    x = ember.ones(200, 500, requires_grad=True)
    y = EF.dropout(x, p)
    assert y.grad_fn.name() == "MulBackward0"
    v = y.detach().numpy()
    zeros = (v == 0).mean()
    assert abs(zeros - p) < 0.01
    np.testing.assert_allclose(v[v != 0], 1 / (1 - p), rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), v)


def test_dropout_eval_identity_and_edges():
    x = ember.randn(4, 5)
    assert EF.dropout(x, 0.5, training=False) is x
    assert EF.alpha_dropout(x, 0.5) is x
    assert EF.dropout(x, 0.0) is x
    z = EF.dropout(x, 1.0)
    assert np.all(z.numpy() == 0)
    ember.manual_seed(3)
    a = EF.dropout(x, 0.5).numpy()
    ember.manual_seed(3)
    np.testing.assert_array_equal(EF.dropout(x, 0.5).numpy(), a)


def test_dropout_inplace():
    ember.manual_seed(1)
    x = ember.ones(100, 100)
    y = EF.dropout(x, 0.3, inplace=True)
    assert y is x and x._version == 1
    assert abs((x.numpy() == 0).mean() - 0.3) < 0.02


@pytest.mark.parametrize(
    "fn,shape",
    [("dropout1d", (50, 40, 7)), ("dropout2d", (40, 50, 3, 3)), ("dropout3d", (40, 50, 2, 2, 2))],
)
def test_feature_dropout(fn, shape):
    ember.manual_seed(0)
    x = ember.ones(*shape)
    v = getattr(EF, fn)(x, 0.4).numpy()
    per_channel = v.reshape(shape[0], shape[1], -1)
    # whole channels are either zero or scaled
    assert np.all((per_channel == 0).all(-1) | (per_channel != 0).all(-1))
    assert abs((per_channel[..., 0] == 0).mean() - 0.4) < 0.03
    np.testing.assert_allclose(v[v != 0], 1 / 0.6, rtol=1e-6)
    unbatched = getattr(EF, fn)(ember.ones(*shape[1:]), 0.4)
    assert tuple(unbatched.shape) == shape[1:]


def test_alpha_dropout_statistics():
    ember.manual_seed(0)
    x = ember.randn(400, 500)
    y = EF.alpha_dropout(x, 0.3, training=True)
    assert y.grad_fn is None
    xr = ember.randn(4, 5, requires_grad=True)
    assert EF.alpha_dropout(xr, 0.3, True).grad_fn.name() == "AddBackward0"
    v = y.numpy()
    # keeps zero mean and unit variance for standard normal input
    assert abs(v.mean()) < 0.02 and abs(v.std() - 1) < 0.02
    f = EF.feature_alpha_dropout(ember.randn(300, 400, 4), 0.3, training=True).numpy()
    assert abs(f.mean()) < 0.03 and abs(f.std() - 1) < 0.03


def test_dropout_errors():
    x = rand(3, 4)
    check_raises(lambda lib, t: F(lib).dropout(t, 1.5), [x])
    check_raises(lambda lib, t: F(lib).dropout(t, -0.1), [x])
    check_raises(lambda lib, t: F(lib).dropout1d(t, 0.5), [rand(2, 3, 4, 5)])

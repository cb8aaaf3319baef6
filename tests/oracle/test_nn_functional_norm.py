"""Oracle tests: batch_norm, instance_norm, layer_norm, group_norm, rms_norm, normalize."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch


def F(lib):
    return torch.nn.functional if lib is torch else EF


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_batch_norm_train(shape, dtype):
    x = rand(*shape, dtype=dtype)
    w, b = rand(3, dtype=dtype), rand(3, dtype=dtype)
    rm, rv = rand(3, dtype=dtype), rand(3, dtype=dtype, low=0.5, high=2)
    stats = {}

    def fn(lib, t, w_, b_):
        m, v = lib.from_numpy(rm.copy()), lib.from_numpy(rv.copy())
        out = F(lib).batch_norm(t, m, v, w_, b_, training=True, momentum=0.3)
        stats[lib] = (m, v)
        return out

    check(fn, [x, w, b])
    tol = 1e-5 if dtype == "float32" else 1e-12
    for i in range(2):
        np.testing.assert_allclose(
            stats[ember][i].numpy(), stats[torch][i].numpy(), rtol=tol, atol=tol
        )
    assert stats[ember][0]._version == stats[torch][0]._version
    check(lambda lib, t: F(lib).batch_norm(t, None, None, training=True), [x])


def test_batch_norm_eval_and_double_backward():
    x = rand(4, 3, 5, dtype="float64")
    w, b = rand(3, dtype="float64"), rand(3, dtype="float64")
    rm, rv = rand(3, dtype="float64"), rand(3, dtype="float64", low=0.5, high=2)

    def ev(lib, t, w_, b_):
        return F(lib).batch_norm(t, lib.from_numpy(rm), lib.from_numpy(rv), w_, b_, False)

    def tr(lib, t, w_, b_):
        return F(lib).batch_norm(t, None, None, w_, b_, True)

    check(ev, [x, w, b])
    check_double_backward(tr, [x, w, b])
    check_double_backward(ev, [x, w, b])
    check_raises(lambda lib, t: F(lib).batch_norm(t, None, None, training=True), [rand(1, 3)])


@pytest.mark.parametrize("ns", [(5,), (4, 5)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_norm(ns, dtype):
    x = rand(3, 4, 5, dtype=dtype)
    w, b = rand(*ns, dtype=dtype), rand(*ns, dtype=dtype)
    check(lambda lib, t, w_, b_: F(lib).layer_norm(t, ns, w_, b_), [x, w, b])
    check(lambda lib, t: F(lib).layer_norm(t, ns, eps=1e-3), [x])
    if dtype == "float64":
        check_double_backward(lambda lib, t, w_, b_: F(lib).layer_norm(t, ns, w_, b_), [x, w, b])
    check(lambda lib, t, w_: F(lib).rms_norm(t, ns, w_), [x, w])
    check(lambda lib, t: F(lib).rms_norm(t, ns, eps=1e-3), [x])
    check_raises(lambda lib, t: F(lib).layer_norm(t, (3,)), [x])


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm(groups):
    x = rand(2, 6, 4, 3, dtype="float64")
    w, b = rand(6, dtype="float64"), rand(6, dtype="float64")
    check(lambda lib, t, w_, b_: F(lib).group_norm(t, groups, w_, b_), [x, w, b])
    check(lambda lib, t: F(lib).group_norm(t, groups), [x[:, :, 0].copy()])
    check_double_backward(lambda lib, t, w_, b_: F(lib).group_norm(t, groups, w_, b_), [x, w, b])
    check_raises(lambda lib, t: F(lib).group_norm(t, 4), [x])


def test_instance_norm():
    x = rand(2, 3, 5, 4, dtype="float64")
    w, b = rand(3, dtype="float64"), rand(3, dtype="float64")
    stats = {}

    def fn(lib, t, w_, b_):
        m, v = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        stats[lib] = (m, v)
        return F(lib).instance_norm(t, m, v, w_, b_, momentum=0.2)

    check(fn, [x, w, b])
    for i in range(2):
        np.testing.assert_allclose(stats[ember][i].numpy(), stats[torch][i].numpy())
    check(lambda lib, t: F(lib).instance_norm(t), [x])


def test_normalize():
    x = rand(4, 5, dtype="float64")
    check(lambda lib, t: F(lib).normalize(t), [x], grad_fn=False)
    check(lambda lib, t: F(lib).normalize(t, p=1.0, dim=0), [x], grad_fn=False)
    z = np.zeros((2, 3))
    check(lambda lib, t: F(lib).normalize(t), [z], grad_fn=False)
    e = EF.normalize(ember.from_numpy(x), dim=-1)
    np.testing.assert_allclose(np.linalg.norm(e.numpy(), axis=-1), 1.0)

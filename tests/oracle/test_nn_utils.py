"""nn.utils against torch: gradient clipping, parameter/vector conversion, BN fusion,
consume_prefix_in_state_dict_if_present."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember.nn import utils as U
from ember.nn.modules.utils import (
    _pair,
    _reverse_repeat_tuple,
    consume_prefix_in_state_dict_if_present,
)

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(0)


def params_with_grads(lib, arrays, grads):
    ps = []
    for a, g in zip(arrays, grads):
        p = lib.nn.Parameter(lib.from_numpy(a.copy()))
        if g is not None:
            p.grad = lib.from_numpy(g.copy())
        ps.append(p)
    return ps


def data(dtype="float32"):
    arrays = [_rng.standard_normal(s).astype(dtype) for s in ((3, 4), (5,), (2, 2, 2))]
    grads = [_rng.standard_normal(a.shape).astype(dtype) for a in arrays]
    grads[1] = None
    return arrays, grads


def np_of(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t._data


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, float("inf"), "inf", 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm(norm_type, max_norm):
    arrays, grads = data()
    out = []
    for lib in (torch, ember):
        ps = params_with_grads(lib, arrays, grads)
        total = lib.nn.utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type)
        out.append((np_of(total), [None if p.grad is None else np_of(p.grad) for p in ps]))
        assert total.dtype == lib.float32 and total.shape == ()
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-5)
    for a, b in zip(out[1][1], out[0][1]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_single_tensor_empty_and_nonfinite():
    p = ember.nn.Parameter(ember.ones(4))
    p.grad = ember.full((4,), 2.0)
    total = U.clip_grad_norm_(p, 1.0)
    np.testing.assert_allclose(float(total), 4.0)
    np.testing.assert_allclose(p.grad._data, np.full(4, 0.5 / (1 + 1e-6 / 4)), rtol=1e-6)
    assert float(U.clip_grad_norm_([], 1.0)) == 0.0
    with pytest.warns(UserWarning, match="empty generator"):
        U.clip_grad_norm_((q for q in []), 1.0)
    msgs = []
    for lib in (torch, ember):
        q = lib.nn.Parameter(lib.ones(2))
        q.grad = lib.tensor([float("nan"), 1.0])
        with pytest.raises(RuntimeError) as exc:
            lib.nn.utils.clip_grad_norm_([q], 1.0, error_if_nonfinite=True)
        msgs.append(str(exc.value))
        lib.nn.utils.clip_grad_norm_([q], 1.0)  # no error by default
    assert msgs[0] == msgs[1]
    with pytest.warns(FutureWarning):
        U.clip_grad_norm([p], 1.0)


def test_get_total_norm_and_clip_with_norm():
    arrays, grads = data("float64")
    res = []
    for lib in (torch, ember):
        ps = params_with_grads(lib, arrays, grads)
        gs = [p.grad for p in ps if p.grad is not None]
        total = lib.nn.utils.get_total_norm(gs, norm_type=3)
        lib.nn.utils.clip_grads_with_norm_(ps, 0.1, total)
        res.append([np_of(total)] + [np_of(g) for g in gs])
    for a, b in zip(res[1], res[0]):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_clip_grad_value():
    arrays, grads = data()
    res = []
    for lib in (torch, ember):
        ps = params_with_grads(lib, arrays, grads)
        assert lib.nn.utils.clip_grad_value_(ps, 0.3) is None
        res.append([np_of(p.grad) for p in ps if p.grad is not None])
    for a, b in zip(res[1], res[0]):
        np.testing.assert_array_equal(a, b)


def test_parameters_vector_roundtrip():
    m = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.Linear(2, 1))
    t = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    m.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    ev = U.parameters_to_vector(m.parameters())
    tv = torch.nn.utils.parameters_to_vector(t.parameters())
    np.testing.assert_array_equal(ev._data, tv.detach().numpy())
    new = ember.arange(float(ev.numel()))
    U.vector_to_parameters(new, m.parameters())
    assert float(m[1].bias) == ev.numel() - 1
    assert type(m[0].weight) is ember.nn.Parameter
    with ember.no_grad():
        new.add_(1)  # parameters share the vector's memory, as torch
    assert float(m[0].weight[0, 0]) == 1.0
    (m(ember.ones(1, 3)).sum()).backward()
    assert m[0].weight.grad.shape == (2, 3)
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="expected torch.Tensor, but got: int"):
            lib.nn.utils.vector_to_parameters(3, [])


class FakeBN:
    """The attributes fusion reads off a BatchNorm (BatchNorm itself is another file)."""

    def __init__(self, lib, n, rng):
        self.training = False
        self.num_features = n
        self.eps = 1e-5
        self.running_mean = lib.from_numpy(rng.standard_normal(n))
        self.running_var = lib.from_numpy(rng.uniform(0.5, 2, n))
        self.weight = lib.nn.Parameter(lib.from_numpy(rng.standard_normal(n)))
        self.bias = lib.nn.Parameter(lib.from_numpy(rng.standard_normal(n)))


def test_fuse_linear_bn():
    res = []
    for lib in (torch, ember):
        rng = np.random.default_rng(5)
        lin = lib.nn.Linear(3, 4).double()
        with lib.no_grad():
            lin.weight.copy_(lib.from_numpy(rng.standard_normal((4, 3))))
            lin.bias.copy_(lib.from_numpy(rng.standard_normal(4)))
        lin.eval()
        fused = lib.nn.utils.fuse_linear_bn_eval(lin, FakeBN(lib, 4, rng))
        assert fused is not lin and type(fused.weight) is lib.nn.Parameter
        res.append((np_of(fused.weight), np_of(fused.bias), np_of(lin.weight)))
        lin.train()
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            lib.nn.utils.fuse_linear_bn_eval(lin, FakeBN(lib, 4, rng))
    for a, b in zip(res[1][:2], res[0][:2]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_fuse_conv_bn_weights(transpose, with_bias):
    res = []
    for lib in (torch, ember):
        rng = np.random.default_rng(6)
        w = lib.from_numpy(rng.standard_normal((4, 4, 3, 3)))
        b = lib.from_numpy(rng.standard_normal(4)) if with_bias else None
        bn = FakeBN(lib, 4, rng)
        fw, fb = lib.nn.utils.fuse_conv_bn_weights(
            w, b, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose
        )
        res.append((np_of(fw), np_of(fb), fw.requires_grad, fb.requires_grad))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)
    assert res[1][2:] == res[0][2:]


def test_consume_prefix():
    def build(lib):
        m = lib.nn.Sequential(lib.nn.Linear(1, 1))
        wrapper = lib.nn.Module()
        wrapper.module = m
        return wrapper.state_dict()

    sds = [build(torch), build(ember)]
    for sd, fn in zip(sds, (torch.nn.modules.utils.consume_prefix_in_state_dict_if_present,
                            consume_prefix_in_state_dict_if_present)):  # fmt: skip
        fn(sd, "module.")
    assert list(sds[0]) == list(sds[1]) == ["0.weight", "0.bias"]
    assert sds[0]._metadata == sds[1]._metadata
    e = ember.nn.Sequential(ember.nn.Linear(1, 1))
    e.load_state_dict(sds[1])
    d = OrderedDict(x=1)
    consume_prefix_in_state_dict_if_present(d, "module.")
    assert d == {"x": 1}


def test_ntuple_helpers():
    assert _pair(3) == (3, 3) and _pair((1, 2)) == (1, 2)
    assert _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)

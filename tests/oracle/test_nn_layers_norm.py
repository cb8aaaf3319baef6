"""Oracle tests: BatchNorm, InstanceNorm, LayerNorm, GroupNorm, RMSNorm modules against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, rand, torch

SPECS = [
    ("BatchNorm1d(3)", (4, 3)),
    ("BatchNorm1d(3, momentum=None)", (4, 3, 5)),
    ("BatchNorm1d(3, affine=False)", (4, 3)),
    ("BatchNorm1d(3, bias=False)", (4, 3)),
    ("BatchNorm2d(3, eps=1e-3, momentum=0.3)", (2, 3, 4, 4)),
    ("BatchNorm2d(3, track_running_stats=False)", (2, 3, 4, 4)),
    ("BatchNorm3d(3)", (2, 3, 2, 3, 2)),
    ("InstanceNorm1d(3)", (2, 3, 5)),
    ("InstanceNorm1d(3, affine=True, track_running_stats=True)", (2, 3, 5)),
    ("InstanceNorm2d(3, affine=True)", (3, 4, 5)),
    ("InstanceNorm3d(3)", (2, 3, 2, 2, 3)),
    ("LayerNorm(5)", (2, 3, 5)),
    ("LayerNorm((3, 5), eps=1e-3)", (2, 3, 5)),
    ("LayerNorm(5, elementwise_affine=False)", (2, 3, 5)),
    ("LayerNorm(5, bias=False)", (2, 3, 5)),
    ("GroupNorm(3, 6)", (2, 6, 4)),
    ("GroupNorm(2, 6, affine=False)", (2, 6, 2, 2)),
    ("RMSNorm(5)", (2, 3, 5)),
    ("RMSNorm([3, 5], eps=1e-4, elementwise_affine=False)", (2, 3, 5)),
]


def _pair(spec):
    tm = eval("torch.nn." + spec, {"torch": torch}).double()
    em = eval("ember.nn." + spec, {"ember": ember}).double()
    # random affine parameters, copied torch -> ember
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.randn(p.shape, dtype=p.dtype))
    for (n, p), (n2, q) in zip(tm.named_parameters(), em.named_parameters()):
        assert n == n2
        with ember.no_grad():
            q.copy_(ember.from_numpy(p.detach().numpy().copy()))
    return tm, em


@pytest.mark.parametrize("spec,shape", SPECS)
def test_norm_module(spec, shape):
    tm, em = _pair(spec)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    for mode in ("train", "train", "eval"):
        getattr(tm, mode)()
        getattr(em, mode)()
        x = rand(*shape, dtype="float64")
        xt = torch.from_numpy(x).requires_grad_()
        xe = ember.from_numpy(x.copy()).requires_grad_()
        yt, ye = tm(xt), em(xe)
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), atol=1e-10)
        assert ye.grad_fn.name() == yt.grad_fn.name()
        g = rand(*yt.shape, dtype="float64")
        yt.backward(torch.from_numpy(g))
        ye.backward(ember.from_numpy(g))
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), atol=1e-9)
        for (n, p), (_, q) in zip(tm.named_parameters(), em.named_parameters()):
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), atol=1e-9, err_msg=n)
            p.grad = None
            q.grad = None
        for (n, b), (_, c) in zip(tm.named_buffers(), em.named_buffers()):
            np.testing.assert_allclose(c.numpy(), b.numpy(), atol=1e-12, err_msg=n)


def test_batchnorm_errors():
    with pytest.raises(ValueError):
        ember.nn.BatchNorm2d(3)(ember.randn(2, 3, 4))
    with pytest.raises(ValueError):
        ember.nn.BatchNorm1d(3)(ember.randn(1, 3))
    with pytest.raises(ValueError):
        ember.nn.GroupNorm(4, 6)


@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 6, 3, 3), (1, 4, 2, 2, 3)])
def test_local_response_norm(shape):
    for spec in ("LocalResponseNorm(3)", "LocalResponseNorm(2, alpha=0.1, beta=0.5, k=2.0)"):
        em = eval("ember.nn." + spec, {"ember": ember})
        tm = eval("torch.nn." + spec, {"torch": torch})
        assert repr(em) == repr(tm)
        check(
            lambda lib, x, s=spec: eval("lib.nn." + s, {"lib": lib})(x),
            [rand(*shape, dtype="float64")],
        )

"""Oracle tests for the hook-based ``nn.utils.spectral_norm`` / ``remove_spectral_norm``."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(0)


def _pair(kind, **kw):
    """Return (ember, torch) modules with spectral norm, torch's weight_orig/u/v copied."""
    if kind == "linear":
        e, t = ember.nn.Linear(5, 4).double(), torch.nn.Linear(5, 4).double()
    elif kind == "conv":
        e, t = ember.nn.Conv2d(3, 4, 2).double(), torch.nn.Conv2d(3, 4, 2).double()
    else:
        e = ember.nn.ConvTranspose2d(3, 4, 2).double()
        t = torch.nn.ConvTranspose2d(3, 4, 2).double()
    e = spectral_norm(e, **kw)
    t = torch.nn.utils.spectral_norm(t, **kw)
    sd = {k: ember.tensor(v.detach().numpy().copy()) for k, v in t.state_dict().items()}
    e.load_state_dict(sd)
    return e, t


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "kind,kw",
    [
        ("linear", {}),
        ("linear", {"n_power_iterations": 3}),
        ("conv", {"dim": 1}),
        ("convt", {}),
        ("conv", {"eps": 1e-3}),
    ],
)
def test_training_forwards_match(kind, kw):
    e, t = _pair(kind, **kw)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    shape = (2, 5) if kind == "linear" else (2, 3, 4, 4)
    eu0, ev0, tu0, tv0 = (b._version for b in (e.weight_u, e.weight_v, t.weight_u, t.weight_v))
    for _ in range(4):
        x = _rng.standard_normal(shape)
        eo, to = e(ember.tensor(x)), t(torch.from_numpy(x))
        _close(eo, to)
        _close(e.weight, t.weight)
        _close(e.weight_u, t.weight_u)
        _close(e.weight_v, t.weight_v)
    assert e.weight.grad_fn.name() == t.weight.grad_fn.name()
    # the buffers are updated in place, once per normalize, as torch's ``out=``
    assert e.weight_u._version - eu0 == t.weight_u._version - tu0
    assert e.weight_v._version - ev0 == t.weight_v._version - tv0
    # eval: no power iteration, buffers unchanged
    e.eval()
    t.eval()
    u_before = e.weight_u.numpy().copy()
    eo, to = e(ember.tensor(x)), t(torch.from_numpy(x))
    _close(eo, to)
    np.testing.assert_array_equal(e.weight_u.numpy(), u_before)


def test_gradients_to_weight_orig():
    e, t = _pair("linear", n_power_iterations=2)
    x = _rng.standard_normal((3, 5))
    g = _rng.standard_normal((3, 4))
    e(ember.tensor(x)).backward(ember.tensor(g))
    t(torch.from_numpy(x)).backward(torch.from_numpy(g))
    _close(e.weight_orig.grad, t.weight_orig.grad)
    _close(e.bias.grad, t.bias.grad)
    assert e.weight_u.grad is None


def test_state_dict_metadata_and_keys():
    e, t = _pair("conv")
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    assert es._metadata == ts._metadata
    # nested: metadata under the submodule prefix
    es = ember.nn.Sequential(e).state_dict()
    ts = torch.nn.Sequential(t).state_dict()
    assert list(es) == list(ts)
    assert dict(es._metadata) == dict(ts._metadata)


def test_load_version0_state_dict():
    e, t = _pair("linear")
    t(torch.randn(1, 5, dtype=torch.double))
    ts = t.state_dict()
    # a version-0 checkpoint stored "weight" and no "weight_v"
    old = OrderedDict((k, v) for k, v in ts.items() if k != "weight_v")
    old["weight"] = t.weight.detach()
    old._metadata = OrderedDict({"": {"version": 1}})
    t2 = torch.nn.utils.spectral_norm(torch.nn.Linear(5, 4).double())
    t2.load_state_dict(old)
    eold = OrderedDict((k, ember.tensor(v.numpy().copy())) for k, v in old.items())
    eold._metadata = OrderedDict({"": {"version": 1}})
    e.load_state_dict(eold)
    _close(e.weight_v, t2.weight_v)


def test_remove_spectral_norm():
    e, t = _pair("linear")
    x = _rng.standard_normal((2, 5))
    e(ember.tensor(x))
    t(torch.from_numpy(x))
    remove_spectral_norm(e)
    torch.nn.utils.remove_spectral_norm(t)
    assert isinstance(e.weight, ember.nn.Parameter)
    _close(e.weight, t.weight)
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    assert es._metadata == ts._metadata
    assert not e._load_state_dict_pre_hooks and not e._forward_pre_hooks
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        remove_spectral_norm(e)


def test_errors():
    m = spectral_norm(ember.nn.Linear(2, 2))
    with pytest.raises(RuntimeError) as ee:
        spectral_norm(m)
    with pytest.raises(RuntimeError) as te:
        torch.nn.utils.spectral_norm(torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2)))
    assert str(ee.value) == str(te.value)
    with pytest.raises(ValueError) as ee:
        spectral_norm(ember.nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError) as te:
        torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2), n_power_iterations=0)
    assert str(ee.value) == str(te.value)
    with pytest.raises(ValueError) as ee:
        spectral_norm(ember.nn.Linear(2, 2, bias=False), name="bias")
    with pytest.raises(ValueError) as te:
        torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2, bias=False), name="bias")
    assert str(ee.value) == str(te.value)

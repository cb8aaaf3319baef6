"""Passes and freezing against torch's on the same traced programs."""

import re
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _strip(g) -> str:
    return re.sub(r" # [^\n]*", "", str(g))


def _trace(lib, fn, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.trace(fn, tuple(lib.tensor(a) for a in arrays), check_trace=False)


def f_dup(x, y):
    a = x.relu()
    b = x.relu()
    return a * b + y.relu()


def f_dead(x):
    _unused = x.tanh()
    return x.exp()


@pytest.mark.parametrize("fn", [f_dup, f_dead])
@pytest.mark.parametrize("name", ["_jit_pass_cse", "_jit_pass_dce"])
def test_pass_on_traced_graph_matches_torch(fn, name):
    arrays = [np.ones((2, 3), np.float32)] * (2 if fn is f_dup else 1)
    te, tt = _trace(ember, fn, *arrays), _trace(torch, fn, *arrays)
    ge, gt = te.graph.copy(), tt.graph.copy()
    getattr(ember._C, name)(ge)
    getattr(torch._C, name)(gt)
    assert _strip(ge) == _strip(gt)


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Dropout(0.2))


def test_freeze_matches_torch():
    tm = _cnn(torch)
    with torch.no_grad():
        tm[1].running_mean.normal_()
        tm[1].running_var.uniform_(0.5, 1.5)
        tm[1].weight.normal_()
    em = _cnn(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).normal(size=(2, 2, 6, 6)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fe = ember.jit.freeze(ember.jit.trace(em.eval(), ember.tensor(x)))
        ft = torch.jit.freeze(torch.jit.trace(tm.eval(), torch.tensor(x)))
    for g in (fe.graph, ft.graph):
        kinds = {n.kind() for n in g.nodes()}
        assert "prim::GetAttr" not in kinds and "aten::batch_norm" not in kinds
        assert "aten::dropout" not in kinds
    np.testing.assert_allclose(
        fe(ember.tensor(x)).numpy(), ft(torch.tensor(x)).numpy(), rtol=1e-4, atol=1e-5
    )

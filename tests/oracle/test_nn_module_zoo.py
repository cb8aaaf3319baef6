"""A zoo of models (MLP, LeNet, ResNet basic block) built in ember and torch: printing,
state_dict keys and metadata, outputs and gradients in train and eval mode, checkpoints
across the two libraries, Conv+BN fusion. Uses other engineers' layers; skips without them."""

from __future__ import annotations

import io
from collections import OrderedDict

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_NEEDED = ("Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d", "Dropout", "LogSoftmax")
pytestmark = pytest.mark.skipif(
    not all(hasattr(ember.nn, n) for n in _NEEDED), reason="layers not available yet"
)


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Linear(20, 16), nn.ReLU(), nn.Dropout(0.0), nn.Linear(16, 10), nn.LogSoftmax(dim=1)
    )


def lenet(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 4, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32, 16),
        nn.ReLU(),
        nn.Linear(16, 10),
    )


def resblock(lib):
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, c=4):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + x)

    return BasicBlock()


ZOO = {
    "mlp": (mlp, (6, 20)),
    "lenet": (lenet, (2, 1, 16, 16)),
    "resblock": (resblock, (2, 4, 6, 6)),
}


def to_ember_sd(sd):
    return OrderedDict((k, ember.from_numpy(v.detach().numpy().copy())) for k, v in sd.items())


@pytest.mark.parametrize("name", list(ZOO))
def test_repr_and_state_dict(name):
    build, _ = ZOO[name]
    t, e = build(torch), build(ember)
    assert repr(e) == repr(t)
    tsd, esd = t.state_dict(), e.state_dict()
    assert list(esd) == list(tsd)
    assert esd._metadata == tsd._metadata
    assert [tuple(v.shape) for v in esd.values()] == [tuple(v.shape) for v in tsd.values()]
    assert [str(v.dtype) for v in esd.values()] == [str(v.dtype) for v in tsd.values()]


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("name", list(ZOO))
def test_outputs_and_gradients(name, train):
    build, shape = ZOO[name]
    torch.manual_seed(0)
    t = build(torch).double()
    e = build(ember).double()
    e.load_state_dict(to_ember_sd(t.state_dict()))
    t.train(train)
    e.train(train)
    x = np.random.default_rng(1).standard_normal(shape)
    tx = torch.from_numpy(x.copy()).requires_grad_()
    ex = ember.from_numpy(x.copy()).requires_grad_()
    ty, ey = t(tx), e(ex)
    np.testing.assert_allclose(ey._data, ty.detach().numpy(), rtol=1e-9, atol=1e-10)
    g = np.random.default_rng(2).standard_normal(ty.shape)
    ty.backward(torch.from_numpy(g))
    ey.backward(ember.from_numpy(g))
    np.testing.assert_allclose(ex.grad._data, tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    for (n, tp), ep in zip(t.named_parameters(), e.parameters()):
        np.testing.assert_allclose(ep.grad._data, tp.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=n)
    for (n, tb), eb in zip(t.state_dict().items(), e.state_dict().values()):
        np.testing.assert_allclose(eb._data, tb.numpy(), rtol=1e-9, atol=1e-12, err_msg=n)


@pytest.mark.parametrize("name", list(ZOO))
def test_checkpoints_cross_libraries(name):
    build, shape = ZOO[name]
    t, e = build(torch), build(ember)
    buf = io.BytesIO()
    ember.save(e.state_dict(), buf)
    buf.seek(0)
    t.load_state_dict(torch.load(buf))
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    t.eval()
    e.eval()
    np.testing.assert_allclose(
        e(ember.from_numpy(x.copy()))._data,
        t(torch.from_numpy(x.copy())).detach().numpy(),
        rtol=1e-4,
        atol=1e-5,
    )
    t2 = build(torch)
    buf = io.BytesIO()
    torch.save(t2.state_dict(), buf)
    buf.seek(0)
    e.load_state_dict(ember.load(buf))
    t2.eval()
    np.testing.assert_allclose(
        e(ember.from_numpy(x.copy()))._data,
        t2(torch.from_numpy(x.copy())).detach().numpy(),
        rtol=1e-4,
        atol=1e-5,
    )


def test_fuse_conv_bn_eval_real_layers():
    torch.manual_seed(4)
    t = resblock(torch).double()
    with torch.no_grad():
        t.bn1.running_mean.uniform_(-1, 1)
        t.bn1.running_var.uniform_(0.5, 2)
        t.bn1.weight.uniform_(0.5, 2)
    e = resblock(ember).double()
    e.load_state_dict(to_ember_sd(t.state_dict()))
    t.eval()
    e.eval()
    tf = torch.nn.utils.fuse_conv_bn_eval(t.conv1, t.bn1)
    ef = ember.nn.utils.fuse_conv_bn_eval(e.conv1, e.bn1)
    assert repr(ef) == repr(tf) and ef.bias is not None
    x = np.random.default_rng(5).standard_normal((1, 4, 5, 5))
    np.testing.assert_allclose(
        ef(ember.from_numpy(x.copy()))._data,
        tf(torch.from_numpy(x.copy())).detach().numpy(),
        rtol=1e-10,
    )
    np.testing.assert_allclose(
        ef(ember.from_numpy(x.copy()))._data,
        e.bn1(e.conv1(ember.from_numpy(x.copy())))._data,
        rtol=1e-10,
        atol=1e-12,
    )

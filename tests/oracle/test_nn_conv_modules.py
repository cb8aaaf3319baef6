"""Oracle tests for the convolution, pooling and fold modules: values, grads, repr, init."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn.modules.conv as EC
import ember.nn.modules.fold as EFo
import ember.nn.modules.pooling as EP
from tests.oracle.helper import assert_same, rand, torch

EN = type("EN", (), {**vars(EC), **vars(EP), **vars(EFo)})


def _pair(name, *args, **kw):
    t = getattr(torch.nn, name)(*args, **kw)
    e = getattr(EN, name)(*args, **kw)
    for (n, tp), (m, ep) in zip(t.named_parameters(), e.named_parameters()):
        assert n == m and tuple(tp.shape) == tuple(ep.shape)
        with ember.no_grad():
            ep.copy_(ember.from_numpy(tp.detach().numpy().copy()))
    return t, e


def _run(t, e, x, **kw):
    tx = torch.from_numpy(x.copy()).requires_grad_(True)
    ex = ember.from_numpy(x.copy()).requires_grad_(True)
    to, eo = t(tx, **kw), e(ex, **kw)
    to0 = to[0] if isinstance(to, tuple) else to
    eo0 = eo[0] if isinstance(eo, tuple) else eo
    assert_same(eo0, to0, atol=1e-4)
    assert eo0.grad_fn.name() == to0.grad_fn.name()
    g = np.random.default_rng(0).standard_normal(tuple(to0.shape)).astype(x.dtype)
    to0.backward(torch.from_numpy(g))
    eo0.backward(ember.from_numpy(g))
    assert_same(ex.grad, tx.grad, atol=1e-4, strides=False)
    for (n, tp), (_, ep) in zip(t.named_parameters(), e.named_parameters()):
        assert_same(ep.grad, tp.grad, atol=1e-3, strides=False, what=n)
    assert repr(e) == repr(t)


@pytest.mark.parametrize(
    "name,args,kw,shape",
    [
        ("Conv2d", (3, 8, 3), dict(), (2, 3, 10, 9)),
        ("Conv2d", (3, 8, 3), dict(stride=2, padding=1, bias=False), (2, 3, 38, 38)),
        ("Conv2d", (4, 8, 3), dict(padding=6, dilation=6, groups=2), (2, 4, 38, 38)),
        ("Conv2d", (4, 4, 3), dict(padding="same", groups=4), (2, 4, 7, 7)),
        ("Conv2d", (3, 4, (3, 2)), dict(padding=1, padding_mode="reflect"), (2, 3, 6, 7)),
        ("Conv2d", (3, 4, 3), dict(padding=2, padding_mode="replicate"), (2, 3, 6, 7)),
        ("Conv2d", (3, 4, 3), dict(padding=(1, 2), padding_mode="circular"), (2, 3, 6, 7)),
        ("Conv2d", (3, 4, 4), dict(padding="same", padding_mode="reflect"), (2, 3, 6, 7)),
        ("Conv1d", (3, 5, 3), dict(stride=2, padding=1), (2, 3, 11)),
        ("Conv1d", (3, 5, 3), dict(padding=1, padding_mode="circular"), (3, 11)),
        ("Conv3d", (2, 4, 3), dict(padding=1), (1, 2, 4, 5, 6)),
        ("ConvTranspose2d", (4, 6, 3), dict(stride=2, groups=2, output_padding=1), (2, 4, 5, 5)),
        ("ConvTranspose1d", (4, 3, 3), dict(stride=2, padding=1, bias=False), (2, 4, 7)),
        ("ConvTranspose3d", (2, 3, 2), dict(stride=2), (1, 2, 3, 3, 3)),
        ("MaxPool2d", (2, 2), dict(), (1, 2, 75, 75)),
        ("MaxPool2d", (2, 2), dict(ceil_mode=True), (1, 2, 75, 75)),
        ("MaxPool2d", (3,), dict(stride=2, padding=1, return_indices=True), (2, 3, 9, 9)),
        ("MaxPool1d", (3,), dict(stride=2, padding=1, dilation=2), (2, 3, 12)),
        ("MaxPool3d", (2,), dict(), (1, 2, 4, 4, 4)),
        ("AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False), (2, 3, 9, 9)),
        ("AvgPool2d", (2,), dict(ceil_mode=True, divisor_override=3), (2, 3, 9, 9)),
        ("AvgPool1d", (3,), dict(stride=2, padding=1), (2, 3, 9)),
        ("AvgPool3d", (2,), dict(stride=1), (1, 2, 4, 4, 4)),
        ("AdaptiveAvgPool2d", ((5, 3),), dict(), (2, 3, 9, 7)),
        ("AdaptiveAvgPool2d", (1,), dict(), (2, 3, 9, 7)),
        ("AdaptiveAvgPool1d", (4,), dict(), (2, 3, 9)),
        ("AdaptiveAvgPool3d", (2,), dict(), (1, 2, 5, 4, 3)),
        ("AdaptiveMaxPool2d", ((4, None),), dict(), (2, 3, 9, 7)),
        ("AdaptiveMaxPool1d", (4,), dict(return_indices=True), (2, 3, 9)),
        ("LPPool2d", (2, 2), dict(), (2, 3, 8, 8)),
        ("LPPool1d", (2, 3), dict(stride=2), (2, 3, 9)),
        ("Unfold", (3,), dict(padding=1, stride=2), (2, 3, 8, 8)),
        ("Fold", ((6, 6), 3), dict(padding=1), (2, 27, 36)),
    ],
)
def test_module(name, args, kw, shape):
    t, e = _pair(name, *args, **kw)
    low = 0.1 if name.startswith("LP") else -2.0
    _run(t, e, rand(*shape, low=low))


def test_conv_transpose_output_size():
    t, e = _pair("ConvTranspose2d", 4, 3, 3, stride=2)
    _run(t, e, rand(1, 4, 5, 5), output_size=(12, 12))
    with pytest.raises(ValueError):
        e(ember.zeros(1, 4, 5, 5), output_size=(20, 20))


def test_max_unpool_modules():
    for nd, shape in ((1, (2, 3, 8)), (2, (2, 3, 8, 6))):
        x = rand(*shape)
        outs = []
        for lib in (torch, EN):
            pool = getattr(lib if lib is EN else lib.nn, f"MaxPool{nd}d")(2, return_indices=True)
            unpool = getattr(lib if lib is EN else lib.nn, f"MaxUnpool{nd}d")(2)
            xx = (torch if lib is torch else ember).from_numpy(x.copy())
            outs.append((unpool(*pool(xx)), repr(unpool)))
        assert_same(outs[1][0], outs[0][0])
        assert outs[1][1] == outs[0][1]


@pytest.mark.parametrize(
    "name,args,kw",
    [
        ("Conv2d", (3, 8, 3), dict(groups=2)),
        ("Conv2d", (4, 6, 3), dict(groups=4)),
        ("Conv2d", (4, 6, 3), dict(padding="full")),
        ("Conv2d", (4, 6, 3), dict(padding="same", stride=2)),
        ("Conv2d", (4, 6, 3), dict(padding_mode="mirror")),
        ("ConvTranspose2d", (4, 6, 3), dict(padding_mode="reflect")),
    ],
)
def test_module_errors(name, args, kw):
    with pytest.raises(Exception) as te:
        getattr(torch.nn, name)(*args, **kw)
    with pytest.raises(Exception) as ee:
        getattr(EN, name)(*args, **kw)
    assert type(ee.value) is type(te.value)
    if "must be one of" not in str(te.value):  # set order in that message is arbitrary
        assert str(ee.value) == str(te.value)


def test_default_init_distribution():
    m = EN.Conv2d(16, 32, 3)
    fan_in = 16 * 9
    w = m.weight.detach().numpy()
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)) gives the same bound
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    b = m.bias.detach().numpy()
    assert np.abs(b).max() <= bound
    mt = EN.ConvTranspose2d(16, 32, 3)
    assert tuple(mt.weight.shape) == (16, 32, 3, 3)
    fan_in_t = 32 * 9  # torch's fan_in of a transposed weight is size(1) * receptive field
    assert np.abs(mt.bias.detach().numpy()).max() <= 1 / math.sqrt(fan_in_t)


def test_print_zoo():
    import ember.nn as nn

    def lenet(n):
        return n.Sequential(
            n.Conv2d(1, 16, 5, padding=2),
            n.ReLU(),
            n.MaxPool2d(2),
            n.Conv2d(16, 32, 5),
            n.ReLU(),
            n.MaxPool2d(2, ceil_mode=True),
            n.Flatten(),
            n.Linear(800, 128),
        )

    def misc(n):
        return n.Sequential(
            n.Conv1d(3, 4, 3, padding="same", padding_mode="circular"),
            n.Conv3d(2, 4, (1, 3, 3), stride=(1, 2, 2), groups=2, bias=False),
            n.ConvTranspose2d(32, 8, 3, stride=2, output_padding=1, dilation=2),
            n.AvgPool2d(3, 2, 1, count_include_pad=False, divisor_override=2),
            n.AdaptiveMaxPool2d((2, None)),
            n.LPPool2d(2, 3),
            n.MaxUnpool2d(2),
            n.Upsample(size=(4, 4), mode="bilinear", align_corners=True),
            n.UpsamplingBilinear2d(scale_factor=2),
            n.PixelUnshuffle(2),
            n.ChannelShuffle(3),
            n.Fold((4, 5), 2),
        )

    for build in (lenet, misc):
        assert repr(build(nn)) == repr(build(torch.nn))

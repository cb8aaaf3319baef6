"""Oracle tests: activation, loss and dropout Modules against torch (repr, values, grads)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, rand, torch

X = rand(4, 6, dtype="float64")

ACT = [
    "ReLU()",
    "ReLU(inplace=True)",
    "ReLU6()",
    "ReLU6(inplace=True)",
    "LeakyReLU()",
    "LeakyReLU(0.2, inplace=True)",
    "ELU(alpha=0.5)",
    "CELU(2.0)",
    "SELU()",
    "GELU()",
    "GELU(approximate='tanh')",
    "SiLU()",
    "Mish()",
    "Hardtanh(-2.0, 3.0)",
    "Hardswish()",
    "Hardsigmoid()",
    "Hardshrink(0.3)",
    "Softshrink()",
    "Tanhshrink()",
    "Softplus(beta=2.0, threshold=5.0)",
    "Softsign()",
    "Threshold(0.1, 20.0)",
    "Sigmoid()",
    "LogSigmoid()",
    "Tanh()",
    "Softmax(dim=1)",
    "Softmin(dim=0)",
    "LogSoftmax(dim=-1)",
    "GLU()",
    "RReLU(0.1, 0.3)",
]


def _make(lib, spec):
    return eval("lib.nn." + spec, {"lib": lib})


@pytest.mark.parametrize("spec", ACT)
def test_activation_modules(spec):
    assert repr(_make(ember, spec)) == repr(_make(torch, spec))

    def fn(lib, x):
        m = _make(lib, spec).eval()
        return m(x * 1) if "inplace=True" in spec else m(x)

    check(fn, [X])


def test_softmax2d_and_prelu():
    x = rand(2, 3, 4, 5, dtype="float64")
    check(lambda lib, t: lib.nn.Softmax2d()(t), [x])
    for n in (1, 3):
        tm, em = torch.nn.PReLU(n, init=0.1).double(), ember.nn.PReLU(n, init=0.1).double()
        assert repr(em) == repr(tm)
        assert list(dict(em.named_parameters())) == ["weight"]
        xe = ember.from_numpy(x).requires_grad_()
        xt = torch.from_numpy(x).requires_grad_()
        ye, yt = em(xe), tm(xt)
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy())
        ye.sum().backward()
        yt.sum().backward()
        np.testing.assert_allclose(em.weight.grad.numpy(), tm.weight.grad.numpy())
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy())


LOSS = [
    ("L1Loss()", 2),
    ("MSELoss(reduction='sum')", 2),
    ("SmoothL1Loss(beta=0.5)", 2),
    ("HuberLoss(delta=0.3)", 2),
    ("SoftMarginLoss()", 2),
    ("KLDivLoss(reduction='batchmean')", 2),
    ("BCEWithLogitsLoss()", 2),
    ("MultiLabelSoftMarginLoss()", 2),
    ("PoissonNLLLoss()", 2),
    ("HingeEmbeddingLoss(margin=0.5)", 2),
    ("CrossEntropyLoss(label_smoothing=0.1)", "ce"),
    ("NLLLoss(reduction='none')", "ce"),
    ("CosineEmbeddingLoss(0.2)", 3),
    ("MarginRankingLoss(0.1)", 3),
    ("TripletMarginLoss(margin=0.5)", 3),
    ("MultiMarginLoss(p=2, margin=0.5)", "ce"),
]


@pytest.mark.parametrize("spec,kind", LOSS)
def test_loss_modules(spec, kind):
    assert repr(_make(ember, spec)) == repr(_make(torch, spec))
    y = rand(4, 6, dtype="float64", low=0.05, high=0.95)
    if kind == "ce":
        t = rand(4, dtype="int64", low=0, high=6)
        check(lambda lib, x: _make(lib, spec)(x, lib.from_numpy(t)), [X])
    elif kind == 3:
        lbl = np.array([1.0, -1.0, -1.0, 1.0])
        if spec.startswith("Triplet"):
            check(lambda lib, a, b, c: _make(lib, spec)(a, b, c), [X, y, y[::-1].copy()])
        elif spec.startswith("Margin"):
            check(
                lambda lib, a, b: _make(lib, spec)(a, b, lib.from_numpy(lbl)),
                [X[:, 0].copy(), y[:, 0].copy()],
            )
        else:
            check(lambda lib, a, b: _make(lib, spec)(a, b, lib.from_numpy(lbl)), [X, y])
    else:
        if spec.startswith(("SoftMargin", "Hinge")):
            y = np.sign(y - 0.5)
        check(lambda lib, x, t: _make(lib, spec)(x, t.detach()), [X, y])


def test_weighted_loss_modules_and_legacy_args():
    w = rand(6, dtype="float64", low=0.2, high=2)
    t = rand(4, dtype="int64", low=0, high=6)
    for lib in (ember, torch):
        m = lib.nn.CrossEntropyLoss(weight=lib.from_numpy(w), ignore_index=2)
        assert list(dict(m.named_buffers())) == ["weight"]
    check(
        lambda lib, x: lib.nn.CrossEntropyLoss(lib.from_numpy(w), ignore_index=2)(
            x, lib.from_numpy(t)
        ),
        [X],
    )
    check(
        lambda lib, x, y: lib.nn.BCEWithLogitsLoss(pos_weight=lib.from_numpy(w))(x, y.detach()),
        [X, rand(4, 6, dtype="float64", low=0, high=1)],
    )
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        m = ember.nn.MSELoss(size_average=False)
    assert m.reduction == "sum"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.nn.MSELoss(size_average=False).reduction == "sum"


DROP = [
    "Dropout()",
    "Dropout(0.2, inplace=True)",
    "Dropout1d(0.3)",
    "Dropout2d()",
    "Dropout3d()",
    "AlphaDropout(0.1)",
    "FeatureAlphaDropout()",
]


@pytest.mark.parametrize("spec", DROP)
def test_dropout_modules(spec):
    em, tm = _make(ember, spec), _make(torch, spec)
    assert repr(em) == repr(tm)
    shape = {"Dropout1d": (4, 5, 6), "Dropout2d": (4, 5, 3, 3), "Dropout3d": (4, 5, 2, 2, 2)}
    shp = shape.get(spec.split("(")[0], (4, 5, 3, 2))
    x = ember.randn(*shp)
    em.eval()
    assert em(x) is x
    em.train()
    ember.manual_seed(0)
    y = em(x.clone())
    assert tuple(y.shape) == shp
    assert not np.array_equal(y.numpy(), x.numpy())


def test_multilabel_margin_module():
    tgt = np.array(
        [[3, 0, -1, 1, 2, 0], [1, 2, 3, 4, 0, 5], [-1, 1, 1, 1, 1, 1], [4, 4, -1, 0, 0, 0]]
    )
    assert repr(ember.nn.MultiLabelMarginLoss()) == repr(torch.nn.MultiLabelMarginLoss())
    check(lambda lib, x: lib.nn.MultiLabelMarginLoss()(x, lib.from_numpy(tgt)), [X])

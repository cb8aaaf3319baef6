"""Oracle tests: the layer families that share a forward and an ``extra_repr`` (activations,
dropout, reduction-only and pair-margin losses, pooling, and the layers whose repr is their
``__constants__``) against torch: the printed layer, what a ``__torch_function__`` mode sees
the layer call, and ``jit.script`` of the layer computing what the layer computes."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle.helper import rand, torch

REPRS = [
    "Flatten(0, 2)",
    "Unflatten(1, (2, 3))",
    "PixelShuffle(3)",
    "PixelUnshuffle(2)",
    "ChannelShuffle(2)",
    "ConstantPad2d((1, 2, 3, 4), 0.5)",
    "ConstantPad1d(2, -1.0)",
    "ZeroPad2d(1)",
    "ReflectionPad1d((1, 2))",
    "LocalResponseNorm(3, 1e-3, 0.5, 2.0)",
    "Dropout(0.2, True)",
    "Dropout1d(0.3)",
    "Dropout2d()",
    "Dropout3d(0.1, inplace=True)",
    "AlphaDropout(0.1)",
    "FeatureAlphaDropout(0.4, True)",
    "LPPool1d(2.0, 3)",
    "LPPool2d(3, 2, 1, True)",
    "MaxPool1d(3, 2, 1, 2, ceil_mode=True)",
    "MaxPool2d(3, return_indices=True)",
    "AvgPool2d(3, 2, 1)",
    "AvgPool1d(2)",
    "AdaptiveAvgPool2d((2, 3))",
    "AdaptiveMaxPool1d(4, return_indices=True)",
    "MaxUnpool2d(2, 1)",
    "ELU(0.5, True)",
    "CELU()",
    "Hardshrink(0.3)",
    "Softshrink(2.0)",
    "Softmax(-1)",
    "LogSoftmax()",
    "ReLU(True)",
    "SiLU(inplace=True)",
    "Hardswish(True)",
    "L1Loss(reduction='sum')",
    "MultiLabelMarginLoss()",
    "CosineEmbeddingLoss(0.3, reduction='none')",
    "MarginRankingLoss(margin=0.5)",
]


def _make(lib, spec):
    return eval("lib.nn." + spec, {"lib": lib})


@pytest.mark.parametrize("spec", REPRS)
def test_repr_as_torch(spec):
    assert repr(_make(ember, spec)) == repr(_make(torch, spec))


def _seen(lib, layer, *args):
    """(function name, positional count, keyword names) of each call a mode sees."""
    overrides = ember.overrides if lib is ember else torch.overrides
    seen = []

    class Watch(overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            seen.append((getattr(func, "__name__", str(func)), len(args), sorted(kwargs)))
            return func(*args, **kwargs)

    with Watch():
        layer(*args)
    return seen[0]


FAMILY = [
    "ReLU()",
    "SiLU()",
    "Mish()",
    "Hardsigmoid()",
    "Hardswish()",
    "SELU(True)",
    "ELU(0.5)",
    "CELU(2.0, True)",
    "Hardshrink()",
    "Softshrink(0.2)",
    "Dropout(0.3)",
    "Dropout2d()",
    "Dropout3d(0.1)",
    "LeakyReLU(0.2)",
    "Hardtanh(-2.0, 3.0)",
    "ReLU6()",
    "RReLU(0.1, 0.3)",
    "Softplus(2.0, 5.0)",
    "GELU('tanh')",
    "Tanhshrink()",
    "Softsign()",
    "GLU()",
]


# (not listed: Threshold and LogSigmoid, which torch's mode sees as its private ``_threshold``
# and builtin ``log_sigmoid``; Softmax/Softmin/LogSoftmax, where torch's functions add
# ``dtype=None``; the alpha dropouts and the losses, whose torch functions add their defaults)


@pytest.mark.parametrize("spec", FAMILY)
def test_torch_function_mode_sees_the_layer_call_as_torch(spec):
    x = rand(2, 3, 4, 4)
    got = [_seen(lib, _make(lib, spec), lib.from_numpy(x.copy())) for lib in (ember, torch)]
    assert got[0] == got[1]


SCRIPTED = [
    ("ELU(0.5)", (2, 3)),
    ("CELU()", (2, 3)),
    ("Hardshrink(0.3)", (2, 3)),
    ("Softmax(1)", (2, 3)),
    ("LogSoftmax(0)", (2, 3)),
    ("Hardswish()", (2, 3)),
    ("Dropout(0.3)", (2, 3)),
    ("LeakyReLU(0.2)", (2, 3)),
    ("Hardtanh(-0.5, 0.5)", (2, 3)),
    ("ReLU6()", (2, 3)),
    ("Threshold(0.1, 20.0)", (2, 3)),
    ("GLU()", (2, 4)),
    ("RReLU(0.1, 0.3)", (2, 3)),
    ("AvgPool2d(2)", (1, 2, 6, 6)),
    ("AvgPool1d(3, 2, 1)", (2, 3, 7)),
    ("MaxPool1d(2)", (2, 3, 6)),
    ("MaxPool3d(2)", (1, 1, 4, 4, 4)),
    ("AdaptiveAvgPool1d(3)", (2, 3, 7)),
    ("AdaptiveMaxPool2d((2, 3))", (1, 2, 6, 6)),
    ("LPPool2d(2, 2)", (1, 2, 6, 6)),
]


@pytest.mark.parametrize("spec,shape", SCRIPTED)
def test_scripted_layer_computes_as_torch(spec, shape):
    # a layer whose forward calls its family's self._fn(...) scripts to that function's call
    x = rand(*shape)
    out = {}
    for lib in (ember, torch):
        layer = _make(lib, spec)
        scripted = lib.jit.script(layer)
        lib.manual_seed(0)
        eager = layer(lib.from_numpy(x.copy())).detach().numpy()
        lib.manual_seed(0)
        out[lib.__name__] = scripted(lib.from_numpy(x.copy())).detach().numpy()
        np.testing.assert_allclose(out[lib.__name__], eager, rtol=1e-6)
    np.testing.assert_allclose(out["ember"], out["torch"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "spec,n",
    [
        ("L1Loss()", 2),
        ("MSELoss(reduction='none')", 2),
        ("SoftMarginLoss()", 2),
        ("BCELoss()", 2),
        ("MultiLabelSoftMarginLoss(reduction='none')", 2),
        ("CosineEmbeddingLoss(0.2)", 3),
        ("MarginRankingLoss(0.1, reduction='sum')", 3),
    ],
)
def test_scripted_shared_forward_losses_as_torch(spec, n):
    a, b = rand(4, 5, dtype="float64"), rand(4, 5, dtype="float64")
    label = np.array([1.0, -1.0, -1.0, 1.0])
    out = []
    for lib in (ember, torch):
        scripted = lib.jit.script(_make(lib, spec))
        if spec.startswith("Margin"):
            args = (a[:, 0].copy(), b[:, 0].copy(), label)
        elif n == 3:
            args = (a, b, label)
        elif spec.startswith(("BCE", "MultiLabel")):
            args = (1 / (1 + np.exp(-a)), (b > 0).astype(np.float64))
        else:
            args = (a, np.sign(b) if spec.startswith("Soft") else b)
        out.append(scripted(*[lib.from_numpy(v) for v in args]).numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12)

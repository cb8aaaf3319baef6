"""F.interpolate, nn.Upsample and nn.AdaptiveAvgPool2d traced alone against torch's: the printed
graph (``aten::upsample_nearest2d(%x, None, [2., 2.])``...; source ranges aside: torch's name
its own functional.py), the traced module run at another input shape (scale factors follow
it, as torch's), and the ONNX export (``Resize``) in onnxruntime at two shapes."""

import re
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_MANGLE = re.compile(r"___torch_mangle_[0-9]+\.")


def _text(graph) -> str:
    return _MANGLE.sub("", re.sub(r" # [^\n]*", "", str(graph)))


FUNCTIONS = {
    "nearest_scale": lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2),
    "nearest_size": lambda lib, x: lib.nn.functional.interpolate(x, size=(5, 7)),
    "bilinear_size": lambda lib, x: lib.nn.functional.interpolate(
        x, size=(5, 7), mode="bilinear", align_corners=False
    ),
    "bilinear_scale_corners": lambda lib, x: lib.nn.functional.interpolate(
        x, scale_factor=2.0, mode="bilinear", align_corners=True
    ),
    "bicubic_scale": lambda lib, x: lib.nn.functional.interpolate(
        x, scale_factor=(1.5, 2), mode="bicubic"
    ),
    "nearest_exact": lambda lib, x: lib.nn.functional.interpolate(
        x, scale_factor=2, mode="nearest-exact"
    ),
    "linear_1d": lambda lib, x: lib.nn.functional.interpolate(
        x.flatten(2), scale_factor=3, mode="linear"
    ),
}

MODULES = {
    "Upsample_nearest": lambda nn: nn.Upsample(scale_factor=2),
    "Upsample_bilinear": lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"),
    "AdaptiveAvgPool2d_grid": lambda nn: nn.AdaptiveAvgPool2d((2, 1)),
    "AdaptiveAvgPool2d_one": lambda nn: nn.AdaptiveAvgPool2d(1),
}

_X = np.random.default_rng(3).normal(size=(1, 2, 3, 4)).astype(np.float32)
_Y = np.random.default_rng(4).normal(size=(2, 2, 5, 6)).astype(np.float32)


def _compare(ours, theirs):
    assert _text(ours.graph) == _text(theirs.graph)
    a, b = ours(ember.tensor(_Y)), theirs(torch.tensor(_Y))
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_traced_interpolate_as_torch(name):
    fn = FUNCTIONS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = ember.jit.trace(lambda x: fn(ember, x), (ember.tensor(_X),))
        theirs = torch.jit.trace(lambda x: fn(torch, x), (torch.tensor(_X),))
    _compare(ours, theirs)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_traced_resampling_module_alone_as_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = ember.jit.trace(MODULES[name](ember.nn), (ember.tensor(_X),))
        theirs = torch.jit.trace(MODULES[name](torch.nn), (torch.tensor(_X),))
    _compare(ours, theirs)
    assert _text(ours.inlined_graph) == _text(theirs.inlined_graph)


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - {"linear_1d"}))
def test_interpolate_exports_resize_following_the_input(name):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from tests.oracle._onnx_helper import _export

    fn = FUNCTIONS[name]

    class M(ember.nn.Module):
        def forward(self, x):
            return fn(ember, x)

    data = _export(ember, M(), (ember.tensor(_X),), input_names=["x"], output_names=["y"],
                   dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}})  # fmt: skip
    assert "Resize" in [n.op_type for n in onnx.load_from_string(data).graph.node]
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for a in (_X, _Y):
        got = sess.run(None, {"x": a})[0]
        want = fn(ember, ember.tensor(a)).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

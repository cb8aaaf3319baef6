"""ember.onnx.export of models and ops, against onnxruntime and torch's own (TorchScript-based)
exporter: each model is built in both libraries with the same weights and exported by both;
ember's file must pass ``onnx.checker``, match ember's eager output (atol 1e-5) and torch's
file's output in onnxruntime, and run at another batch size when the batch dim is dynamic
(see ``_onnx_helper.check_export``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ember
from tests.oracle._onnx_helper import (
    _FUNCTIONS,
    _adaptive,
    _cnn,
    _conv1d,
    _export,
    _fn_module,
    _gru,
    _lstm,
    _mlp,
    _pointwise,
    _rng,
    _slicing,
    _transformer_bits,
    check_export,
)


def test_mlp():
    check_export(_mlp, [(2, 6)])


def test_cnn_conv_batchnorm_pools():
    proto = check_export(_cnn, [(2, 3, 16, 16)])
    ops = {n.op_type for n in proto.graph.node}
    assert {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm"} <= ops


def test_conv1d_maxpool1d():
    check_export(_conv1d, [(3, 4, 10)])


def test_adaptive_avg_pool_to_a_grid():
    check_export(_adaptive, [(2, 2, 8, 11)])  # 6 x 9 to 2 x 3: torch exports this case
    check_export(_adaptive, [(2, 2, 9, 10)], torch_too=False)  # torch refuses uneven windows


def test_embedding_layernorm_attention():
    check_export(_transformer_bits, [(2, 5)], dtypes=["int64"])


def test_pointwise_and_joining():
    check_export(_pointwise, [(2, 3, 4), (2, 3, 4)])


def test_slicing_indexing_buffers():
    check_export(_slicing, [(2, 3, 4)])


def test_lstm_bidirectional_two_layers():
    check_export(_lstm, [(2, 7, 4)])


def test_gru_with_initial_state():
    check_export(_gru, [(5, 3, 4), (1, 3, 6)], dynamic=False)


def test_opset_18_without_gelu_op():
    proto = check_export(
        lambda lib: lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.GELU("tanh")),
        [(2, 3)],
        opset_version=18,
    )
    assert "Gelu" not in {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize("name", sorted(_FUNCTIONS))
def test_function(name):
    check_export(_fn_module(_FUNCTIONS[name]), [(2, 3, 4)])


def test_ops_torch_does_not_export():
    f = _fn_module(
        lambda lib, x: (
            lib.addcdiv(x, x, x.abs() + 1, value=2),
            x.expm1(),
            lib.nn.functional.threshold(x, 0.1, 20.0),
            lib.nn.functional.channel_shuffle(x.reshape(x.shape[0], 3, 1, 1).repeat(1, 2, 1, 2), 3),
        )
    )
    check_export(f, [(2, 3)], torch_too=False)


def test_conv_transpose():
    def make(lib):
        nn = lib.nn
        return nn.Sequential(
            nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
            nn.ConvTranspose2d(4, 2, 2, groups=2),
        )

    check_export(make, [(2, 3, 5, 6)])


def test_unbatched_pool_and_rnn():
    def make(lib):
        nn = lib.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
                self.rnn = nn.GRU(5, 3, batch_first=True)

            def forward(self, x, s):
                return self.pool(x), self.rnn(s)[0]

        return M()

    # torch's own file for this model fails in onnxruntime (its MaxPool on an unbatched input)
    check_export(make, [(2, 7, 9), (4, 5)], dynamic=False, torch_too=False)


def test_upsample_group_norm_pixel_shuffle():
    def make(lib):
        nn = lib.nn
        return nn.Sequential(
            nn.Conv2d(2, 8, 1),
            nn.GroupNorm(4, 8),
            nn.PixelShuffle(2),
            nn.Upsample(scale_factor=2, mode="nearest"),
            nn.Conv2d(2, 2, 3),
            nn.Upsample(size=(9, 11), mode="bilinear", align_corners=False),
            nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=True),
        )

    check_export(make, [(2, 2, 4, 5)])


def _export_fn_run(fn, x, x2):
    """Export ``fn`` with a dynamic batch dim; return ORT's outputs on ``x`` and ``x2``."""
    data = _export(
        ember,
        fn,
        (ember.tensor(x),),
        input_names=["x"],
        output_names=["y"],
        dynamic_axes={"x": {0: "b"}, "y": {0: "b"}},
    )
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0], sess.run(None, {"x": x2})[0]


@settings(max_examples=25, deadline=None)
@given(
    dims=st.lists(st.integers(1, 4), min_size=2, max_size=4),
    data=st.data(),
)
def test_shape_ops_keep_a_dynamic_batch(dims, data):
    shape = [2, *dims]
    nd = len(shape)
    perm = [0, *data.draw(st.permutations(list(range(1, nd))))]
    axis = data.draw(st.integers(1, nd - 1))
    start = data.draw(st.integers(-shape[axis], shape[axis] - 1))
    step = data.draw(st.integers(1, 2))
    flat_from = data.draw(st.integers(1, nd - 1))

    def fn(x):
        y = x.permute(*perm).contiguous().flatten(flat_from)
        z = x.narrow(axis, 0, 1).expand(*x.shape) if shape[axis] > 1 else x
        s = x[(slice(None),) * axis + (slice(start, None, step),)]
        b = x.shape[0]
        return y.reshape(b, -1).sum(1) + z.reshape(b, -1).mean(-1) + s.reshape(b, -1).sum(1)

    x = _rng.normal(size=shape).astype(np.float32)
    x2 = _rng.normal(size=[5, *dims]).astype(np.float32)
    got, got2 = _export_fn_run(fn, x, x2)
    np.testing.assert_allclose(got, fn(ember.tensor(x)).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got2, fn(ember.tensor(x2)).numpy(), rtol=1e-5, atol=1e-5)


def test_vanilla_rnn_tanh_and_relu():
    def make(lib):
        nn = lib.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.RNN(3, 4, num_layers=2, bidirectional=True)
                self.b = nn.RNN(8, 2, nonlinearity="relu", batch_first=True, bias=False)

            def forward(self, x):
                y, h = self.a(x)
                return self.b(y.transpose(0, 1))[0], h

        return M()

    check_export(make, [(6, 2, 3)], dynamic=False)


def test_transformer_encoder_layer_and_attention():
    def make(lib):
        nn = lib.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
                self.att = nn.MultiheadAttention(8, 2, batch_first=True)

            def forward(self, x):
                y = self.enc(x)
                return self.att(y, x, x)

        return M()

    check_export(make, [(2, 5, 8)])


def _run_sizes(make, shape, axes, sizes):
    """Export ember's model with ``axes`` dynamic; compare ORT with eager at other sizes."""
    em = make(ember).eval()
    x = ember.randn(*shape)
    data = _export(ember, em, (x,), input_names=["x"], output_names=["y"], dynamic_axes={"x": axes})
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for size in sizes:
        x2 = ember.randn(*size)
        with ember.no_grad():
            ref = em(x2)
        ref = ref[0] if isinstance(ref, tuple) else ref
        np.testing.assert_allclose(
            sess.run(None, {"x": x2.numpy()})[0], ref.numpy(), atol=1e-5, rtol=1e-5
        )


def test_dynamic_batch_and_sequence_sizes_are_computed():
    def make(lib):
        nn = lib.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
                self.fc = nn.Linear(8, 3)

            def forward(self, x):
                y = self.enc(x)
                return self.fc(y).reshape(x.shape[0], -1)[:, : x.shape[1]] + y[:, -1, :1]

        return M()

    _run_sizes(make, (2, 5, 8), {0: "batch", 1: "seq"}, [(3, 7, 8), (1, 2, 8), (4, 5, 8)])


@pytest.mark.parametrize("opset", [11, 13, 17])
def test_older_opsets(opset):
    # tutorials often ask for these; axes become attributes, newer ops are decomposed
    check_export(_cnn, [(2, 3, 16, 16)], opset_version=opset)
    check_export(_transformer_bits, [(2, 5)], dtypes=["int64"], opset_version=opset)
    check_export(_lstm, [(2, 7, 4)], opset_version=opset)
    for name in ("reductions", "split_chunk", "squeeze_expand", "more_activations"):
        # torch exports celu from opset 12 only; ember decomposes it
        check_export(
            _fn_module(_FUNCTIONS[name]), [(2, 3, 4)], opset_version=opset, torch_too=opset >= 12
        )
    check_export(
        _fn_module(lambda lib, x: lib.softmax(x, 1) + lib.log_softmax(x, 0)),
        [(2, 3, 4)],
        opset_version=opset,
    )
    proto = check_export(_mlp, [(2, 6)], opset_version=opset)
    assert proto.opset_import[0].version == opset


def test_float64_model_and_bool_input():
    def make(lib):
        nn = lib.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.LayerNorm(3)).double()

            def forward(self, x, keep):
                return self.net(x).masked_fill(~keep, 0.0)

        return M()

    check_export(make, [(2, 4), (2, 3)], dtypes=["float64", "bool"])


def test_indices_and_masks_computed_by_the_model():
    # the index tensor and the mask come from the input: read at run time, not baked in
    check_export(
        _fn_module(lambda lib, x: (x[x.argmax(1)[:, 0]], x[x[:, 0, 0] > 0] * 2, x[x > 0.5])),
        [(3, 3, 4)],
    )

"""Shared by the ONNX export oracle tests: build a model in torch and in ember (ember's with
torch's weights), export both, and compare onnxruntime's outputs with ember's eager ones
(atol 1e-5) and with torch's exported file's; also a few model factories written once as
``make(lib)``."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ember

_rng = np.random.default_rng(0)


def _build(make):
    tm = make(torch)
    em = make(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    # non-trivial running statistics, so batch norm in eval mode is really exercised
    for (k, tv), ev in zip(tm.state_dict().items(), em.state_dict().values()):
        if k.endswith("running_var"):
            v = _rng.uniform(0.5, 2.0, tv.shape).astype(np.float32)
            tv.copy_(torch.from_numpy(v))
            ev.copy_(ember.tensor(v))
        elif k.endswith("running_mean"):
            v = _rng.normal(0, 0.5, tv.shape).astype(np.float32)
            tv.copy_(torch.from_numpy(v))
            ev.copy_(ember.tensor(v))
    return tm.eval(), em.eval()


def _export(lib, model, args, **kw) -> bytes:
    buf = io.BytesIO()
    if lib is torch:
        kw["dynamo"] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib.onnx.export(model, args, buf, **kw)
    return buf.getvalue()


def _run(data: bytes, feeds: dict) -> list:
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _eager(model, arrays):
    with ember.no_grad():
        out = model(*[ember.tensor(a) for a in arrays])
    outs = out if isinstance(out, tuple) else (out,)
    flat = []
    for o in outs:
        flat.extend(o if isinstance(o, tuple) else (o,))
    return [o.numpy() for o in flat]


def _random(shape, dtype):
    if dtype == "bool":
        return _rng.random(shape) > 0.5
    if dtype.startswith("int"):
        return _rng.integers(0, 5, shape).astype(dtype)
    return _rng.normal(size=shape).astype(dtype)


def check_export(make, shapes, dtypes=None, dynamic=True, batch2=5, torch_too=True, **kw):
    tm, em = _build(make)
    dtypes = dtypes or ["float32"] * len(shapes)
    arrays = [_random(s, d) for s, d in zip(shapes, dtypes)]
    names = [f"in{i}" for i in range(len(shapes))]
    n_out = len(_eager(em, arrays))
    outs = [f"out{i}" for i in range(n_out)]
    axes = {n: {0: "batch"} for n in names + outs} if dynamic else None
    opts = dict(input_names=names, output_names=outs, dynamic_axes=axes, **kw)
    data = _export(ember, em, tuple(ember.tensor(a) for a in arrays), **opts)
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == names
    assert [o.name for o in proto.graph.output] == outs
    got = _run(data, dict(zip(names, arrays)))
    for g, e in zip(got, _eager(em, arrays), strict=True):
        np.testing.assert_allclose(g, e, atol=1e-5, rtol=1e-5)
    if torch_too:
        tdata = _export(torch, tm, tuple(torch.from_numpy(a) for a in arrays), **opts)
        for g, t in zip(got, _run(tdata, dict(zip(names, arrays))), strict=True):
            np.testing.assert_allclose(g, t, atol=1e-5, rtol=1e-5)
    if dynamic:
        arrays2 = [np.concatenate([a] * batch2)[:batch2] if a.shape else a for a in arrays]
        arrays2 = [
            a + _rng.normal(size=a.shape).astype(a.dtype) if a.dtype.kind == "f" else a
            for a in arrays2
        ]
        got2 = _run(data, dict(zip(names, arrays2)))
        for g, e in zip(got2, _eager(em, arrays2), strict=True):
            np.testing.assert_allclose(g, e, atol=1e-5, rtol=1e-5)
    return proto


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Linear(6, 8),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(8, 8),
        nn.Tanh(),
        nn.Linear(8, 4),
        nn.Sigmoid(),
        nn.Linear(4, 3),
        nn.Softmax(dim=-1),
    )


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(inplace=True),
        nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2),
        nn.GELU(),
        nn.MaxPool2d(2),
        nn.AvgPool2d(2, ceil_mode=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 5),
        nn.LogSoftmax(dim=1),
    )


def _conv1d(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv1d(4, 6, 3, padding=1),
        nn.BatchNorm1d(6),
        nn.LeakyReLU(0.2),
        nn.MaxPool1d(2),
        nn.Conv1d(6, 2, 1),
        nn.Flatten(1),
    )


def _adaptive(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(2, 3, 3), nn.AdaptiveAvgPool2d((2, 3)), nn.Flatten(), nn.Linear(18, 4)
    )


def _transformer_bits(lib):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 8)
            self.ln = nn.LayerNorm(8)
            self.qkv = nn.Linear(8, 24)
            self.out = nn.Linear(8, 8)

        def forward(self, idx):
            x = self.ln(self.emb(idx))
            q, k, v = self.qkv(x).split(8, dim=-1)
            att = F.softmax(q @ k.transpose(-2, -1) / 8**0.5, dim=-1)
            y = self.out(att @ v) + x
            return y.mean(1), y.sum(-1, keepdim=True)

    return Block()


def _pointwise(lib):
    nn = lib.nn

    class M(nn.Module):
        def forward(self, x, y):
            a = (x - 1) * 2 / (y.abs() + 1) + x.pow(2) - 1.5 ** x.tanh()
            b = lib.sqrt(y.abs() + 0.1).log() + lib.exp(-x.abs()) - lib.rsqrt(y * y + 1)
            c = lib.cat([a, b], dim=1).permute(0, 2, 1).reshape(x.shape[0], -1)
            d = lib.where(x > 0, x, y) + lib.clamp(x, -0.5, 0.5) + nn.functional.silu(y)
            return c, d.unsqueeze(1)[:, :, 1:, ::2], lib.stack([x, y], dim=1).amax(2)

    return M()


def _slicing(lib):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", lib.arange(4.0) + 1)

        def forward(self, x):
            a = x[:, 1] * self.scale
            b = x[:, :, -1].unsqueeze(-1).expand(-1, -1, 4)
            c = x.transpose(1, 2)[..., 0]
            return a, b + x, c.flatten(), x.max(dim=1)[0], x.view(x.size(0), -1).mean(-1)

    return M()


def _lstm(lib):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 5, num_layers=2, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(10, 3)

        def forward(self, x):
            out, (h, c) = self.rnn(x)
            return self.fc(out[:, -1]), h.transpose(0, 1), c.sum(0)

    return M()


def _gru(lib):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 6)

        def forward(self, x, h0):
            out, h = self.rnn(x, h0)
            return out, h

    return M()


def _fn_module(fn):
    def make(lib):
        class Fn(lib.nn.Module):
            def forward(self, *xs):
                return fn(lib, *xs)

        return Fn()

    return make


_FUNCTIONS = {
    "split_chunk": lambda lib, x: (*x.split([1, 2], 1), *x.chunk(2, 2)),
    "unbind": lambda lib, x: x.unbind(1),
    "pad_constant": lambda lib, x: lib.nn.functional.pad(x, (1, 2, 0, 1), value=0.5),
    "pad_reflect": lambda lib, x: lib.nn.functional.pad(x, (2, 1), mode="reflect"),
    "pad_replicate": lambda lib, x: lib.nn.functional.pad(x, (1, 1), mode="replicate"),
    "flip_repeat": lambda lib, x: x.flip(1, 2).repeat(1, 2, 1),
    "index_list": lambda lib, x: x[:, [0, 2, -1]],
    "index_tensor": lambda lib, x: x[lib.tensor([1, 0])],
    "activations": lambda lib, x: (
        lib.nn.functional.elu(x),
        lib.nn.functional.softplus(x),
        lib.nn.functional.hardswish(x),
        lib.nn.functional.relu6(x),
        lib.nn.functional.hardtanh(x, -0.5, 0.5),
        lib.nn.functional.gelu(x),
    ),
    "reductions": lambda lib, x: (
        x.sum(),
        x.mean((1, 2)),
        x.amin(-1, keepdim=True),
        x.argmax(-1),
        x.argmin(1),
        x.max(),
        x.min(-1).values,
        x.min(-1).indices,
    ),
    "compare_mask": lambda lib, x: (
        x.masked_fill(x < 0, 0.25),
        (x >= 0.5).float() + (x != 1).long(),
        lib.maximum(x, -x),
    ),
    "casts": lambda lib, x: (x.double() * 2, (x * 3).long(), x.to(lib.float64).sum(1)),
    "sub_rsub_alpha": lambda lib, x: (2 - x, x.sub(x * 2, alpha=3), x.add(1, alpha=2), -x),
    "divide": lambda lib, x: (x / 2, 3 / (x.abs() + 1), x.reciprocal()),
    "matmul_nd": lambda lib, x: (
        x @ x.transpose(-1, -2),
        lib.bmm(x, x.transpose(1, 2)),
        x[0] @ x[1].T,
    ),
    "baddbmm": lambda lib, x: lib.baddbmm(
        x[:, :, :3], x, x.transpose(1, 2)[:, :, :3], beta=0.5, alpha=2
    ),
    "squeeze_expand": lambda lib, x: (
        x[:, :1].squeeze(1),
        x[:, :1].expand(-1, 4, -1),
        x.unsqueeze(-1).squeeze(),
    ),
    "linear_3d": lambda lib, x: lib.nn.functional.linear(x, lib.ones(5, 4), lib.ones(5)),
    "statistics": lambda lib, x: (
        x.var(1),
        x.std(-1, keepdim=True),
        x.norm(dim=1),
        x.norm(p=1, dim=(1, 2)),
        x.logsumexp(2),
        x.prod(1),
        x.cumsum(2),
        x.tril(),
        x.triu(1),
    ),
    "logical": lambda lib, x: (
        ((x > 0) & (x < 1)).float(),
        ((x > 0) | (x < -1)).float(),
        (~(x > 0)).float(),
        (x > 0).logical_xor(x > 1).float(),
        lib.logical_not(x > 0.5).float(),
    ),
    "more_activations": lambda lib, x: (
        lib.nn.functional.logsigmoid(x),
        lib.nn.functional.mish(x),
        lib.nn.functional.selu(x),
        lib.nn.functional.celu(x, 0.5),
        lib.nn.functional.hardsigmoid(x),
        x.abs().log1p(),
        (x * 3).round(),
        x.clamp_min(0.1),
        x.clamp(max=0.2),
        lib.nn.functional.prelu(x, lib.full((3,), 0.25)),
    ),
    "shrink_glu_einsum": lambda lib, x: (
        lib.nn.functional.hardshrink(x, 0.3),
        lib.nn.functional.softshrink(x),
        lib.nn.functional.softplus(x * 30, beta=2),
        lib.nn.functional.glu(x, 2),
        lib.einsum("bij,bkj->bik", x, x),
    ),
    "topk_addcmul": lambda lib, x: (*x.topk(2), lib.addcmul(x, x, x, value=0.5)),
    "trig_floor": lambda lib, x: (x.sin() + x.cos(), x.floor(), x.ceil(), x.sign(), x.erf()),
}

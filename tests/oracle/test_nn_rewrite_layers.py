"""Layers rewritten in ember's terms (issue 21): every activation's defaults, repr, values,
gradients and in-place behaviour against torch."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# (class name, constructor args, constructor kwargs)
ACTIVATIONS = [
    ("Threshold", (0.1, 20.0), {}),
    ("Threshold", (0.1, -2.0), {"inplace": True}),
    ("ReLU", (), {}),
    ("ReLU", (True,), {}),
    ("RReLU", (), {}),
    ("RReLU", (0.2, 0.4), {"inplace": True}),
    ("Hardtanh", (), {}),
    ("Hardtanh", (-2.0, 0.5, True), {}),
    ("ReLU6", (), {}),
    ("ReLU6", (True,), {}),
    ("Sigmoid", (), {}),
    ("Hardsigmoid", (), {}),
    ("Hardsigmoid", (True,), {}),
    ("Tanh", (), {}),
    ("SiLU", (), {}),
    ("SiLU", (), {"inplace": True}),
    ("Mish", (), {}),
    ("Mish", (True,), {}),
    ("Hardswish", (), {}),
    ("Hardswish", (True,), {}),
    ("ELU", (), {}),
    ("ELU", (0.5, True), {}),
    ("CELU", (), {}),
    ("CELU", (2.0,), {"inplace": True}),
    ("SELU", (), {}),
    ("SELU", (True,), {}),
    ("GLU", (), {}),
    ("GLU", (0,), {}),
    ("GELU", (), {}),
    ("GELU", ("tanh",), {}),
    ("Hardshrink", (), {}),
    ("Hardshrink", (1.2,), {}),
    ("LeakyReLU", (), {}),
    ("LeakyReLU", (0.2, True), {}),
    ("LogSigmoid", (), {}),
    ("Softplus", (), {}),
    ("Softplus", (2.0, 1.0), {}),
    ("Softshrink", (), {}),
    ("Softshrink", (0.3,), {}),
    ("PReLU", (), {}),
    ("PReLU", (4, 0.1), {}),
    ("Softsign", (), {}),
    ("Tanhshrink", (), {}),
    ("Softmin", (1,), {}),
    ("Softmax", (-1,), {}),
    ("Softmax2d", (), {}),
    ("LogSoftmax", (0,), {}),
]


def _run(lib, name, args, kwargs):
    lib.manual_seed(0)
    layer = getattr(lib.nn, name)(*args, **kwargs)
    base = np.linspace(-3, 3, 2 * 4 * 3 * 2).reshape(2, 4, 3, 2).astype(np.float32)
    leaf = lib.tensor(base, requires_grad=True)
    x = leaf * 1.0  # in-place layers need a non-leaf
    out = layer(x)
    upstream = lib.tensor(np.cos(np.arange(out.numel())).reshape(out.shape).astype(np.float32))
    out.backward(upstream)
    consts = {c: getattr(layer, c) for c in getattr(type(layer), "__constants__", [])}
    return {
        "repr": repr(layer),
        "out": out.detach().numpy().copy(),
        "grad": leaf.grad.numpy().copy(),
        "same_object": out is x,
        "constants": consts,
        "params": [(n, tuple(p.shape)) for n, p in layer.named_parameters()],
    }


@pytest.mark.parametrize(("name", "args", "kwargs"), ACTIVATIONS)
def test_activation_matches_torch(name, args, kwargs):
    e, t = _run(ember, name, args, kwargs), _run(torch, name, args, kwargs)
    for key in ("repr", "same_object", "constants", "params"):
        assert e[key] == t[key], key
    np.testing.assert_allclose(e["out"], t["out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e["grad"], t["grad"], rtol=1e-5, atol=1e-6)


def test_eval_rrelu_and_defaults_match_torch():
    for lib_pair in [(ember, torch)]:
        for lib in lib_pair:
            m = lib.nn.RReLU().eval()
            lib.manual_seed(0)
            lib.r = m(lib.tensor([-1.0, 2.0])).tolist()
    assert ember.r == torch.r
    for name in ("Softmax", "Softmin", "LogSoftmax"):
        assert getattr(ember.nn, name)().dim is None
        assert repr(getattr(ember.nn, name)()) == repr(getattr(torch.nn, name)())


def test_hardtanh_old_keywords_match_torch():
    def run(lib):
        out = []
        for kw in ({"min_value": -0.5}, {"max_value": 0.5}, {"min_value": -2.0, "max_value": 2.0}):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                m = lib.nn.Hardtanh(**kw)
            out.append((repr(m), [str(w.message) for w in caught], caught[0].category.__name__))
        return out

    assert run(ember) == run(torch)


def test_softmax_pickle_without_dim_loads_as_none():
    m = ember.nn.Softmax(1)
    del m.__dict__["dim"]
    assert pickle.loads(pickle.dumps(m)).dim is None


# ------------------------------------------------------------------------------ adaptive softmax
def _asm(lib, **kw):
    lib.manual_seed(0)
    m = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7], div_value=2.0, **kw)
    rng = np.random.default_rng(1)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    return m


@pytest.mark.parametrize(
    "targets",
    [[0, 5, 11, 2, 8, 3], [1, 2, 0, 2, 1, 0], [9, 10, 11, 7, 8, 9], [4], 6],
    ids=["mixed", "shortlist_only", "last_cluster_only", "single", "unbatched"],
)
@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_torch(targets, head_bias):
    def run(lib):
        m = _asm(lib, head_bias=head_bias)
        n = 1 if isinstance(targets, int) else len(targets)
        data = np.sin(np.arange(n * 8)).reshape(n, 8).astype(np.float32)
        x = lib.tensor(data[0] if isinstance(targets, int) else data, requires_grad=True)
        y = lib.tensor(targets)
        out, loss = m(x, y)
        (out.sum() + loss).backward()
        batch = x.detach().reshape(-1, 8)
        return {
            "out": out.detach().numpy(),
            "loss": loss.detach().numpy(),
            "gx": x.grad.numpy(),
            "grads": [p.grad.numpy() if p.grad is not None else None for p in m.parameters()],
            "log_prob": m.log_prob(batch).detach().numpy(),
            "predict": m.predict(batch).numpy(),
            "names": [n for n, _ in m.named_parameters()],
            "repr": repr(m),
            "shape": tuple(out.shape),
        }

    e, t = run(ember), run(torch)
    for key in ("names", "repr", "shape"):
        assert e[key] == t[key]
    np.testing.assert_array_equal(e["predict"], t["predict"])
    for key in ("out", "loss", "gx", "log_prob"):
        np.testing.assert_allclose(e[key], t[key], rtol=1e-5, atol=1e-6, err_msg=key)
    for a, b in zip(e["grads"], t["grads"]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_adaptive_predict_paths_match_torch():
    # rows whose best head column is a cluster: none, some and all of them
    def run(lib):
        m = _asm(lib)
        rows = np.stack([np.cos(np.arange(8) * k) for k in range(1, 9)]).astype(np.float32)
        x = lib.tensor(rows)
        head_best = m.head(x).argmax(1).numpy()
        picks = [np.flatnonzero(head_best < 3), np.arange(8), np.flatnonzero(head_best >= 3)]
        return [m.predict(x[lib.tensor(p)]).numpy().tolist() for p in picks if len(p)]

    assert run(ember) == run(torch)


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, []),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5, 3]),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3, 3]),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [0, 3]),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3, 10]),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [2.5]),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])(L.ones(2, 4), L.tensor([1, 10])),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])(L.ones(2, 4), L.tensor([-1, 1])),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])(L.ones(3, 4), L.tensor([1, 1])),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])(L.ones(2, 2, 4), L.tensor([1, 1])),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])(L.ones(2, 4), L.tensor(1)),
        lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])(L.ones(2, 4), L.ones(2, 2)),
    ],
)
def test_adaptive_errors_match_torch(call):
    def outcome(lib):
        try:
            call(lib)
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__, str(exc).replace("torch.Size", "Size")
        return None

    theirs = outcome(torch)
    assert theirs is not None and outcome(ember) == theirs


@pytest.mark.parametrize(("name", "args", "kwargs"), ACTIVATIONS[::3])
def test_activation_scripts_like_torch(name, args, kwargs):
    # each layer's forward is one explicit call, which jit.script can compile
    def run(lib):
        layer = getattr(lib.nn, name)(*args, **kwargs).eval()
        scripted = lib.jit.script(layer)
        x = lib.tensor(np.linspace(-2, 2, 24).reshape(2, 3, 2, 2).astype(np.float32))
        return scripted(x * 1.0).detach().numpy()

    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer", ["Embedding", "EmbeddingBag"])
@pytest.mark.parametrize("padding_idx", [-4, -3, -1, 0, 2, 3, True, 2.0, -2.5])
def test_embedding_padding_idx(layer, padding_idx):
    # negative indices count from the end; out of range and non-integer rows fail as torch's
    results = []
    for lib in (ember, torch):
        try:
            m = getattr(lib.nn, layer)(3, 2, padding_idx=padding_idx)
            row = (m.weight[m.padding_idx].detach().numpy() == 0).tolist()  # zeroed?
            results.append((m.padding_idx, type(m.padding_idx), row))
        except Exception as e:
            results.append((type(e).__name__, str(e)[:40]))
    assert results[0] == results[1]

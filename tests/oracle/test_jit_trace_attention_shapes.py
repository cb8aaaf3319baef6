"""A traced attention layer runs at shapes other than the example's, as torch's does: the
library's size reads (``query.shape``) record ``aten::size`` values, so the view shapes are
computed from the inputs the graph is given, not frozen at the traced ones."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

E, H = 8, 2


def _attention(lib, batch_first, need_weights, cross, mask="none"):
    class Attend(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.att = lib.nn.MultiheadAttention(E, H, batch_first=batch_first)

        def forward(self, q, kv, first=None, second=None):
            k = kv if cross else q
            key_padding_mask = first if mask in ("padding", "both") else None
            attn_mask = {"attn": first, "both": second}.get(mask)
            out, w = self.att(
                q,
                k,
                k,
                key_padding_mask=key_padding_mask,
                need_weights=need_weights,
                attn_mask=attn_mask,
            )
            return (out, w) if need_weights else out

    return Attend()


def _pair(make):
    """Return (ember module, torch module) with torch's weights, both in eval mode."""
    torch.manual_seed(0)
    tm = make(torch).eval()
    em = make(ember).eval()
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return em, tm


def _trace_both(em, tm, arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        te = ember.jit.trace(em, tuple(ember.tensor(a) for a in arrays), check_trace=False)
        tt = torch.jit.trace(tm, tuple(torch.tensor(a) for a in arrays), check_trace=False)
    return te, tt


def _outputs(r) -> list:
    return [t.detach().numpy() for t in (r if isinstance(r, tuple) else (r,))]


def _same(te, tt, arrays) -> None:
    got = _outputs(te(*(ember.tensor(a) for a in arrays)))
    want = _outputs(tt(*(torch.tensor(a) for a in arrays)))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _inputs(rng, batch_first, n, length, src, mask):
    def seq(s):
        shape = (n, s, E) if batch_first else (s, n, E)
        return rng.normal(size=shape).astype(np.float32)

    arrays = [seq(length), seq(src)]
    if mask in ("padding", "both"):
        kpm = np.zeros((n, src), dtype=bool)
        kpm[:, -1] = True  # the last key of every sequence is padding
        kpm[0, : src // 2] = True
        arrays.append(kpm)
    if mask in ("attn", "both"):
        arrays.append(np.triu(np.full((length, src), -1e9, dtype=np.float32), 1))
    return arrays


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("mask", ["none", "padding", "attn", "both"])
def test_traced_multihead_attention_runs_at_other_shapes(batch_first, need_weights, mask):
    cross = mask in ("padding", "both")  # key/value of another length than the query's
    em, tm = _pair(lambda lib: _attention(lib, batch_first, need_weights, cross, mask))
    rng = np.random.default_rng(0)
    traced = _inputs(rng, batch_first, 2, 3, 3 if not cross else 4, mask)
    te, tt = _trace_both(em, tm, traced)
    _same(te, tt, traced)
    other = _inputs(rng, batch_first, 4, 5, 5 if not cross else 6, mask)
    _same(te, tt, other)  # was: RuntimeError: shape '[2, 3, 24]' is invalid for input of size...


def test_traced_attention_records_sizes_as_torch():
    # torch's multi_head_attention_forward is Python: its size reads are graph values that
    # feed the views (``aten::size`` -> ``prim::NumToTensor`` named after the local)
    em, tm = _pair(lambda lib: _attention(lib, False, True, False))
    arrays = _inputs(np.random.default_rng(0), False, 3, 5, 5, "none")  # N=3, L=5: not E, H
    te, tt = _trace_both(em, tm, arrays)
    for g in (te.att.graph, tt.att.graph):
        sized = {n.output().debugName() for n in g.findAllNodes("prim::NumToTensor")}
        assert {"tgt_len", "bsz", "embed_dim", "src_len"} <= sized, g
        assert g.findAllNodes("aten::linear")
        views = g.findAllNodes("aten::view")
        assert views
        for v in views:  # no view shape holds the traced batch or length as a constant
            parts = list(v.inputs())[1].node()
            assert parts.kind() == "prim::ListConstruct"
            for e in parts.inputs():
                n = e.node()
                assert n.kind() != "prim::Constant" or n.i("value") not in (3, 5), g


@pytest.mark.parametrize("batch_first", [True, False])
def test_traced_transformer_encoder_layer_runs_at_other_shapes(batch_first):
    em, tm = _pair(
        lambda lib: lib.nn.TransformerEncoderLayer(E, H, 16, dropout=0.0, batch_first=batch_first)
    )
    rng = np.random.default_rng(1)
    shape = (2, 3, E)
    te, tt = _trace_both(em, tm, [rng.normal(size=shape).astype(np.float32)])
    for shape in ((4, 5, E), (1, 7, E)):
        _same(te, tt, [rng.normal(size=shape).astype(np.float32)])


def test_traced_transformer_decoder_layer_runs_at_other_shapes():
    em, tm = _pair(lambda lib: lib.nn.TransformerDecoderLayer(E, H, 16, dropout=0.0))
    rng = np.random.default_rng(2)

    def arrays(t, s, n):
        return [rng.normal(size=(k, n, E)).astype(np.float32) for k in (t, s)]

    te, tt = _trace_both(em, tm, arrays(3, 4, 2))
    _same(te, tt, arrays(5, 2, 3))


@pytest.mark.parametrize("batch_first", [True, False])
def test_exported_attention_with_dynamic_axes_runs_at_other_sizes(batch_first):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from tests.oracle._onnx_helper import _export

    em, _ = _pair(lambda lib: _attention(lib, batch_first, False, False))
    x = ember.randn(2, 3, E)
    data = _export(ember, em, (x, x), input_names=["q", "kv"], dynamic_axes={"q": {0: "a", 1: "b"}})
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for shape in ((4, 5, E), (1, 2, E)):
        x2 = ember.randn(*shape)
        with ember.no_grad():
            want = em(x2, x2).numpy()
        got = sess.run(None, {"q": x2.numpy()})[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_traced_forward_with_varargs_takes_every_input_as_torch():
    # ``forward(self, q, *masks)``: the masks are graph inputs (torch's ``%4``, ``%5``), not
    # the first one bound to ``masks`` and the second frozen as a constant
    def make(lib):
        class M(lib.nn.Module):
            def forward(self, x, *masks):
                return x + masks[0].to(lib.float32) * masks[-1]

        return M()

    arrays = [np.ones(2, np.float32), np.array([True, False]), np.full(2, 3, np.float32)]
    te, tt = _trace_both(make(ember), make(torch), arrays)
    names = [v.debugName() for v in list(te.graph.inputs())[1:]]
    assert names == [v.debugName() for v in list(tt.graph.inputs())[1:]] == ["x", "4", "5"]
    _same(te, tt, [np.zeros(3, np.float32), np.array([True, True, False]), np.ones(3, np.float32)])

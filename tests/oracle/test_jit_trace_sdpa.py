"""scaled_dot_product_attention in traces against torch's: one ``aten::scaled_dot_product_
attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)`` node, alone and inside
a traced TransformerEncoderLayer (whose attention needs no weights), with torch's outputs."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _node_args(graph):
    n = graph.findNode("aten::scaled_dot_product_attention")
    return [v.node().kind() if v.node().kind() != "prim::Constant" else v.toIValue()
            for v in n.inputs()]  # fmt: skip


def test_sdpa_alone_is_one_node_as_torch():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(1, 2, 3, 4)).astype(np.float32) for _ in range(3))
    traced = {}
    for lib in (ember, torch):

        def f(a, b, c, lib=lib):
            return lib.nn.functional.scaled_dot_product_attention(
                a, b, c, is_causal=True, scale=0.5
            )

        traced[lib] = lib.jit.trace(f, tuple(lib.tensor(t) for t in (q, k, v)))
    ours, theirs = traced[ember], traced[torch]
    assert _node_args(ours.graph) == _node_args(theirs.graph)
    assert [n.kind() for n in ours.graph.nodes() if n.kind() != "prim::Constant"] == [
        "aten::scaled_dot_product_attention"
    ]
    q2, k2, v2 = (rng.normal(size=(2, 2, 5, 4)).astype(np.float32) for _ in range(3))
    a = ours(*(ember.tensor(t) for t in (q2, k2, v2))).numpy()
    b = theirs(*(torch.tensor(t) for t in (q2, k2, v2))).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_encoder_layer_attention_records_sdpa_as_torch():
    counts = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = lib.jit.trace(layer, (lib.ones(3, 2, 4),)).inlined_graph
        kinds = [n.kind() for n in g.nodes()]
        counts[lib] = (kinds.count("aten::scaled_dot_product_attention"), "aten::matmul" in kinds)
    assert counts[ember] == counts[torch] == (1, False)

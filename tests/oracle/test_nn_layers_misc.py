"""Oracle tests: Embedding, padding and distance Modules against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, rand, torch


def test_embedding_module():
    for kw in ({}, {"padding_idx": 0, "max_norm": 1.0}, {"padding_idx": -2, "norm_type": 1.0}):
        tm, em = torch.nn.Embedding(10, 3, **kw), ember.nn.Embedding(10, 3, **kw)
        assert repr(em) == repr(tm)
        assert list(em.state_dict()) == ["weight"]
    em = ember.nn.Embedding(10, 3, padding_idx=2)
    assert np.all(em.weight.detach().numpy()[2] == 0)
    w = rand(10, 3, dtype="float64")
    idx = np.array([[1, 2], [2, 9]])

    def fn(lib, w_):
        m = lib.nn.Embedding(10, 3, padding_idx=2).double()
        with lib.no_grad():
            m.weight.copy_(w_)
        out = m(lib.from_numpy(idx))
        out.backward(lib.ones_like(out))
        return out, m.weight.grad

    check(fn, [w], grad=False)


def test_embedding_from_pretrained():
    w = ember.from_numpy(rand(5, 2, dtype="float64"))
    m = ember.nn.Embedding.from_pretrained(w)
    assert not m.weight.requires_grad and repr(m) == "Embedding(5, 2)"
    m2 = ember.nn.Embedding.from_pretrained(w, freeze=False, padding_idx=1)
    assert m2.weight.requires_grad
    np.testing.assert_array_equal(m2(ember.tensor([4, 1])).detach().numpy(), w.numpy()[[4, 1]])


PADS = [
    ("ZeroPad1d(2)", (2, 3, 4)),
    ("ZeroPad2d((1, 2, 0, 1))", (2, 3, 4)),
    ("ZeroPad3d(1)", (1, 2, 3, 4)),
    ("ConstantPad1d(2, 3.5)", (2, 3, 4)),
    ("ConstantPad2d((1, 0, 2, 1), -1.0)", (2, 3, 4)),
    ("ConstantPad3d(1, 2.0)", (1, 2, 3, 4)),
    ("ReflectionPad1d(2)", (2, 3, 4)),
    ("ReflectionPad2d((1, 2, 0, 1))", (1, 2, 3, 4)),
    ("ReflectionPad3d(1)", (1, 2, 3, 3, 4)),
    ("ReplicationPad1d((3, 1))", (2, 3, 4)),
    ("ReplicationPad2d(2)", (1, 2, 3, 4)),
    ("ReplicationPad3d(1)", (1, 2, 3, 3, 4)),
    ("CircularPad1d((1, 2))", (2, 3, 4)),
    ("CircularPad2d(1)", (1, 2, 3, 4)),
]


@pytest.mark.parametrize("spec,shape", PADS)
def test_padding_modules(spec, shape):
    em = eval("ember.nn." + spec, {"ember": ember})
    tm = eval("torch.nn." + spec, {"torch": torch})
    assert repr(em) == repr(tm)
    check(lambda lib, x: eval("lib.nn." + spec, {"lib": lib})(x), [rand(*shape, dtype="float64")])


def test_distance_modules():
    a, b = rand(4, 5, dtype="float64"), rand(4, 5, dtype="float64")
    for spec in ("CosineSimilarity()", "CosineSimilarity(dim=0, eps=1e-3)"):
        assert repr(eval("ember.nn." + spec)) == repr(eval("torch.nn." + spec))
        check(lambda lib, x, y, s=spec: eval("lib.nn." + s, {"lib": lib})(x, y), [a, b])
    for spec in ("PairwiseDistance()", "PairwiseDistance(p=1.0, keepdim=True)"):
        assert repr(eval("ember.nn." + spec)) == repr(eval("torch.nn." + spec))
        check(
            lambda lib, x, y, s=spec: eval("lib.nn." + s, {"lib": lib})(x, y),
            [a, b],
            grad_fn=False,
        )


def test_embedding_bag_module():
    for kw in ({}, {"mode": "sum", "padding_idx": 1}, {"mode": "max", "max_norm": 2.0}):
        tm, em = torch.nn.EmbeddingBag(10, 3, **kw), ember.nn.EmbeddingBag(10, 3, **kw)
        assert repr(em) == repr(tm)
    w = rand(10, 3, dtype="float64")
    flat, off = np.array([1, 2, 4, 5, 4, 3]), np.array([0, 2, 2])

    def fn(lib, w_):
        m = lib.nn.EmbeddingBag.from_pretrained(w_, freeze=False, mode="sum")
        return m(lib.from_numpy(flat), lib.from_numpy(off))

    check(fn, [w], grad_fn=False)

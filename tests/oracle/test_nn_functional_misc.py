"""Oracle tests: embedding, one_hot, distances, pad, linear/bilinear, attention."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch


def F(lib):
    return torch.nn.functional if lib is torch else EF


IDX = np.array([[1, 2, 4, 5], [4, 3, 2, 9]])


def test_embedding():
    w = rand(10, 3, dtype="float64")
    check(lambda lib, w_: F(lib).embedding(lib.from_numpy(IDX), w_), [w])
    check(lambda lib, w_: F(lib).embedding(lib.from_numpy(IDX), w_, padding_idx=4), [w])
    check(lambda lib, w_: F(lib).embedding(lib.from_numpy(IDX), w_, padding_idx=-1), [w])
    check(lambda lib, w_: F(lib).embedding(lib.tensor(3), w_), [w])
    check_double_backward(lambda lib, w_: F(lib).embedding(lib.from_numpy(IDX), w_) ** 2, [w])
    check_raises(lambda lib, w_: F(lib).embedding(lib.tensor([10]), w_), [w])


def test_embedding_max_norm():
    w = rand(10, 3, dtype="float64", low=-3, high=3)
    we, wt = ember.from_numpy(w.copy()), torch.from_numpy(w.copy())
    ye = EF.embedding(ember.from_numpy(IDX), we, max_norm=1.0)
    yt = torch.nn.functional.embedding(torch.from_numpy(IDX), wt, max_norm=1.0)
    np.testing.assert_allclose(ye.numpy(), yt.numpy())
    np.testing.assert_allclose(we.numpy(), wt.numpy())


def test_one_hot():
    t = np.array([[0, 3], [2, 1]])
    for n in (-1, 5):
        e = EF.one_hot(ember.from_numpy(t), n)
        r = torch.nn.functional.one_hot(torch.from_numpy(t), n)
        assert e.dtype is ember.int64 and np.array_equal(e.numpy(), r.numpy())
    check_raises(lambda lib: F(lib).one_hot(lib.tensor([-1, 2])), [])
    check_raises(lambda lib: F(lib).one_hot(lib.tensor([1, 4]), 3), [])
    check_raises(lambda lib: F(lib).one_hot(lib.tensor([1.0])), [])
    # a transposed index tensor still gives a contiguous result, as torch's
    e = EF.one_hot(ember.from_numpy(t).T, 4)
    r = torch.nn.functional.one_hot(torch.from_numpy(t).T, 4)
    assert e.stride() == r.stride() and np.array_equal(e.numpy(), r.numpy())


def test_distances():
    a, b = rand(4, 5, dtype="float64"), rand(4, 5, dtype="float64")
    check(lambda lib, x, y: F(lib).cosine_similarity(x, y), [a, b])
    check(lambda lib, x, y: F(lib).cosine_similarity(x, y, dim=0), [a, b[:1].copy()])
    check(lambda lib, x: F(lib).pdist(x), [a], grad_fn=False)
    check(lambda lib, x: F(lib).pdist(x, p=1.5), [a], grad_fn=False)
    check(lambda lib, x, y: F(lib).pairwise_distance(x, y, keepdim=True), [a, b], grad_fn=False)


@pytest.mark.parametrize(
    "mode,pad,shape",
    [
        ("constant", (1, 2), (2, 3, 4)),
        ("constant", (0, 1, 2, 1), (2, 3, 4)),
        ("constant", (1, 1, 1, 1, 1, 1), (2, 3, 4)),
        ("reflect", (2, 1), (2, 3, 4)),
        ("reflect", (1, 2, 2, 0), (1, 2, 3, 4)),
        ("reflect", (1, 1, 1, 0, 1, 1), (1, 2, 3, 3, 4)),
        ("replicate", (3, 1), (2, 3, 4)),
        ("replicate", (1, 2, 3, 0), (2, 3, 4)),
        ("replicate", (1, 1, 2, 0, 0, 1), (1, 2, 3, 3, 4)),
        ("circular", (2, 1), (2, 3, 4)),
        ("circular", (1, 2, 3, 0), (1, 2, 3, 4)),
    ],
)
def test_pad(mode, pad, shape):
    x = rand(*shape, dtype="float64")
    check(lambda lib, t: F(lib).pad(t, pad, mode=mode), [x])
    if mode == "constant":
        check(lambda lib, t: F(lib).pad(t, pad, value=2.5), [x])
    check_double_backward(lambda lib, t: F(lib).pad(t, pad, mode=mode) ** 2, [x])


def test_pad_errors():
    x = rand(1, 2, 3)
    check_raises(lambda lib, t: F(lib).pad(t, (1,)), [x])
    check_raises(lambda lib, t: F(lib).pad(t, (3, 0), mode="reflect"), [x])


def test_linear_bilinear():
    x, w, b = rand(4, 5, dtype="float64"), rand(3, 5, dtype="float64"), rand(3, dtype="float64")
    check(lambda lib, x_, w_, b_: F(lib).linear(x_, w_, b_), [x, w, b], grad_fn=False)
    x2, wb = rand(4, 2, dtype="float64"), rand(3, 5, 2, dtype="float64")
    check(lambda lib, a, c, w_, b_: F(lib).bilinear(a, c, w_, b_), [x, x2, wb, b], grad_fn=False)


@pytest.mark.parametrize(
    "kw", [{}, {"is_causal": True}, {"scale": 0.3}, {"mask": "bool"}, {"mask": "float"}]
)
def test_sdpa(kw):
    q, k, v = (rand(2, 3, 4, 8, dtype="float64") for _ in range(3))
    mask_np = rand(4, 4, dtype="float64")
    kw = dict(kw)
    mask = kw.pop("mask", None)

    def fn(lib, q_, k_, v_):
        m = None
        if mask == "bool":
            m = lib.from_numpy(mask_np > -1.0)
        elif mask == "float":
            m = lib.from_numpy(mask_np)
        return F(lib).scaled_dot_product_attention(q_, k_, v_, attn_mask=m, **kw)

    check(fn, [q, k, v], grad_fn=False)


def test_sdpa_gqa_and_dropout():
    q = rand(2, 4, 5, 8, dtype="float64")
    k, v = rand(2, 2, 5, 8, dtype="float64"), rand(2, 2, 5, 8, dtype="float64")
    check(
        lambda lib, a, b, c: F(lib).scaled_dot_product_attention(a, b, c, enable_gqa=True),
        [q, k, v],
        grad_fn=False,
    )
    ember.manual_seed(0)
    qe = ember.from_numpy(q)
    out = EF.scaled_dot_product_attention(qe, qe, qe, dropout_p=0.5)
    ref = EF.scaled_dot_product_attention(qe, qe, qe)
    assert tuple(out.shape) == (2, 4, 5, 8) and not np.allclose(out.numpy(), ref.numpy())


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    w = rand(10, 3, dtype="float64")
    flat = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0])
    off = np.array([0, 4, 4, 6])
    check(
        lambda lib, w_: F(lib).embedding_bag(
            lib.from_numpy(flat), w_, lib.from_numpy(off), mode=mode
        ),
        [w],
        grad_fn=False,
    )
    check(
        lambda lib, w_: F(lib).embedding_bag(
            lib.from_numpy(flat), w_, lib.from_numpy(off), mode=mode, padding_idx=4
        ),
        [w],
        grad_fn=False,
    )
    check(
        lambda lib, w_: F(lib).embedding_bag(lib.from_numpy(IDX), w_, mode=mode),
        [w],
        grad_fn=False,
    )
    check(
        lambda lib, w_: F(lib).embedding_bag(
            lib.from_numpy(flat),
            w_,
            lib.from_numpy(np.array([0, 3, 9])),
            mode=mode,
            include_last_offset=True,
        ),
        [w],
        grad_fn=False,
    )
    if mode == "sum":
        psw = rand(9, dtype="float64")
        check(
            lambda lib, w_, p_: F(lib).embedding_bag(
                lib.from_numpy(flat), w_, lib.from_numpy(off), mode="sum", per_sample_weights=p_
            ),
            [w, psw],
            grad_fn=False,
        )

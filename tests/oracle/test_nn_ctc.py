"""Oracle tests of F.ctc_loss and nn.CTCLoss against torch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.oracle.helper import check, check_raises, torch

_rng = np.random.default_rng(7)


def _case(t, n, c, s, dtype="float64", seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((t, n, c)).astype(dtype)
    tl = rng.integers(0, s + 1, size=n)
    il = rng.integers(0, t + 1, size=n)
    targets = rng.integers(1, c, size=(n, max(s, 1)))
    return x, targets, il.astype(np.int64), tl.astype(np.int64)


def _ctc(reduction="mean", zero_infinity=False, blank=0, softmax=True):
    def fn(lib, x, tg, il, tl):
        lp = lib.nn.functional.log_softmax(x, 2) if softmax else x
        return lib.nn.functional.ctc_loss(
            lp, tg, il, tl, blank=blank, reduction=reduction, zero_infinity=zero_infinity
        )

    return fn


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctc_padded(reduction, zero_infinity, dtype):
    x, _, _, _ = _case(7, 4, 5, 3, dtype)
    tg = np.array([[1, 2, 2], [3, 3, 4], [1, 0, 0], [2, 4, 1]])
    il = np.array([7, 6, 5, 1])  # the last one is impossible: 3 labels in 1 step
    tl = np.array([3, 3, 1, 3])
    fn = _ctc(reduction, zero_infinity)
    if zero_infinity or reduction == "none":
        check(fn, [x, tg, il, tl])
    else:  # an infinite loss: nan gradients in both
        check(fn, [x, tg, il, tl], grad=False)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_raw_log_probs_and_blank(reduction):
    # torch's gradient is exp(lp) - occupation: not the true gradient unless lp is normalised
    x, tg, il, tl = _case(6, 3, 6, 2, "float64", seed=3)
    tg = np.where(tg == 4, 5, tg)
    check(_ctc(reduction, blank=4, softmax=False), [x, tg, il, tl])


def test_ctc_concatenated_targets_and_lists():
    x, _, _, _ = _case(6, 3, 5, 3)
    tl = [3, 0, 2]
    flat = np.array([1, 1, 2, 4, 3])
    check(_ctc("none"), [x, flat, np.array([6, 2, 5]), np.array(tl)])

    def lists(lib, x):
        f = lib.nn.functional.ctc_loss
        return f(
            lib.nn.functional.log_softmax(x, 2), lib.tensor(flat), (6, 2, 5), tl, reduction="mean"
        )

    check(lists, [x])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_unbatched(reduction):
    x = _rng.standard_normal((5, 4))

    def fn(lib, x, tg):
        il, tl = lib.tensor(5), lib.tensor(2)
        return lib.nn.functional.ctc_loss(
            lib.nn.functional.log_softmax(x, 1), tg, il, tl, reduction=reduction
        )

    check(fn, [x, np.array([2, 3])])


def test_ctc_int32_lengths_and_targets():
    x, tg, il, tl = _case(5, 2, 4, 2, "float32", seed=5)
    check(_ctc("sum"), [x, tg.astype(np.int32), il.astype(np.int32), tl.astype(np.int32)])


def test_ctc_impossible_alignment():
    x = _rng.standard_normal((3, 2, 3))
    tg = np.array([[1, 1, 1], [1, 2, 1]])
    il, tl = np.array([3, 3]), np.array([3, 3])  # repeats need blanks between: impossible
    check(_ctc("none"), [x, tg, il, tl], grad=False)
    check(_ctc("none", zero_infinity=True), [x, tg, il, tl])
    out = ember.nn.functional.ctc_loss(
        ember.nn.functional.log_softmax(ember.tensor(x), 2),
        ember.tensor(tg),
        ember.tensor(il),
        ember.tensor(tl),
    )
    assert out.item() == float("inf")


def test_ctc_nan_gradient_of_infinite_loss():
    x = _rng.standard_normal((3, 1, 3))
    res = {}
    for lib in (torch, ember):
        lp = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.ctc_loss(lp, lib.tensor([[1, 1, 1]]), [2], [3], reduction="sum")
        loss.backward()
        res[lib] = lp.grad.numpy()
    np.testing.assert_array_equal(np.isnan(res[torch]), np.isnan(res[ember]))


@settings(max_examples=25, deadline=None)
@given(
    t=st.integers(1, 7),
    n=st.integers(1, 4),
    c=st.integers(2, 5),
    s=st.integers(0, 4),
    seed=st.integers(0, 1000),
    reduction=st.sampled_from(["none", "mean", "sum"]),
)
def test_ctc_hypothesis(t, n, c, s, seed, reduction):
    x, tg, il, tl = _case(t, n, c, s, "float64", seed)
    check(_ctc(reduction, zero_infinity=True), [x, tg, il, tl])


def test_ctc_module():
    for lib in (torch, ember):
        m = lib.nn.CTCLoss(blank=2, reduction="sum", zero_infinity=True)
        assert (m.blank, m.reduction, m.zero_infinity) == (2, "sum", True)
        assert repr(m) == "CTCLoss()"
    x, tg, il, tl = _case(6, 3, 5, 3, "float32", seed=11)
    check(
        lambda lib, x, *a: lib.nn.CTCLoss()(lib.nn.functional.log_softmax(x, 2), *a),
        [x, tg, il, tl],
    )


def test_ctc_not_twice_differentiable():
    x, tg, il, tl = _case(4, 2, 3, 2, "float64", seed=1)
    msgs = []
    for lib in (torch, ember):
        lp = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.ctc_loss(
            lp, lib.tensor(tg), lib.tensor(il), lib.tensor(tl), reduction="sum"
        )
        (g,) = lib.autograd.grad(loss, lp, create_graph=True)
        assert type(g.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError) as e:
            lib.autograd.grad(g.sum(), lp)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


_BAD = [
    ("blank", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il, tl, blank=5)),
    ("blank<0", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il, tl, blank=-1)),
    ("il>T", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il + 7, tl)),
    ("il<0", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il - 9, tl)),
    ("il size", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il[:2], tl)),
    ("tl size", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il, tl[:2])),
    ("tl<0", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il, tl - 5)),
    ("tl>S", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il, tl + 2)),
    ("tg rows", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg[:2], il, tl)),
    ("tg flat", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg[0], il, tl)),
    ("il float", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il * 1.0, tl)),
    ("tl float", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il, tl * 1.0)),
    ("int lp", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x.long(), tg, il, tl)),
    ("empty", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x[:0], tg, il, tl)),
    ("reduction", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il, tl, "foo")),
]


_BAD_TYPES = [
    ("mixed", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x, tg, il, [3, 2, 1])),
    ("int", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x[:, 0], tg[0], 6, 3)),
    ("half", lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(x.half(), tg, il, tl)),
]


@pytest.mark.parametrize("name,fn", _BAD_TYPES, ids=[b[0] for b in _BAD_TYPES])
def test_ctc_bad_types(name, fn):
    x, _, _, _ = _case(6, 3, 5, 3)
    tg = np.array([[1, 2, 3], [1, 2, 0], [4, 0, 0]])
    check_raises(fn, [x, tg, np.array([6, 5, 4]), np.array([3, 2, 1])])


@pytest.mark.parametrize("name,fn", _BAD, ids=[b[0] for b in _BAD])
def test_ctc_errors(name, fn):
    x, _, _, _ = _case(6, 3, 5, 3)
    tg = np.array([[1, 2, 3], [1, 2, 0], [4, 0, 0]])
    il, tl = np.array([6, 5, 4]), np.array([3, 2, 1])
    if name == "reduction":
        fn = lambda lib, x, tg, il, tl: lib.nn.functional.ctc_loss(  # noqa: E731
            x, tg, il, tl, reduction="foo"
        )
    check_raises(fn, [x, tg, il, tl], match_message=True)

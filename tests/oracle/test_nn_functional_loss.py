"""Oracle tests: loss functions of nn.functional against torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch


def F(lib):
    return torch.nn.functional if lib is torch else EF


RED = ["none", "mean", "sum"]
X = rand(4, 5, dtype="float64")
Y = rand(4, 5, dtype="float64")
P = rand(4, 5, dtype="float64", low=0.05, high=0.95)
SIGN = np.where(rand(4, 5, dtype="float64") > 0, 1.0, -1.0)
T = rand(4, dtype="int64", low=0, high=5)

PAIR = {
    "mse": lambda f, x, y, r: f.mse_loss(x, y, reduction=r),
    "l1": lambda f, x, y, r: f.l1_loss(x, y, reduction=r),
    "smooth_l1": lambda f, x, y, r: f.smooth_l1_loss(x, y, reduction=r, beta=0.5),
    "smooth_l1_0": lambda f, x, y, r: f.smooth_l1_loss(x, y, reduction=r, beta=0.0),
    "huber": lambda f, x, y, r: f.huber_loss(x, y, reduction=r, delta=0.7),
    "soft_margin": lambda f, x, y, r: f.soft_margin_loss(x, y.detach(), reduction=r),
    "bce_logits": lambda f, x, y, r: f.binary_cross_entropy_with_logits(x, y, reduction=r),
    "bce": lambda f, x, y, r: f.binary_cross_entropy(x.sigmoid(), y, reduction=r),
    "kl": lambda f, x, y, r: f.kl_div(x, y, reduction=r),
    "kl_log": lambda f, x, y, r: f.kl_div(x, y.log(), reduction=r, log_target=True),
    "poisson": lambda f, x, y, r: f.poisson_nll_loss(x, y, reduction=r),
    "poisson_full": lambda f, x, y, r: f.poisson_nll_loss(
        x.exp(), y * 3, log_input=False, full=True, reduction=r
    ),
    "mlsm": lambda f, x, y, r: f.multilabel_soft_margin_loss(x, (y > 0.5).double(), reduction=r),
    "gaussian": lambda f, x, y, r: f.gaussian_nll_loss(x, y, y.detach() + 0.1, reduction=r),
    "gaussian_full": lambda f, x, y, r: f.gaussian_nll_loss(x, y, y + 0.1, True, reduction=r),
}
TARGET_PROB = {"bce", "bce_logits", "kl", "kl_log", "poisson", "poisson_full", "mlsm"}


@pytest.mark.parametrize("name", sorted(PAIR))
@pytest.mark.parametrize("reduction", RED)
def test_pair_losses(name, reduction):
    y = P if name in TARGET_PROB or name.startswith("gaussian") else Y
    if name == "soft_margin":
        y = SIGN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda lib, x, t: PAIR[name](F(lib), x, t, reduction), [X, y])


@pytest.mark.parametrize("name", ["mse", "smooth_l1", "huber", "soft_margin", "bce_logits", "bce"])
def test_pair_losses_double_backward(name):
    y = P if name in TARGET_PROB else Y
    check_double_backward(lambda lib, x, t: PAIR[name](F(lib), x, t, "mean"), [X, y])


def test_weights():
    w = rand(5, dtype="float64", low=0.1, high=2)
    for r in RED:
        check(
            lambda lib, x, y, r=r: F(lib).binary_cross_entropy(
                x.sigmoid(), y, lib.from_numpy(w), reduction=r
            ),
            [X, P],
        )
        check(
            lambda lib, x, y, r=r: F(lib).binary_cross_entropy_with_logits(
                x, y, lib.from_numpy(w), reduction=r, pos_weight=lib.from_numpy(w[::-1].copy())
            ),
            [X, P],
        )


@pytest.mark.parametrize("reduction", RED)
def test_nll_cross_entropy(reduction):
    w = rand(5, dtype="float64", low=0.1, high=2)
    t_ign = T.copy()
    t_ign[1] = -100

    def ce(lib, x, **kw):
        return F(lib).cross_entropy(x, lib.from_numpy(t_ign), reduction=reduction, **kw)

    check(lambda lib, x: F(lib).nll_loss(x, lib.from_numpy(T), reduction=reduction), [X])
    check(ce, [X])
    check(lambda lib, x: ce(lib, x, weight=lib.from_numpy(w)), [X])
    check(lambda lib, x: ce(lib, x, label_smoothing=0.2), [X])
    check(lambda lib, x: ce(lib, x, weight=lib.from_numpy(w), label_smoothing=0.3), [X])
    check(
        lambda lib, x: F(lib).cross_entropy(
            x, lib.from_numpy(T), reduction=reduction, ignore_index=2
        ),
        [X],
    )
    # class probabilities
    check(lambda lib, x, p: F(lib).cross_entropy(x, p, reduction=reduction), [X, P])
    check(
        lambda lib, x, p: F(lib).cross_entropy(
            x, p, lib.from_numpy(w), reduction=reduction, label_smoothing=0.1
        ),
        [X, P],
    )
    # 1-d input, 0-d target
    check(
        lambda lib, x: F(lib).cross_entropy(x, lib.tensor(3), reduction=reduction),
        [rand(5, dtype="float64")],
    )


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 4, 5), (2, 3, 2, 2, 2)])
@pytest.mark.parametrize("reduction", RED)
def test_cross_entropy_kdim(shape, reduction):
    x = rand(*shape, dtype="float64")
    t = rand(shape[0], *shape[2:], dtype="int64", low=0, high=3)
    check(lambda lib, a: F(lib).cross_entropy(a, lib.from_numpy(t), reduction=reduction), [x])
    check(
        lambda lib, a: F(lib).cross_entropy(
            a, lib.from_numpy(t), reduction=reduction, label_smoothing=0.1
        ),
        [x],
    )


def test_cross_entropy_float32_and_double_backward():
    x = rand(8, 10, dtype="float32")
    t = rand(8, dtype="int64", low=0, high=10)
    check(lambda lib, a: F(lib).cross_entropy(a, lib.from_numpy(t)), [x])
    check_double_backward(lambda lib, a: F(lib).cross_entropy(a, lib.from_numpy(T)), [X])


def test_legacy_reduction_args():
    for sa, rd in [(False, None), (None, False), (True, True), (False, True)]:
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            e = EF.mse_loss(ember.from_numpy(X), ember.from_numpy(Y), sa, rd)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = torch.nn.functional.mse_loss(torch.from_numpy(X), torch.from_numpy(Y), sa, rd)
        np.testing.assert_allclose(e.numpy(), t.numpy())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = EF.nll_loss(ember.from_numpy(X), ember.from_numpy(T), size_average=sa, reduce=rd)
            t = torch.nn.functional.nll_loss(
                torch.from_numpy(X), torch.from_numpy(T), size_average=sa, reduce=rd
            )
        np.testing.assert_allclose(e.numpy(), t.numpy())


def test_composite_losses():
    lbl = np.array([1.0, -1.0, 1.0, -1.0])
    x1, x2 = rand(4, 6, dtype="float64"), rand(4, 6, dtype="float64")
    for r in RED:
        check(lambda lib, x, y, r=r: F(lib).hinge_embedding_loss(x, y, 0.5, reduction=r), [X, SIGN])
        check(
            lambda lib, a, b, r=r: F(lib).margin_ranking_loss(
                a, b, lib.from_numpy(lbl), 0.3, reduction=r
            ),
            [x1[:, 0].copy(), x2[:, 0].copy()],
        )
        check(
            lambda lib, a, b, r=r: F(lib).cosine_embedding_loss(
                a, b, lib.from_numpy(lbl), 0.1, reduction=r
            ),
            [x1, x2],
        )
        check(
            lambda lib, a, p, n, r=r: F(lib).triplet_margin_loss(a, p, n, reduction=r, swap=True),
            [x1, x2, X[:, :1].repeat(6, 1)],
        )
        check(
            lambda lib, a, p, n, r=r: F(lib).triplet_margin_with_distance_loss(
                a, p, n, distance_function=lambda u, v: (u - v).abs().sum(-1), reduction=r
            ),
            [x1, x2, rand(4, 6, dtype="float64")],
        )
    check(
        lambda lib, a, b: F(lib).pairwise_distance(a, b, 3.0),
        [x1, x2],
        grad_fn=False,
    )


def test_loss_errors():
    check_raises(lambda lib, x: F(lib).nll_loss(x, lib.tensor([0, 1, 2, 9])), [X])
    check_raises(lambda lib, x: F(lib).nll_loss(x, lib.tensor([0, 1, 2])), [X])
    check_raises(lambda lib, x: F(lib).mse_loss(x, x, reduction="avg"), [X])
    check_raises(lambda lib, x, y: F(lib).binary_cross_entropy(x, y), [X, P])
    check_raises(lambda lib, x, y: F(lib).binary_cross_entropy(x.sigmoid(), y), [X, P[:, :2]])
    check_raises(lambda lib, x: F(lib).cross_entropy(x, lib.tensor([0, 1])), [X])
    check_raises(
        lambda lib, x: F(lib).cross_entropy(x, lib.tensor([0, 1, 1, 1]), label_smoothing=1.5), [X]
    )
    check_raises(lambda lib, x, y: F(lib).gaussian_nll_loss(x, y, -(y.abs())), [X, Y])


@pytest.mark.parametrize("reduction", RED)
def test_margin_losses(reduction):
    w = rand(5, dtype="float64", low=0.1, high=2)
    for p in (1, 2):
        check(
            lambda lib, x, p=p: F(lib).multi_margin_loss(
                x, lib.from_numpy(T), p=p, margin=0.7, reduction=reduction
            ),
            [X],
        )
        check(
            lambda lib, x, p=p: F(lib).multi_margin_loss(
                x, lib.from_numpy(T), p=p, weight=lib.from_numpy(w), reduction=reduction
            ),
            [X],
        )
    check(
        lambda lib, x: F(lib).multi_margin_loss(x, lib.tensor(2), reduction=reduction),
        [X[0].copy()],
    )
    tgt = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 1, 1, 1], [4, 4, -1, 0, 0]])
    check(
        lambda lib, x: F(lib).multilabel_margin_loss(x, lib.from_numpy(tgt), reduction=reduction),
        [X],
    )
    check(
        lambda lib, x: F(lib).multilabel_margin_loss(
            x, lib.from_numpy(tgt[0].copy()), reduction=reduction
        ),
        [X[0].copy()],
    )


def test_elementwise_weight():
    w = rand(4, 5, dtype="float64", low=0.1, high=2)
    for r in RED:
        for name in ("mse_loss", "l1_loss", "huber_loss"):
            check(
                lambda lib, x, y, r=r, n=name: getattr(F(lib), n)(
                    x, y, reduction=r, weight=lib.from_numpy(w)
                ),
                [X, Y],
                grad_fn=False,
            )
    check_raises(
        lambda lib, x, y: F(lib).mse_loss(x, y, weight=lib.ones(5, dtype=lib.float64)), [X, Y]
    )

"""``gradcheck``/``gradgradcheck``'s rejections against torch: option combinations, the
advice texts appended to failures, perturbation checks and non-reentrant backward."""

import itertools
import sys

import numpy as np
import pytest

import ember
from tests.oracle.test_autograd_oracle import leaf, same

torch = pytest.importorskip("torch")

X = np.random.default_rng(3).uniform(-1, 1, (2, 3))


@pytest.mark.parametrize("name", ["FAILED_NONDET_MSG", "FAST_FAIL_SLOW_OK_MSG"])
def test_advice_texts_render_as_torchs(name):
    ours = getattr(sys.modules["ember.autograd.gradcheck"], name)
    assert ours == getattr(sys.modules["torch.autograd.gradcheck"], name)


GC_FLAGS = ["check_forward_ad", "check_backward_ad", "check_batched_grad",
            "check_batched_forward_grad"]  # fmt: skip
GG_FLAGS = ["check_fwd_over_rev", "check_rev_over_rev", "check_undefined_grad",
            "check_batched_grad"]  # fmt: skip


@pytest.mark.parametrize("values", list(itertools.product([False, True], repeat=4)))
def test_gradcheck_option_rules(values):
    kwargs = dict(zip(GC_FLAGS, values))
    if kwargs["check_batched_grad"] or kwargs["check_batched_forward_grad"]:
        # allowed combinations need vmap, which ember lacks: compare the rejections only
        try:
            torch.autograd.gradcheck(torch.sin, leaf(torch, X), **kwargs)
        except AssertionError:
            pass
        else:
            with pytest.raises(NotImplementedError):
                ember.autograd.gradcheck(ember.sin, leaf(ember, X), **kwargs)
            return
    same(lambda lib: lib.autograd.gradcheck(lib.sin, leaf(lib, X), **kwargs))


@pytest.mark.parametrize("values", list(itertools.product([False, True], repeat=4)))
def test_gradgradcheck_option_rules(values):
    kwargs = dict(zip(GG_FLAGS, values))
    if kwargs["check_batched_grad"]:
        try:
            torch.autograd.gradgradcheck(torch.sin, leaf(torch, X), **kwargs)
        except AssertionError:
            pass
        else:
            with pytest.raises(NotImplementedError):
                ember.autograd.gradgradcheck(ember.sin, leaf(ember, X), **kwargs)
            return
    same(lambda lib: lib.autograd.gradgradcheck(lib.sin, leaf(lib, X), **kwargs))


def _same_failure(run):
    # ember's GradcheckError is its own class: compare class names and rendered messages
    failures = []
    for lib in (torch, ember):
        with pytest.raises(Exception) as info:
            run(lib)
        failures.append((type(info.value).__name__, str(info.value)))
    assert failures[0] == failures[1]


@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("change", ["shape", "dtype"])
def test_output_changes_under_perturbation(change, fast_mode):
    def run(lib):
        x = leaf(lib, X)
        base = float(X[0, 0])

        def f(t):
            if float(t[0, 0].detach()) <= base:  # only the +eps perturbation changes it
                return t * 2
            return (t * 2)[:1] if change == "shape" else (t * 2).float()

        return lib.autograd.gradcheck(f, (x,), fast_mode=fast_mode)

    _same_failure(run)


def test_backward_not_reentrant():
    def run(lib):
        calls = [0]

        class Noisy(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                calls[0] += 1
                return g * (2 + 1e-3 * calls[0])

        return lib.autograd.gradcheck(Noisy.apply, (leaf(lib, X),), atol=1e-1, rtol=1e-1)

    _same_failure(run)

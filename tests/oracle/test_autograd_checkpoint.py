"""Oracle tests: ``utils.checkpoint`` against torch, and against the un-checkpointed run.

A checkpointed function must give the gradients of the plain run (including through random
masks, thanks to the restored RNG state), with torch's warnings and errors.
"""

import warnings

import numpy as np
import pytest

import ember
import ember.utils.checkpoint
from tests.oracle.test_autograd_oracle import X34, case, leaf, same

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")

_rng = np.random.default_rng(5)
W1 = _rng.uniform(-1, 1, (4, 8))
B1 = _rng.uniform(-0.5, 0.5, 8)
W2 = _rng.uniform(-1, 1, (8, 8))
W3 = _rng.uniform(-1, 1, (8, 3))


def params(lib):
    return leaf(lib, W1), leaf(lib, B1), leaf(lib, W2), leaf(lib, W3)


def block(lib, w1, b1, w2):
    def f(x):
        h = (x @ w1 + b1).tanh()
        return (h @ w2).sigmoid() * h

    return f


def dropout_block(lib, w2):
    def f(h):
        mask = (lib.rand(h.shape, dtype=h.dtype) > 0.3).to(h.dtype)
        return (h @ w2).tanh() * mask / 0.7

    return f


def cp(lib):
    return lib.utils.checkpoint


CASES: list = []


def _mlp(lib, reentrant, checkpointed=True, dropout=False):
    lib.manual_seed(0)
    w1, b1, w2, w3 = params(lib)
    x = leaf(lib, X34)
    f1 = block(lib, w1, b1, w2)
    # ember's random stream is not torch's: across libraries, compare without dropout
    f2 = dropout_block(lib, w2) if dropout else (lambda h: (h @ w2).tanh())
    if checkpointed:
        h = cp(lib).checkpoint(f1, x, use_reentrant=reentrant)
        h = cp(lib).checkpoint(f2, h, use_reentrant=reentrant)
    else:
        h = f2(f1(x))
    loss = ((h @ w3) ** 2).mean()
    loss.backward()
    return loss, x.grad, w1.grad, b1.grad, w2.grad, w3.grad


def _close(a, b) -> bool:
    return all(
        np.allclose(u.detach().numpy(), v.detach().numpy(), rtol=1e-12) for u, v in zip(a, b)
    )


@case(CASES)
def _non_reentrant(lib):
    return _mlp(lib, False)


@case(CASES)
def _reentrant(lib):
    return _mlp(lib, True)


@case(CASES)
def _non_reentrant_autograd_grad(lib):
    lib.manual_seed(0)
    w1, b1, w2, w3 = params(lib)
    x = leaf(lib, X34)
    h = cp(lib).checkpoint(block(lib, w1, b1, w2), x, use_reentrant=False)
    loss = (h @ w3).pow(2).sum()
    return lib.autograd.grad(loss, (x, w1, w2))


@case(CASES)
def _reentrant_autograd_grad_fails(lib):
    w1, b1, w2, w3 = params(lib)
    x = leaf(lib, X34)
    h = cp(lib).checkpoint(block(lib, w1, b1, w2), x, use_reentrant=True)
    lib.autograd.grad(h.sum(), (x,))


@case(CASES)
def _reentrant_backward_inputs_fails(lib):
    w1, b1, w2, w3 = params(lib)
    x = leaf(lib, X34)
    h = cp(lib).checkpoint(block(lib, w1, b1, w2), x, use_reentrant=True)
    h.sum().backward(inputs=[w1])


@case(CASES)
def _non_reentrant_double_backward(lib):
    lib.manual_seed(0)
    w1, b1, w2, w3 = params(lib)
    x = leaf(lib, X34)
    h = cp(lib).checkpoint(block(lib, w1, b1, w2), x, use_reentrant=False)
    (gx,) = lib.autograd.grad((h @ w3).sum(), x, create_graph=True)
    (gx * gx).sum().backward()
    return gx, w1.grad, w2.grad


@case(CASES)
def _kwargs_and_non_tensor_args(lib):
    w1, b1, w2, w3 = params(lib)
    x = leaf(lib, X34)

    def f(x, scale, *, shift):
        return (x @ w1 * scale + shift).tanh()

    y = cp(lib).checkpoint(f, x, 0.5, shift=b1, use_reentrant=False)
    y.sum().backward()
    return y, x.grad, w1.grad, b1.grad


@case(CASES)
def _reentrant_kwargs_rejected(lib):
    cp(lib).checkpoint(lambda x, s: x * s, leaf(lib, X34), s=2.0, use_reentrant=True)


@case(CASES)
def _multiple_outputs(lib):
    w1, b1, w2, w3 = params(lib)
    x = leaf(lib, X34)

    def f(x):
        h = x @ w1
        return h.tanh(), h.exp(), 3

    for reentrant in (False, True):
        a, b, c = cp(lib).checkpoint(f, x, use_reentrant=reentrant)
        (a * b).sum().backward()
    return a, b, c, x.grad, w1.grad


@case(CASES)
def _no_input_requires_grad_warns(lib):
    w1, b1, w2, w3 = params(lib)
    x = leaf(lib, X34, requires_grad=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        y = cp(lib).checkpoint(block(lib, w1, b1, w2), x, use_reentrant=True)
    messages = [str(w.message) for w in seen]
    return y.requires_grad, messages


@case(CASES)
def _use_reentrant_unset_warns(lib):
    x = leaf(lib, X34)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        y = cp(lib).checkpoint(lambda t: t.exp(), x)
        cp(lib).checkpoint_sequential([lambda t: t * 2, lambda t: t.exp()], 2, x)
    y.sum().backward()
    return [str(w.message) for w in seen], x.grad


@case(CASES)
def _checkpoint_under_no_grad(lib):
    w1, b1, w2, w3 = params(lib)
    x = leaf(lib, X34)
    with lib.no_grad():
        a = cp(lib).checkpoint(block(lib, w1, b1, w2), x, use_reentrant=False)
        b = cp(lib).checkpoint(block(lib, w1, b1, w2), x, use_reentrant=True)
    return a, b


@case(CASES)
def _dropout_masks_match(lib):
    # the restored RNG state gives the forward's dropout mask: the plain run's gradients
    return [_close(_mlp(lib, r, dropout=True), _mlp(lib, r, False, dropout=True)) for r in (0, 1)]


@case(CASES)
def _preserve_rng_state_false_changes_mask(lib):
    # without the restored RNG state the recomputed mask differs from the forward's
    def run(preserve):
        lib.manual_seed(0)
        h = leaf(lib, X34)
        f = dropout_block(lib, leaf(lib, np.eye(4)))
        y = cp(lib).checkpoint(f, h, use_reentrant=False, preserve_rng_state=preserve)
        y.sum().backward()
        return (h.grad,)

    return _close(run(True), run(True)), _close(run(True), run(False))


@case(CASES)
def _input_modified_after_forward(lib):
    w1, b1, w2, w3 = params(lib)
    x = leaf(lib, X34) * 1
    y = cp(lib).checkpoint(block(lib, w1, b1, w2), x, use_reentrant=False)
    x.add_(1)
    y.sum().backward()


@case(CASES)
def _recomputation_differs(lib):
    calls = [0]

    def f(x):
        calls[0] += 1
        return x.exp() if calls[0] == 1 else x.exp().exp()

    x = leaf(lib, X34)
    y = cp(lib).checkpoint(f, x, use_reentrant=False)
    y.sum().backward()


@case(CASES)
def _checkpoint_sequential(lib):
    lib.manual_seed(0)
    w1, b1, w2, w3 = params(lib)
    fns = [
        lambda t: t @ w1 + b1,
        lambda t: t.tanh(),
        lambda t: (t @ w2).exp(),
        lambda t: t @ w2,
        lambda t: t.sigmoid(),
        lambda t: t @ w3,
    ]
    x = leaf(lib, X34)
    results = []
    for reentrant in (False, True):
        lib.manual_seed(0)
        out = cp(lib).checkpoint_sequential(fns, 3, x, use_reentrant=reentrant)
        out.pow(2).sum().backward()
        results += [out, x.grad.clone(), w2.grad.clone()]
    return results


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__.strip("_"))
def test_checkpoint(fn):
    same(fn)


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_equals_plain_run(reentrant):
    plain = _mlp(ember, reentrant, checkpointed=False, dropout=True)
    checked = _mlp(ember, reentrant, dropout=True)
    for a, b in zip(plain, checked):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


def _outcome(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
        except Exception as exc:  # noqa: BLE001 - compared as (class, message)
            value = (type(exc).__name__, str(exc))
    return value, [str(w.message) for w in caught]


@pytest.mark.parametrize("segments", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("reentrant", [True, False, None])
def test_checkpoint_sequential_segments_like_torch(segments, reentrant):
    def run(lib):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        fns = [lib.sin, lambda t: t * 3, lib.exp]
        out = lib.utils.checkpoint.checkpoint_sequential(fns, segments, x, use_reentrant=reentrant)
        out.sum().backward()
        return [round(v, 9) for v in out.tolist()], [round(v, 9) for v in x.grad.tolist()]

    assert _outcome(lambda: run(ember)) == _outcome(lambda: run(torch))


def test_checkpoint_keyword_and_mixed_inputs_like_torch():
    def run(lib, reentrant, **kw):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        w = lib.tensor([2.0, 3.0])  # no grad

        def f(a, scale, b, tag):
            return a * scale + b, (a * b).detach(), tag

        out = lib.utils.checkpoint.checkpoint(f, x, 2.0, w, "t", use_reentrant=reentrant, **kw)
        (out[0].sum() + 0 * out[1].sum()).backward()
        return out[0].tolist(), out[1].tolist(), out[2], x.grad.tolist()

    for reentrant, kw in [
        (True, {}),
        (False, {}),
        (False, {"determinism_check": "none"}),
        (True, {"preserve_rng_state": False}),
        (True, {"extra": 1}),
        (False, {"determinism_check": "bogus"}),
        (True, {"context_fn": lambda: (None, None)}),
    ]:
        assert _outcome(lambda r=reentrant, k=kw: run(ember, r, **k)) == _outcome(
            lambda r=reentrant, k=kw: run(torch, r, **k)
        ), (reentrant, kw)

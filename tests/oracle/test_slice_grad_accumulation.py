"""Gradients of select/slice written into one buffer, and in-place accumulation of sums.

The engine (autograd/engine.py ``_send_slice``/``_accumulate``) writes the gradient of
``x[t]``/``x[a:b]`` straight into a slice of ``x``'s buffer and adds later gradients into sums
it made itself. Each case runs one function in ember and torch and compares every leaf's
gradient exactly (same additions in the same order), with hooks, ``retain_grad``, ``grad()``
with inputs, repeated backward and float64 double backward taking the nodes' own backward.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402


def _unrolled(lib, x, w):
    # the hand-written recurrence: a slice per step, the same weight used every step
    h = x[0] * 0
    for t in range(x.shape[0]):
        h = lib.tanh(x[t] + h @ w)
    return h.sum()


def _overlap(lib, x, w):
    # overlapping slices, strided slices, a select along dim 1, and x itself used too
    y = x * w[0, 0]
    return (
        (y[1:4] ** 2).sum()
        + (y[2:] * 3).sum()
        + y[::2, :, 1:3].sum()
        + (y[:, 1] * y[:, 2]).sum()
        + (y * 0.5).sum()
        + (x[3] * x[1]).sum()
    )


def _leaf_direct(lib, x, w):
    # slices of the leaf itself: the buffer becomes x.grad
    return sum(((x[t] @ w) * (t + 1)).sum() for t in range(x.shape[0])) + x[1:3, 0].sum()


def _transposed(lib, x, w):
    # select of a non-contiguous view, gradients flowing through the view's backward
    xt = x.transpose(0, 2)
    return sum((xt[i] * (i + 2)).sum() for i in range(xt.shape[0])) + (xt[1:, 2] ** 3).sum()


def _unbound_mix(lib, x, w):
    # select and unbind/chunk in one graph: only some gradients come from slices
    a, b = x.chunk(2, 1)
    return (a[0] * 2).sum() + (b[-1] * x[0, 0]).sum() + sum(u.sum() for u in x.unbind(0))


# (case, exact): cases of only additions and products compare bit for bit; through matmul and
# tanh, NumPy's and torch's kernels differ in the last bit
CASES = [(_unrolled, False), (_overlap, True), (_leaf_direct, False), (_transposed, True)]
CASES += [(_unbound_mix, True)]


def _leaves(lib, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((5, 4, 4)).astype(dtype)
    w = (rng.standard_normal((4, 4)) * 0.5).astype(dtype)
    return [lib.from_numpy(a.copy()).requires_grad_() for a in (x, w)]


def _grads(lib, fn, dtype, twice=False):
    x, w = _leaves(lib, dtype)
    for _ in range(2 if twice else 1):
        fn(lib, x, w).backward()
    return [None if p.grad is None else p.grad.numpy().copy() for p in (x, w)]


def _check(got, want, exact, dtype="float64"):
    for g, r in zip(got, want):
        assert (g is None) == (r is None)
        if g is None:
            continue
        assert g.dtype == r.dtype
        if exact:
            np.testing.assert_array_equal(g, r)
        else:
            tol = 1e-12 if dtype == "float64" else 2e-6
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,exact", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_gradients_equal_torch(fn, exact, dtype):
    for twice in (False, True):  # a second backward accumulates into .grad
        _check(_grads(ember, fn, dtype, twice), _grads(torch, fn, dtype, twice), exact, dtype)


def test_grad_with_inputs_and_intermediate():
    out = []
    for lib in (ember, torch):
        x, w = _leaves(lib, "float64")
        y = x * 3
        loss = _unrolled(lib, y, w)
        gy, gw = lib.autograd.grad(loss, (y, w))
        out.append([gy.numpy(), gw.numpy()])
    _check(*out, exact=False)


def test_hooks_on_slices_and_buffer():
    seen = {}
    for lib in (ember, torch):
        x, w = _leaves(lib, "float64")
        y = x * 2
        y.retain_grad()
        calls = []
        y.register_hook(lambda g, calls=calls: calls.append(g.sum().item()))
        s = y[1]
        s.register_hook(lambda g: g * 10)  # the slice's own hook changes its gradient
        r = y[2:4]
        r.retain_grad()
        s.grad_fn.register_prehook(lambda go, calls=calls: calls.append("pre"))
        loss = (s * w).sum() + (r**2).sum() + (y[0] * y[4]).sum()
        loss.backward()
        seen[lib.__name__] = (x.grad.numpy().copy(), y.grad.numpy(), r.grad.numpy(), calls)
    (gx, gy, gr, ce), (tx, ty, tr, ct) = seen["ember"], seen["torch"]
    np.testing.assert_array_equal(gx, tx)
    np.testing.assert_array_equal(gy, ty)
    np.testing.assert_array_equal(gr, tr)
    assert ce == ct


def test_double_backward_float64():
    res = []
    for lib in (ember, torch):
        x, w = _leaves(lib, "float64")
        loss = _overlap(lib, x, w) + _unrolled(lib, x, w)
        gx, gw = lib.autograd.grad(loss, (x, w), create_graph=True)
        assert gx.grad_fn is not None
        ((gx**2).sum() + (gw * gw).sum()).backward()
        res.append([x.grad.numpy(), w.grad.numpy(), gx.detach().numpy()])
    for g, r in zip(*res):
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)


def test_buffer_not_changed_once_handed_on():
    # the buffer the slices filled reaches a hook and two leaves: later sums must not write it
    res = []
    for lib in (ember, torch):
        x, z = (lib.zeros(3, 2, dtype=lib.float64, requires_grad=True) for _ in range(2))
        first = (x * 3).sum()  # (older: its gradient reaches x after AddBackward's)
        y = x + z
        kept = []
        y.register_hook(kept.append)  # a hook keeping the buffer the slices filled
        (first + y[0].sum() + y[1].sum() * 2 + y[2:].sum() * 5).backward()
        x.grad.add_(1)  # (an optimizer's in-place update of one leaf's gradient)
        res.append([x.grad.numpy().copy(), z.grad.numpy().copy(), kept[0].numpy().copy()])
    for g, r in zip(*res):
        np.testing.assert_array_equal(g, r)

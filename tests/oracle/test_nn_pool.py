"""Oracle tests for pooling functions (max, avg, adaptive, lp, unpool)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.nn._functional import pooling as EF
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

TF = torch.nn.functional


def F(lib):
    return TF if lib is torch else EF


MAX2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(1, 2), dilation=(2, 1)),
    dict(kernel_size=2, stride=1),
]


@pytest.mark.parametrize("kw", MAX2D)
def test_max_pool2d(kw):
    check(lambda lib, x: F(lib).max_pool2d(x, **kw), [rand(2, 3, 9, 8)])
    check(lambda lib, x: F(lib).max_pool2d(x, return_indices=True, **kw), [rand(3, 9, 8)])


def test_issue_sizes():
    x = rand(1, 2, 75, 75)
    check(lambda lib, x: F(lib).max_pool2d(x, 2, 2), [x])
    check(lambda lib, x: F(lib).max_pool2d(x, 2, 2, ceil_mode=True), [x])


@pytest.mark.parametrize(
    "kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)]
)
def test_max_pool1d_3d(kw):
    check(lambda lib, x: F(lib).max_pool1d(x, return_indices=True, **kw), [rand(2, 3, 11)])
    check(lambda lib, x: F(lib).max_pool1d(x, **kw), [rand(3, 11)])
    check(lambda lib, x: F(lib).max_pool3d(x, return_indices=True, **kw), [rand(2, 2, 5, 6, 7)])


def test_max_pool_double_backward():
    check_double_backward(
        lambda lib, x: F(lib).max_pool2d(x, 3, 2, 1), [rand(2, 2, 7, 6, dtype="float64")]
    )


def test_max_unpool():
    def fn(lib, x):
        v, i = F(lib).max_pool2d(x, 2, return_indices=True)
        return F(lib).max_unpool2d(v, i, 2)

    check(fn, [rand(2, 3, 8, 6)])

    def fn2(lib, x):
        v, i = F(lib).max_pool2d(x, 2, return_indices=True)
        return F(lib).max_unpool2d(v, i, 2, output_size=(9, 7))

    check(fn2, [rand(2, 3, 9, 7)])

    def fn1(lib, x):
        v, i = F(lib).max_pool1d(x, 2, return_indices=True)
        return F(lib).max_unpool1d(v, i, 2)

    check(fn1, [rand(2, 3, 8)])


AVG = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(2, 1), divisor_override=5),
]


@pytest.mark.parametrize("kw", AVG)
def test_avg_pool2d(kw):
    check(lambda lib, x: F(lib).avg_pool2d(x, **kw), [rand(2, 3, 9, 8)])


def test_avg_pool1d_3d():
    check(lambda lib, x: F(lib).avg_pool1d(x, 3, 2, 1, ceil_mode=True), [rand(2, 3, 10)])
    check(lambda lib, x: F(lib).avg_pool1d(x, 3, 2, 1, count_include_pad=False), [rand(3, 10)])
    check(lambda lib, x: F(lib).avg_pool3d(x, 2), [rand(2, 2, 4, 5, 6)])
    check(
        lambda lib, x: F(lib).avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        [rand(1, 2, 5, 6, 7)],
    )


def test_avg_pool_double_backward():
    check_double_backward(
        lambda lib, x: F(lib).avg_pool2d(x, 3, 2, 1), [rand(2, 2, 7, 6, dtype="float64")]
    )


@pytest.mark.parametrize("size", [(4, 3), 3, (None, 2), 1, (5, 8)])
def test_adaptive_avg_pool2d(size):
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x, size), [rand(2, 3, 9, 8)])


def test_adaptive_avg_pool1d_3d():
    check(lambda lib, x: F(lib).adaptive_avg_pool1d(x, 4), [rand(2, 3, 10)])
    check(lambda lib, x: F(lib).adaptive_avg_pool3d(x, (2, 3, 4)), [rand(2, 2, 5, 6, 7)])
    check_double_backward(
        lambda lib, x: F(lib).adaptive_avg_pool2d(x, 3), [rand(1, 2, 7, 5, dtype="float64")]
    )


@pytest.mark.parametrize("size", [(4, 3), 3, (None, 2), (5, 8)])
def test_adaptive_max_pool2d(size):
    check(
        lambda lib, x: F(lib).adaptive_max_pool2d(x, size, return_indices=True),
        [rand(2, 3, 9, 8)],
    )


def test_adaptive_max_pool1d():
    check(lambda lib, x: F(lib).adaptive_max_pool1d(x, 4, True), [rand(2, 3, 10)])


def test_lp_pool():
    check(lambda lib, x: F(lib).lp_pool2d(x, 2, 2), [rand(2, 3, 8, 8, low=0.1)])
    check(lambda lib, x: F(lib).lp_pool1d(x, 3, 2, 1), [rand(2, 3, 8, low=0.1)])


@pytest.mark.parametrize(
    "fn,ins",
    [
        (lambda lib, x: F(lib).max_pool2d(x, 2, padding=2), [rand(1, 2, 8, 8)]),
        (lambda lib, x: F(lib).max_pool2d(x, 4), [rand(1, 2, 3, 3)]),
        (lambda lib, x: F(lib).avg_pool2d(x, 2, divisor_override=0), [rand(1, 2, 4, 4)]),
        (lambda lib, x: F(lib).max_pool2d(x, 2), [rand(4, 4)]),
    ],
)
def test_pool_errors(fn, ins):
    check_raises(fn, ins)


def test_unbatched_2d_pools():
    x = [rand(3, 9, 8)]
    check(lambda lib, x: F(lib).avg_pool2d(x, 3, 2, 1, ceil_mode=True), x)
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x, (4, 3)), x)
    check(lambda lib, x: F(lib).adaptive_max_pool2d(x, (4, 3), True), x)

    def unpool(lib, x):
        v, i = F(lib).max_pool2d(x, 2, return_indices=True)
        return F(lib).max_unpool2d(v, i, 2)

    check(unpool, x)


def test_pool_non_contiguous_float64():
    check(
        lambda lib, x: F(lib).max_pool2d(x.transpose(2, 3), 2), [rand(2, 3, 8, 6, dtype="float64")]
    )
    check(
        lambda lib, x: F(lib).avg_pool2d(x.transpose(2, 3), 2), [rand(2, 3, 8, 6, dtype="float64")]
    )


def test_max_pool_ties_and_nan():
    import numpy as np

    x = np.round(rand(2, 3, 8, 8)).astype("float32")  # many ties
    check(lambda lib, x: F(lib).max_pool2d(x, 3, 2, 1, return_indices=True), [x])
    y = rand(1, 2, 6, 6)
    y[0, 0, 1, 1] = np.nan
    y[0, 1, 2, 3] = np.nan
    y[0, 1, 3, 3] = np.nan
    check(lambda lib, x: F(lib).max_pool2d(x, 2, return_indices=True), [y], grad=False)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_max_pool_reduced_precision(dtype):
    # bfloat16 is not a NumPy float kind: padding and NaN handling must still treat it as one
    x = np.arange(64.0).reshape(1, 2, 4, 8)
    x[0, 0, 1, 1] = np.nan
    for lib_fn in (
        lambda L, t: L.nn.functional.max_pool2d(t, 2, padding=1, return_indices=True),
        lambda L, t: L.nn.functional.max_pool1d(t[0], 3, stride=2, return_indices=True),
        lambda L, t: L.nn.functional.adaptive_max_pool2d(t, 3, return_indices=True),
    ):
        outs = []
        for L in (ember, torch):
            t = L.tensor(x).to(getattr(L, dtype)).requires_grad_()
            v, i = lib_fn(L, t)
            v.float().nansum().backward()
            outs.append((v.float().detach().numpy(), i.numpy(), t.grad.float().numpy(), v.dtype))
        (ev, ei, eg, edt), (tv, ti, tg, tdt) = outs
        assert str(edt) == str(tdt)
        np.testing.assert_array_equal(ev, tv)
        np.testing.assert_array_equal(ei, ti)
        np.testing.assert_array_equal(eg, tg)


NO_INDICES = [(2, (2, 3, 9, 8), kw) for kw in MAX2D] + [
    (3, (1, 2, 5, 6, 7), dict(kernel_size=2, stride=(1, 2, 2), padding=1, ceil_mode=True))
]


@pytest.mark.parametrize("nd,shape,kw", NO_INDICES)
def test_max_pool_without_indices(nd, shape, kw):
    # nothing reads the indices (input without grad, or no_grad): the values-only op
    x = rand(*shape)
    x.flat[7] = np.nan
    fn = lambda lib, x: getattr(F(lib), f"max_pool{nd}d")(x, **kw)  # noqa: E731
    e, _ = check(fn, [x], grad=False)
    assert e.grad_fn is None
    check(lambda lib, x: fn(lib, x.transpose(-1, -2)), [x.astype("float64")], grad=False)
    if nd == 2:  # channels_last keeps its layout
        check(
            lambda lib, x: fn(lib, x.contiguous(memory_format=lib.channels_last)), [x], grad=False
        )
    with ember.no_grad():  # a leaf that requires grad, under no_grad
        got = EF.max_pool2d(ember.from_numpy(x).requires_grad_(), 2) if nd == 2 else None
    if got is not None:
        want = TF.max_pool2d(torch.from_numpy(x), 2)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.grad_fn is None and not got.requires_grad

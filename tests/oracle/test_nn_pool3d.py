"""Oracle tests of MaxUnpool3d, AdaptiveMaxPool3d, LPPool3d (and LPPool1d/2d norms) vs torch."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

_rng = np.random.default_rng(11)


def _distinct(*shape, dtype="float32"):
    """Values without ties (argmax positions then agree between the libraries)."""
    n = int(np.prod(shape))
    return (_rng.permutation(n).reshape(shape) / n * 4 - 2).astype(dtype)


@pytest.mark.parametrize(
    "shape,size",
    [
        ((2, 3, 5, 6, 7), (2, 3, 4)),
        ((2, 3, 5, 6, 7), 3),
        ((1, 2, 4, 4, 4), (4, None, 1)),
        ((3, 5, 6, 7), (5, 2, 7)),  # unbatched
        ((1, 1, 3, 2, 5), (6, 4, 2)),  # output larger than input: overlapping windows
    ],
)
def test_adaptive_max_pool3d(shape, size):
    x = _distinct(*shape)
    check(lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, size, True), [x])
    check(lambda lib, x: lib.nn.AdaptiveMaxPool3d(size)(x), [x])


def test_adaptive_max_pool3d_ties_and_double_backward():
    x = np.round(rand(2, 2, 4, 5, 3, dtype="float64"))  # many ties: the first one wins
    check(lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, (2, 3, 2), True), [x])
    x = _distinct(1, 2, 4, 5, 3, dtype="float64")
    check_double_backward(lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, 2), [x])


@pytest.mark.parametrize(
    "shape,kernel,stride,padding",
    [
        ((2, 3, 4, 6, 8), 2, None, 0),
        ((1, 2, 5, 7, 6), (2, 3, 2), (1, 2, 2), (1, 1, 0)),
        ((2, 4, 6, 5), 3, 2, 1),  # unbatched
    ],
)
def test_max_unpool3d(shape, kernel, stride, padding):
    x = _distinct(*shape)

    def fn(lib, x):
        F = lib.nn.functional
        y, idx = F.max_pool3d(x, kernel, stride, padding, return_indices=True)
        return F.max_unpool3d(y, idx, kernel, stride, padding, output_size=x.shape[-3:])

    check(fn, [x])

    def module(lib, x):
        y, idx = lib.nn.MaxPool3d(kernel, stride, padding, return_indices=True)(x)
        return lib.nn.MaxUnpool3d(kernel, stride, padding)(y, idx, output_size=x.shape[-3:])

    check(module, [x])


def test_max_unpool3d_double_backward_and_repr():
    x = _distinct(1, 2, 4, 4, 4, dtype="float64")

    def fn(lib, x):
        y, idx = lib.nn.functional.max_pool3d(x, 2, return_indices=True)
        return lib.nn.functional.max_unpool3d(y * y, idx, 2)

    check_double_backward(fn, [x])
    for lib in (torch, __import__("ember")):
        assert repr(lib.nn.MaxUnpool3d(2)) == (
            "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"
        )
        assert repr(lib.nn.AdaptiveMaxPool3d((2, None, 3), True)) == (
            "AdaptiveMaxPool3d(output_size=(2, None, 3))"
        )
        assert repr(lib.nn.LPPool3d(2, 2)) == (
            "LPPool3d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False)"
        )


@pytest.mark.parametrize(
    "norm,kernel,stride,ceil",
    [
        (2.0, 2, None, False),
        (3.0, (2, 3, 2), 1, False),
        (1.5, 2, (1, 2, 1), True),
        (float("inf"), 2, None, False),
        (-float("inf"), (1, 2, 2), 1, False),
    ],
)
def test_lp_pool3d(norm, kernel, stride, ceil):
    x = _distinct(2, 3, 4, 5, 6, dtype="float64") + 0.0
    x = np.abs(x) + 0.1 if norm not in (2.0,) and np.isfinite(norm) else x
    check(lambda lib, x: lib.nn.functional.lp_pool3d(x, norm, kernel, stride, ceil), [x])
    check(lambda lib, x: lib.nn.LPPool3d(norm, kernel, stride, ceil)(x), [x])
    if np.isfinite(norm):
        check_double_backward(lambda lib, x: lib.nn.functional.lp_pool3d(x, norm, kernel), [x])


@pytest.mark.parametrize("norm", [float("inf"), -float("inf")])
def test_lp_pool1d_2d_infinite_norm(norm):
    x = _distinct(2, 3, 6, 8)
    check(lambda lib, x: lib.nn.functional.lp_pool2d(x, norm, 2), [x])
    check(lambda lib, x: lib.nn.functional.lp_pool1d(x, norm, 3, 2), [x[0]])
    check(lambda lib, x: lib.nn.LPPool1d(norm, 2)(x), [x[0]])


_BAD = [
    ("adaptive 2d input", lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x[0, 0, 0], 2)),
    (
        "unpool 3d input",
        lambda lib, x: lib.nn.functional.max_unpool3d(
            x[0, 0], lib.zeros(x[0, 0].shape, dtype=lib.long), 2
        ),
    ),
    (
        "unpool bad index",
        lambda lib, x: lib.nn.functional.max_unpool3d(
            x, lib.full(x.shape, 10**6, dtype=lib.long), 2
        ),
    ),
]


def _long(lib, shape):
    return lib.zeros(shape, dtype=lib.long)


_BAD += [
    (
        "unpool int32 indices",
        lambda lib, x: lib.nn.functional.max_unpool3d(x, lib.zeros(x.shape, dtype=lib.int32), 2),
    ),
    (
        "unpool2d int32 indices",
        lambda lib, x: lib.nn.functional.max_unpool2d(
            x[0], lib.zeros(x[0].shape, dtype=lib.int32), 2
        ),
    ),
    (
        "unpool indices shape",
        lambda lib, x: lib.nn.functional.max_unpool3d(x, _long(lib, (1, 2, 3, 3, 2)), 2),
    ),
    (
        "unpool2d 5d input",
        lambda lib, x: lib.nn.functional.max_unpool2d(x, _long(lib, x.shape), 2),
    ),
    (
        "unpool output_size length",
        lambda lib, x: lib.nn.functional.max_unpool3d(
            x, _long(lib, x.shape), 2, output_size=[6, 6]
        ),
    ),
    ("adaptive empty dim", lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x[:, :, :0], 2)),
    (
        "adaptive1d empty dim",
        lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x[0, 0][:, :0], 2),
    ),
    ("lp_pool3d 2d input", lambda lib, x: lib.nn.functional.lp_pool3d(x[0, 0, 0], 2, 2)),
]


@pytest.mark.parametrize("name,fn", _BAD, ids=[b[0] for b in _BAD])
def test_pool3d_errors(name, fn):
    check_raises(fn, [rand(1, 2, 3, 3, 3)], match_message=True)


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, 2, True),
        lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x[:, 0], (2, 1), True),
        lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x[:, 0, 0], 2, True),
        lambda lib, x: lib.nn.functional.lp_pool3d(x, 2.0, 2),
    ],
)
def test_pool3d_empty_batch(fn):
    check(fn, [rand(0, 2, 3, 4, 5)])

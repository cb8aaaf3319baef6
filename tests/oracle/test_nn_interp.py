"""Oracle tests for interpolate, pixel_shuffle/unshuffle and channel_shuffle."""

from __future__ import annotations

import pytest

from ember.nn._functional import vision as EF
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

TF = torch.nn.functional


def F(lib):
    return TF if lib is torch else EF


CASES = [
    ((2, 3, 7), dict(scale_factor=2, mode="nearest")),
    ((2, 3, 7), dict(size=5, mode="nearest")),
    ((2, 3, 7), dict(size=11, mode="nearest-exact")),
    ((2, 3, 7), dict(scale_factor=1.7, mode="linear")),
    ((2, 3, 7), dict(size=12, mode="linear", align_corners=True)),
    ((2, 3, 5, 6), dict(scale_factor=2, mode="nearest")),
    ((2, 3, 5, 6), dict(size=(7, 4), mode="nearest-exact")),
    ((2, 3, 5, 6), dict(scale_factor=2, mode="bilinear")),
    ((2, 3, 5, 6), dict(size=(9, 4), mode="bilinear", align_corners=True)),
    ((2, 3, 5, 6), dict(scale_factor=(1.5, 0.7), mode="bilinear")),
    ((2, 3, 5, 6), dict(scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)),
    ((2, 3, 5, 6), dict(scale_factor=2, mode="bicubic")),
    ((2, 3, 5, 6), dict(size=(8, 3), mode="bicubic", align_corners=True)),
    ((2, 3, 9, 8), dict(size=(4, 3), mode="area")),
    ((2, 3, 9), dict(size=4, mode="area")),
    ((1, 2, 3, 4, 5), dict(scale_factor=2, mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(size=(4, 3, 6), mode="trilinear", align_corners=True)),
    ((1, 2, 3, 4, 5), dict(scale_factor=2, mode="nearest")),
]


@pytest.mark.parametrize("shape,kw", CASES)
def test_interpolate(shape, kw):
    check(lambda lib, x: F(lib).interpolate(x, **kw), [rand(*shape)], grad_atol=1e-4)


def test_interpolate_double_backward():
    check_double_backward(
        lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode="bilinear"),
        [rand(1, 2, 3, 4, dtype="float64")],
    )


@pytest.mark.parametrize(
    "shape,kw",
    [
        ((1, 2, 4, 4), dict(size=3, mode="nearest", align_corners=True)),
        ((2, 4, 4), dict(size=3, mode="bilinear")),
        ((1, 2, 4, 4), dict(size=3, scale_factor=2)),
        ((1, 2, 4, 4), dict()),
        ((1, 2, 4, 4), dict(size=(3, 3, 3))),
    ],
)
def test_interpolate_errors(shape, kw):
    check_raises(lambda lib, x: F(lib).interpolate(x, **kw), [rand(*shape)], match_message=True)


def test_shuffles():
    check(lambda lib, x: F(lib).pixel_shuffle(x, 2), [rand(2, 8, 3, 4)])
    check(lambda lib, x: F(lib).pixel_shuffle(x, 3), [rand(9, 2, 3)])
    check(lambda lib, x: F(lib).pixel_unshuffle(x, 2), [rand(2, 3, 4, 6)])
    check(lambda lib, x: F(lib).channel_shuffle(x, 3), [rand(2, 6, 3, 4)])
    check_raises(lambda lib, x: F(lib).pixel_shuffle(x, 2), [rand(2, 6, 3, 4)], match_message=True)
    check_raises(
        lambda lib, x: F(lib).pixel_unshuffle(x, 2), [rand(2, 6, 3, 4)], match_message=True
    )


@pytest.mark.parametrize(
    "name,args,kw,shape",
    [
        ("Upsample", (), dict(scale_factor=2, mode="bilinear"), (2, 3, 4, 5)),
        ("Upsample", (), dict(size=(5, 7), mode="bicubic", align_corners=True), (2, 3, 4, 5)),
        ("Upsample", (), dict(scale_factor=(2, 3)), (2, 3, 4, 5)),
        ("UpsamplingNearest2d", (), dict(scale_factor=2), (2, 3, 4, 5)),
        ("UpsamplingBilinear2d", (), dict(size=(7, 9)), (2, 3, 4, 5)),
        ("PixelShuffle", (2,), dict(), (2, 8, 3, 4)),
        ("PixelUnshuffle", (2,), dict(), (2, 2, 4, 6)),
        ("ChannelShuffle", (2,), dict(), (2, 6, 3, 4)),
    ],
)
def test_modules(name, args, kw, shape):
    import ember.nn.modules.channelshuffle as ECS
    import ember.nn.modules.pixelshuffle as EPS
    import ember.nn.modules.upsampling as EUP

    ens = {**vars(EUP), **vars(EPS), **vars(ECS)}

    def fn(lib, x):
        m = getattr(torch.nn, name)(*args, **kw) if lib is torch else ens[name](*args, **kw)
        return m(x), repr(m)

    check(lambda lib, x: fn(lib, x)[0], [rand(*shape)])
    x = torch.zeros(shape)
    assert fn(torch, x)[1] == ens[name](*args, **kw).__repr__()


@pytest.mark.parametrize("align", [False, True])
def test_affine_grid(align):
    check(
        lambda lib, t: F(lib).affine_grid(t, (2, 3, 4, 5), align_corners=align),
        [rand(2, 2, 3)],
    )


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample(mode, padding_mode, align):
    ins = [rand(2, 3, 5, 6), rand(2, 4, 3, 2, low=-1.3, high=1.3)]

    def fn(lib, x, g):
        return F(lib).grid_sample(x, g, mode, padding_mode, align)

    # torch records one GridSampler2DBackward0 node; ember composes ops
    check(fn, ins, grad_atol=1e-4)

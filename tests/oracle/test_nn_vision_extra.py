"""Oracle tests of grid_sample (bicubic, 5-D), affine_grid (5-D) and antialiased interpolate."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

_rng = np.random.default_rng(21)


def F(lib):
    return lib.nn.functional


# ------------------------------------------------------------------------------ antialias


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize(
    "kw",
    [
        {"size": (5, 4)},
        {"size": (30, 7)},
        {"scale_factor": 0.37},
        {"scale_factor": (0.5, 2.5)},
        {"size": (6, 20), "align_corners": True},
        {"scale_factor": 0.3, "recompute_scale_factor": True},
        {"size": (17, 13)},
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_interpolate_antialias(mode, kw, dtype):
    x = rand(2, 3, 17, 13, dtype=dtype)
    check(lambda lib, x: F(lib).interpolate(x, mode=mode, antialias=True, **kw), [x])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_antialias_double_backward(mode):
    x = rand(1, 2, 9, 8, dtype="float64")
    check_double_backward(
        lambda lib, x: F(lib).interpolate(x * x, size=(4, 3), mode=mode, antialias=True), [x]
    )


@pytest.mark.parametrize(
    "shape,mode", [((1, 1, 4, 4, 4), "trilinear"), ((1, 1, 4, 4), "nearest"), ((1, 1, 4), "linear")]
)
def test_interpolate_antialias_errors(shape, mode):
    fn = lambda lib, x: F(lib).interpolate(x, size=2, mode=mode, antialias=True)  # noqa: E731
    check_raises(fn, [rand(*shape)], match_message=True)


# ------------------------------------------------------------------------------ affine_grid 3D


@pytest.mark.filterwarnings("ignore:Since version 1.3.0, affine_grid behavior")
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5, 6), (2, 1, 1, 3, 2)])
def test_affine_grid_5d(align, size):
    theta = rand(2, 3, 4, dtype="float64")
    check(lambda lib, t: F(lib).affine_grid(t, size, align_corners=align), [theta])
    check_double_backward(lambda lib, t: F(lib).affine_grid(t * t, size, False), [theta])


_AFFINE_BAD = [
    ("3x4 for 4d", lambda lib, t: F(lib).affine_grid(t, (2, 1, 3, 4), align_corners=False)),
    ("2x3 for 5d", lambda lib, t: F(lib).affine_grid(t[:, :2, :3], (2, 1, 3, 4, 5), False)),
    ("zero size", lambda lib, t: F(lib).affine_grid(t, (2, 1, 0, 4, 5), align_corners=False)),
    ("6d", lambda lib, t: F(lib).affine_grid(t, (2, 1, 3, 4, 5, 6), align_corners=False)),
]


@pytest.mark.parametrize("name,fn", _AFFINE_BAD, ids=[b[0] for b in _AFFINE_BAD])
def test_affine_grid_errors(name, fn):
    check_raises(fn, [rand(2, 3, 4)], match_message=True)


def test_align_corners_default_warns():
    x, g = rand(1, 1, 3, 3), rand(1, 2, 2, 2, low=-1, high=1)
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
            F(lib).grid_sample(lib.from_numpy(x), lib.from_numpy(g))
        with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
            F(lib).affine_grid(lib.zeros(1, 2, 3), (1, 1, 2, 2))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            F(lib).grid_sample(lib.from_numpy(x), lib.from_numpy(g), align_corners=False)


# ------------------------------------------------------------------------------ grid_sample


def _grid(*shape, dtype="float64"):
    # a little beyond [-1, 1] so that the padding modes matter
    return _rng.uniform(-1.3, 1.3, shape).astype(dtype)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_bicubic(padding_mode, align):
    x, g = rand(2, 3, 5, 6, dtype="float64"), _grid(2, 4, 3, 2)

    def fn(lib, x, g):
        return F(lib).grid_sample(x, g, "bicubic", padding_mode, align)

    check(fn, [x, g])


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_5d(mode, padding_mode, align):
    x, g = rand(2, 3, 4, 5, 6, dtype="float64"), _grid(2, 3, 2, 4, 3)

    def fn(lib, x, g):
        return F(lib).grid_sample(x, g, mode, padding_mode, align)

    check(fn, [x, g])


def test_grid_sample_float32_and_modules():
    x, g = rand(1, 2, 3, 4, 5), _grid(1, 2, 3, 2, 3, dtype="float32")
    fn = lambda lib, x, g: F(lib).grid_sample(x, g, align_corners=False)  # noqa: E731
    check(fn, [x, g], strides=False, grad_atol=1e-4)
    x, g = rand(2, 2, 6, 5), _grid(2, 3, 3, 2, dtype="float32")
    fn = lambda lib, x, g: F(lib).grid_sample(x, g, "bicubic", align_corners=True)  # noqa: E731
    check(fn, [x, g], strides=False, grad_atol=1e-4)


def test_grid_sample_affine_roundtrip_3d():
    # the identity transform samples the voxel centres back (align_corners=False)
    x = rand(1, 2, 3, 4, 5, dtype="float64")

    def fn(lib, x):
        theta = lib.eye(3, 4, dtype=lib.float64).unsqueeze(0)
        grid = F(lib).affine_grid(theta, x.shape, align_corners=False)
        return F(lib).grid_sample(x, grid, align_corners=False)

    e, t = check(fn, [x])
    np.testing.assert_allclose(e.detach().numpy(), x, atol=1e-12)


_GRID_BAD = [
    (
        "bicubic 5d",
        lambda lib, x, g: F(lib).grid_sample(x, g, "bicubic", align_corners=False),
    ),
    (
        "grid last dim",
        lambda lib, x, g: F(lib).grid_sample(x, g[..., :2], align_corners=False),
    ),
    (
        "dims differ",
        lambda lib, x, g: F(lib).grid_sample(x[0], g[..., :2], align_corners=False),
    ),
    (
        "4d grid for 5d input",
        lambda lib, x, g: F(lib).grid_sample(x, g[:, 0], align_corners=False),
    ),
    (
        "batch",
        lambda lib, x, g: F(lib).grid_sample(x[:1], g, align_corners=False),
    ),
    (
        "empty",
        lambda lib, x, g: F(lib).grid_sample(x[:, :, :0], g, align_corners=False),
    ),
]


def test_affine_grid_unit_size_warning():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="unit-size grids when align_corners=True"):
            F(lib).affine_grid(lib.zeros(1, 3, 4), (1, 1, 1, 2, 2), align_corners=True)


@pytest.mark.parametrize("name,fn", _GRID_BAD, ids=[b[0] for b in _GRID_BAD])
def test_grid_sample_errors(name, fn):
    check_raises(fn, [rand(2, 2, 4, 5, 6), _grid(2, 3, 4, 5, 3)], match_message=True)


_DB_CASES = [
    (mode, nd, pm)
    for mode in ("bilinear", "nearest", "bicubic")
    for nd in (2, 3)
    for pm in ("zeros", "border", "reflection")
    if not (mode == "bicubic" and nd == 3)
]


@pytest.mark.parametrize("mode,nd,padding_mode", _DB_CASES)
def test_grid_sample_double_backward(mode, nd, padding_mode):
    x = rand(1, 2, *([4] * nd), dtype="float64")
    g = _grid(1, 3, 2, *((2,) if nd == 3 else ()), nd)
    check_double_backward(
        lambda lib, x, g: F(lib).grid_sample(x, g, mode, padding_mode, align_corners=False),
        [x, g],
    )

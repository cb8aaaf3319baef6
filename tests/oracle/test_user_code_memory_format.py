"""User code: channels-last memory formats (``x.to(memory_format=torch.channels_last)``,
``contiguous``/``clone`` with a format, ``model.to(memory_format=...)``) as the channels-last
tutorial writes them: same values, torch's strides, grad_fn names and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle._user_code import check_snippet
from tests.oracle.helper import check, check_raises, rand, torch


@pytest.mark.parametrize(
    "fn, shape",
    [
        (lambda lib, x: x.to(memory_format=lib.channels_last), (2, 3, 4, 5)),
        (lambda lib, x: x.contiguous(memory_format=lib.channels_last), (2, 3, 4, 5)),
        (lambda lib, x: x.clone(memory_format=lib.channels_last), (2, 3, 4, 5)),
        (lambda lib, x: x.to(lib.float64, memory_format=lib.channels_last), (2, 3, 4, 5)),
        (lambda lib, x: x.contiguous(memory_format=lib.channels_last_3d), (2, 3, 2, 4, 5)),
        (lambda lib, x: x.to(memory_format=lib.channels_last) * 2 + 1, (1, 3, 4, 4)),
        (lambda lib, x: x.to(memory_format=lib.channels_last).contiguous(), (2, 3, 4, 5)),
        (
            lambda lib, x: (
                x.permute(0, 2, 3, 1)
                .contiguous()
                .permute(0, 3, 1, 2)
                .clone(memory_format=lib.contiguous_format)
            ),
            (2, 3, 4, 5),
        ),
    ],
)
def test_layout_copies(fn, shape):
    check(fn, [rand(*shape)])


def test_already_in_format_is_returned_as_is():
    check_snippet("""
        x = torch.arange(24.0).view(1, 2, 3, 4).contiguous(memory_format=torch.channels_last)
        print(x.stride(), x.is_contiguous(), x.is_contiguous(memory_format=torch.channels_last))
        print(x.contiguous(memory_format=torch.channels_last) is x,
              x.to(memory_format=torch.channels_last) is x, x.contiguous() is x)
        print(torch.empty_like(x).stride(), torch.zeros_like(x).stride(), (x + 1).stride())
    """)


def test_module_to_channels_last():
    check_snippet("""
        m = nn.Sequential(nn.Conv2d(3, 4, 2), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(36, 2))
        m = m.to(memory_format=torch.channels_last)
        print([(n, p.stride(), p.is_leaf) for n, p in m.named_parameters()])
        m2 = nn.Conv2d(3, 4, 2).to(torch.float64, memory_format=torch.channels_last)
        print(m2.weight.dtype, m2.weight.stride(), m2.bias.dtype)
        x = torch.linspace(-1, 1, 48).view(1, 3, 4, 4).to(memory_format=torch.channels_last)
        with torch.no_grad():
            for p in m.parameters():
                p.fill_(0.1)
        print(m(x))
    """)


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: x.contiguous(memory_format=lib.channels_last),
        lambda lib, x: x.to(memory_format=lib.channels_last),
        lambda lib, x: x.clone(memory_format=lib.channels_last),
        lambda lib, x: x.contiguous(memory_format=lib.channels_last_3d),
        lambda lib, x: x.t().contiguous(memory_format=lib.preserve_format),
    ],
)
def test_errors(fn):
    e, t = check_raises(fn, [rand(2, 3)])
    assert str(e) == str(t)


_CL_OPS = {
    "conv(cl x, cl w)": lambda L, x: L.nn.Conv2d(3, 4, 3, padding=1).to(
        memory_format=L.channels_last
    )(x),
    "conv(cl x, plain w)": lambda L, x: L.nn.Conv2d(3, 4, 3, padding=1)(x),
    "conv(plain x, cl w)": lambda L, x: L.nn.Conv2d(3, 4, 3, padding=1).to(
        memory_format=L.channels_last
    )(x.contiguous()),
    "conv transpose": lambda L, x: L.nn.ConvTranspose2d(3, 2, 2, stride=2)(x),
    "max pool": lambda L, x: L.nn.functional.max_pool2d(x, 2),
    "avg pool": lambda L, x: L.nn.functional.avg_pool2d(x, 2),
    "adaptive avg pool": lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 3),
    "interpolate nearest": lambda L, x: L.nn.functional.interpolate(x, scale_factor=2),
    "interpolate bilinear": lambda L, x: L.nn.functional.interpolate(
        x, scale_factor=2, mode="bilinear"
    ),
    "group norm": lambda L, x: L.nn.GroupNorm(1, 3)(x),
    "pad": lambda L, x: L.nn.functional.pad(x, (1, 1, 1, 1)),
    "conv3d": lambda L, x: L.nn.Conv3d(3, 2, 1)(
        x.unsqueeze(2).contiguous(memory_format=L.channels_last_3d)
    ),
}


@pytest.mark.parametrize("name", list(_CL_OPS))
def test_channels_last_inputs_give_channels_last_outputs(name):
    # torch's convolution, pooling, interpolation, group norm and pad kernels keep a
    # channels-last input's layout; the values are the same either way
    got = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        x = lib.randn(2, 3, 8, 8).to(memory_format=lib.channels_last)
        out = _CL_OPS[name](lib, x)
        fmt = lib.channels_last_3d if out.dim() == 5 else lib.channels_last
        got.append((out.is_contiguous(memory_format=fmt), out.is_contiguous(), out.shape))
        got.append(out.detach().numpy())
    assert got[0] == got[2]
    np.testing.assert_allclose(got[3], got[1], rtol=1e-5, atol=1e-5)

# ruff: noqa: E501  (user code quoted verbatim)
"""User code: layers older and distributed-ready scripts build: ``SyncBatchNorm`` (and
``convert_sync_batchnorm``) in one process, the deprecated ``F.upsample*`` spellings, and the
``nn.utils`` layout/initialization helpers."""

from __future__ import annotations

import warnings

import pytest

import ember
from tests.oracle._user_code import check_snippet
from tests.oracle.helper import torch


def test_sync_batchnorm_and_upsampling():
    check_snippet("""
        print(F.upsample_nearest(torch.arange(4.).view(1,1,2,2), scale_factor=2)[0,0,0], F.upsample_bilinear(torch.arange(4.).view(1,1,2,2), size=3))
        print(F.upsample(torch.ones(1,1,2,2), scale_factor=2).shape)
        print(nn.Upsample(scale_factor=2, mode='bilinear')(torch.arange(4.).view(1,1,2,2))[0,0,0], nn.UpsamplingBilinear2d(scale_factor=2)(torch.arange(4.).view(1,1,2,2))[0,0,0], nn.UpsamplingNearest2d(size=3)(torch.arange(4.).view(1,1,2,2)).shape)
        m = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm1d(4)))
        m[1].running_mean.fill_(0.5)
        s = nn.SyncBatchNorm.convert_sync_batchnorm(m)
        print(s, s[1].running_mean, s[1].weight is m[1].weight if False else '', s[0] is m[0])
        print(s(torch.ones(2, 3, 2, 2)).shape, s[1].num_batches_tracked)
        s.eval(); print(s(torch.ones(2, 3, 2, 2)).shape)
        print(nn.SyncBatchNorm(4), nn.SyncBatchNorm(4)(torch.arange(8.).view(2, 4)))
        try:
            nn.SyncBatchNorm(4)(torch.ones(4))
        except ValueError as e:
            print("ValueError", e)
        print(list(nn.SyncBatchNorm(2).state_dict().keys()))
    """)


def test_convert_sync_batchnorm_shares_state():
    check_snippet("""
        m = nn.Sequential(nn.BatchNorm2d(2), nn.BatchNorm1d(3, affine=False), nn.BatchNorm1d(3, track_running_stats=False), nn.BatchNorm3d(1, affine=False, track_running_stats=False))
        m[0].qconfig = "q"
        m[2].eval()
        s = nn.SyncBatchNorm.convert_sync_batchnorm(m)
        for a, b in zip(m, s):
            print(type(b).__name__, b.training, getattr(b, "qconfig", None), b.affine, b.track_running_stats)
            print([(n, getattr(a, n) is getattr(b, n), getattr(b, n) is None) for n in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")])
            print(list(b.state_dict()))
    """)


@pytest.mark.parametrize(
    "fn",
    [
        lambda F, x: F.upsample(x, scale_factor=2),
        lambda F, x: F.upsample_nearest(x, size=3),
        lambda F, x: F.upsample_bilinear(x, scale_factor=2),
    ],
)
def test_deprecated_upsample_warns(fn):
    msgs = []
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            fn(lib.nn.functional, lib.ones(1, 1, 2, 2))
        msgs.append([str(w.message) for w in got])
    assert msgs[0] == msgs[1]


def test_storage_check_conv_weight_layout_and_skip_init():
    check_snippet("""
        print(torch.is_storage(torch.ones(1).untyped_storage()), torch.is_storage(torch.ones(1)), torch.is_storage(torch.ones(1).storage()))
        m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sequential(nn.ConvTranspose2d(4, 2, 2)), nn.Linear(2, 2))
        w0 = m[0].weight
        m = nn.utils.convert_conv2d_weight_memory_format(m, torch.channels_last)
        print(m[0].weight.stride(), m[1][0].weight.stride(), m[2].weight.stride(), m[0].weight is w0, m[0].weight.is_contiguous(memory_format=torch.channels_last))
        m3 = nn.utils.convert_conv3d_weight_memory_format(nn.Conv3d(2, 3, 2), torch.channels_last_3d); print(m3.weight.stride())
        s = nn.utils.skip_init(nn.Linear, 3, 4); print(type(s).__name__, s.weight.shape, s.bias.shape, s.weight.requires_grad)
        try:
            nn.utils.skip_init(nn.ReLU)
        except RuntimeError as e:
            print("RuntimeError", e)
    """)

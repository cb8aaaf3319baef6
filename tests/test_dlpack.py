"""NumPy and DLPack exchange: zero-copy both ways with NumPy and with real torch."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ember
from ember._core import dtype as D
from ember.overrides import _unwrap
from ember.utils import dlpack


def ptr(x) -> int:
    if isinstance(x, ember.Tensor):
        return x.data_ptr()
    if isinstance(x, np.ndarray):
        return x.__array_interface__["data"][0]
    return x.data_ptr()  # torch


def sample(dtype: D.dtype, shape=(3, 4)) -> np.ndarray:
    rng = np.random.default_rng(1)
    if dtype is D.bool:
        return rng.random(shape) > 0.5
    if dtype.is_complex:
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype.np)
    if dtype.is_floating_point:
        return rng.standard_normal(shape).astype(dtype.np)
    return rng.integers(0, 100, shape).astype(dtype.np)


# ------------------------------------------------------------------------------ NumPy
def test_from_numpy_and_numpy_share_memory():
    a = np.arange(6.0)
    t = ember.from_numpy(a)
    t[0] = 10.0
    assert a[0] == 10.0
    b = t.numpy()
    b[1] = 20.0
    assert t[1].item() == 20.0 and ptr(b) == ptr(a)


def test_asarray_does_not_copy():
    t = ember.arange(6.0, dtype=ember.float64).reshape(2, 3)[:, 1:]
    a = np.asarray(t)
    assert ptr(a) == t.data_ptr() and a.strides == (24, 8)
    a[0, 0] = -1.0
    assert t[0, 0].item() == -1.0
    assert np.asarray(t, dtype=np.float64) is not None


@pytest.mark.parametrize("dtype", D.ALL_DTYPES, ids=lambda d: d.name)
def test_numpy_dlpack_both_ways(dtype):
    a = sample(dtype)
    t = ember.from_dlpack(a)
    assert t.dtype is dtype and ptr(t) == ptr(a)
    if dtype is D.bfloat16:  # NumPy's DLPack knows no bfloat16: ember round-trips it itself
        back = ember.from_dlpack(t)
        assert back.dtype is D.bfloat16 and ptr(back) == ptr(a)
        with pytest.raises((BufferError, RuntimeError, TypeError)):
            np.from_dlpack(t)
        return
    back = np.from_dlpack(t)
    assert back.dtype == a.dtype and ptr(back) == ptr(a)
    np.testing.assert_array_equal(back, a)


def test_views_and_strides_travel():
    a = np.arange(24.0).reshape(4, 6)
    t = ember.from_numpy(a)[1:, ::2].t()
    back = np.from_dlpack(t)
    assert back.shape == (3, 3) and back.strides == t._data.strides
    assert ptr(back) == t.data_ptr()
    again = ember.from_dlpack(back)
    assert again.stride() == t.stride() and again.data_ptr() == t.data_ptr()


def test_dlpack_device_and_capsules():
    t = ember.ones(3)
    assert t.__dlpack_device__() == (dlpack.DLDeviceType.kDLCPU, 0)
    capsule = dlpack.to_dlpack(t)
    assert type(capsule).__name__ == "PyCapsule"
    back = dlpack.from_dlpack(capsule)
    assert back.data_ptr() == t.data_ptr()
    assert _unwrap(ember.from_dlpack) is dlpack.from_dlpack  # (see ember.overrides)


def test_dlpack_refusals():
    with pytest.raises(BufferError, match="require gradient"):
        ember.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="CPU"):
        ember.ones(2).__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError, match="__dlpack__"):
        ember.from_dlpack([1, 2])

    class OnGpu:
        def __dlpack__(self, **kwargs):
            raise AssertionError("never asked")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(BufferError, match="kDLCUDA"):
        ember.from_dlpack(OnGpu())


def test_copy_argument():
    a = np.arange(3.0)
    t = ember.from_dlpack(a, copy=True)
    assert t.data_ptr() != ptr(a) and t.tolist() == [0.0, 1.0, 2.0]


def test_bfloat16_capsule_says_bfloat16():
    t = ember.from_numpy(np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16))
    capsule = t.__dlpack__()
    assert dlpack._relabel(capsule, (4, 16), 4)  # the code in the capsule is kDLBfloat
    out = ember.from_dlpack(capsule)
    assert out.dtype is ember.bfloat16 and out.tolist() == [1.5, -2.0]


# ------------------------------------------------------------------------------ torch
def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", D.ALL_DTYPES, ids=lambda d: d.name)
def test_torch_from_ember_shares_memory(dtype):
    torch = _torch()
    t = ember.from_numpy(sample(dtype))
    out = torch.from_dlpack(t)
    assert str(out.dtype) == f"torch.{dtype.name}" and out.data_ptr() == t.data_ptr()
    assert tuple(out.shape) == t.shape and out.stride() == t.stride()
    if dtype is not D.bool:
        out[0, 0] = 7
        assert t[0, 0].item() == 7


@pytest.mark.parametrize("dtype", D.ALL_DTYPES, ids=lambda d: d.name)
def test_ember_from_torch_shares_memory(dtype):
    torch = _torch()
    src = torch.zeros(3, 4, dtype=getattr(torch, dtype.name))
    t = ember.from_dlpack(src)
    assert t.dtype is dtype and t.data_ptr() == src.data_ptr()
    src[1, 2] = 1
    assert t[1, 2].item() == 1


def test_torch_views_scalars_and_empties():
    torch = _torch()
    base = torch.arange(24.0).reshape(4, 6)
    for src in (base[1:, ::2], base.t(), base[2, 3], torch.zeros(0, 3), base[:, 1]):
        t = ember.from_dlpack(src)
        assert t.shape == tuple(src.shape) and t.tolist() == src.tolist()
        if src.numel():
            assert t.stride() == src.stride() and t.data_ptr() == src.data_ptr()
        back = torch.from_dlpack(t)
        assert torch.equal(back, src)


def test_torch_capsules_both_ways():
    torch = _torch()
    from torch.utils.dlpack import from_dlpack as torch_from
    from torch.utils.dlpack import to_dlpack as torch_to

    src = torch.randn(5)
    t = dlpack.from_dlpack(torch_to(src))
    assert t.data_ptr() == src.data_ptr()
    back = torch_from(dlpack.to_dlpack(t))
    assert back.data_ptr() == src.data_ptr()
    bf = torch.randn(3).to(torch.bfloat16)
    assert torch.equal(torch_from(dlpack.to_dlpack(ember.from_dlpack(bf))), bf)


def test_torch_refuses_ember_tensors_requiring_grad():
    torch = _torch()
    with pytest.raises(BufferError):
        torch.from_dlpack(ember.ones(2, requires_grad=True))

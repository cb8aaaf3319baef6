"""DLPack: zero-copy exchange of tensors with NumPy, torch and any other DLPack library.

An ember tensor exports its NumPy array's DLPack capsule; importing asks the producer for a
capsule and lets NumPy wrap it, so memory is shared both ways. NumPy knows no bfloat16 in DLPack,
so bfloat16 travels as uint16 with the capsule's dtype code rewritten (kDLUInt <-> kDLBfloat):
the bits are the same, only the label changes.
"""

from __future__ import annotations

import ctypes
import enum

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import ABOVE as _TENSOR_ABOVE
from ember._core.tensor import Tensor

__all__ = ["DLDeviceType", "to_dlpack", "from_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack device types, as ``torch.utils.dlpack.DLDeviceType``."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


_CPU_DEVICES = (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost, DLDeviceType.kDLROCMHost)
_UINT, _BFLOAT = 1, 4  # DLDataTypeCode values
# byte offset of dl_tensor.dtype.code inside DLManagedTensor / DLManagedTensorVersioned
_CODE_OFFSET = {b"dltensor": 20, b"dltensor_versioned": 32 + 20}

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _relabel(capsule, old: tuple[int, int], new: int) -> bool:
    """If the capsule's dtype is (code, bits) == ``old``, set its code to ``new``; return
    whether it did. Only unconsumed capsules (named dltensor / dltensor_versioned) are touched."""
    name = _capsule_name(capsule)
    offset = _CODE_OFFSET.get(name)
    if offset is None:
        return False
    dtype = (ctypes.c_uint8 * 2).from_address(_capsule_pointer(capsule, name) + offset)
    if (dtype[0], dtype[1]) != old:
        return False
    dtype[0] = new
    return True


def tensor_dlpack(t: Tensor, stream=None, max_version=None, dl_device=None, copy=None):
    """``Tensor.__dlpack__``: return a DLPack capsule sharing the tensor's memory."""
    if t._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and stream != -1:
        raise BufferError(f"ember tensors are on the CPU: stream must be None, got {stream!r}")
    if dl_device is not None and tuple(dl_device) != (DLDeviceType.kDLCPU, 0):
        raise BufferError(f"ember tensors are on the CPU: cannot export to device {dl_device}")
    a = t._data
    bf16 = t.dtype is D.bfloat16
    if bf16:
        a = a.view(np.uint16)
    kwargs = {} if max_version is None else {"max_version": max_version}
    if copy is not None:
        kwargs["copy"] = copy
    capsule = a.__dlpack__(**kwargs)
    if bf16:
        _relabel(capsule, (_UINT, 16), _BFLOAT)
    return capsule


def tensor_dlpack_device(t: Tensor) -> tuple[DLDeviceType, int]:
    """``Tensor.__dlpack_device__``: (kDLCPU, 0)."""
    return (DLDeviceType.kDLCPU, 0)


class _Capsule:
    """Hands an already made capsule to ``np.from_dlpack``."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (DLDeviceType.kDLCPU, 0)


def _capsule_of(obj):
    if type(obj).__name__ == "PyCapsule":
        return obj
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(
            f"from_dlpack expects an object with __dlpack__ or a DLPack capsule, got "
            f"{type(obj).__name__}"
        )
    if hasattr(obj, "__dlpack_device__"):
        kind, index = obj.__dlpack_device__()
        if int(kind) not in _CPU_DEVICES:
            name = DLDeviceType(kind).name if kind in DLDeviceType._value2member_map_ else kind
            raise BufferError(
                f"ember has no backend for DLPack device {name}:{index}: only CPU memory can be "
                "imported. Move the tensor to the CPU first (e.g. `t.cpu()`)."
            )
    try:
        return obj.__dlpack__(max_version=(1, 0))
    except TypeError:  # a producer from before DLPack 1.0
        return obj.__dlpack__()


class _Memory:
    """Exposes the memory of a read-only-flagged array as writable, keeping the array alive."""

    def __init__(self, arr: np.ndarray):
        iface = dict(arr.__array_interface__)
        iface["data"] = (iface["data"][0], False)
        self.__array_interface__ = iface
        self.owner = arr


def _writable(arr: np.ndarray) -> np.ndarray:
    return np.asarray(_Memory(arr))


def from_dlpack(ext_tensor, *, device=None, copy: bool | None = None) -> Tensor:
    """Return an ember tensor sharing memory with ``ext_tensor``, an object with ``__dlpack__``
    (a NumPy array, a torch CPU tensor...) or a DLPack capsule (``copy=True`` copies)."""
    from ember._core.device import as_device
    from ember._ops.creation import from_numpy

    as_device(device)
    if isinstance(ext_tensor, np.ndarray):  # NumPy's DLPack knows no bfloat16: share directly
        return from_numpy(ext_tensor.copy() if copy else ext_tensor)
    capsule = _capsule_of(ext_tensor)
    legacy = _capsule_name(capsule) == b"dltensor"
    bf16 = _relabel(capsule, (_BFLOAT, 16), _UINT)
    arr = np.from_dlpack(_Capsule(capsule))
    if legacy and not arr.flags.writeable:
        # a pre-1.0 capsule cannot say "read-only": NumPy assumes it, torch (and ember) do not
        arr = _writable(arr)
    if bf16:
        arr = arr.view(D.bfloat16.np)
    if copy:
        arr = arr.copy()
    return from_numpy(arr)


def to_dlpack(tensor: Tensor):
    """Return a DLPack capsule (legacy ``dltensor``) sharing ``tensor``'s memory."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack expects a Tensor, got {type(tensor).__name__}")
    return tensor_dlpack(tensor)


# Tensor.__dlpack__ / __dlpack_device__ (the core imports nothing above it)
_TENSOR_ABOVE.dlpack, _TENSOR_ABOVE.dlpack_device = tensor_dlpack, tensor_dlpack_device

"""The legacy typed tensor classes: ``torch.FloatTensor``, ``torch.LongTensor``, ...

Old code (and many tutorials) build tensors with ``torch.FloatTensor([1, 2])`` or
``torch.LongTensor(3)``, test ``isinstance(t, torch.FloatTensor)`` and cast with
``t.type(torch.DoubleTensor)``. As in torch these are not subclasses of ``Tensor``: calling one
makes an ordinary ``Tensor`` of its dtype, and ``isinstance`` compares the dtype. The
``torch.cuda`` variants exist so that the names resolve; building one raises torch's TypeError.
"""

from __future__ import annotations

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops.creation import legacy_new

# class name -> dtype name, in torch's order
_LEGACY = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "ByteTensor": "uint8",
    "CharTensor": "int8",
    "ShortTensor": "int16",
    "IntTensor": "int32",
    "LongTensor": "int64",
    "BoolTensor": "bool",
    "ComplexFloatTensor": "complex64",
    "ComplexDoubleTensor": "complex128",
}


class tensortype(type):
    """The metaclass of the legacy typed tensor classes (``type(torch.FloatTensor)``)."""

    dtype: D.dtype
    is_cuda: bool
    is_sparse = False

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and not cls.is_cuda and obj.dtype is cls.dtype

    def __call__(cls, *args, **kwargs) -> Tensor:
        if cls.is_cuda:
            raise TypeError(
                f"type {cls.type_name} not available. Torch not compiled with CUDA enabled."
            )
        return legacy_new(Tensor, args, kwargs, dtype=cls.dtype)

    @property
    def type_name(cls) -> str:
        """Return torch's name of the type, the one ``Tensor.type()`` returns."""
        return ("torch.cuda." if cls.is_cuda else "torch.") + cls.__name__

    def __repr__(cls) -> str:
        return f"<class '{cls.type_name}'>"


def _make(name: str, cuda: bool) -> tensortype:
    dt = D._dtype_by_name(_LEGACY[name])
    cls = tensortype(name, (), {"dtype": dt, "is_cuda": cuda, "__doc__": f"Legacy {dt} tensor."})
    cls.__module__ = "ember.cuda" if cuda else "ember"
    return cls


CPU_TYPES = {name: _make(name, False) for name in _LEGACY}
CUDA_TYPES = {name: _make(name, True) for name in _LEGACY}


def legacy_type_dtype(cls) -> D.dtype | None:
    """Return the dtype of a legacy typed tensor class, None for anything else."""
    return cls.dtype if isinstance(cls, tensortype) else None

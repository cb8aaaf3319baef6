"""``ember.types``: the type aliases torch code annotates with (``torch.types.Device``...)."""

from __future__ import annotations

import builtins
import os
from typing import IO, Any, TypeAlias, Union

from ember._core.device import device as _device
from ember._core.dtype import dtype as _dtype
from ember._core.tensor import Size, Tensor

_int = builtins.int
_float = builtins.float
_bool = builtins.bool
_complex = builtins.complex
_str = builtins.str
_bytes = builtins.bytes

_TensorOrTensors: TypeAlias = Union[Tensor, tuple[Tensor, ...]]  # noqa: UP007
_TensorOrOptionalTensors: TypeAlias = Union[Tensor, tuple[Union[Tensor, None], ...]]  # noqa: UP007
_size: TypeAlias = Union[Size, list[_int], tuple[_int, ...]]  # noqa: UP007
_symsize = _size
_Number = (_int, _float, _bool)
Number: TypeAlias = Union[_int, _float, _bool]  # noqa: UP007
Device: TypeAlias = Union[_device, _str, _int, None]  # noqa: UP007
IntLikeType = _int
FloatLikeType = _float
BoolLikeType = _bool
FileLike: TypeAlias = Union[_str, os.PathLike, IO[_bytes]]  # noqa: UP007
_dtype = _dtype
_device = _device

__all__ = ["Any", "Device", "FileLike", "Number", "Size", "Tensor"]


class _SymNumber:
    """Base of the symbolic number classes: ember traces no symbolic shapes, so no instance
    ever reaches user code; the classes exist for ``isinstance`` checks (``torch.SymInt``)."""

    __slots__ = ("node",)

    def __init__(self, node) -> None:
        self.node = node

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.node!r})"


class SymInt(_SymNumber):
    """Like an int, but symbolic (torch's ``SymInt``): what ``isinstance`` checks test for."""


class SymFloat(_SymNumber):
    """Like a float, but symbolic (torch's ``SymFloat``)."""


class SymBool(_SymNumber):
    """Like a bool, but symbolic (torch's ``SymBool``)."""


for _cls in (SymInt, SymFloat, SymBool):
    _cls.__module__ = "ember"
del _cls

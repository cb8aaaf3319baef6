"""What the names in a torch checkpoint stand for in ember.

A torch pickle names globals such as ``torch._utils._rebuild_tensor_v2`` or ``torch
FloatStorage``. ``ALLOWED`` maps each name torch's ``weights_only`` loader allows to the ember
object that plays its part: rebuild functions that make ember tensors, ember dtypes, ``Size``,
``device``. Names of torch features ember lacks (quantized, sparse, nested tensors, dtypes such as
``uint16``) map to stand-ins that raise a clear error only when the file really uses them.
"""

from __future__ import annotations

import _codecs
import builtins
from collections import Counter, OrderedDict

import numpy as np

from ember._core import dtype as D
from ember._core.device import device
from ember._core.storage import UntypedStorage
from ember._core.tensor import Size, Tensor, _wrap
from ember._ops.tensor_extras import TypedStorage

# torch's legacy storage class names, one per dtype ember has
STORAGE_NAMES = {
    D.float32: "FloatStorage",
    D.float64: "DoubleStorage",
    D.float16: "HalfStorage",
    D.bfloat16: "BFloat16Storage",
    D.int64: "LongStorage",
    D.int32: "IntStorage",
    D.int16: "ShortStorage",
    D.int8: "CharStorage",
    D.uint8: "ByteStorage",
    D.bool: "BoolStorage",
    D.complex64: "ComplexFloatStorage",
    D.complex128: "ComplexDoubleStorage",
}

_TENSOR_TYPE_NAMES = (
    "FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor ShortTensor "
    "CharTensor ByteTensor BoolTensor"
).split()

# torch dtypes ember does not have: a file may name them, building a tensor of one fails clearly
_FOREIGN_DTYPES = (
    "uint16 uint32 uint64 uint1 uint2 uint3 uint4 uint5 uint6 uint7 int1 int2 int3 int4 int5 "
    "int6 int7 complex32 float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz "
    "float8_e8m0fnu float4_e2m1fn_x2 bits1x8 bits2x4 bits4x2 bits8 bits16 qint8 quint8 qint32 "
    "quint4x2 quint2x4"
).split()


class StorageType:
    """What a storage class name (``torch.FloatStorage``) stands for: the dtype of its elements."""

    __slots__ = ("dtype", "name")

    def __init__(self, dtype, name: str):
        self.dtype = dtype  # an ember dtype, or None for UntypedStorage (bytes)
        self.name = name

    def __repr__(self) -> str:
        return f"StorageType(torch.{self.name})"


UNTYPED = StorageType(None, "UntypedStorage")


class ForeignDtype:
    """A torch dtype ember has no counterpart for; using it to build a tensor raises."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return "torch." + self.name


class LoadedStorage(UntypedStorage):
    """The bytes of one storage record, as loaded (or mapped) from a checkpoint."""

    __slots__ = ("dtype", "key")

    def cpu(self) -> LoadedStorage:
        return self


def storage_of(arr: np.ndarray, dtype, key: str) -> LoadedStorage:
    s = object.__new__(LoadedStorage)
    s._bytes = arr
    s.dtype = dtype
    s.key = key
    return s


def _unsupported(what: str):
    def fail(*args, **kwargs):
        raise RuntimeError(f"ember cannot load {what}: the checkpoint holds one.")

    fail.__name__ = "unsupported"
    return fail


def _check_ints(name: str, values) -> tuple:
    if type(values) not in (tuple, list, Size) or not all(
        type(v) is int and v >= 0 for v in values
    ):
        raise RuntimeError(f"corrupt checkpoint: tensor {name} {values!r} is not a tuple of ints")
    return tuple(values)


def _tensor_of(storage, storage_offset, size, stride, dtype=None) -> Tensor:
    """Return a tensor viewing ``storage`` (bytes) at an element offset with sizes and strides."""
    if isinstance(storage, TypedStorage):  # copy.copy of a tensor hands its storage object on
        storage, dtype = storage.untyped(), dtype or storage.dtype
    if not isinstance(storage, UntypedStorage):
        raise RuntimeError(
            f"corrupt checkpoint: a tensor is built on a {type(storage).__name__}, not a storage"
        )
    if dtype is None:
        dtype = getattr(storage, "dtype", None) or D.uint8
    if isinstance(dtype, ForeignDtype):
        raise RuntimeError(
            f"ember has no dtype {dtype!r}: it cannot load the tensor of that dtype in this "
            "checkpoint. Convert it in torch first (e.g. `t.to(torch.int32)`)."
        )
    if not isinstance(dtype, D.dtype):
        raise RuntimeError(f"corrupt checkpoint: {dtype!r} is not a dtype")
    size = _check_ints("size", size)
    stride = _check_ints("stride", stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"corrupt checkpoint: a tensor has {len(size)} sizes but {len(stride)} strides"
        )
    if type(storage_offset) is not int or storage_offset < 0:
        raise RuntimeError(f"corrupt checkpoint: storage offset {storage_offset!r} is invalid")
    raw = storage._bytes
    item = dtype.itemsize
    if 0 in size:
        arr = np.lib.stride_tricks.as_strided(
            np.empty(0, dtype=dtype.np), size, tuple(s * item for s in stride)
        )
        return _wrap(arr)
    need = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if need * item > raw.nbytes:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
            f"{storage_offset}, and itemsize {item} requiring a storage size of {need * item} "
            f"are out of bounds for storage of size {raw.nbytes}"
        )
    arr = np.ndarray(
        size, dtype.np, buffer=raw, offset=storage_offset * item, strides=[s * item for s in stride]
    )
    return _wrap(arr)


def _set_requires_grad(t: Tensor, requires_grad) -> Tensor:
    if requires_grad:
        t._set_requires_grad(True, "only Tensors of floating point and complex dtype")
    return t


def rebuild_tensor(storage, storage_offset, size, stride):
    """``torch._utils._rebuild_tensor``: a tensor on a storage."""
    return _tensor_of(storage, storage_offset, size, stride)


def rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None
):
    """``torch._utils._rebuild_tensor_v2``: a tensor on a storage, with ``requires_grad``."""
    return _set_requires_grad(_tensor_of(storage, storage_offset, size, stride), requires_grad)


def rebuild_tensor_v3(
    storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None
):
    """``torch._utils._rebuild_tensor_v3``: as v2, the dtype given apart from an untyped storage."""
    t = _tensor_of(storage, storage_offset, size, stride, dtype)
    return _set_requires_grad(t, requires_grad)


def _parameter_class():
    try:
        from ember.nn import Parameter
    except ImportError:
        return None
    return Parameter


def make_parameter(data, requires_grad=True):
    """An ``ember.nn.Parameter`` of ``data`` if ember has one, else ``data`` requiring grad."""
    if not isinstance(data, Tensor):
        raise RuntimeError(f"corrupt checkpoint: a Parameter of a {type(data).__name__}")
    cls = _parameter_class()
    if cls is not None:
        return cls(data, requires_grad)
    return _set_requires_grad(data.detach(), requires_grad)


def rebuild_parameter(data, requires_grad, backward_hooks):
    """``torch._utils._rebuild_parameter``."""
    return make_parameter(data, bool(requires_grad))


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    """``torch._utils._rebuild_parameter_with_state``: a Parameter with extra attributes."""
    return set_state(make_parameter(data, bool(requires_grad)), state)


def split_state(state) -> tuple:
    """pickle's BUILD convention: a state is a ``__dict__`` update, or a pair of it and a
    dict of slot values; return ``(dict_part, slots_part)``."""
    pair = isinstance(state, tuple) and len(state) == 2
    return state if pair else (state, None)


def set_state(obj, state):
    """Set the attributes ``state`` (a dict, or a (dict, slots dict) pair) on a tensor.

    Only names the tensor's class does not define can be set: a checkpoint may add attributes,
    never replace ember's own (``_data``, ``grad_fn``...)."""
    if state is None:
        return obj
    for part in split_state(state):
        if not part:
            continue
        if not isinstance(part, dict):
            raise RuntimeError(f"corrupt checkpoint: tensor state is a {type(part).__name__}")
        for k, v in part.items():
            if type(k) is not str or hasattr(type(obj), k):
                raise RuntimeError(f"checkpoint tries to set attribute {k!r} of a tensor")
            obj.__dict__[k] = v
    return obj


def rebuild_from_type_v2(func, new_type, args, state):
    """``torch._tensor._rebuild_from_type_v2``: a tensor (subclass) with attributes."""
    if func not in _REBUILDERS:
        raise RuntimeError("corrupt checkpoint: _rebuild_from_type_v2 of an unknown function")
    if type(args) is not tuple:
        raise RuntimeError("corrupt checkpoint: _rebuild_from_type_v2 arguments are not a tuple")
    ret = func(*args)
    if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
        raise RuntimeError(f"corrupt checkpoint: {new_type!r} is not a tensor class")
    if type(ret) is not new_type:
        if type(ret) is not Tensor:
            raise RuntimeError(f"cannot make a {type(ret).__name__} a {new_type.__name__}")
        ret.__class__ = new_type
    setstate = getattr(type(ret), "__setstate__", None)
    if setstate is not None and setstate is not Tensor.__setstate__:
        ret.__setstate__(state)
        return ret
    return set_state(ret, state)


def rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    """``torch._utils._rebuild_device_tensor_from_cpu_tensor`` (the device is ignored: CPU)."""
    if not isinstance(data, Tensor) or not isinstance(dtype, D.dtype):
        raise RuntimeError("corrupt checkpoint: _rebuild_device_tensor_from_cpu_tensor arguments")
    t = data if data.dtype is dtype else data.to(dtype)
    return _set_requires_grad(t, requires_grad)


def get_layout(name):
    """``torch.serialization._get_layout``: ember has strided and sparse COO tensors."""
    from ember._core.layout import sparse_coo, strided

    if name == "torch.sparse_coo":
        return sparse_coo
    if name != "torch.strided":
        raise RuntimeError(f"ember cannot load tensors of layout {name!r}")
    return strided


def rebuild_sparse_tensor(layout, data):
    """``torch._utils._rebuild_sparse_tensor``: a COO tensor from (indices, values, size[,
    is_coalesced])."""
    from ember._core.layout import sparse_coo
    from ember.sparse import sparse_coo_tensor

    if layout is not sparse_coo:
        raise RuntimeError(f"ember cannot load sparse tensors of layout {layout!r}")
    indices, values, size = data[:3]
    coalesced = data[3] if len(data) > 3 else None
    return sparse_coo_tensor(indices, values, size, is_coalesced=coalesced)


def safe_bytearray(*args):
    """``builtins.bytearray`` for pickled bytearrays: from bytes or text only (never a size)."""
    if args and not isinstance(args[0], (bytes, str)):
        raise RuntimeError("checkpoint calls bytearray() with a size, which is not allowed")
    return bytearray(*args)


_TEXT_CODECS = frozenset(("latin1", "latin-1", "iso-8859-1", "iso8859-1", "utf-8", "utf8", "ascii"))


def safe_encode(obj, encoding="utf-8", errors="strict"):
    """``_codecs.encode`` as pickle protocol 2 uses it for bytes: text codecs only."""
    if type(obj) is not str or type(encoding) is not str or encoding.lower() not in _TEXT_CODECS:
        raise RuntimeError("checkpoint calls _codecs.encode with arguments pickle never writes")
    return _codecs.encode(obj, encoding, errors)


def device_of(*args):
    """``torch.device`` from a pickle: ('cpu',) or ('cuda', 0)."""
    return device(*args)


_REBUILDERS = {
    rebuild_tensor,
    rebuild_tensor_v2,
    rebuild_tensor_v3,
    rebuild_parameter,
    rebuild_parameter_with_state,
}


def _allowed() -> dict[str, object]:
    rc: dict[str, object] = {
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": Counter,
        "torch.nn.parameter.Parameter": make_parameter,
        "torch.serialization._get_layout": get_layout,
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.device": device_of,
        "_codecs.encode": safe_encode,
        "builtins.bytearray": safe_bytearray,
        "builtins.set": builtins.set,
        "builtins.complex": builtins.complex,
        "torch._utils._rebuild_tensor": rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": rebuild_parameter_with_state,
        "torch._utils._rebuild_device_tensor_from_cpu_tensor": (
            rebuild_device_tensor_from_cpu_tensor
        ),
        "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
        "torch._utils._rebuild_qtensor": _unsupported("quantized tensors"),
        "torch._utils._rebuild_sparse_tensor": rebuild_sparse_tensor,
        "torch._utils._rebuild_nested_tensor": _unsupported("nested tensors"),
        "torch._utils._rebuild_meta_tensor_no_storage": _unsupported("meta tensors"),
        "torch._utils._rebuild_wrapper_subclass": _unsupported("tensor wrapper subclasses"),
        "torch._utils._rebuild_device_tensor_from_numpy": _unsupported(
            "tensors pickled as NumPy arrays"
        ),
        "torch.storage.UntypedStorage": UNTYPED,
        "torch.UntypedStorage": UNTYPED,
    }
    for dt in D.ALL_DTYPES:
        rc[f"torch.{dt.name}"] = dt
    for name in _FOREIGN_DTYPES:
        rc[f"torch.{name}"] = ForeignDtype(name)
    for dt, name in STORAGE_NAMES.items():
        rc[f"torch.{name}"] = StorageType(dt, name)
        rc[f"torch.cuda.{name}"] = rc[f"torch.{name}"]
    for name in ("QInt8Storage", "QUInt8Storage", "QInt32Storage", "QUInt4x2Storage"):
        rc[f"torch.{name}"] = StorageType(ForeignDtype(name), name)
    rc["torch.QUInt2x4Storage"] = StorageType(ForeignDtype("quint2x4"), "QUInt2x4Storage")
    for name in _TENSOR_TYPE_NAMES:
        for module in ("torch", "torch.cuda"):
            rc[f"{module}.{name}"] = Tensor
    for scheme in (
        "per_tensor_affine",
        "per_tensor_symmetric",
        "per_channel_affine",
        "per_channel_symmetric",
        "per_channel_affine_float_qparams",
    ):
        rc[f"torch.{scheme}"] = ForeignDtype(scheme)
    return rc


ALLOWED = _allowed()
# what REDUCE may call and NEWOBJ may instantiate among the defaults
CALLABLE = {
    id(v): v
    for v in ALLOWED.values()
    if callable(v) and v is not Tensor and not isinstance(v, (StorageType, ForeignDtype))
}
NEWOBJ_CLASSES = {id(c): c for c in (OrderedDict, Counter, builtins.set, builtins.complex, Size)}

"""The pickler that writes ``data.pkl`` in torch's terms, without torch installed.

A tensor pickles as ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())``, its storage as the persistent id ``('storage',
torch.FloatStorage, key, 'cpu', numel)``, a Parameter as ``torch._utils._rebuild_parameter``;
dtypes, devices and ``Size`` as ``torch.float32``, ``torch.device``, ``torch.Size``. Those globals
are written from stand-ins (``TorchGlobal``) by the pure-Python pickler, whose ``save_global``
can emit a name whose module is not importable here.
"""

from __future__ import annotations

import pickle
import sys
from collections import OrderedDict
from types import FunctionType

import numpy as np

from ember._core import dtype as D
from ember._core.device import device
from ember._core.layout import layout
from ember._core.storage import UntypedStorage, owner_of
from ember._core.storage import array_ptr as _ptr
from ember._core.tensor import Size, Tensor, memory_format
from ember._ops.tensor_extras import TypedStorage
from ember.overrides import DisableTorchFunctionSubclass
from ember.serialization._rebuild import STORAGE_NAMES

SHARED_TYPES_ERROR = (
    "Cannot save multiple tensors or storages that view the same data as different types"
)


class TorchGlobal:
    """A stand-in for a global a torch file names, such as ``torch._utils._rebuild_tensor_v2``."""

    __slots__ = ("module", "qualname")

    def __init__(self, module: str, qualname: str):
        self.module = module
        self.qualname = qualname

    def __call__(self, *args):  # pickle only accepts callables as reduce functions
        raise TypeError(f"{self.module}.{self.qualname} is a stand-in for writing files")

    def __repr__(self) -> str:
        return f"{self.module}.{self.qualname}"


REBUILD_V2 = TorchGlobal("torch._utils", "_rebuild_tensor_v2")
REBUILD_PARAMETER = TorchGlobal("torch._utils", "_rebuild_parameter")
REBUILD_PARAMETER_WITH_STATE = TorchGlobal("torch._utils", "_rebuild_parameter_with_state")
REBUILD_FROM_TYPE_V2 = TorchGlobal("torch._tensor", "_rebuild_from_type_v2")
TORCH_TENSOR = TorchGlobal("torch", "Tensor")
TORCH_DEVICE = TorchGlobal("torch", "device")
TORCH_SIZE = TorchGlobal("torch", "Size")
UNTYPED_STORAGE = TorchGlobal("torch.storage", "UntypedStorage")
STORAGE_GLOBALS = {dt: TorchGlobal("torch", name) for dt, name in STORAGE_NAMES.items()}

# types the pickler handles natively: skip the override checks for them
_PLAIN = frozenset((str, int, float, bool, type(None), tuple, list, dict, bytes, OrderedDict))


def is_parameter(t: Tensor) -> bool:
    """True for ``nn.Parameter`` instances: a Tensor subclass whose class sets ``_is_param``."""
    cls = type(t)
    return cls is not Tensor and (
        getattr(cls, "_is_param", False) is True or cls.__name__ == "Parameter"
    )


class Storage:
    """One storage the file holds: the bytes of an array owning memory, and its key."""

    __slots__ = ("key", "dtype", "owner", "pid")

    def __init__(self, key: str, dtype, owner: np.ndarray):
        self.key = key
        self.dtype = dtype  # None: saved as an UntypedStorage (bytes)
        self.owner = owner
        if dtype is None:
            self.pid = ("storage", UNTYPED_STORAGE, key, "cpu", owner.nbytes)
        else:
            numel = owner.nbytes // dtype.itemsize
            self.pid = ("storage", STORAGE_GLOBALS[dtype], key, "cpu", numel)

    def bytes(self) -> np.ndarray:
        """Return the storage's bytes as a flat uint8 array (no copy)."""
        return np.ndarray((self.owner.nbytes,), np.uint8, buffer=self.owner)


def _plain_buffer(owner: np.ndarray) -> bool:
    return owner.flags.c_contiguous or owner.flags.f_contiguous


def _storage_owner(values: np.ndarray) -> np.ndarray:
    owner = owner_of(values)
    return owner if _plain_buffer(owner) else np.ascontiguousarray(values)


class TorchPickler(pickle._Pickler):
    """Pickle an object for ``data.pkl``, collecting the storages of its tensors."""

    def __init__(self, file, protocol: int = 2):
        super().__init__(file, protocol)
        self.storages: list[Storage] = []
        self._by_owner: dict[int, Storage] = {}

    # --------------------------------------------------------------------- storages
    def _storage(self, owner: np.ndarray, dtype) -> Storage:
        s = self._by_owner.get(id(owner))
        if s is None:
            s = Storage(str(len(self.storages)), dtype, owner)
            self.storages.append(s)
            self._by_owner[id(owner)] = s
        elif s.dtype is not dtype:
            raise RuntimeError(SHARED_TYPES_ERROR)
        return s

    def persistent_id(self, obj):
        if type(obj) is Storage:
            return obj.pid
        if isinstance(obj, UntypedStorage):
            return self._storage(_storage_owner(obj._bytes), None).pid
        if isinstance(obj, TypedStorage):
            return self._storage(_storage_owner(obj._values), obj.dtype).pid
        return None

    # --------------------------------------------------------------------- reductions
    def reducer_override(self, obj):
        cls = type(obj)
        if cls in _PLAIN:
            return NotImplemented
        if isinstance(obj, Tensor):
            if cls is not Tensor and obj.is_sparse:  # torch's (layout, (indices, values, ...))
                return _reduce_sparse(obj)
            with DisableTorchFunctionSubclass():  # (a subclass's own ops must not run here)
                return self._reduce_tensor(obj)
        if cls is layout:
            return (GET_LAYOUT, (repr(obj),))
        if cls is TorchGlobal or cls is D.dtype or cls is memory_format:
            return "global"  # handed to save_global below
        if cls is FunctionType and _public_wrapper(obj) is not obj:
            return "global"
        if cls is device:
            return (TORCH_DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index))
        if cls is Size:
            return (TORCH_SIZE, (tuple(obj),))
        return NotImplemented

    def save_global(self, obj, name=None):
        cls = type(obj)
        if cls is TorchGlobal:
            module, qualname = obj.module, obj.qualname
        elif cls is D.dtype or cls is memory_format:
            module, qualname = "torch", obj.name
        else:
            wrapper = _public_wrapper(obj)
            if wrapper is not obj:
                return self.save(wrapper)  # (memoized once, under the wrapper)
            return super().save_global(obj, name)
        self.write(pickle.GLOBAL + f"{module}\n{qualname}\n".encode())
        self.memoize(obj)

    def _reduce_tensor(self, t: Tensor):
        if is_parameter(t):
            data = Tensor.detach(t)
            state = _user_state(t)
            if state:
                return (REBUILD_PARAMETER_WITH_STATE, (data, t.requires_grad, OrderedDict(), state))
            return (REBUILD_PARAMETER, (data, t.requires_grad, OrderedDict()))
        args = self._tensor_args(t)
        state = _user_state(t)
        if type(t) is Tensor and not state:
            return (REBUILD_V2, args)
        new_type = TORCH_TENSOR if type(t) is Tensor else type(t)
        return (REBUILD_FROM_TYPE_V2, (REBUILD_V2, new_type, args, state))

    def _tensor_args(self, t: Tensor) -> tuple:
        owner, offset, stride = storage_geometry(t)
        storage = self._storage(owner, t.dtype)
        return (storage, offset, tuple(t._data.shape), stride, t.requires_grad, OrderedDict())


def storage_geometry(t: Tensor) -> tuple[np.ndarray, int, tuple]:
    """``(owner, offset, stride)``: the array whose bytes are ``t``'s storage, and ``t``'s
    element offset and strides in it (a tensor on memory NumPy cannot hand out as one buffer
    gets a packed copy of itself alone)."""
    a = t._data
    item = t.dtype.itemsize
    owner = owner_of(a)
    offset = _ptr(a) - _ptr(owner)
    if _plain_buffer(owner) and offset % item == 0:
        return owner, offset // item, t.stride()
    return np.ascontiguousarray(a), 0, _contiguous_strides(a.shape)


def _public_wrapper(obj):
    """``obj``, or the public wrapper that replaced it in its module (``ember.overrides``): a
    function ember's code captured before the wrapping (a default argument such as
    ``TransformerEncoderLayer``'s ``activation=F.relu``) pickles as the wrapper's name."""
    if type(obj) is not FunctionType:
        return obj
    found = getattr(sys.modules.get(obj.__module__), obj.__qualname__, None)
    if found is not obj and getattr(found, "__wrapped__", None) is obj:
        return found
    return obj


REBUILD_SPARSE = TorchGlobal("torch._utils", "_rebuild_sparse_tensor")
GET_LAYOUT = TorchGlobal("torch.serialization", "_get_layout")


def _reduce_sparse(t: Tensor) -> tuple:
    data = (t._indices(), t._values(), t.size(), t.is_coalesced())
    return (REBUILD_SPARSE, (t.layout, data))


def _user_state(t: Tensor) -> dict:
    # the attributes a user set; names the Tensor class defines are ember's bookkeeping (and
    # the loader refuses to set them)
    return {k: v for k, v in t._user_dict().items() if not hasattr(Tensor, k)}


def _contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))

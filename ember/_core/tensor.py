"""class Tensor: a NumPy array view plus autograd metadata.

``_data`` is an ndarray viewing the tensor's storage; strides and the storage offset are read off
it. ``_vc`` is the version counter, a one-element list shared by every view of the same data
(``.data`` gets a fresh one). Ops live in ``ember._ops``, which attaches them as methods; this
file holds what is a property of the tensor itself: metadata, conversion, printing, autograd
state.
"""

from __future__ import annotations

import builtins
import warnings
import weakref

import numpy as np

from ember._core import dtype as D
from ember._core import meta as _meta
from ember._core.device import CPU, META, as_device
from ember._core.grad_mode import STATE as _grad_state
from ember._core.storage import UntypedStorage, owner_of
from ember._core.storage import array_ptr as _ptr
from ember.utils.hooks import _HookDict, add_hook


class ABOVE:
    """What the layers above the core give ``Tensor``'s methods, filled when they are imported
    (the core imports nothing above it; ``import ember`` imports them all):

    ``legacy_new`` (``ember._ops.creation``: ``torch.Tensor(...)``), ``refresh_view``
    (``ember._ops.registry``: a view's history after its base changed), ``backward``
    (``ember.autograd.engine``), ``share_views`` / ``is_shared_array``
    (``ember.multiprocessing._shared_memory``), ``dlpack`` / ``dlpack_device``
    (``ember.utils.dlpack``), ``reduce`` (``ember._tensor``: how a tensor pickles)."""

    legacy_new = refresh_view = backward = reduce = None
    share_views = is_shared_array = dlpack = dlpack_device = None


_new = object.__new__


class Size(tuple):
    """The shape of a tensor: a tuple of ints, printed as ``torch.Size([2, 3])``."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        out = []
        for i, s in enumerate(sizes):
            if type(s) is not int:
                if isinstance(s, (float, complex, np.floating)) or not hasattr(s, "__index__"):
                    raise TypeError(
                        f"torch.Size() takes an iterable of 'int' (item {i} is "
                        f"'{type(s).__name__}')"
                    )
                s = s.__index__()
            out.append(s)
        return tuple.__new__(cls, out)

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        """Return the number of elements a tensor of this size holds."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        r = tuple.__getitem__(self, key)
        return _size(r) if isinstance(key, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(
                f"can only concatenate tuple (not {type(other).__name__}) to torch.Size"
            )
        return _size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _size(tuple.__add__(other, self))

    def __mul__(self, n):
        return _size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


def _size(shape) -> Size:
    # the fast constructor for shapes known to be ints (tensor.shape is a hot path)
    return tuple.__new__(Size, shape)


class memory_format:
    """A memory layout request, as ``torch.contiguous_format`` / ``torch.channels_last``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return "torch." + self.name

    def __reduce__(self):
        return self.name  # the global ember.<name> (torch.<name> under the stand-in)


class _MemoryFormats:
    contiguous_format = memory_format("contiguous_format")
    preserve_format = memory_format("preserve_format")
    channels_last = memory_format("channels_last")
    channels_last_3d = memory_format("channels_last_3d")


_memory_formats = _MemoryFormats
contiguous_format = _MemoryFormats.contiguous_format
preserve_format = _MemoryFormats.preserve_format
channels_last = _MemoryFormats.channels_last
channels_last_3d = _MemoryFormats.channels_last_3d


def _wrap(arr: np.ndarray) -> Tensor:
    """Return a new Tensor around ``arr`` (no copy). The dtype is read off the array."""
    t = _new(Tensor)
    t._data = arr
    t.dtype = D.FROM_NP[arr.dtype]
    t._requires_grad = False
    t._grad_fn = None
    t._vc = [0]
    return t


_TYPE_NAMES = {
    "float32": "torch.FloatTensor",
    "float64": "torch.DoubleTensor",
    "float16": "torch.HalfTensor",
    "bfloat16": "torch.BFloat16Tensor",
    "int64": "torch.LongTensor",
    "int32": "torch.IntTensor",
    "int16": "torch.ShortTensor",
    "int8": "torch.CharTensor",
    "uint8": "torch.ByteTensor",
    "bool": "torch.BoolTensor",
    "complex64": "torch.ComplexFloatTensor",
    "complex128": "torch.ComplexDoubleTensor",
}
_DTYPE_OF_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}


_NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information."
)


class _TensorMeta(type):
    """The metaclass of ``Tensor`` and its subclasses (``torch._C._TensorMeta``): libraries
    name it in annotations and ``isinstance(cls, _TensorMeta)`` tests."""


class Tensor(metaclass=_TensorMeta):
    """A multi-dimensional array with autograd, as ``torch.Tensor``."""

    # hot attributes live in slots; rarely set ones fall back to the class defaults below
    __slots__ = ("_data", "dtype", "_requires_grad", "_grad_fn", "_vc", "__dict__", "__weakref__")

    _grad = None
    _output_nr = 0
    _base = None
    _accum = None  # weakref to the AccumulateGrad node of a leaf
    _hooks = None  # tensor hooks of a leaf
    _retains_grad = False
    _view_fn = None  # (parent view_fn, op, params): how to replay this view from its base
    _view_no_grad = False  # made under no_grad: an in-place op on it in grad mode is an error
    _base_fn_seen = None  # the base's grad_fn when this view's history was last made
    _view_in_custom_function = False  # returned by a custom Function: no in-place allowed
    _inference = False  # made in inference mode (an "inference tensor")
    _post_acc_hooks = None  # hooks run after the leaf's .grad was accumulated
    __array_priority__ = 1000  # NumPy defers `ndarray * Tensor` to Tensor.__rmul__

    def __new__(cls, *args, **kwargs):
        """``torch.Tensor(...)``, the legacy constructor: ``Tensor(2, 3)`` or ``Tensor(Size)``
        is an uninitialized tensor of that size, ``Tensor(data)`` a default-dtype tensor of the
        data (a NumPy array of the default dtype is shared), ``Tensor(tensor)`` an alias."""
        return ABOVE.legacy_new(cls, args, kwargs)

    # -------------------------------------------------------------------------- metadata
    @property
    def shape(self) -> Size:
        return tuple.__new__(Size, self._data.shape)

    def size(self, dim: int | None = None):
        """Return the size (``Size``) of the tensor, or the size of dimension ``dim``."""
        if dim is None:
            return tuple.__new__(Size, self._data.shape)
        return self._data.shape[self._wrap_dim(dim)]

    def dim(self) -> int:
        """Return the number of dimensions."""
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        """Return the number of elements."""
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        """Return the size in bytes of one element."""
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.size * self.dtype.itemsize

    @property
    def device(self):
        if _meta.LIVE and _meta.is_meta(self._data):
            return META
        return CPU

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def is_cpu(self) -> bool:
        return not _meta.is_meta(self._data)

    @property
    def is_meta(self) -> bool:
        return _meta.is_meta(self._data)

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def is_quantized(self) -> bool:
        return False

    is_mkldnn = is_nested = is_mps = is_xpu = is_vulkan = is_quantized

    @property
    def layout(self):
        from ember._core.layout import strided

        return strided

    def get_device(self) -> int:
        """Return -1 for CPU tensors, as torch."""
        return -1

    def is_floating_point(self) -> bool:
        """Return True if the dtype is a floating point dtype."""
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        """Return True if the dtype is a complex dtype."""
        return self.dtype.is_complex

    def is_signed(self) -> bool:
        """Return True if the dtype is signed."""
        return self.dtype.is_signed

    def _wrap_dim(self, dim: int) -> int:
        return wrap_dim(dim, self._data.ndim)

    # -------------------------------------------------------------------------- strides, storage
    def stride(self, dim: int | None = None):
        """Return the strides in elements, or the stride of dimension ``dim``."""
        a = self._data
        if _meta.LIVE and _meta.is_meta(a):  # (its array's strides are all 0)
            strides = _meta.contiguous_strides(a.shape)
            return strides if dim is None else strides[self._wrap_dim(dim)]
        item = a.itemsize
        strides = a.strides
        if not a.size and 0 in strides:
            strides = _contiguous_byte_strides(a.shape, item)  # NumPy zeroes fresh empties
        if dim is None:
            return tuple(s // item for s in strides)
        return strides[self._wrap_dim(dim)] // item

    def storage_offset(self) -> int:
        """Return the offset, in elements, of the first element in the storage."""
        if _meta.LIVE and _meta.is_meta(self._data):
            return 0
        owner = owner_of(self._data)
        return (self.data_ptr() - _ptr(owner)) // self._data.itemsize

    def data_ptr(self) -> int:
        """Return the address of the first element (0 for a meta tensor)."""
        if _meta.LIVE and _meta.is_meta(self._data):
            return 0
        return _ptr(self._data)

    def untyped_storage(self) -> UntypedStorage:
        """Return the storage (bytes) this tensor views."""
        return UntypedStorage._of(owner_of(self._data))

    def is_contiguous(self, memory_format=None) -> bool:
        """Return True if the tensor is contiguous in row-major order (or in the order
        ``memory_format`` names: ``channels_last`` is NHWC, ``channels_last_3d`` NDHWC)."""
        if memory_format is None or memory_format is contiguous_format:
            return self._data.flags.c_contiguous or _meta.is_meta(self._data)
        if memory_format is preserve_format:
            raise RuntimeError("is_contiguous: memory_format preserve_format is not supported")
        a = self._data
        rank = 4 if memory_format is channels_last else 5
        if a.ndim != rank:
            return False
        # torch's is_channels_last_strides: dims C, W, H (, D), N from the innermost out
        order = [1] + list(range(rank - 1, 1, -1)) + [0]
        strides = self.stride()
        expected = 1
        for d in order:
            if a.shape[d] != 1 and strides[d] != expected:
                return False
            expected *= a.shape[d]
        return True

    def _is_view(self) -> bool:
        return self._base is not None

    def share_memory_(self) -> Tensor:
        """Move the storage to shared memory (a no-op if it is there already); return self.

        Shared memory is an anonymous in-memory file that ``ember.multiprocessing`` sends to
        other processes by descriptor, so they all see the same bytes. ember has no storage
        object that every view points to: the move re-points this tensor and its ``_base``
        (for a view) at one shared copy of the storage, so those keep aliasing. Other tensors
        viewing the old storage read the old memory until they are shared too (or sent to
        another process), when they re-attach to the same shared copy. Take views after
        calling ``share_memory_``."""
        chain = [self]
        base = self._base
        while base is not None:
            chain.append(base)
            base = base._base
        for t, a in zip(chain, ABOVE.share_views([t._data for t in chain])):
            t._data = a
        return self

    def is_shared(self) -> bool:
        """Return True if the storage is in shared memory (see ``share_memory_``)."""
        return ABOVE.is_shared_array(self._data)

    def is_pinned(self) -> bool:
        """Return False: ember tensors live in ordinary (pageable) host memory."""
        return False

    @property
    def _version(self) -> int:
        return self._vc[0]

    # -------------------------------------------------------------------------- autograd state
    @property
    def requires_grad(self) -> bool:
        base = self._base
        if base is not None and base._grad_fn is not self._base_fn_seen:
            _refresh_view(self)
        return self._requires_grad

    @property
    def grad_fn(self):
        """The node that created this tensor (None for leaves)."""
        base = self._base
        if base is not None and base._grad_fn is not self._base_fn_seen:
            _refresh_view(self)
        return self._grad_fn

    @grad_fn.setter
    def grad_fn(self, fn) -> None:
        self._grad_fn = fn

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._set_requires_grad(value, "only Tensors of floating point and complex dtype")

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set whether autograd records operations on this (leaf) tensor; return self."""
        return self._set_requires_grad(requires_grad, "only Tensors of floating point dtype")

    def _set_requires_grad(self, requires_grad: bool, who: str) -> Tensor:
        # torch words the dtype error differently for the method, the attribute and factories
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError(f"{who} can require gradients")
        if requires_grad and self.is_inference() and not _grad_state.inference:
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed."
            )
        self._requires_grad = builtins.bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self):
        if self._grad is None and self.grad_fn is not None and not self._retains_grad:
            warnings.warn(_NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of "
                    f"type {type(value).__name__}"
                )
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{D.cpp_type_name(value.dtype)}'"
                    f" to a tensor with grad_dtype '{D.scalar_type_name(self.dtype)}'. The "
                    "gradient must match the tensor's grad_dtype (defaults to the tensor's "
                    "dtype). You can set the tensor's grad_dtype attribute with a specific dtype, "
                    "or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes "
                    "of a tensor and its gradient may break downstream systems that assume they "
                    "match."
                )
            if tuple(value.shape) != self._data.shape:  # (a sparse gradient has no _data)
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size"
                )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def output_nr(self) -> int:
        return self._output_nr

    def detach(self) -> Tensor:
        """Return a new tensor sharing data and version counter, outside the graph."""
        t = _wrap(self._data)
        t._vc = self._vc
        return t

    def detach_(self) -> Tensor:
        """Detach this tensor from the graph in place; return self."""
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            )
        self.grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        """This tensor's data as a tensor outside autograd (fresh version counter)."""
        return _wrap(self._data)

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data
        self.dtype = value.dtype

    def retain_grad(self) -> None:
        """Make this non-leaf tensor keep its ``.grad`` after backward."""
        if self.grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if self._retains_grad:
            return
        ref = weakref.ref(self)

        def retain(grad):
            t = ref()
            if t is not None:
                # torch always clones: the retained grad never aliases the flowing one
                t._grad = grad.clone() if t._grad is None else t._grad + grad
            return grad

        self.grad_fn._add_tensor_hook(self._output_nr, retain, retain=True)
        self._retains_grad = True

    def register_hook(self, hook):
        """Register ``hook(grad) -> Tensor | None`` to run when this tensor's gradient is
        computed; return a handle with ``remove()``."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._add_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = _HookDict()
        return add_hook(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Register ``hook(tensor) -> None`` to run on a leaf after its ``.grad`` is accumulated;
        return a handle with ``remove()``."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        hooks = getattr(self, "_post_acc_hooks", None)
        if hooks is None:
            hooks = self._post_acc_hooks = _HookDict()
        return add_hook(hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Accumulate the gradient of this tensor w.r.t. graph leaves into their ``.grad``."""
        ABOVE.backward(
            (self,),
            None if gradient is None else (gradient,),
            retain_graph,
            create_graph,
            inputs=inputs,
        )

    # -------------------------------------------------------------------------- conversion
    def item(self):
        """Return the value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        _no_data(self, "item")
        v = self._data.reshape(()).item() if self._data.ndim else self._data.item()
        if self.dtype is D.bfloat16:
            return float(v)
        return v

    def tolist(self):
        """Return the tensor as a (nested) list of Python numbers."""
        _no_data(self, "copy")
        a = self._data
        if self.dtype is D.bfloat16:
            a = a.astype(np.float32)
        return a.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """Return the data as a NumPy array sharing memory (``force=True`` detaches first; under
        ``no_grad`` a tensor that requires grad is read as torch reads it)."""
        if self._requires_grad and not force and _grad_state.grad_enabled:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        _no_data(self, "numpy")
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad and _grad_state.grad_enabled:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        a = self._data
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # a NumPy function applied to a Tensor (``np.exp(t)``) returns a Tensor sharing the
        # result's memory, as torch's; bool results become uint8, as torch's do
        array = np.asarray(array)
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return _wrap(array)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def _one(self, kind: str):
        if self._data.size != 1:
            if kind == "bool":
                what = "more than one value" if self._data.size else "no values"
                raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
            raise ValueError("only one element tensors can be converted to Python scalars")
        _no_data(self, "item")
        v = self._data.reshape(()).item()
        if (kind == "float" or kind == "int") and type(v) is complex:
            if v.imag != 0:
                name = "double" if kind == "float" else "int64_t"
                raise RuntimeError(f"value cannot be converted to type {name} without overflow")
            v = v.real
        return v

    def __bool__(self) -> bool:
        return builtins.bool(self._one("bool"))

    def __float__(self) -> float:
        if self._requires_grad and _grad_state.grad_enabled and not _SCALAR_WARNED:
            _warn_scalar_conversion()
        return float(self._one("float"))

    def __int__(self) -> int:
        return int(self._one("int"))

    def __contains__(self, element) -> bool:
        if not isinstance(element, (Tensor, int, float, complex, np.generic)):
            raise RuntimeError(
                "Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                f"{type(element)}."
            )
        return builtins.bool((self == element)._data.any())

    def __complex__(self) -> complex:
        if self._requires_grad and _grad_state.grad_enabled and not _SCALAR_WARNED:
            _warn_scalar_conversion()
        return complex(self._one("complex"))

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.dtype.is_complex or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.reshape(()).item())

    def __hash__(self) -> int:
        return id(self)

    def _user_dict(self) -> dict:
        # attributes a user (or a subclass such as Parameter) set, not autograd bookkeeping
        return {k: v for k, v in self.__dict__.items() if k not in _AUTOGRAD_ATTRS}

    def __reduce_ex__(self, protocol):
        # plain pickling and copy.copy, by torch's route (ember/_tensor.py): the whole storage
        # with this tensor's offset and strides; no graph (a non-leaf pickles as a leaf)
        return ABOVE.reduce(self)

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)

    def __deepcopy__(self, memo):
        """Return a copy with its own storage (shared among tensors copied together, as views
        of one storage), its ``requires_grad``, a copy of its ``.grad`` and attributes."""
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment.  If you were attempting to deepcopy a module, this may "
                "be because of a torch.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001"
            )
        if id(self) in memo:
            return memo[id(self)]
        import copy

        a = self._data
        owner = owner_of(a)
        new_owner = memo.get(id(owner))
        if new_owner is None:
            new_owner = owner.copy(order="K")
            memo[id(owner)] = new_owner
            copy._keep_alive(owner, memo)
        if new_owner.flags.c_contiguous or new_owner.flags.f_contiguous:
            offset = _ptr(a) - _ptr(owner)
            data = np.ndarray(a.shape, a.dtype, new_owner, offset, a.strides)
        else:  # an owner NumPy cannot hand out as one buffer: copy this tensor alone
            data = a.copy(order="K")
        t = _rebuild(data, self._requires_grad, type(self))
        memo[id(self)] = t
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        for k, v in self._user_dict().items():
            setattr(t, k, copy.deepcopy(v, memo))
        return t

    def type(self, dtype=None, non_blocking: bool = False):
        """Return the type name (``'torch.FloatTensor'``) or, given a dtype, a cast copy."""
        if dtype is None:
            return _TYPE_NAMES[self.dtype.name]
        if isinstance(dtype, type) and hasattr(dtype, "type_name"):  # torch.FloatTensor...
            dtype = dtype.type_name
        if isinstance(dtype, str):
            if dtype.startswith("torch.cuda."):
                as_device("cuda")
            if dtype not in _DTYPE_OF_TYPE_NAME:
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = D._dtype_by_name(_DTYPE_OF_TYPE_NAME[dtype])
        return self.to(dtype)

    # -------------------------------------------------------------------------- DLPack
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Return a DLPack capsule sharing this tensor's memory (see ``ember.utils.dlpack``)."""
        return ABOVE.dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        """Return the DLPack device of this tensor: ``(DLDeviceType.kDLCPU, 0)``."""
        return ABOVE.dlpack_device(self)

    # -------------------------------------------------------------------------- printing
    def __repr__(self, *, tensor_contents=None) -> str:
        from ember._core.tensor_str import dtype_shown, format_tensor

        data = self._data
        default = D.get_default_dtype().name
        grad_fn = type(self.grad_fn).__name__ if self.grad_fn is not None else None
        cls = type(self)
        # torch prints a subclass by its name: MyTensor([1., 2.]) (Parameter is plain)
        plain = cls is Tensor or getattr(cls, "_plain_repr", False)
        if _meta.LIVE and _meta.is_meta(data):
            return _meta_repr(self, "tensor(" if plain else f"{cls.__name__}(", default, grad_fn)
        return format_tensor(
            data,
            dtype_name=self.dtype.name,
            show_dtype=dtype_shown(self.dtype.name, default, empty=data.size == 0),
            requires_grad=self._requires_grad,
            grad_fn=grad_fn,
            prefix="tensor(" if plain else f"{cls.__name__}(",
        )

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)


def _contiguous_byte_strides(shape: tuple, item: int) -> tuple:
    # torch's default strides: empty dims count as 1, so no stride is 0
    strides = []
    for n in reversed(shape):
        strides.append(item)
        item *= max(n, 1)
    return tuple(reversed(strides))


def _refresh_view(t: Tensor) -> None:
    # the base's history changed (an in-place op on it or on another view): the view's
    # history is now a strided view of the new base, as in torch
    ABOVE.refresh_view(t)


_AUTOGRAD_ATTRS = frozenset(
    (
        "_grad",
        "_output_nr",
        "_base",
        "_accum",
        "_hooks",
        "_retains_grad",
        "_view_fn",
        "_view_no_grad",
        "_base_fn_seen",
        "_view_in_custom_function",
        "_post_acc_hooks",
    )
)


def _rebuild_strided(owner, offset, shape, strides, dtype, requires_grad, cls=Tensor):
    """Unpickle a tensor: a view of ``owner`` (its storage) at a byte offset with strides
    (meta tensors, and pickles written by earlier ember releases)."""
    if owner.flags.c_contiguous or owner.flags.f_contiguous:
        arr = np.ndarray(shape, dtype, owner, offset, strides)
    else:
        arr = np.lib.stride_tricks.as_strided(owner.reshape(-1)[:0], shape, strides)
    return _rebuild(arr, requires_grad, cls)


def _rebuild(arr, requires_grad, cls=Tensor):
    t = _wrap(arr)
    if cls is not Tensor:
        t.__class__ = cls
    t._requires_grad = requires_grad
    return t


def wrap_dim(dim: int, ndim: int) -> int:
    """Return ``dim`` as a non-negative index into ``ndim`` dims, or raise torch's IndexError."""
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim + n if dim < 0 else dim


def _no_data(t: Tensor, what: str) -> None:
    # a meta tensor has no values to read: torch's errors
    if _meta.LIVE and _meta.is_meta(t._data):
        if what == "item":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if what == "numpy":
            raise TypeError(
                "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the "
                "tensor to host memory first."
            )
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")


def _meta_repr(t: Tensor, prefix: str, default: str, grad_fn) -> str:
    # torch: tensor(..., device='meta', size=(2, 3)[, dtype=...][, requires_grad=True])
    shape = t._data.shape
    size = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    parts = [f"{prefix}..., device='meta', size={size}"]
    if t.dtype.name != default:
        parts.append(f"dtype=torch.{t.dtype.name}")
    if grad_fn is not None:
        parts.append(f"grad_fn=<{grad_fn}>")
    elif t._requires_grad:
        parts.append("requires_grad=True")
    return ", ".join(parts) + ")"


_SCALAR_WARNED: list = []  # torch warns once per process


def _warn_scalar_conversion() -> None:
    _SCALAR_WARNED.append(True)
    warnings.warn(
        "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
        "behavior.\nConsider using tensor.detach() first.",
        UserWarning,
        stacklevel=3,
    )

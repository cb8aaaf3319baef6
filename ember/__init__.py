"""ember: PyTorch's programming model on NumPy. ``import ember as torch``."""

import importlib as _importlib

from ember._core import dtype as _dtype_mod
from ember._core import malloc as _malloc
from ember._core.device import device
from ember._core.dtype import (
    bfloat16,
    bool,
    can_cast,
    complex64,
    complex128,
    dtype,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from ember._core.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember._core.storage import UntypedStorage
from ember._core.tensor import (
    Size,
    Tensor,
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from ember._core.tensor_str import set_printoptions
from ember._ops import API as _API
from ember import overrides  # Tensor.__torch_function__ (before any Tensor subclass)
from ember import _C
from ember import autograd, cuda, random
from ember.autograd.anomaly_mode import (
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)
from ember.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

globals().update(_API)

from ember import fft, linalg, return_types, serialization, special, utils
from ember._core.threads import get_num_threads, set_num_threads
from ember.serialization import load, save
from ember.serialization._stream import PyTorchFileReader, PyTorchFileWriter
from ember.utils.dlpack import from_dlpack, to_dlpack
from ember import multiprocessing
from ember import _tensor, _utils, storage  # (how tensors pickle, as torch's)
from ember import nn
from ember import compiler  # torch.compile, published from there

# what nn (torch.conv2d, torch.stft...) and compiler (compile) published into the op table
globals().update({k: v for k, v in _API.items() if k not in globals()})
from ember import optim
from ember.nn._functional.activation import _log_softmax_method as log_softmax
from ember.nn._functional.activation import _softmax_method as softmax
from ember._core.storage import TypedStorage
from ember._ops.legacy_types import CPU_TYPES as _CPU_TYPES
from ember import amp, version
from ember.amp.autocast_mode import (
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from ember.amp.autocast_mode import DEPRECATED as _AUTOCAST_DEPRECATED

globals().update(_AUTOCAST_DEPRECATED)  # get_autocast_cpu_dtype(), ...
from ember._core.layout import layout, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr
from ember._core.layout import strided
from ember._ops.special_bessel import igamma, igammac
from ember._ops.linalg_extra import geqrf, orgqr, ormqr
from ember._ops.histogram_dd import histogramdd
from ember.amp import GradScaler

# torch's dtype aliases
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
cfloat = complex64
cdouble = complex128
from ember._core.dtype import complex32, uint16, uint32, uint64  # noqa: E402

chalf = complex32
from ember.types import SymBool, SymFloat, SymInt  # noqa: E402

# math constants, as torch re-exports them (torch.pi, torch.inf, x[:, torch.newaxis])
from math import e, inf, nan, pi  # noqa: E402

newaxis = None

# the legacy typed tensor classes: torch.FloatTensor, torch.LongTensor, ...
globals().update(_CPU_TYPES)

from ember.version import __version__  # noqa: E402  (torch's API level: 2.13.0+ember.<release>)
from ember._standin import install_as_torch  # noqa: E402  (import torch -> ember)
from ember._op_namespace import ops  # noqa: E402  (torch.ops.aten.<name>)


def _check_tensor(fn: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(
            f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )


def is_tensor(obj) -> bool:
    """Return True if ``obj`` is an ember Tensor."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """Return the number of elements of ``input``."""
    _check_tensor("numel", input)
    return input.numel()


def is_floating_point(input: Tensor) -> bool:
    """Return True if ``input`` has a floating point dtype."""
    _check_tensor("is_floating_point", input)
    return input.dtype.is_floating_point


def is_complex(input: Tensor) -> bool:
    """Return True if ``input`` has a complex dtype."""
    _check_tensor("is_complex", input)
    return input.dtype.is_complex


def result_type(tensor1, tensor2) -> dtype:
    """Return the dtype torch's promotion gives for an op on the two operands."""
    import numbers

    from numpy import bool_

    from ember._ops.registry import result_dtype

    for name, x in (("tensor1", tensor1), ("tensor2", tensor2)):
        if not isinstance(x, (Tensor, numbers.Number, bool_)):
            raise TypeError(
                f"result_type(): argument '{name}' must be Tensor or Number, not {type(x).__name__}"
            )
    return result_dtype((tensor1, tensor2))


del _dtype_mod

multiprocessing.init_reductions()  # Parameter and ember's other Tensor subclasses, now defined
_malloc.tune()  # keep freed array memory mapped for the next array: ember/_core/malloc.py

# (last: every public function is in place)
overrides._install_namespaces(_importlib.import_module(__name__), nn.functional, nn.init)

# the core classes print as torch's do, <class 'torch.Tensor'>, under ember's name
for _cls in (Tensor, Size, dtype, device, finfo, iinfo, layout, memory_format, type(bfloat16)):
    _cls.__module__ = "ember"
del _cls


_QUANTIZED_DTYPES = frozenset({"qint8", "quint8", "qint32", "quint4x2", "quint2x4"})

# Subpackages imported on first attribute access (PEP 562), so that ``import ember`` pays only
# for the core: ``torch.distributions.Normal``, ``import torch.jit`` and ``from torch import
# vmap`` work as in torch. (A subpackage imported by anything binds itself here as usual.)
_LAZY_MODULES = frozenset(
    """_dynamo accelerator ao backends cpu distributed distributions func fx hub jit
    onnx profiler quantization quasirandom signal sparse testing""".split()
)
# top-level names defined in a lazy subpackage: name -> module
_LAZY_NAMES = {
    "vmap": "ember.func",
    "sparse_coo_tensor": "ember.sparse",
    "spmm": "ember.sparse",
    "ScriptModule": "ember.jit",
    "ScriptFunction": "ember.jit",
}


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        return _importlib.import_module(f"ember.{name}")
    owner = _LAZY_NAMES.get(name)
    if owner is not None:
        value = overrides._wrap_public(name, getattr(_importlib.import_module(owner), name))
        globals()[name] = value
        return value
    # torch.qint8 & co.: ember has no quantized tensors (see ember.ao.quantization); still an
    # AttributeError, so that hasattr(torch, "qint8") answers False instead of raising
    if name in _QUANTIZED_DTYPES:
        raise AttributeError(
            f"module 'ember' has no attribute '{name}': ember has no quantized tensors or int8 "
            "kernels (it computes in floating point with NumPy); run the float model instead"
        )
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


def __dir__() -> list:
    return sorted(set(globals()) | _LAZY_MODULES | set(_LAZY_NAMES))

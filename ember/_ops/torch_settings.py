"""torch's global switches and entry points that have nothing to switch in NumPy:
``set_float32_matmul_precision``, the deterministic-algorithms family, ``set_default_device``,
``set_warn_always``, interop threads, ``get_device``, ``set_flush_denormal``,
``set_default_tensor_type``. Settings are recorded and reported back, as torch's getters expect
(``compile`` is ``ember/compiler``'s).
"""

from __future__ import annotations

import warnings

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._core.threads import get_num_threads
from ember._ops.registry import publish

# --- global switches: recorded and reported; NumPy has nothing to switch -------------------------

_settings = {
    "float32_matmul_precision": "highest",
    "deterministic": False,
    "deterministic_warn_only": False,
    "warn_always": False,
    "interop_threads": None,
}


def set_float32_matmul_precision(precision: str) -> None:
    """Record the float32 matmul precision ('highest', 'high' or 'medium').

    NumPy always computes float32 products in full float32 (TF32/bfloat16 passes do not exist
    there), so the value is only recorded and returned by :func:`get_float32_matmul_precision`.
    """
    if precision not in ("highest", "high", "medium"):
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
            "setFloat32MatmulPrecision call has no effect.",
            UserWarning,
            stacklevel=2,
        )
        return
    _settings["float32_matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """Return the float32 matmul precision set by :func:`set_float32_matmul_precision`."""
    return _settings["float32_matmul_precision"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record whether deterministic algorithms are required (ember's always are)."""
    if not isinstance(mode, bool):
        raise TypeError(
            "_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, "
            f"not {type(mode).__name__}"
        )
    _settings["deterministic"] = mode
    _settings["deterministic_warn_only"] = bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Return True if :func:`use_deterministic_algorithms` was turned on."""
    return _settings["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Return True if deterministic algorithms were turned on with ``warn_only=True``."""
    return _settings["deterministic_warn_only"]


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """Set the deterministic debug mode: 0/'default', 1/'warn' or 2/'error'."""
    if isinstance(debug_mode, str):
        names = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in names:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                f"but got {debug_mode}"
            )
        debug_mode = names[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """Return the deterministic debug mode: 0 (off), 1 (warn) or 2 (error)."""
    if not _settings["deterministic"]:
        return 0
    return 1 if _settings["deterministic_warn_only"] else 2


def set_default_device(device) -> None:
    """Set the default device of the factories: 'cpu' (or None) or 'meta'; 'cuda' raises
    ember's CUDA error."""
    from ember._core import device as _device

    _device._SET_DEFAULT[0] = _device.as_device(device)


def get_default_device():
    """Return the default device (``device(type='cpu')`` unless set or in a device block)."""
    from ember._core.device import as_device, default_device

    return as_device(default_device())  # in a ``with device("cuda")`` block: ember's CUDA error


def set_warn_always(b: bool, /) -> None:
    """Record whether warnings that torch issues once should be issued every time."""
    _settings["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    """Return the value set by :func:`set_warn_always`."""
    return _settings["warn_always"]


def get_num_interop_threads() -> int:
    """Return the inter-op thread count (recorded; ember runs ops on the calling thread)."""
    n = _settings["interop_threads"]
    return n if n is not None else get_num_threads()


def set_num_interop_threads(num: int) -> None:
    """Record the inter-op thread count; as torch, only once and only a positive number."""
    if not isinstance(num, int) or num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _settings["interop_threads"] is not None:
        raise RuntimeError(
            "Error: cannot set number of interop threads after parallel work has started or "
            "set_num_interop_threads called"
        )
    _settings["interop_threads"] = num


for _fn in (
    set_float32_matmul_precision,
    get_float32_matmul_precision,
    use_deterministic_algorithms,
    are_deterministic_algorithms_enabled,
    is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode,
    get_deterministic_debug_mode,
    set_default_device,
    get_default_device,
    set_warn_always,
    is_warn_always_enabled,
    get_num_interop_threads,
    set_num_interop_threads,
):
    publish(None, _fn, method=False)


def get_device(input: Tensor) -> int:
    """Return the device index of ``input``: -1 for a CPU tensor."""
    return -1


def set_flush_denormal(mode: bool) -> bool:
    """Return False: flushing denormals is not supported (NumPy has no switch for it, so
    denormals are always kept), as torch answers on a CPU without the feature. torch returns
    True where it sets the CPU's flush-to-zero mode, which ember does not."""
    return False


_DEFAULT_TENSOR_TYPES = {
    "torch.FloatTensor": "float32",
    "torch.DoubleTensor": "float64",
    "torch.HalfTensor": "float16",
    "torch.BFloat16Tensor": "bfloat16",
}


def set_default_tensor_type(t) -> None:
    """Set the default float dtype from a tensor type name (``'torch.DoubleTensor'``).

    Deprecated in torch 2.1 (it warns): prefer :func:`set_default_dtype`.
    """
    warnings.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    name = t if isinstance(t, str) else f"torch.{getattr(t, '__name__', '')}"
    if isinstance(t, D.dtype):
        raise TypeError(
            "invalid type object: only floating-point types are supported as the default type"
        )
    if name not in _DEFAULT_TENSOR_TYPES:
        if name in _TENSOR_TYPE_NAMES:
            raise TypeError("only floating-point types are supported as the default type")
        head, _, rest = name.partition(".")
        if head != "torch":  # torch imports the dotted name
            raise ModuleNotFoundError(f"No module named '{head}'")
        raise AttributeError(f"module 'torch' has no attribute '{rest}'")
    D.set_default_dtype(getattr(D, _DEFAULT_TENSOR_TYPES[name]))


_TENSOR_TYPE_NAMES = (
    "torch.LongTensor torch.IntTensor torch.ShortTensor torch.CharTensor torch.ByteTensor "
    "torch.BoolTensor torch.ComplexFloatTensor torch.ComplexDoubleTensor"
).split()


for _fn in (get_device, set_flush_denormal, set_default_tensor_type):
    publish(None, _fn, method=False)

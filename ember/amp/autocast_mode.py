"""``ember.amp.autocast``: mixed precision on the CPU, as torch's ``AutocastCPU`` kernels do it.

Inside an enabled ``autocast("cpu")`` region, the ops of torch's CPU lists run in another dtype:

* ``LOWER_PRECISION`` (matrix products, convolutions, prelu): floating inputs are cast to the
  autocast dtype (bfloat16 by default, or float16);
* ``FP32`` (losses, reductions that overflow, linear algebra, FFTs, 3-D pooling...): floating
  inputs are cast to float32;
* ``PROMOTE`` (cat, stack, index_copy): inputs are cast to the widest floating dtype among them.

float64 and non-floating tensors are never cast. The casts are ordinary differentiable ``to``
calls (``ToCopyBackward0``), so a float32 leaf gets a float32 ``.grad``. Casts of float32 leaves
that require grad (the weights) are cached until the outermost region exits, as torch does.

torch decides per ATen op; ember decides per op of its table, by the op's name (the tables below
map torch's lists onto ember's ops). ``ember._ops.registry.dispatch`` hands op calls to
``_dispatch`` only while some thread has CPU autocast on (``registry.AUTOCAST`` non-empty): one
truthiness test per op otherwise. Public functions that compare their inputs' dtypes before they
dispatch (``mm``, ``addmm``, convolutions...) or that compose several ops (``l1_loss``...) cast
first with ``registry.autocast_inputs(op or torch's name, inputs)``. NumPy multiplies bfloat16
matrices in float32; the product is rounded to the autocast dtype, as torch's kernels round
their float32 accumulation. The state is thread-local, as torch's.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops import registry
from ember._ops.copying import _cast

__all__ = [
    "autocast",
    "custom_bwd",
    "custom_fwd",
    "is_autocast_available",
]

# ---------------------------------------------------------------------------------------------
# the policy: torch's AutocastCPU lists (aten/src/ATen/autocast_mode.cpp), by ember op name

LOWER, FP32, PROMOTE = "lower_precision_fp", "fp32", "promote"

# conv1d/2d/3d, conv_transpose1d/2d/3d and _convolution are ember's ``convolution``; mm, bmm and
# matmul are ``matmul`` (so are dot and mv, which torch leaves alone: ember's ops cannot tell
# them apart); linear is ``addmm`` (or ``matmul`` without a bias); scaled_dot_product_attention
# and multi-head attention are ember compositions of ``matmul``; einsum stands for the bmm torch's
# einsum decomposes into.
LOWER_PRECISION = (
    "matmul",
    "addmm",
    "addbmm",
    "baddbmm",
    "convolution",
    "_prelu_kernel",
    "einsum",
)

FP32_OPS = (
    "avg_pool3d",
    "max_pool3d_with_indices",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "max_unpool2d",
    "max_unpool3d",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "grid_sampler_2d",
    "grid_sampler_3d",
    "polar",
    "prod",
    "quantile",
    "cdist",
    "trace",
    "view_as_complex",
    "cholesky_inverse",
    "cholesky_solve",
    "linalg_inv_ex",
    "linalg_cholesky_ex",
    "linalg_solve_ex",
    "linalg_svd",
    "linalg_eigh",
    "linalg_qr",
    "linalg_lstsq",
    "mse_loss",
    "nll_loss",
    "nll_loss2d",
    "smooth_l1_loss",
    "huber_loss",
    "soft_margin_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "_ctc_loss",
    "_fft_c2c",
    "_fft_r2c",
    "_fft_c2r",
)

PROMOTE_OPS = ("cat", "stack", "index_copy")

# torch's names for functions ember composes of other ops: their public functions call
# ``registry.autocast_inputs(name, inputs)`` before anything else
COMPOSITE_LOWER = ("linalg_vecdot",)
COMPOSITE_FP32 = (
    "cross_entropy_loss",
    "l1_loss",
    "kl_div",
    "poisson_nll_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "cosine_embedding_loss",
    "triplet_margin_loss",
)

# ops sharing one name whose torch counterparts differ: told apart by their grad_fn
_PAD = "pad"
_FP32_PADS = frozenset(
    ["ReflectionPad1DBackward0", "ReflectionPad2DBackward0"]
    + [f"ReplicationPad{k}DBackward0" for k in (1, 2, 3)]
)

POLICY: dict = {
    **dict.fromkeys(LOWER_PRECISION + COMPOSITE_LOWER, LOWER),
    **dict.fromkeys(FP32_OPS + COMPOSITE_FP32, FP32),
    **dict.fromkeys(PROMOTE_OPS, PROMOTE),
    "pad": _PAD,
}

# ---------------------------------------------------------------------------------------------
# state: per thread, per device type

_AVAILABLE = ("cpu", "cuda", "ipu", "xpu", "maia", "xla", "mps", "hpu", "mtia", "privateuseone")
_KNOWN = (
    "cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, "
    "mps, meta, hpu, mtia, privateuseone"
)
_DEFAULT_DTYPE = {
    "cpu": D.bfloat16,
    "cuda": D.float16,
    "ipu": D.float16,
    "xpu": D.float16,
    "maia": D.bfloat16,
    "xla": D.bfloat16,
    "mps": D.float16,
    "hpu": D.bfloat16,
    "mtia": D.float16,
    "privateuseone": D.float16,
    "hip": D.float16,
}


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled: dict = {}
        self.dtype: dict = dict(_DEFAULT_DTYPE)
        self.cpu = False  # enabled on 'cpu' (the one device whose ops ember runs)
        self.cpu_dtype = D.bfloat16
        self.cache_enabled = True
        self.nesting = 0
        self.cache: dict = {}  # id(float32 leaf) -> (leaf, its cast)


_STATE = _State()


def _device_type(device_type: str) -> str:
    if not isinstance(device_type, str) or device_type.split(":")[0] not in _KNOWN.split(", "):
        raise RuntimeError(
            f"Expected one of {_KNOWN} device type at start of device string: {device_type}"
        )
    return device_type.split(":")[0]


def _available_device(device_type: str) -> str:
    dev = _device_type(device_type)
    if dev not in _AVAILABLE:
        raise RuntimeError(
            "unknown device type for autocast in get_autocast_dispatch_key_from_device_type"
        )
    return dev


def is_autocast_available(device_type: str) -> bool:
    """Return True if autocast can be used on ``device_type`` (e.g. 'cpu', 'cuda')."""
    return _device_type(device_type) in _AVAILABLE


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Return whether autocast is on for ``device_type`` (``'cuda'`` when not given)."""
    if device_type is None:
        device_type = "cuda"
    dev = _available_device(device_type)
    if dev == "cpu":
        return _STATE.cpu
    return _STATE.enabled.get(dev, False)


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Turn autocast on or off for ``device_type`` (``set_autocast_enabled(flag)``: CUDA)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    if type(enabled) is not bool:
        raise TypeError(
            "set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not "
            f"{type(enabled).__name__}"
        )
    dev = _available_device(device_type)
    st = _STATE
    if dev != "cpu":
        st.enabled[dev] = enabled
    elif enabled is not st.cpu:
        st.cpu = enabled
        # registry.AUTOCAST holds one entry per thread with CPU autocast on: dispatch reads it
        if enabled:
            registry.AUTOCAST.append(st)
        else:
            registry.AUTOCAST.remove(st)


def get_autocast_dtype(device_type: str) -> D.dtype:
    """Return the dtype autocast runs lower-precision ops in on ``device_type``."""
    dev = _device_type(device_type)
    dt = _STATE.dtype.get(dev)
    if dt is None:
        raise RuntimeError("unsupported scalarType")
    return dt


def set_autocast_dtype(device_type: str, dtype: D.dtype) -> None:
    """Set the dtype autocast runs lower-precision ops in on ``device_type``."""
    dev = _device_type(device_type)
    _STATE.dtype[dev] = dtype
    if dev == "cpu":
        _STATE.cpu_dtype = dtype


def is_autocast_cache_enabled() -> bool:
    """Return whether autocast caches the casts of weights (float32 leaves requiring grad)."""
    return _STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn autocast's weight-cast cache on or off."""
    _STATE.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached casts of weights."""
    _STATE.cache.clear()


def autocast_increment_nesting() -> int:
    """Enter one more autocast region; return the depth."""
    _STATE.nesting += 1
    return _STATE.nesting


def autocast_decrement_nesting() -> int:
    """Leave an autocast region; return the depth."""
    _STATE.nesting -= 1
    return _STATE.nesting


# ---------------------------------------------------------------------------------------------
# the casts, run by dispatch


def _eligible(x) -> bool:
    return isinstance(x, Tensor) and x.dtype.is_floating_point and x.dtype is not D.float64


def _cast_to(x, dt, st):
    if not _eligible(x) or x.dtype is dt:
        return x
    if (
        dt is st.cpu_dtype
        and x.dtype is D.float32
        and x._requires_grad
        and x._grad_fn is None
        and x._base is None
        and st.cache_enabled
    ):
        hit = st.cache.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        out = _cast(x, dt)
        st.cache[id(x)] = (x, out)
        return out
    return _cast(x, dt)


def _promote_type(inputs, lower):
    dt = lower
    for x in inputs:
        if _eligible(x):
            if x.dtype is D.float32 or dt is D.float32:
                dt = D.float32
            elif x.dtype is not lower:
                raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return dt


def _target(name: str, node_cls, inputs, st):
    """Return the dtype autocast runs op ``name`` in, or None to leave it alone."""
    policy = POLICY.get(name)
    if policy is None or not st.cpu:  # (not st.cpu: another thread has autocast on)
        return None
    if policy is LOWER:
        return st.cpu_dtype
    if policy is FP32:
        return D.float32
    if policy is PROMOTE:
        return _promote_type(inputs, st.cpu_dtype)
    if node_cls is not None and node_cls.__name__ in _FP32_PADS:
        return D.float32
    return None


def _cast_inputs(op, inputs: tuple) -> tuple:
    """Return the inputs of ``op`` (an op of the table, or the name of a composite function in
    ``POLICY``) cast as the CPU autocast policy asks."""
    st = _STATE
    if type(op) is str:
        dt = _target(op, None, inputs, st)
    else:
        dt = _target(op.name, op.node_cls, inputs, st)
    if dt is None:
        return inputs
    return tuple([_cast_to(x, dt, st) for x in inputs])


def _dispatch(op, inputs: tuple, params: dict):
    """Dispatch ``op`` with its inputs cast as the CPU autocast policy asks."""
    st = _STATE
    dt = _target(op.name, op.node_cls, inputs, st)
    if dt is None:
        return registry.dispatch_uncast(op, inputs, params)
    inputs = tuple([_cast_to(x, dt, st) for x in inputs])
    out = registry.dispatch_uncast(op, inputs, params)
    if (
        dt is not D.float32
        and type(out) is Tensor
        and out.dtype is D.float32
        and POLICY[op.name] is LOWER
        and not op.save_output
        and not any(isinstance(x, Tensor) and x.dtype is D.float32 for x in inputs)
    ):
        # NumPy multiplies bfloat16 matrices in float32: round the fresh product to ``dt``, as
        # torch's kernels (float32 accumulation) do; nothing else holds the array yet
        out._data = out._data.astype(dt.np)
        out.dtype = dt
    return out


registry.set_autocast_hooks(_dispatch, _cast_inputs)

# ---------------------------------------------------------------------------------------------
# the context manager


class autocast:
    """Context manager and decorator running the ops of a region in mixed precision.

    On ``'cpu'`` the ops of torch's CPU lists run in ``dtype`` (bfloat16 by default; float16
    also) or float32 (see ``ember.amp.autocast_mode``); on ``'cuda'`` autocast disables itself
    with torch's warning, as torch does without a GPU."""

    def __init__(
        self,
        device_type: str,
        dtype: D.dtype | None = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(self.device):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{self.device}'"
            )
        self._cache_enabled = (
            is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        )
        if enabled:
            if self.device == "cuda":
                warnings.warn(
                    "CUDA is not available or torch_xla is imported. Disabling autocast.",
                    UserWarning,
                    stacklevel=2,
                )
                enabled = False
            elif self.fast_dtype not in (D.bfloat16, D.float16):
                name = self.device.upper()
                warnings.warn(
                    f"In {name} autocast, but the target dtype is not supported. Disabling "
                    f"autocast.\n{name} Autocast only supports dtypes of torch.bfloat16, "
                    "torch.float16 currently.",
                    UserWarning,
                    stacklevel=2,
                )
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, bool(self._enabled))
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        # drop the cache when leaving the outermost region
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func: Callable) -> Callable:
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with torch.autocast(device_type=...):\n"
                "        output = model(input)"
            )

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


# ---------------------------------------------------------------------------------------------
# custom autograd Functions


def _cast_value(value, device_type: str, dtype: D.dtype):
    """Cast the floating (not float64) Tensors in ``value`` and its containers to ``dtype``."""
    if isinstance(value, Tensor):
        ok = value.dtype.is_floating_point and value.dtype is not D.float64
        return value.to(dtype) if ok and device_type == "cpu" else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, Mapping):
        return {
            _cast_value(k, device_type, dtype): _cast_value(v, device_type, dtype)
            for k, v in value.items()
        }
    if isinstance(value, Iterable):
        it = (_cast_value(v, device_type, dtype) for v in value)
        return type(value)(it) if isinstance(value, (list, tuple)) else it
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs: D.dtype | None = None):
    """Decorate the ``forward`` of a custom autograd Function: with ``cast_inputs``, inside an
    autocast region its floating inputs are cast to that dtype and it runs with autocast off."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        on = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if on:
            with autocast(device_type=device_type, enabled=False):
                return fwd(
                    *_cast_value(args, device_type, cast_inputs),
                    **_cast_value(kwargs, device_type, cast_inputs),
                )
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate the ``backward`` of a custom autograd Function: it runs with the autocast state
    its ``forward`` (decorated by ``custom_fwd``) ran with."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(
            device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype
        ):
            return bwd(*args, **kwargs)

    return decorate_bwd


# ---------------------------------------------------------------------------------------------
# torch's deprecated per-device spellings (torch.get_autocast_cpu_dtype() ...)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"torch.{old} is deprecated. Please use torch.{new} instead.",
        DeprecationWarning,
        stacklevel=3,
    )


def _per_device(dev: str, old: str) -> dict:
    """torch's ``is/set_autocast_<old>_enabled`` and ``get/set_autocast_<old>_dtype``."""

    def is_enabled() -> bool:
        _deprecated(f"is_autocast_{old}_enabled()", f"is_autocast_enabled('{dev}')")
        return is_autocast_enabled(dev)

    def set_enabled(enabled: bool) -> None:
        _deprecated(
            f"set_autocast_{old}_enabled(enabled)", f"set_autocast_enabled('{dev}', enabled)"
        )
        set_autocast_enabled(dev, enabled)

    def get_dtype() -> D.dtype:
        _deprecated(f"get_autocast_{old}_dtype()", f"get_autocast_dtype('{dev}')")
        return get_autocast_dtype(dev)

    def set_dtype(dtype: D.dtype) -> None:
        _deprecated(f"set_autocast_{old}_dtype(dtype)", f"set_autocast_dtype('{dev}', dtype)")
        set_autocast_dtype(dev, dtype)

    fns = {
        f"is_autocast_{old}_enabled": is_enabled,
        f"set_autocast_{old}_enabled": set_enabled,
        f"get_autocast_{old}_dtype": get_dtype,
        f"set_autocast_{old}_dtype": set_dtype,
    }
    for name, fn in fns.items():
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = f"Deprecated: the '{dev}' case of ``{name.replace(f'_{old}', '')}``."
    return fns


# torch.get_autocast_cpu_dtype(), torch.set_autocast_gpu_dtype(dtype), ... (CUDA: dtypes only)
_gpu = _per_device("cuda", "gpu")
DEPRECATED = {
    **_per_device("cpu", "cpu"),
    **_per_device("ipu", "ipu"),
    **_per_device("xla", "xla"),
    "get_autocast_gpu_dtype": _gpu["get_autocast_gpu_dtype"],
    "set_autocast_gpu_dtype": _gpu["set_autocast_gpu_dtype"],
}
globals().update(DEPRECATED)

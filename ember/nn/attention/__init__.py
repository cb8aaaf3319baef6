"""``ember.nn.attention``: the ``sdpa_kernel`` context manager and ``SDPBackend``.

ember computes ``scaled_dot_product_attention`` one way (the math backend, in NumPy), so the
backend choice is recorded, as torch's flags are, and read back by
``torch.backends.cuda.*_sdp_enabled()``. What it can change is whether a call is allowed:
``_select_sdp_backend`` answers as torch's CPU dispatcher does (flash attention if enabled and its
constraints hold, else math if enabled, else torch's warnings and RuntimeError).
"""

from __future__ import annotations

import contextlib
import enum
import warnings
from collections.abc import Iterable, Iterator

from ember._core.dtype import cpp_type_name

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.Enum):
    """The implementations of scaled dot product attention torch can choose between.

    As torch's (a pybind11 enum): members convert with ``int()`` but do not compare equal to
    ints, and do not order.
    """

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __repr__(self) -> str:
        return f"<SDPBackend.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"SDPBackend.{self.name}"

    __format__ = object.__format__


# which backends are enabled (torch.backends.cuda.enable_*_sdp / *_sdp_enabled read this)
ENABLED = {
    SDPBackend.MATH: True,
    SDPBackend.FLASH_ATTENTION: True,
    SDPBackend.EFFICIENT_ATTENTION: True,
    SDPBackend.CUDNN_ATTENTION: True,
    SDPBackend.OVERRIDEABLE: True,
}

# the order backends are tried in (torch._C._get_sdp_priority_order), as ints
_PRIORITY: list[int] = [1, 2, 0, 3, 4]

# torch's flag names, in the order torch lists the enabled backends
_backend_names = {
    "cudnn": "CUDNN_ATTENTION",
    "flash": "FLASH_ATTENTION",
    "mem_efficient": "EFFICIENT_ATTENTION",
    "math": "MATH",
    "overrideable": "OVERRIDEABLE",
}


def _backend_from_string(name: str) -> SDPBackend:
    return getattr(SDPBackend, name)


def _cur_sdpa_kernel_backends(with_priority: bool = False) -> list[SDPBackend]:
    """Return the enabled backends (in priority order if ``with_priority``)."""
    backends = [SDPBackend[v] for v in _backend_names.values() if ENABLED[SDPBackend[v]]]
    if with_priority:
        backends.sort(key=lambda b: _PRIORITY.index(int(b)))
    return backends


def _sdpa_kernel(backends: Iterable[SDPBackend], set_priority: bool = False) -> None:
    backends = list(backends)
    for b in ENABLED:
        ENABLED[b] = b in backends
    if set_priority:
        order = [int(b) for b in backends]
        order += [p for p in _PRIORITY if p not in order]
        _PRIORITY[:] = order


@contextlib.contextmanager
def sdpa_kernel(
    backends: list[SDPBackend] | SDPBackend, set_priority: bool = False
) -> Iterator[dict]:
    """Context manager enabling only ``backends`` for scaled dot product attention (in that
    priority order if ``set_priority``); the previous flags are restored on exit."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(
            "Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
            f"got {type(backends).__name__}"
        )
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    saved_priority = list(_PRIORITY)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, set_priority)
        _PRIORITY[:] = saved_priority


@contextlib.contextmanager
def _sdpa_kernel_variadic(*backends: SDPBackend) -> Iterator[None]:
    with sdpa_kernel(list(backends)):
        yield


def _get_flash_version() -> str:
    """Return the flash-attention version torch's backend corresponds to."""
    return "2.5.7"


# ------------------------------------------------------------------------------ dispatch

_FLASH_DTYPES = ("float32", "float64", "float16", "bfloat16")


def _dims(t) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _flash_refusal(query, key, value, attn_mask, dropout_p, enable_gqa) -> str | None:
    """Return why torch's CPU flash kernel cannot run these inputs, or None if it can."""
    if not ENABLED[SDPBackend.FLASH_ATTENTION]:
        return "Flash attention has been runtime disabled."
    if dropout_p > 0.0:
        return "Both fused kernels do not support non-zero dropout."
    q, k, v = query, key, value
    if not (q.dim() == k.dim() == v.dim() == 4):
        return (
            "All fused kernels requires query, key and value to be 4 dimensional, but got "
            f"Query dim: {q.dim()}, Key dim: {k.dim()}, Value dim: {v.dim()} instead."
        )
    hint = "To broadcast dense inputs, try using unsqueeze and expand_to before passing them into the kernel."  # noqa: E501
    if not (q.shape[0] == k.shape[0] == v.shape[0]):
        return (
            "For dense inputs, both fused kernels require query, key and value to have the same "
            f"batch_size. Query.sizes(): {_dims(q)}, Key.sizes(): {_dims(k)}, Value.sizes(): "
            f"{_dims(v)} instead. {hint}"
        )
    hq, hk, hv = q.shape[1], k.shape[1], v.shape[1]
    gqa_ok = enable_gqa and hk == hv and hk > 0 and hq % hk == 0
    if not (hq == hk == hv or gqa_ok):
        return (
            "For dense input, both fused kernels require query, key and value to have the same "
            f"num_heads. Query.sizes(): {_dims(q)}, Key sizes(): {_dims(k)}, Value sizes(): "
            f"{_dims(v)} instead. {hint}"
        )
    if attn_mask is not None:
        m = tuple(attn_mask.shape)
        want = {2: (q.shape[2], k.shape[2]), 4: (q.shape[0], hq, q.shape[2], k.shape[2])}
        if len(m) not in want or any(s not in (1, w) for s, w in zip(m, want[len(m)])):
            return (
                "Please use the following attn mask shapes: 2d - ({Q_seq_len, 1}  x "
                "{KV_seq_len, 1}); 4d - ({Batch, 1} x {Num_heads, 1} x {Q_seq_len, 1}  x "
                "{KV_seq_len, 1})"
            )
    if not (q.shape[-1] == k.shape[-1] == v.shape[-1]):
        return (
            "Flash attention requires q,k,v to have the same last dimension. Got "
            f"Query.size(-1): {q.shape[-1]}, Key.size(-1): {k.shape[-1]}, "
            f"Value.size(-1): {v.shape[-1]} instead."
        )
    strides = [t.stride(-1) for t in (q, k, v)]
    if any(s != 1 for s in strides):
        return (
            "All fused kernels require the last dimension of the input to have stride 1. Got "
            f"Query.stride(-1): {strides[0]}, Key.stride(-1): {strides[1]}, "
            f"Value.stride(-1): {strides[2]}"
        )
    names = [str(t.dtype).removeprefix("torch.") for t in (q, k, v)]
    if any(n not in _FLASH_DTYPES for n in names):
        q_n, k_n, v_n = (cpp_type_name(t.dtype) for t in (q, k, v))
        return (
            "Expected query, key and value to all be of dtype: {Float, Double, BFloat16, Half}. "
            f"Got Query dtype: {q_n}, Key dtype: {k_n}, and Value dtype: {v_n} instead."
        )
    return None


def _select_sdp_backend(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, enable_gqa=False
) -> SDPBackend:
    """Return the backend torch's CPU dispatcher picks for these inputs under the current flags
    (FLASH_ATTENTION or MATH); raise its RuntimeError (after its warnings) when none may run."""
    flash, math = ENABLED[SDPBackend.FLASH_ATTENTION], ENABLED[SDPBackend.MATH]
    if not flash and not math:
        raise RuntimeError(
            "No viable backend for scaled_dot_product_attention was found. This is likely due "
            "to turning off both the math kernel and the fused kernels."
        )
    reason = _flash_refusal(query, key, value, attn_mask, dropout_p, enable_gqa)
    if reason is None:
        return SDPBackend.FLASH_ATTENTION
    if math:
        return SDPBackend.MATH
    warnings.warn("Flash attention kernel not used because:", UserWarning, stacklevel=3)
    warnings.warn(reason, UserWarning, stacklevel=3)
    raise RuntimeError("No available kernel.  Aborting execution.")

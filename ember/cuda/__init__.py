"""``ember.cuda``: present for torch compatibility; no CUDA backend is available.

Queries answer as torch does on a machine without CUDA (``is_available()`` is False,
``device_count()`` 0, memory counters 0, seeding and ``empty_cache`` do nothing); calls that
need a GPU raise an error that says so (a RuntimeError that is also an AssertionError,
the class torch raises there).
"""

from __future__ import annotations

from ember._core.device import as_device


def _no_cuda():
    as_device("cuda")  # raises the one "no CUDA backend" RuntimeError


def is_available() -> bool:
    """Return False: ember has no CUDA backend on this machine."""
    return False


def device_count() -> int:
    """Return 0: no CUDA devices are visible to ember."""
    return 0


def is_initialized() -> bool:
    """Return False: CUDA is never initialized."""
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Return False: there is no CUDA device."""
    return False


def manual_seed(seed: int) -> None:
    """Do nothing (no CUDA generators), as torch does without CUDA."""


def manual_seed_all(seed: int) -> None:
    """Do nothing (no CUDA generators), as torch does without CUDA."""


def seed() -> None:
    """Do nothing (no CUDA generators), as torch does without CUDA."""


def seed_all() -> None:
    """Do nothing (no CUDA generators), as torch does without CUDA."""


def empty_cache() -> None:
    """Do nothing: there is no CUDA memory cache."""


def memory_allocated(device=None) -> int:
    """Return 0: no CUDA memory is in use."""
    return 0


def max_memory_allocated(device=None) -> int:
    """Return 0: no CUDA memory is in use."""
    return 0


def memory_reserved(device=None) -> int:
    """Return 0: no CUDA memory is reserved."""
    return 0


def synchronize(device=None) -> None:
    """Raise: there is no CUDA device to wait for."""
    _no_cuda()


def current_device() -> int:
    """Raise: there is no CUDA device."""
    _no_cuda()


def set_device(device) -> None:
    """Raise: there is no CUDA device."""
    _no_cuda()


def get_device_name(device=None) -> str:
    """Raise: there is no CUDA device."""
    _no_cuda()


def get_rng_state(device="cuda"):
    """Raise: there is no CUDA generator."""
    _no_cuda()


def get_rng_state_all() -> list:
    """Return the states of every CUDA generator: none, so ``[]``, as torch without CUDA."""
    return []


def set_rng_state_all(new_states) -> None:
    """Set the state of every CUDA generator: there are none, so nothing, as torch does."""


def init() -> None:
    """Raise: CUDA cannot be initialized."""
    _no_cuda()


def get_arch_list() -> list:
    """Return the CUDA architectures ember was built for: none."""
    return []


class device:
    """Context manager selecting a CUDA device: entering it raises, as torch without CUDA."""

    def __init__(self, device) -> None:
        self.idx = device if isinstance(device, int) or device is None else -1
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None and self.idx >= 0:
            raise RuntimeError("PyTorch was compiled without CUDA support")
        return self

    def __exit__(self, *exc) -> bool:
        return False


from ember.cuda import amp as amp  # noqa: E402  (ember.amp needs nothing from here)


def __getattr__(name: str):
    # torch.cuda.FloatTensor & co. resolve (building one raises torch's TypeError)
    from ember._ops.legacy_types import CUDA_TYPES

    if name in CUDA_TYPES:
        return CUDA_TYPES[name]
    raise AttributeError(f"module 'ember.cuda' has no attribute '{name}'")

"""``ember.accelerator``: torch's device-agnostic accelerator API, answering for a CPU-only host.

``is_available()`` is False and ``current_accelerator()`` None, so the tutorials' idiom
``torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"``
picks the CPU; calls that need a device raise torch's RuntimeError.
"""

from __future__ import annotations

from typing import Any

_NO_DEVICE = "Cannot access accelerator device when none is available."


def _none_available(*args: Any, **kwargs: Any):
    raise RuntimeError(_NO_DEVICE)


def is_available() -> bool:
    """Return False: ember runs on the CPU only."""
    return False


def current_accelerator(check_available: bool = False):
    """Return None: there is no accelerator device."""
    return None


def device_count() -> int:
    """Return 0: no accelerator devices are visible."""
    return 0


def current_device_index() -> int:
    """Raise RuntimeError: there is no accelerator device."""
    _none_available()


def set_device_index(device: Any) -> None:
    """Raise RuntimeError: there is no accelerator device."""
    _none_available()


def synchronize(device: Any = None) -> None:
    """Raise RuntimeError: there is no accelerator device to wait for."""
    _none_available()


def empty_cache() -> None:
    """Raise RuntimeError: there is no accelerator memory cache."""
    _none_available()


def memory_allocated(device_index: Any = None) -> int:
    """Raise RuntimeError: there is no accelerator memory."""
    _none_available()


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated
memory_stats = get_memory_info = memory_allocated
reset_peak_memory_stats = reset_accumulated_memory_stats = memory_allocated
current_device_idx = current_device_index
set_device_idx = set_device_index

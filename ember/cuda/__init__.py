"""``ember.cuda``: present for torch compatibility; no CUDA backend is available."""

from __future__ import annotations


def is_available() -> bool:
    """Return False: ember has no CUDA backend on this machine."""
    return False


def device_count() -> int:
    """Return 0: no CUDA devices are visible to ember."""
    return 0


def manual_seed(seed: int) -> None:
    """Do nothing (no CUDA generators), as torch does without CUDA."""


def manual_seed_all(seed: int) -> None:
    """Do nothing (no CUDA generators), as torch does without CUDA."""


def synchronize(device=None) -> None:
    """Do nothing: there is no asynchronous device to wait for."""

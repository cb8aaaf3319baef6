"""``ember.distributed``: not implemented; answers the availability queries scripts make
before setting up a process group."""

from __future__ import annotations


def is_available() -> bool:
    """Return False: ember has no distributed backend."""
    return False


def is_initialized() -> bool:
    """Return False: no process group exists."""
    return False


__all__ = ["is_available", "is_initialized"]

"""``ember.cpu``: torch's CPU device module (``torch.cpu.is_available()``, ``synchronize``,
streams that do nothing, and the deprecated ``torch.cpu.amp`` spellings)."""

from __future__ import annotations

from typing import Any

from ember.cpu import amp

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "amp",
    "current_device",
    "current_stream",
    "device_count",
    "is_available",
    "is_initialized",
    "set_device",
    "stream",
    "synchronize",
]


def is_available() -> bool:
    """Return True: the CPU is always available."""
    return True


def is_initialized() -> bool:
    """Return True: the CPU needs no initialization."""
    return True


def device_count() -> int:
    """Return 1: one CPU device."""
    return 1


def current_device() -> str:
    """Return ``'cpu'``."""
    return "cpu"


def set_device(device: Any) -> None:
    """Do nothing: there is one CPU device."""


def synchronize(device: Any = None) -> None:
    """Do nothing: CPU work is synchronous."""


class Stream:
    """A CPU stream: work runs in order anyway, so it does nothing."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream: Stream) -> None:
        """Do nothing."""

    def synchronize(self) -> None:
        """Do nothing."""

    def query(self) -> bool:
        """Return True: all work is done."""
        return True

    def record_event(self, event: Event | None = None) -> Event:
        """Return ``event`` (a new Event if None)."""
        return Event() if event is None else event

    def wait_event(self, event: Event) -> None:
        """Do nothing."""


class Event:
    """A CPU event: always complete."""

    def query(self) -> bool:
        """Return True: the event has happened."""
        return True

    def record(self, stream: Stream | None = None) -> None:
        """Do nothing."""

    def synchronize(self) -> None:
        """Do nothing."""

    def wait(self, stream: Stream | None = None) -> None:
        """Do nothing."""


_default_stream = Stream()


def current_stream(device: Any = None) -> Stream:
    """Return the (only) CPU stream."""
    return _default_stream


class StreamContext:
    """Context manager selecting a stream (nothing to select on the CPU)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        return None


def stream(stream: Stream | None) -> StreamContext:
    """Return a context manager selecting ``stream``."""
    return StreamContext(stream)

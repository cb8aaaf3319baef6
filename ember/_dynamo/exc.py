"""``torch._dynamo.exc``: the errors of a capture."""

from __future__ import annotations

__all__ = ["Unsupported", "TorchRuntimeError"]


class TorchDynamoException(RuntimeError):
    """Base of the compiler's errors."""


class Unsupported(TorchDynamoException):
    """What ``fullgraph=True`` raises for a construct the capture cannot record."""


class TorchRuntimeError(TorchDynamoException):
    """An error raised while running a captured program."""

"""torch.jit.frontend's error classes: what TorchScript rejects at script time."""

from __future__ import annotations

__all__ = ["FrontendError", "NotSupportedError", "UnsupportedNodeError", "source_context"]


def source_context(filename: str, lineno: int, line: str, col: int, width: int) -> str:
    """Torch's quote of a source line: the file and line, the line, a ``~~~ <--- HERE``."""
    width = max(width, 1)
    return (
        f'  File "{filename}", line {lineno}\n{line}\n' + " " * col + "~" * width + " <--- HERE\n"
    )


class FrontendError(Exception):
    """A program TorchScript cannot compile; the message quotes the source."""

    def __init__(self, source: str, msg: str):
        self.source, self.msg = source, msg
        super().__init__(f"{msg}:\n{source}")


class NotSupportedError(FrontendError):
    """A Python construct TorchScript does not support."""


class UnsupportedNodeError(NotSupportedError):
    """A syntax node TorchScript does not support."""

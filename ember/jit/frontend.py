"""torch.jit.frontend's error classes: what TorchScript rejects at script time."""

from __future__ import annotations

__all__ = [
    "FrontendError",
    "NotSupportedError",
    "UnsupportedNodeError",
    "highlight",
    "source_context",
]


def highlight(filename: str, first: int, lines: list, start: tuple, end: tuple) -> str:
    """Torch's quote of a source range: the file and line, up to two lines of context each
    side (within the function), ``~`` under the range and ``<--- HERE`` after it.

    ``start``/``end`` are ``(line, col)`` in ``lines`` (1-based lines, end col exclusive);
    an empty range quotes the lines without marks."""
    (l0, c0), (l1, c1) = start, end
    out = [f'  File "{filename}", line {first + l0 - 1}']
    marked = not (l0 == l1 and c0 == c1)
    for k in range(max(1, l0 - 2), min(len(lines), l1 + 2) + 1):
        line = lines[k - 1]
        out.append(line)
        if marked and l0 <= k <= l1:
            a = c0 if k == l0 else len(line) - len(line.lstrip())
            b = c1 if k == l1 else len(line)
            out.append(" " * a + "~" * max(b - a, 1) + (" <--- HERE" if k == l1 else ""))
    return "\n".join(out) + "\n"


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

"""Checkpoints in torch's own file format (``ember.save`` / ``ember.load``), and safetensors.

``ember.save`` writes the zip archive ``torch.save`` writes (``data.pkl`` naming only the
globals torch's ``weights_only`` loader allows, 64-byte aligned raw storages), so ``torch.load``
reads it; ``ember.load`` reads what ``torch.save`` wrote, from torch 1.6's zip format on and the
older pickle stream, without torch installed. Loading is restricted to weights by default and
never runs code from the file. The modules:

    _zip.py          the aligned zip writer and the checked zip reader
    _pickler.py      data.pkl writer: tensors -> torch._utils._rebuild_tensor_v2 + storages
    _rebuild.py      what each name in a torch pickle stands for in ember (the allowlist)
    _unpickler.py    the weights-only unpickler (opcode by opcode) and the full one
    _save.py         save(): zip or legacy stream, atomic writes to paths
    _load.py         load(): zip / legacy, map_location, mmap
    _safetensors.py  save_safetensors / load_safetensors
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable

from ember.serialization import _unpickler
from ember.serialization._load import UNSAFE_MESSAGE, load
from ember.serialization._rebuild import ALLOWED
from ember.serialization._rebuild import get_layout as _get_layout
from ember.serialization._safetensors import (
    load_safetensors,
    safetensors_metadata,
    save_safetensors,
)
from ember.serialization._save import DEFAULT_PROTOCOL, is_path, save
from ember.serialization._zip import ZipReader, file_size

# what a pickled layout calls, under torch's name (torch.serialization._get_layout)
_get_layout.__module__, _get_layout.__name__, _get_layout.__qualname__ = (__name__,) + (
    "_get_layout",
) * 2

__all__ = [
    "save",
    "load",
    "DEFAULT_PROTOCOL",
    "UNSAFE_MESSAGE",
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "safe_globals",
    "get_unsafe_globals_in_checkpoint",
    "save_safetensors",
    "load_safetensors",
    "safetensors_metadata",
]


def add_safe_globals(safe_globals: list[Callable | tuple[Callable, str]]) -> None:
    """Mark globals as safe for ``weights_only`` loads: the functions may be called, the
    classes instantiated and given state while unpickling.

    Each item is a function/class, named in files as ``{__module__}.{__qualname__}``, or a
    ``(function/class, "full.path")`` pair naming it as the checkpoint does. The modules ``sys``,
    ``os``, ``posix`` and ``nt`` stay blocked whatever is added.
    """
    _unpickler._user_safe.update(safe_globals)


def clear_safe_globals() -> None:
    """Clear the globals added with :func:`add_safe_globals`."""
    _unpickler._user_safe.clear()


def get_safe_globals() -> list[Callable | tuple[Callable, str]]:
    """Return the globals added with :func:`add_safe_globals`."""
    return list(_unpickler._user_safe)


class safe_globals:
    """Context manager that marks globals as safe for ``weights_only`` loads inside it."""

    def __init__(self, safe_globals: list[Callable | tuple[Callable, str]]):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._added = [g for g in self.safe_globals if g not in _unpickler._user_safe]
        _unpickler._user_safe.update(self._added)

    def __exit__(self, *exc) -> None:
        _unpickler._user_safe.difference_update(self._added)


def get_unsafe_globals_in_checkpoint(f) -> list[str]:
    """Return the ``module.name`` of the globals in a checkpoint that a ``weights_only`` load
    would refuse (neither allowed by default nor added with :func:`add_safe_globals`).

    The pickle is read statically (nothing is imported or run)."""
    safe = set(ALLOWED) | set(_unpickler.user_allowed())
    opened = open(f, "rb") if is_path(f) else None
    fh = opened if opened is not None else f
    try:
        start = fh.tell()
        if fh.read(4) != b"PK\x03\x04":
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        fh.seek(start)
        reader = ZipReader(fh, file_size(fh))
        if reader.has("constants.pkl"):
            raise ValueError(
                "Expected input to be a checkpoint returned by torch.save but got a torchscript "
                "checkpoint"
            )
        found = _unpickler.globals_in_pickle(reader.read("data.pkl"))
    finally:
        if opened is not None:
            opened.close()
    return sorted(found - safe)


del io, os

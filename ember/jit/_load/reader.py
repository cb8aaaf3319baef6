"""Read a TorchScript archive's records: ``version``, ``code/``, ``extra/``, and its pickles
(``data.pkl``, ``constants.pkl``) through ember's weights-only unpickler.

The unpickler is ``ember.serialization``'s restricted one, configured for an archive: its
allowed globals are only the weights-only defaults (tensors, storages, dtypes, ``OrderedDict``),
torch's list builders (``torch.jit._pickle.build_intlist``...), and the ``__torch__.*`` classes
the archive's own ``code/`` defines, each standing for an inert ``ArchiveObject`` whose state is
a dict of names. The user's ``add_safe_globals`` do not apply here. Nothing is imported, no
function the file names is called.
"""

from __future__ import annotations

import os
import sys
from pickle import UnpicklingError

import numpy as np

from ember.serialization import _rebuild as R
from ember.serialization._load import _restore_location, _storage_spec, _swap
from ember.serialization._unpickler import WeightsUnpickler, map_name
from ember.serialization._zip import ZipReader, file_size

__all__ = ["Archive", "ArchiveObject", "UnsafeArchiveError", "read_archive"]

# torch writes 1..(currently) 10; code and pickles have kept the same shape across them
_MAX_VERSION = 10


class UnsafeArchiveError(RuntimeError):
    """An archive asked for something ``ember.jit.load`` refuses to do (a global it may not
    name, code outside TorchScript); nothing of it has run."""


class ArchiveObject:
    """An object of a ``__torch__.*`` class from an archive's pickle: its class's qualified
    name and its attributes. Inert: it has no methods of the file's."""

    _qualname = "__torch__.?"

    def __setstate__(self, state) -> None:
        if type(state) not in (dict,) or not all(type(k) is str for k in state):
            raise UnsafeArchiveError(
                f"refused: the state of a {self._qualname} object in the pickle is a "
                f"{type(state).__name__}, not a dict of attribute names"
            )
        for k in state:
            if k.startswith("__"):
                raise UnsafeArchiveError(
                    f"refused: the pickle sets the dunder attribute {k!r} of a {self._qualname}"
                )
        self.__dict__["state"] = dict(state)

    def __repr__(self) -> str:
        return f"<{self._qualname} object from a TorchScript archive>"


def _build_list(*args):
    # torch.jit._pickle.build_intlist([1, 2]) etc.: the list itself
    if len(args) != 1 or type(args[0]) is not list:
        raise UnsafeArchiveError("refused: torch.jit._pickle list builder with odd arguments")
    return args[0]


def _restore_type_tag(value, type_str):
    if type(type_str) is not str:
        raise UnsafeArchiveError("refused: restore_type_tag with a non-string type")
    return value


_JIT_PICKLE = {
    f"torch.jit._pickle.{n}": _build_list
    for n in ("build_intlist", "build_tensorlist", "build_doublelist", "build_boollist",
              "build_genericlist")
}  # fmt: skip
_JIT_PICKLE["torch.jit._pickle.restore_type_tag"] = _restore_type_tag


class ArchiveUnpickler(WeightsUnpickler):
    """ember's weights-only unpickler allowing an archive's own classes (``classes`` maps a
    ``__torch__.*`` qualified name to its ``ArchiveObject`` subclass)."""

    def __init__(self, data, *, persistent_load, classes: dict):
        super().__init__(data, persistent_load=persistent_load)
        self.user = dict(_JIT_PICKLE)
        self.user.update(classes)
        self.user_ids = {id(v) for v in self.user.values()}
        self.classes = classes

    def _global(self):
        module = self._line().decode("utf-8")
        name = self._line().decode("utf-8")
        self.stack.append(self._resolve(module, name))

    def _stack_global(self):
        name = self.stack.pop()
        module = self.stack.pop()
        if type(name) is not str or type(module) is not str:
            raise UnpicklingError("STACK_GLOBAL requires str")
        self.stack.append(self._resolve(module, name))

    def _resolve(self, module: str, name: str):
        from ember.serialization._unpickler import resolve_global

        full = ".".join(map_name(module, name))
        if full.startswith("__torch__.") and full not in self.classes:
            raise UnsafeArchiveError(
                f"refused: the pickle names class {full}, which the archive's code does not define"
            )
        try:
            return resolve_global(module, name, self.user)
        except UnpicklingError:
            raise UnsafeArchiveError(
                f"refused: the pickle names GLOBAL {full}, which a TorchScript archive may not "
                "use (only tensors, storages, primitive containers and the archive's own "
                "__torch__ classes are allowed); nothing was run"
            ) from None

    def _reduce(self):
        func = self.stack[-2] if len(self.stack) >= 2 else None
        if isinstance(func, type) and issubclass(func, ArchiveObject):
            raise UnsafeArchiveError(
                f"refused: the pickle calls the class {getattr(func, '_qualname', func)!s} "
                "(REDUCE); archive objects are only built (NEWOBJ + BUILD)"
            )
        WeightsUnpickler._reduce(self)

    _dispatch = dict(WeightsUnpickler._dispatch)
    _dispatch[b"R"[0]] = _reduce
    _dispatch[b"c"[0]] = _global
    _dispatch[b"\x93"[0]] = _stack_global


class Archive:
    """The records of one archive: ``code`` (path -> source), ``extra`` names, the pickles."""

    def __init__(self, reader: ZipReader, restore, size: int):
        self.reader = reader
        self.restore = restore
        self.size = size
        self.byteorder = sys.byteorder

    def names(self) -> list[str]:
        return list(self.reader.records)

    def code_files(self) -> dict[str, str]:
        out = {}
        for name in self.reader.records:
            if name.startswith("code/") and name.endswith(".py"):
                raw = self.reader.read(name)
                try:
                    out[name] = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise UnsafeArchiveError(f"refused: {name} is not UTF-8 text") from None
        return out

    def extra_names(self) -> list[str]:
        return [n[len("extra/") :] for n in self.reader.records if n.startswith("extra/")]

    def read_extra(self, name: str) -> bytes | None:
        key = f"extra/{name}"
        return self.reader.read(key) if self.reader.has(key) else None

    def unpickle(self, name: str, folder: str, classes: dict):
        """Load pickle ``name`` whose storages are the records under ``folder``/."""
        if not self.reader.has(name):
            return None
        data = self.reader.read(name)
        loaded: dict = {}

        def persistent_load(pid):
            stype, key, location, numel = _storage_spec(pid)
            s = loaded.get(key)
            if s is not None:
                return s
            itemsize = 1 if stype.dtype is None else stype.dtype.itemsize
            rec = self.reader.record(f"{folder}/{key}")
            if rec.size != numel * itemsize:
                raise RuntimeError(
                    f"corrupt archive: record {folder}/{key} has {rec.size} bytes, the pickle "
                    f"says {numel * itemsize}"
                )
            arr = np.empty(rec.size, dtype=np.uint8)
            if rec.size:
                self.reader.read_into(rec, arr)
            if self.byteorder != sys.byteorder:
                _swap(arr, stype.dtype)
            s = self.restore(R.storage_of(arr, stype.dtype, key), location)
            loaded[key] = s
            return s

        try:
            obj, _ = ArchiveUnpickler(data, persistent_load=persistent_load, classes=classes).load()
        except UnpicklingError as e:
            raise UnsafeArchiveError(f"refused {name}: {e}") from None
        return obj


def read_archive(f, map_location=None) -> Archive:
    """Open ``f`` (a path or a seekable binary file) as a TorchScript archive."""
    restore = _restore_location(map_location)
    opened = None
    if isinstance(f, (str, os.PathLike)):
        opened = f = open(f, "rb")  # noqa: SIM115  (closed by the caller via Archive.close)
    try:
        reader = ZipReader(f, file_size(f))
    except RuntimeError:
        if opened is not None:
            opened.close()
        raise
    arc = Archive(reader, restore, file_size(f))
    arc.opened = opened
    version = "version" if reader.has("version") else ".data/version"
    if not reader.has(version):
        arc.close()
        raise RuntimeError("ember.jit.load: not a TorchScript archive (it has no 'version' record)")
    text = reader.read(version, limit=32).strip()
    if not text.isdigit() or not 1 <= int(text) <= _MAX_VERSION:
        arc.close()
        raise RuntimeError(
            f"ember.jit.load: archive version {text.decode(errors='replace')!r} is not one "
            f"ember reads (1..{_MAX_VERSION})"
        )
    if reader.has("byteorder"):
        order = reader.read("byteorder", limit=16)
        if order not in (b"little", b"big"):
            arc.close()
            raise RuntimeError(f"Unknown endianness type: {order.decode(errors='replace')!r}")
        arc.byteorder = order.decode()
    return arc


def _close(self) -> None:
    self.reader.close()
    if getattr(self, "opened", None) is not None:
        self.opened.close()


Archive.close = _close

"""``ember.load``: torch's zip format (torch >= 1.6) and its legacy pickle stream (< 1.6)."""

from __future__ import annotations

import io
import mmap as _mmap
import os
import pickle
import re
import struct
import sys
import warnings
import zipfile
from pickle import UnpicklingError

import numpy as np

from ember._core import dtype as D
from ember._core.device import as_device, device
from ember._core.storage import UntypedStorage
from ember.serialization import _rebuild as R
from ember.serialization._save import MAGIC_NUMBER, PROTOCOL_VERSION, is_path
from ember.serialization._unpickler import FullUnpickler, TorchNames, WeightsUnpickler
from ember.serialization._zip import CORRUPT_NOTE, ZipReader, file_size

MAX_FILE_FORMAT_VERSION = 10

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will "
    "likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
    "file from a trusted source."
)
_DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
    "weights_only https://pytorch.org/docs/stable/generated/torch.load.html."
)
_ACCELERATORS = ("cuda", "mps", "xpu", "hpu", "xla", "mtia", "privateuseone", "ipu")


class _UserError(Exception):
    """Carries an exception raised by the user's ``map_location`` out of the unpickler."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


def load(
    f,
    map_location=None,
    pickle_module=None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args,
):
    """Load an object saved with ``torch.save`` or ``ember.save`` from a file.

    .. warning::
        With ``weights_only=False`` this uses Python's unpickler, which can run arbitrary code
        hidden in the file. **Never load data from an untrusted source** that way. The default,
        ``weights_only=True``, loads only tensors, primitive types, dicts, lists, tuples, sets,
        ``OrderedDict`` and the globals added with :func:`add_safe_globals`; it never imports or
        calls anything else.

    Args:
        f: a path (``str`` / ``os.PathLike``) or a seekable binary file object. A path ending in
            ``.safetensors`` is read with :func:`load_safetensors`.
        map_location: where storages go: ``'cpu'``, a ``device``, a dict mapping saved locations
            (``'cuda:0'``) to new ones, or a callable ``(storage, location) -> storage | None``.
            ember has only the CPU: storages saved on a GPU load on the CPU, with a warning
            unless ``map_location`` says ``'cpu'``.
        pickle_module: with ``weights_only=False``, the module whose ``Unpickler`` to use.
        weights_only: restrict unpickling to weights (the default, as in torch >= 2.6).
        mmap: map the storages from the file instead of reading them (zip format, path only):
            a large checkpoint loads at once, its pages read when first touched. Tensors are
            private copy-on-write mappings: writing to them never changes the file.
        pickle_load_args: passed to the unpickler, e.g. ``encoding='latin1'`` for Python 2
            files.
    """
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError(
                "Can not safely load weights when explicit pickle_module is specified"
            )
        if pickle_load_args:
            warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    elif pickle_module is None:
        pickle_module = pickle
    pickle_load_args.setdefault("encoding", "utf-8")
    mmap = bool(mmap)

    if is_path(f) and os.fsdecode(os.fspath(f)).endswith(".safetensors"):
        from ember.serialization._safetensors import load_safetensors

        if isinstance(map_location, dict) or callable(map_location):
            kind = "dict" if isinstance(map_location, dict) else "callable"
            raise RuntimeError(
                f"Loading safetensors file with {kind} map_location is not supported. Use a "
                "device string or torch.device instead."
            )
        return load_safetensors(f, device="cpu" if map_location is None else map_location)

    restore = _restore_location(map_location)
    opened = open(f, "rb") if is_path(f) else None
    fh = opened if opened is not None else f
    try:
        _check_seekable(fh)
        start = fh.tell()
        magic = fh.read(4)
        fh.seek(start)
        if not magic:
            raise RuntimeError("ember.load: the file is empty (0 bytes): it holds no checkpoint.")
        try:
            if magic == b"PK\x03\x04":
                if mmap and opened is None:
                    raise ValueError("f must be a file path in order to use the mmap argument")
                return _load_zip(fh, restore, weights_only, mmap, pickle_module, pickle_load_args)
            if mmap:
                name = f"{f}, " if isinstance(f, str) else ""
                raise RuntimeError(
                    "mmap can only be used with files saved with "
                    f"`torch.save({name}_use_new_zipfile_serialization=True), "
                    "please torch.save your checkpoint with this option in order to use mmap."
                )
            return _load_legacy(fh, restore, weights_only, pickle_module, pickle_load_args)
        except UnpicklingError as e:
            if weights_only:
                raise UnpicklingError(weights_only_message(str(e))) from None
            raise
        except _UserError as e:
            raise e.error from None
    finally:
        if opened is not None:
            opened.close()


def weights_only_message(message: str) -> str:
    """torch's explanation around a weights-only unpickling error."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        return (
            "Weights only load failed. This file can still be loaded, to do so you have two "
            "options, \033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
            f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` "
            "please check the recommended steps in the following error message.\n\t"
            "WeightsUnpickler error: " + message + _DOCS_MESSAGE
        )
    updated = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if not re.search(r"whose module (\S+) is blocked", message):
        updated += (
            "Please file an issue with the following so that we can make `weights_only=True` "
            "compatible with your use case: WeightsUnpickler error: "
        )
    return updated + "\n\n" + message + _DOCS_MESSAGE


def _check_seekable(f) -> None:
    try:
        f.seek(f.tell())
    except (AttributeError, io.UnsupportedOperation) as e:
        msg = (
            f"{e}. You can only torch.load from a file that is seekable. Please pre-load the data "
            "into a buffer like io.BytesIO and try to load from it instead."
        )
        raise type(e)(msg) from None


# ------------------------------------------------------------------------------ map_location
def _no_cuda_restore(storage, location):
    # torch raises when the first storage is restored, not when load() is called
    raise RuntimeError(
        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
        "False. If you are running on a CPU-only machine, please use torch.load with "
        "map_location=torch.device('cpu') to map your storages to the CPU."
    )


def _restore_location(map_location):
    """Return ``restore(storage, location) -> storage`` for a ``map_location`` argument."""
    warned = []

    def default(storage, location):
        if location == "cpu":
            return storage
        kind = location.split(":", 1)[0]
        if kind in _ACCELERATORS:
            if not warned:
                warned.append(True)
                warnings.warn(
                    f"ember has no '{kind}' backend: storages saved on '{location}' are loaded on "
                    "the CPU. Pass map_location='cpu' to ember.load to say so and silence this "
                    "warning.",
                    UserWarning,
                    stacklevel=5,
                )
            return storage
        raise RuntimeError(
            "don't know how to restore data location of torch.storage.UntypedStorage (tagged "
            f"with {location})"
        )

    def to_target(storage, target):
        as_device(target)  # raises for anything but the CPU
        return storage

    if map_location is None:
        return default
    if isinstance(map_location, (str, bytes, device)):
        target = map_location.decode() if isinstance(map_location, bytes) else map_location
        if device(target).type == "cuda":
            return _no_cuda_restore
        as_device(target)
        return lambda storage, location: storage
    if isinstance(map_location, dict):

        def restore(storage, location):
            target = map_location.get(location, location)
            if target == location:
                return default(storage, location)
            return to_target(storage, target)

        return restore
    if not callable(map_location):
        raise TypeError(
            "map_location should be a str, a device, a dict or a callable, not "
            f"{type(map_location).__name__}"
        )

    def restore(storage, location):
        try:
            result = map_location(storage, location)
        except Exception as e:
            raise _UserError(e) from e
        if result is None:
            return default(storage, location)
        if isinstance(result, R.LoadedStorage):
            return result
        if isinstance(result, UntypedStorage):
            return R.storage_of(result._bytes, storage.dtype, storage.key)
        raise _UserError(
            TypeError(f"map_location returned a {type(result).__name__}, not a storage or None")
        )

    return restore


# ------------------------------------------------------------------------------ zip format
def _scalar_name(dtype) -> str:
    return D.scalar_type_name(dtype) if isinstance(dtype, D.dtype) else repr(dtype)


def _storage_spec(pid):
    """Check a persistent id and return (storage type, key, location, numel)."""
    if len(pid) != 5:
        raise UnpicklingError(f"a storage persistent id has {len(pid)} fields, not 5")
    _, stype, key, location, numel = pid
    if isinstance(key, bytes):
        key = key.decode("ascii")
    if isinstance(location, bytes):
        location = location.decode("ascii")
    if not isinstance(stype, R.StorageType):
        raise UnpicklingError(f"a storage persistent id names {stype!r}, not a storage type")
    if type(key) is not str or type(location) is not str or type(numel) is not int or numel < 0:
        raise UnpicklingError(f"malformed storage persistent id {pid!r:.200}")
    if isinstance(stype.dtype, R.ForeignDtype):
        raise RuntimeError(f"ember cannot load torch.{stype.name}: it has no such dtype")
    return stype, key, location, numel


def _swap(arr: np.ndarray, dtype) -> np.ndarray:
    if dtype is not None and dtype.itemsize > 1:
        typed = arr.view(dtype.np if dtype is not D.bfloat16 else np.uint16)
        typed.byteswap(inplace=True)
    return arr


def _load_zip(fh, restore, weights_only, use_mmap, pickle_module, pickle_load_args):
    reader = ZipReader(fh, file_size(fh))
    if reader.has("constants.pkl"):
        raise RuntimeError(
            "ember.load received a TorchScript archive (it has constants.pkl): load it with "
            "ember.jit.load, which compiles its code without running anything from the file."
        )
    version_name = "version" if reader.has("version") else ".data/version"
    if not reader.has(version_name):
        raise RuntimeError(
            "PytorchStreamReader failed locating file version: the archive has no 'version' "
            "record, so it is not a torch.save checkpoint." + CORRUPT_NOTE
        )
    text = reader.read(version_name, limit=32).strip()
    if not text.isdigit() or not 1 <= int(text) <= MAX_FILE_FORMAT_VERSION:
        raise RuntimeError(
            f"Attempted to read a PyTorch file with version {text.decode(errors='replace')!r}, "
            f"but the maximum supported version for reading is {MAX_FILE_FORMAT_VERSION}."
        )
    byteorder = sys.byteorder
    if reader.has("byteorder"):
        order = reader.read("byteorder", limit=16)
        if order not in (b"little", b"big"):
            raise RuntimeError(f"Unknown endianness type: {order.decode(errors='replace')!r}")
        byteorder = order.decode()
    data_pkl = reader.read("data.pkl")
    mapped = None
    if use_mmap:
        mapped = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_COPY)
    loaded: dict[str, R.LoadedStorage] = {}

    def persistent_load(pid):
        if type(pid) is not tuple or not pid or pid[0] not in ("storage", b"storage"):
            raise UnpicklingError(f"Unknown typename for persistent_load: {pid!r:.100}")
        stype, key, location, numel = _storage_spec(pid)
        s = loaded.get(key)
        if s is not None:
            return s
        dtype = stype.dtype
        itemsize = 1 if dtype is None else dtype.itemsize
        nbytes = numel * itemsize
        rec = reader.record(f"data/{key}")
        if rec.size != nbytes:
            raise RuntimeError(
                f"record size ({rec.size} bytes) does not match expected size ({nbytes} bytes = "
                f"{numel} elements * {itemsize} bytes/element) for dtype "
                f"{_scalar_name(dtype or D.uint8)}." + CORRUPT_NOTE
            )
        start = reader.check(rec)
        if mapped is not None and rec.method == zipfile.ZIP_STORED and nbytes:
            arr = np.frombuffer(mapped, np.uint8, nbytes, start)
        else:
            arr = np.empty(nbytes, dtype=np.uint8)
            if nbytes:
                reader.read_into(rec, arr)
        if byteorder != sys.byteorder:
            _swap(arr, dtype)
        s = restore(R.storage_of(arr, dtype, key), location)
        loaded[key] = s
        return s

    if weights_only:
        obj, _ = WeightsUnpickler(
            data_pkl, persistent_load=persistent_load, encoding=pickle_load_args["encoding"]
        ).load()
        return obj
    unpickler = full_unpickler(pickle_module)(io.BytesIO(data_pkl), **pickle_load_args)
    unpickler._ember_persistent_load = persistent_load
    return unpickler.load()


def full_unpickler(pickle_module):
    """Return an Unpickler class of ``pickle_module`` that maps torch's names to ember's."""
    if pickle_module is pickle:
        return FullUnpickler
    return type("Unpickler", (TorchNames, pickle_module.Unpickler), {})


# ------------------------------------------------------------------------------ legacy stream
class _BufferFile:
    """A read-only file over a bytes-like buffer, for the full unpickler on a legacy stream."""

    def __init__(self, buf, pos: int):
        self.buf, self.pos = buf, pos

    def read(self, n: int = -1) -> bytes:
        end = len(self.buf) if n < 0 else min(self.pos + n, len(self.buf))
        out = self.buf[self.pos : end]
        self.pos = end
        return out

    def readline(self) -> bytes:
        i = self.buf.find(b"\n", self.pos)
        end = len(self.buf) if i < 0 else i + 1
        out = self.buf[self.pos : end]
        self.pos = end
        return out


def _reject_pid(pid):
    raise UnpicklingError("a legacy checkpoint header holds a persistent id")


def _load_legacy(fh, restore, weights_only, pickle_module, pickle_load_args):
    start = fh.tell()
    try:
        buf = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_READ)
        pos = start
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        buf = fh.read()
        pos = 0
    try:
        return _read_legacy(buf, pos, fh, restore, weights_only, pickle_module, pickle_load_args)
    finally:
        if isinstance(buf, _mmap.mmap):
            try:
                buf.close()  # every storage was copied out
            except BufferError:  # an exception's traceback still holds a view of it
                pass


def _read_legacy(buf, pos, fh, restore, weights_only, pickle_module, pickle_load_args):
    if len(buf) >= pos + 262 and buf[pos + 257 : pos + 262] == b"ustar":
        raise RuntimeError(
            "ember cannot load checkpoints in torch's legacy .tar format (torch < 0.4): load it "
            "with torch and save it again with torch.save."
        )
    if buf[pos : pos + 1] != b"\x80":
        # not a zip archive nor a pickle stream: the unpickler's error on its first byte
        code = buf[pos] if len(buf) > pos else 0
        if weights_only:
            raise UnpicklingError(f"Unsupported operand {code}")
        key = chr(code) if 32 <= code < 127 else f"\\x{code:02x}"
        raise UnpicklingError(f"invalid load key, '{key}'.")
    encoding = pickle_load_args["encoding"]

    def header(pos):
        return WeightsUnpickler(buf, pos, persistent_load=_reject_pid, encoding=encoding).load()

    magic, pos = header(pos)
    if magic != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol_version, pos = header(pos)
    if protocol_version != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {protocol_version!r:.50}")
    sys_info, pos = header(pos)
    little = not isinstance(sys_info, dict) or sys_info.get("little_endian", True)
    storages: dict[str, R.LoadedStorage] = {}
    views: dict[str, R.LoadedStorage] = {}
    roots: dict[str, tuple] = {}  # key -> (array, dtype, numel)

    def persistent_load(pid):
        if type(pid) is not tuple or len(pid) != 6 or pid[0] not in ("storage", b"storage"):
            raise UnpicklingError(f"Unknown saved id: {pid!r:.100}")
        stype, key, location, numel = _storage_spec(pid[:5])
        view_metadata = pid[5]
        if key not in storages:
            dtype = stype.dtype
            nbytes = numel * (1 if dtype is None else dtype.itemsize)
            if nbytes > len(buf) - pos_now[0]:
                raise RuntimeError(
                    f"storage {key} claims {nbytes} bytes, more than the file holds." + CORRUPT_NOTE
                )
            arr = np.empty(nbytes, dtype=np.uint8)
            roots[key] = (arr, dtype, numel)
            storages[key] = restore(R.storage_of(arr, dtype, key), location)
        s = storages[key]
        if view_metadata is None:
            return s
        view_key, offset, size = view_metadata
        if view_key not in views:
            item = 1 if s.dtype is None else s.dtype.itemsize
            if offset < 0 or size < 0 or (offset + size) * item > s._bytes.nbytes:
                raise RuntimeError(f"storage view {view_key} lies outside its storage")
            part = s._bytes[offset * item : (offset + size) * item]
            views[view_key] = R.storage_of(part, s.dtype, view_key)
        return views[view_key]

    pos_now = [pos]
    if weights_only:
        result, pos = WeightsUnpickler(
            buf, pos, persistent_load=persistent_load, encoding=encoding
        ).load()
    else:
        src = _BufferFile(buf, pos)
        unpickler = full_unpickler(pickle_module)(src, **pickle_load_args)
        unpickler._ember_persistent_load = persistent_load
        result = unpickler.load()
        pos = src.pos
    keys, pos = header(pos)
    if type(keys) is not list:
        raise RuntimeError("corrupt legacy checkpoint: the storage key list is missing")
    for key in keys:
        if key not in roots:
            raise RuntimeError(f"corrupt legacy checkpoint: unknown storage key {key!r:.50}")
        arr, dtype, numel = roots[key]
        if pos + 8 > len(buf):
            raise RuntimeError(f"legacy checkpoint truncated before storage {key}." + CORRUPT_NOTE)
        (count,) = struct.unpack("<q", buf[pos : pos + 8])
        pos += 8
        if count != numel:
            raise RuntimeError(
                f"storage {key} holds {count} elements in the file but {numel} in the pickle."
                + CORRUPT_NOTE
            )
        end = pos + arr.nbytes
        if end > len(buf):
            raise RuntimeError(f"legacy checkpoint truncated inside storage {key}." + CORRUPT_NOTE)
        arr[:] = np.frombuffer(buf, np.uint8, arr.nbytes, pos)
        if not little:
            _swap(arr, dtype)
        pos = end
    if isinstance(buf, _mmap.mmap):
        fh.seek(pos)
    return result

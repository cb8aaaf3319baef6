"""``ember.save``: torch's zip format (or its legacy stream), written atomically to paths."""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import struct
import sys
import tempfile

from ember.serialization._pickler import TorchPickler
from ember.serialization._zip import ZipWriter

DEFAULT_PROTOCOL = 2
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
FILE_FORMAT_VERSION = b"3\n"


def is_path(f) -> bool:
    return isinstance(f, (str, os.PathLike))


def save(
    obj: object,
    f,
    pickle_module=pickle,
    pickle_protocol: int = DEFAULT_PROTOCOL,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    """Save an object to a file in torch's format, readable by ``torch.load`` and ``ember.load``.

    Tensors keep their dtype, shape, strides, storage offset and ``requires_grad``; views of one
    storage are saved once and load back sharing memory. Saving to a path is atomic: the data
    goes to a temporary file in the same folder, is flushed to disk, then renamed over ``f``,
    so an interrupted save leaves any previous file intact.

    Args:
        obj: the object to save (tensors, state dicts, nested containers of them...).
        f: a path (``str`` or ``os.PathLike``) or a binary file object with ``write``.
        pickle_module: must be the standard ``pickle`` module.
        pickle_protocol: the pickle protocol of ``data.pkl`` (torch's default, 2, is the one
            ``torch.load(weights_only=True)`` reads).
    """
    if pickle_module is not pickle:
        raise ValueError("ember.save supports only the standard `pickle` module as pickle_module")
    write = _write_zip if _use_new_zipfile_serialization else _write_legacy
    if is_path(f):
        path = os.fsdecode(os.fspath(f))
        stem = os.path.splitext(os.path.basename(path))[0] or "archive"
        atomic_write(
            path, lambda fh: write(obj, fh, stem, pickle_protocol, _disable_byteorder_record)
        )
        return
    if not hasattr(f, "write"):
        raise AttributeError(
            "expected 'f' to be string, path, or a file-like object with a 'write' attribute"
        )
    write(obj, f, "archive", pickle_protocol, _disable_byteorder_record)


def _pickle(obj, protocol: int) -> tuple[io.BytesIO, TorchPickler]:
    buf = io.BytesIO()
    pickler = TorchPickler(buf, protocol)
    pickler.dump(obj)
    return buf, pickler


def _write_zip(obj, fh, folder: str, protocol: int, no_byteorder: bool) -> None:
    buf, pickler = _pickle(obj, protocol)
    w = ZipWriter(fh, folder)
    w.write_record("data.pkl", buf.getbuffer())
    w.write_record(".format_version", b"1")
    w.write_record(".storage_alignment", b"64")
    if not no_byteorder:
        w.write_record("byteorder", sys.byteorder.encode())
    for s in pickler.storages:
        w.write_record(f"data/{s.key}", s.bytes())
    w.write_record("version", FILE_FORMAT_VERSION)
    w.write_record(".data/serialization_id", _serialization_id(w))
    w.close()


def _serialization_id(w: ZipWriter) -> bytes:
    # 40 ASCII digits as torch writes: a hash of the record names, then the combined CRC32s
    names = hashlib.blake2b(b"\0".join(e[0] for e in w.entries), digest_size=8).digest()
    crc = 0
    for e in w.entries:
        crc = (crc * 31 + e[1]) & 0xFFFFFFFFFFFFFFFF
    return f"{int.from_bytes(names, 'little'):020d}{crc:020d}".encode()


def _write_legacy(obj, fh, folder: str, protocol: int, no_byteorder: bool) -> None:
    """torch's pre-1.6 format: pickles of a magic number, the protocol, system info, the object
    (storage persistent ids carry a 6th field, the view metadata, always None here), the storage
    keys, then each storage as its element count (int64) and its bytes."""
    sys_info = {
        "protocol_version": PROTOCOL_VERSION,
        "little_endian": sys.byteorder == "little",
        "type_sizes": {"short": 2, "int": 4, "long": 4},
    }
    for header in (MAGIC_NUMBER, PROTOCOL_VERSION, sys_info):
        pickle.dump(header, fh, protocol=protocol)
    buf = io.BytesIO()
    pickler = _LegacyPickler(buf, protocol)
    pickler.dump(obj)
    fh.write(buf.getbuffer())
    pickle.dump([s.key for s in pickler.storages], fh, protocol=protocol)
    for s in pickler.storages:
        data = s.bytes()
        numel = data.nbytes if s.dtype is None else data.nbytes // s.dtype.itemsize
        fh.write(struct.pack("<q", numel))
        fh.write(memoryview(data))


class _LegacyPickler(TorchPickler):
    def persistent_id(self, obj):
        pid = super().persistent_id(obj)
        return None if pid is None else pid + (None,)


def _default_mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        pass
    umask = None
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    umask = int(line.split()[1], 8)
    except OSError:
        pass
    if umask is None:
        umask = os.umask(0o022)
        os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: str, write, by_name: bool = False) -> None:
    """Call ``write(file)`` on a temporary file beside ``path`` (``write(name)`` with
    ``by_name``), fsync it, rename it to ``path``.

    A crash at any point leaves either the old file or the complete new one at ``path``."""
    path = os.path.realpath(path)  # write through a symlink, as open() would
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory", path)
    mode = _default_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        if by_name:
            os.close(fd)
            write(tmp)
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        else:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)

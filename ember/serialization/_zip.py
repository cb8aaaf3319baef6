"""The zip container of torch's checkpoint format: an aligned writer and a validating reader.

torch writes every record uncompressed (STORED) with its data starting at a multiple of 64
bytes, the padding held in a ``FB`` extra field of the local header, sizes and CRC in a data
descriptor after the data (general-purpose flag bit 3), and always a zip64 end record. The
writer below produces the same layout, so a file written here has the offsets torch's own
reader computes. The reader takes the archive's folder from its first record, as torch does,
and never trusts a size it has not checked against the file.
"""

from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib

import numpy as np

ALIGNMENT = 64
_U32 = 0xFFFFFFFF
_FLAGS = 0x0808  # bit 3: sizes in a data descriptor; bit 11: UTF-8 names
_LOCAL = struct.Struct("<IHHHHHIIIHH")  # 30 bytes
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # 46 bytes
_DESCRIPTOR32 = struct.Struct("<IIII")
_DESCRIPTOR64 = struct.Struct("<IIQQ")
_ZIP64_END = struct.Struct("<IQHHIIQQQQ")  # 56 bytes
_ZIP64_LOCATOR = struct.Struct("<IIQI")
_END = struct.Struct("<IHHHHIIH")
_CHUNK = 1 << 22

CORRUPT_NOTE = (
    " The checkpoint file is likely corrupted: it was not saved completely, was damaged in "
    "transfer, or was modified after saving."
)


class ZipWriter:
    """Write records of a torch checkpoint archive to a binary stream, sequentially."""

    def __init__(self, f, folder: str):
        self.f = f
        self.folder = folder
        self.pos = 0
        self.entries: list[tuple[bytes, int, int, int]] = []  # name, crc, size, header offset

    def _write(self, data) -> None:
        self.f.write(data)
        self.pos += len(data)

    def write_record(self, name: str, data) -> None:
        """Append record ``name`` holding the bytes of ``data`` (bytes or a memoryview)."""
        full = f"{self.folder}/{name}".encode()
        view = memoryview(data).cast("B")
        size = view.nbytes
        start = self.pos + _LOCAL.size + len(full) + 4
        pad = -start % ALIGNMENT
        extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
        header = _LOCAL.pack(0x04034B50, 0, _FLAGS, 0, 0, 0, 0, 0, 0, len(full), len(extra))
        offset = self.pos
        self._write(header + full + extra)
        crc = 0
        for i in range(0, size, _CHUNK):  # CRC each chunk while it is in cache, then write it
            part = view[i : i + _CHUNK]
            crc = zlib.crc32(part, crc)
            self._write(part)
        if size >= _U32 or offset >= _U32:
            self._write(_DESCRIPTOR64.pack(0x08074B50, crc, size, size))
        else:
            self._write(_DESCRIPTOR32.pack(0x08074B50, crc, size, size))
        self.entries.append((full, crc, size, offset))

    def close(self) -> None:
        """Write the central directory and the end records."""
        cd_start = self.pos
        parts = []
        for name, crc, size, offset in self.entries:
            extra = b""
            fields = []
            if size >= _U32:
                fields += [size, size]
            if offset >= _U32:
                fields.append(offset)
            if fields:
                extra = struct.pack(f"<HH{len(fields)}Q", 1, 8 * len(fields), *fields)
            parts.append(
                _CENTRAL.pack(
                    0x02014B50,
                    45 if fields else 0,
                    45 if fields else 0,
                    _FLAGS,
                    0,
                    0,
                    0,
                    crc,
                    min(size, _U32),
                    min(size, _U32),
                    len(name),
                    len(extra),
                    0,
                    0,
                    0,
                    0,
                    min(offset, _U32),
                )
                + name
                + extra
            )
        directory = b"".join(parts)
        self._write(directory)
        n = len(self.entries)
        end64 = self.pos
        self._write(
            _ZIP64_END.pack(0x06064B50, 44, 30, 45, 0, 0, n, n, len(directory), cd_start)
            + _ZIP64_LOCATOR.pack(0x07064B50, 0, end64, 1)
            + _END.pack(
                0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF), min(len(directory), _U32),
                min(cd_start, _U32), 0,
            )
        )  # fmt: skip


class Record:
    """Where one record's bytes sit in the file."""

    __slots__ = ("name", "header_offset", "size", "compressed_size", "method", "info")

    def __init__(self, info: zipfile.ZipInfo):
        self.info = info
        self.name = info.filename
        self.header_offset = info.header_offset
        self.size = info.file_size
        self.compressed_size = info.compress_size
        self.method = info.compress_type


class ZipReader:
    """Read the records of a torch checkpoint archive from a seekable binary file."""

    def __init__(self, f, file_size: int):
        self.f = f
        self.file_size = file_size
        try:
            self.zf = zipfile.ZipFile(f)
            infos = self.zf.infolist()
        except Exception as e:  # BadZipFile, struct.error, ValueError, ... on a damaged file
            raise RuntimeError(
                "PytorchStreamReader failed reading zip archive: failed finding central "
                f"directory ({type(e).__name__}: {e})." + CORRUPT_NOTE
            ) from None
        if not infos:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: it is empty.")
        first = infos[0].filename
        self.folder = first.split("/", 1)[0] if "/" in first else ""
        prefix = self.folder + "/"
        self.records = {
            i.filename[len(prefix) :]: Record(i) for i in infos if i.filename.startswith(prefix)
        }

    def has(self, name: str) -> bool:
        return name in self.records

    def record(self, name: str) -> Record:
        rec = self.records.get(name)
        if rec is None:
            raise RuntimeError(
                f"PytorchStreamReader failed locating file {name}: file not found." + CORRUPT_NOTE
            )
        return rec

    def data_offset(self, rec: Record) -> int:
        """Return the file offset where the (STORED) bytes of ``rec`` start, checked."""
        f = self.f
        if not 0 <= rec.header_offset < self.file_size:
            raise self._bad(rec, "its local header lies outside the file")
        f.seek(rec.header_offset)
        header = f.read(_LOCAL.size)
        if len(header) != _LOCAL.size:
            raise self._bad(rec, "its local header lies past the end of the file")
        sig, *_, name_len, extra_len = _LOCAL.unpack(header)
        if sig != 0x04034B50:
            raise self._bad(rec, "its local header is missing")
        start = rec.header_offset + _LOCAL.size + name_len + extra_len
        end = start + rec.compressed_size
        if end > self.file_size:
            raise self._bad(rec, f"its {rec.compressed_size} bytes run past the end of the file")
        return start

    def _bad(self, rec: Record, why: str) -> RuntimeError:
        return RuntimeError(
            f"PytorchStreamReader failed reading file {rec.name}: {why}." + CORRUPT_NOTE
        )

    def read(self, name: str, limit: int | None = None) -> bytes:
        """Return the bytes of record ``name`` (a small record such as data.pkl)."""
        rec = self.record(name)
        if limit is not None and rec.size > limit:
            raise self._bad(rec, f"it is {rec.size} bytes, more than the {limit} expected")
        self.check(rec)
        out = np.empty(rec.size, dtype=np.uint8)
        self.read_into(rec, out)
        return out.tobytes()

    def check(self, rec: Record) -> int:
        """Check that the record's bytes can be in the file (before allocating room for them);
        return where its data starts."""
        start = self.data_offset(rec)
        if rec.method == zipfile.ZIP_STORED:
            if rec.compressed_size != rec.size:
                raise self._bad(rec, "its stored and uncompressed sizes differ")
        elif rec.method == zipfile.ZIP_DEFLATED:
            # deflate expands at most ~1032:1; a larger claim is a damaged header, not data
            if rec.size > 1032 * rec.compressed_size + 1024:
                raise self._bad(rec, "its uncompressed size cannot come from its compressed size")
        else:
            raise self._bad(rec, f"its compression method {rec.method} is not supported")
        return start

    def read_into(self, rec: Record, out: np.ndarray) -> None:
        """Fill the uint8 array ``out`` (exactly ``rec.size`` bytes) with the record's bytes."""
        start = self.check(rec)
        if rec.method == zipfile.ZIP_STORED:
            self.f.seek(start)
            got = _readinto(self.f, memoryview(out))
            if got != rec.size:
                raise self._bad(rec, f"read {got} of its {rec.size} bytes")
            return
        try:
            with self.zf.open(rec.info) as src:
                got = _readinto(src, memoryview(out))
                if got != rec.size or src.read(1):
                    raise self._bad(rec, "its uncompressed size does not match its header")
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as e:
            raise self._bad(rec, f"{type(e).__name__}: {e}") from None

    def close(self) -> None:
        self.zf.close()


def _readinto(f, view: memoryview) -> int:
    """Read into ``view`` until it is full or the stream ends; return the bytes read."""
    total, n = 0, view.nbytes
    while total < n:
        got = f.readinto(view[total:]) if hasattr(f, "readinto") else None
        if got is None:
            chunk = f.read(n - total)
            got = len(chunk)
            view[total : total + got] = chunk
        if not got:
            break
        total += got
    return total


def file_size(f) -> int:
    """Return the size of a seekable binary file, leaving its position unchanged."""
    try:
        return os.fstat(f.fileno()).st_size
    except (AttributeError, OSError, io.UnsupportedOperation):
        pos = f.tell()
        size = f.seek(0, io.SEEK_END)
        f.seek(pos)
        return size

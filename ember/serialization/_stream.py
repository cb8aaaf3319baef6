"""``torch.PyTorchFileReader`` / ``torch.PyTorchFileWriter``: record-level access to the zip
archives ``save`` writes, for code that reads or writes checkpoints record by record
(Lightning's lazy loader, sharded-checkpoint tools)."""

from __future__ import annotations

import os
import sys

from ember.serialization._save import FILE_FORMAT_VERSION, _serialization_id
from ember.serialization._zip import ZipReader, ZipWriter, file_size

__all__ = ["PyTorchFileReader", "PyTorchFileWriter"]


class PyTorchFileReader:
    """Read the records of a torch zip archive by name (``"data.pkl"``, ``"data/0"``)."""

    def __init__(self, file) -> None:
        if isinstance(file, (str, os.PathLike)):
            self._owned = open(file, "rb")  # noqa: SIM115 (kept open as torch's reader is)
            file = self._owned
        self._zip = ZipReader(file, file_size(file))

    def get_all_records(self) -> list[str]:
        """Return the names of the archive's records (relative to its folder)."""
        return list(self._zip.records)

    def has_record(self, name: str) -> bool:
        """Return True if the archive holds record ``name``."""
        return self._zip.has(name)

    def get_record(self, name: str) -> bytes:
        """Return the bytes of record ``name``."""
        return self._zip.read(name)

    def get_record_offset(self, name: str) -> int:
        """Return the file offset where the bytes of record ``name`` start."""
        return self._zip.data_offset(self._zip.record(name))

    def get_record_size(self, name: str) -> int:
        """Return the size in bytes of record ``name``."""
        return self._zip.record(name).size

    def serialization_id(self) -> str:
        """Return the archive's ``.data/serialization_id`` (empty if it has none)."""
        if not self._zip.has(".data/serialization_id"):
            return ""
        return self._zip.read(".data/serialization_id").decode()


class PyTorchFileWriter:
    """Write a torch zip archive record by record; ``write_end_of_file`` finishes it."""

    def __init__(self, file) -> None:
        if isinstance(file, (str, os.PathLike)):
            path = os.fsdecode(os.fspath(file))
            self._owned = open(path, "wb")  # noqa: SIM115 (closed by write_end_of_file)
            file = self._owned
            folder = os.path.splitext(os.path.basename(path))[0] or "archive"
        else:
            self._owned = None
            folder = "archive"
        self._zip = ZipWriter(file, folder)
        self._written: set[str] = set()
        self._done = False

    def archive_name(self) -> str:
        """Return the folder the records are written under."""
        return self._zip.folder

    def write_record(self, name: str, data, size: int | None = None) -> None:
        """Append record ``name`` with the first ``size`` bytes of ``data``."""
        if self._done:
            raise RuntimeError("PytorchStreamWriter: the archive is already finished")
        if name in self._written:
            raise RuntimeError(f"Tried to serialize file twice: {name}")
        view = memoryview(data).cast("B")
        self._zip.write_record(name, view if size is None else view[:size])
        self._written.add(name)

    def get_all_written_records(self) -> set[str]:
        """Return the names of the records written so far."""
        return set(self._written)

    def write_end_of_file(self) -> None:
        """Write the closing records (version, byteorder, serialization id) and the directory."""
        if self._done:
            return
        for name, data in (("version", FILE_FORMAT_VERSION), ("byteorder", sys.byteorder)):
            if name not in self._written:
                self.write_record(name, data if isinstance(data, bytes) else data.encode())
        self._zip.write_record(".data/serialization_id", _serialization_id(self._zip))
        self._zip.close()
        self._done = True
        if self._owned is not None:
            self._owned.close()

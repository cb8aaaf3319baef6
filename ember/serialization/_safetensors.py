"""safetensors files: a JSON header and raw little-endian tensors, nothing executable.

Writing goes through the ``safetensors`` package (the optional extra ``ember[serialization]``),
so files are exactly what ``safetensors.torch.load_file`` expects. Reading needs no package: the
format is an 8-byte header length, the JSON header, then the data, which is memory-mapped.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import sys

import numpy as np

from ember._core import dtype as D
from ember._core.device import as_device
from ember._core.storage import array_ptr, owner_of
from ember._core.tensor import Tensor, _wrap
from ember.serialization._save import atomic_write

_CODES = {
    D.float64: "F64",
    D.float32: "F32",
    D.float16: "F16",
    D.bfloat16: "BF16",
    D.int64: "I64",
    D.int32: "I32",
    D.int16: "I16",
    D.int8: "I8",
    D.uint8: "U8",
    D.bool: "BOOL",
    D.complex64: "C64",
}
_FROM_CODE = {code: dt for dt, code in _CODES.items()}
_MAX_HEADER = 100_000_000  # the limit the safetensors library enforces


def _import_safetensors():
    try:
        import safetensors
    except ImportError:
        raise ImportError(
            "saving safetensors files needs the `safetensors` package: "
            "pip install 'ember[serialization]' (or pip install safetensors)"
        ) from None
    return safetensors


def _check_tensors(tensors) -> None:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    spans: dict[int, list] = {}
    for k, v in tensors.items():
        if not isinstance(v, Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected torch.Tensor but received {type(v)}")
        a = v._data
        if a.size:
            owner = owner_of(a)
            start = array_ptr(a)
            spans.setdefault(id(owner), []).append((start, start + a.nbytes, k))
    failing = []
    for group in spans.values():
        group.sort()
        names, end = [group[0][2]], group[0][1]
        for s, e, k in group[1:]:
            if s < end:
                names.append(k)
                end = max(end, e)
            else:
                if len(names) > 1:
                    failing.append(names)
                names, end = [k], e
        if len(names) > 1:
            failing.append(names)
    if failing:
        raise RuntimeError(
            "\n            Some tensors share memory, this will lead to duplicate memory on disk "
            "and potential differences when loading them again: "
            f"{failing}.\n            A potential way to correctly save your model is to use "
            "`save_model`.\n            More information at "
            "https://huggingface.co/docs/safetensors/torch_shared_tensors\n            "
        )
    for k, v in tensors.items():
        if not v.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. It "
                "either means you are trying to save tensors which are reference of each other in "
                "which case it's recommended to save only the full tensors, and reslice at load "
                "time, or simply call `.contiguous()` on your tensor to pack it before saving."
            )
        if v.dtype not in _CODES:
            raise ValueError(f"safetensors cannot store tensors of dtype {v.dtype} (`{k}`)")


def save_safetensors(
    tensors: dict[str, Tensor], path, metadata: dict[str, str] | None = None
) -> None:
    """Save a dict of contiguous tensors that share no memory to a safetensors file at ``path``
    (atomically), with optional text ``metadata``; as ``safetensors.torch.save_file``."""
    st = _import_safetensors()
    _check_tensors(tensors)
    keep = []
    specs = {}
    for k, v in tensors.items():
        a = v._data
        if sys.byteorder != "little":
            a = a.byteswap()
        a = np.ascontiguousarray(a).reshape(-1)
        keep.append(a)
        if hasattr(st, "TensorSpec"):
            specs[k] = st.TensorSpec(
                dtype=v.dtype.name, shape=list(v.shape), data_ptr=a.ctypes.data, data_len=a.nbytes
            )
        else:  # safetensors < 0.8 takes the bytes themselves
            raw = np.ndarray((a.nbytes,), np.uint8, buffer=a).tobytes()
            specs[k] = {"dtype": _CODES[v.dtype], "shape": list(v.shape), "data": raw}

    atomic_write(
        os.fsdecode(os.fspath(path)),
        lambda tmp: st.serialize_file(specs, tmp, metadata=metadata),
        by_name=True,
    )
    del keep


def read_header(path) -> tuple[dict, int]:
    """Return the JSON header of a safetensors file and the offset where its data starts."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        if len(head) != 8:
            raise RuntimeError(f"{path} is not a safetensors file: it is shorter than 8 bytes")
        (n,) = struct.unpack("<Q", head)
        if n > _MAX_HEADER or 8 + n > size:
            raise RuntimeError(f"{path} is not a safetensors file: its header size {n} is invalid")
        try:
            header = json.loads(f.read(n))
        except (ValueError, UnicodeDecodeError) as e:
            raise RuntimeError(f"{path}: the safetensors header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise RuntimeError(f"{path}: the safetensors header is not a JSON object")
    return header, 8 + n


def load_safetensors(path, device="cpu") -> dict[str, Tensor]:
    """Load the tensors of a safetensors file (memory-mapped, copy-on-write) as a dict."""
    as_device(device)
    path = os.fsdecode(os.fspath(path))
    header, start = read_header(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) if size else b""
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _FROM_CODE[info["dtype"]]
            shape = [int(s) for s in info["shape"]]
            begin, end = (int(o) for o in info["data_offsets"])
        except (KeyError, TypeError, ValueError) as e:
            raise RuntimeError(f"{path}: bad header entry for tensor {name!r}: {e!r}") from None
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if min(shape, default=0) < 0 or end - begin != numel * dtype.itemsize or begin < 0:
            raise RuntimeError(f"{path}: tensor {name!r} has a size that does not match its data")
        if start + end > size:
            raise RuntimeError(f"{path}: tensor {name!r} lies past the end of the file")
        if numel:
            arr = np.frombuffer(mapped, dtype.np, numel, start + begin)
        else:
            arr = np.empty(0, dtype.np)
        if sys.byteorder != "little":
            arr = arr.byteswap()
        out[name] = _wrap(arr.reshape(shape))
    return out


def safetensors_metadata(path) -> dict[str, str] | None:
    """Return the text metadata of a safetensors file (None if it has none)."""
    header, _ = read_header(os.fsdecode(os.fspath(path)))
    return header.get("__metadata__")

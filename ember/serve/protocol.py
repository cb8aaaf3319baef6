"""Frames between the server and its worker processes: a 4-byte length, then a pickle.

Both ends are ember-serve's own processes over a private pipe, so pickle carries only what
the server itself sent (request bodies are bytes/str/JSON values, answers are bytes).
"""

from __future__ import annotations

import asyncio
import pickle
import struct

__all__ = ["read_frame", "read_frame_async", "write_frame"]

_HEADER = struct.Struct("!I")


def encode(obj) -> bytes:
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


def write_frame(stream, obj) -> None:
    """Write one frame to a binary file and flush it."""
    stream.write(encode(obj))
    stream.flush()


def _read_exact(stream, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(stream):
    """Read one frame from a binary file; None at end of file."""
    head = _read_exact(stream, _HEADER.size)
    if head is None:
        return None
    body = _read_exact(stream, _HEADER.unpack(head)[0])
    return None if body is None else pickle.loads(body)


async def read_frame_async(reader: asyncio.StreamReader):
    """Read one frame from an asyncio stream; None at end of stream."""
    try:
        head = await reader.readexactly(_HEADER.size)
        body = await reader.readexactly(_HEADER.unpack(head)[0])
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return pickle.loads(body)

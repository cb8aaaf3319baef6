"""Keep freed array memory in the process instead of handing it back to the kernel.

ember's kernels create and drop many large temporaries (im2col buffers, GEMM outputs,
activations and their gradients) every step. With glibc's default policy an array of more than
a few hundred KiB is either ``mmap``-ed afresh or carved from a heap top that ``free`` has just
trimmed, so each use first page-faults its whole buffer in (and the kernel zeroes it). On a
training step that is most of the time not spent in BLAS: a 64-channel 3x3 convolution of a
batch of 8 32x32 images took 10 ms this way and 4.2 ms with the memory kept (its GEMM is 4 ms).

This is what a tensor library's caching allocator does (torch's CUDA allocator, tinygrad's
LRU buffer cache, jemalloc/tcmalloc that Intel recommends preloading for torch on CPUs), done
here with the allocator NumPy already uses: at import, on glibc, ember raises the ``mmap``
threshold to its maximum (32 MiB) and the heap trim threshold to ``_TRIM_BYTES``, so up to that
much freed memory stays mapped for the next array. Larger arrays are still ``mmap``-ed.

Set ``EMBER_MALLOC_TUNE=0`` in the environment before importing ember to leave the process's
allocator as it was (or set glibc's own ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``,
which ember then leaves alone).
"""

from __future__ import annotations

import ctypes
import os
import sys

# glibc <malloc.h> parameter numbers
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_MMAP_BYTES = 32 << 20  # glibc's ceiling for the mmap threshold on 64-bit systems
_TRIM_BYTES = 256 << 20

_state: dict = {"tuned": False}


def _glibc():
    """Return glibc as a ctypes library, or None on other C libraries and platforms."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        version = libc.gnu_get_libc_version
    except (OSError, AttributeError):  # musl and friends have no gnu_get_libc_version
        return None
    version.restype = ctypes.c_char_p
    return libc if version() else None


def tune() -> bool:
    """Apply ember's allocator settings once (see the module docstring); return True if set."""
    if _state["tuned"]:
        return True
    env = os.environ
    if env.get("EMBER_MALLOC_TUNE", "1") == "0":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in env or "MALLOC_TRIM_THRESHOLD_" in env:
        return False  # the user tuned glibc already
    libc = _glibc()
    if libc is None:
        return False
    ok = libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_BYTES) == 1
    ok = libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES) == 1 and ok
    _state["tuned"] = ok
    return ok

"""Fused multiply-add, ``a * b + c`` rounded once, as C++ compilers emit it (``std::fma``,
contracted ``x * y + z``): torch's kernels round that way, so ember's copies of them must too."""

from __future__ import annotations

import numpy as np

SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter for float64


def fma(a, b, c) -> np.ndarray:
    """Return ``a * b + c`` rounded once, as the C++ compiler's fused multiply-add does
    (float64; emulated with Dekker's exact product and Knuth's exact sum)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    p = a * b
    t = a * SPLIT
    ah = t - (t - a)
    al = a - ah
    t = b * SPLIT
    bh = t - (t - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    z = s - p
    r = s + (((p - (s - z)) + (c - z)) + e)
    return np.where(np.isfinite(r), r, p + c)


def fma32(a, b, c) -> np.ndarray:
    """``a * b + c`` of float32 values rounded once to float32 (the product is exact in
    float64; the sum rounds to float64, then to float32)."""
    p = np.asarray(a, np.float32).astype(np.float64) * np.asarray(b, np.float32)
    return (p + np.asarray(c, np.float32).astype(np.float64)).astype(np.float32)

"""Compiled block codecs for the 8-bit optimizers, used when numba is installed.

The NumPy codecs in ``_quant8`` spend most of an 8-bit step in whole-array passes: decoding is
a gather plus a per-block multiply, encoding an ``abs``, a per-block max, a divide, the key
arithmetic and a gather — about a dozen trips through memory per state per step, against about
twelve for the whole 32-bit Adam update. These kernels do each direction in one trip per block
(two for encoding: the block's max first), with the same float32 operations in the same order,
so codes, absmax and decoded values are bit-identical to the NumPy path (a test holds them to
it). numba is optional (``pip install 'ember[fast]'``); ``EMBER_NUMBA=0`` turns the kernels off.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def decode_into(codes, absmax, code, out, blocksize):  # pragma: no cover - compiled
    """``out[i] = code[codes[i]] * absmax[i // blocksize]`` for flat uint8 ``codes``."""
    n = codes.shape[0]
    for b in range((n + blocksize - 1) // blocksize):
        scale = absmax[b]
        for i in range(b * blocksize, min(n, (b + 1) * blocksize)):
            out[i] = code[codes[i]] * scale


@njit(cache=True, nogil=True)
def _absmax(v, lo, hi, word):  # pragma: no cover - compiled
    """``max(|v[lo:hi]|)``, taken on the bit patterns: for non-negative floats integer order
    is float order and every NaN lies above inf, so a NaN wins as np.max lets it (and an
    integer max reduction vectorises without fast-math). ``word``: a 1-element uint32 scratch."""
    bits = v.view(np.uint32)
    top = 0
    for i in range(lo, hi):
        top = max(top, bits[i] & 0x7FFFFFFF)
    word[0] = top
    return word.view(np.float32)[0]


@njit(cache=True, nogil=True)
def _encode_block(v, lo, hi, peak, codes, out_lo, table, scaled):  # pragma: no cover - compiled
    """Codes of ``v[lo:hi] / peak`` into ``codes[out_lo:]`` (``scaled``: float32 scratch)."""
    safe = np.float32(1.0) if peak == 0 else peak
    m = hi - lo
    for j in range(m):
        scaled[j] = v[lo + j] / safe
    keys = scaled.view(np.uint32)
    for j in range(m):
        k = np.int64(keys[j])  # int64 throughout: numba widens uint32 arithmetic anyway
        # the order key: every bit flipped for negatives, only the sign bit for the rest
        k ^= 0x80000000 + (k >> 31) * 0x7FFFFFFF
        codes[out_lo + j] = (table[k >> 16] + (k & 0xFFFF)) >> 16


@njit(cache=True, nogil=True)
def encode_into(x, absmax, codes, table, blocksize):  # pragma: no cover - compiled
    """Per-block absmax of flat float32 ``x`` into ``absmax``; the codes of ``x / absmax``
    into ``codes`` through ``_Coder``'s bucket table. ``x`` is only read (the NumPy path
    leaves it scaled; callers treat it as scratch either way)."""
    n = x.shape[0]
    word = np.empty(1, np.uint32)
    scaled = np.empty(blocksize, np.float32)
    for b in range((n + blocksize - 1) // blocksize):
        lo, hi = b * blocksize, min(n, (b + 1) * blocksize)
        absmax[b] = peak = _absmax(x, lo, hi, word)
        _encode_block(x, lo, hi, peak, codes, lo, table, scaled)


@njit(cache=True, nogil=True)
def adam_step(
    p,
    g,
    q1,
    q2,
    a1,
    a2,
    map1,
    map2,
    table1,
    table2,
    blocksize,
    b1,
    b2,
    one_b1,
    one_b2,
    decay,
    eps,
    step_size,
):  # pragma: no cover - compiled
    """One 8-bit Adam step over flat float32 ``p`` in place, block by block: decode both
    moments, update them and ``p`` with the float32 operations of ``Adam8bit._kernel`` in its
    order, re-encode (codes ``q1``/``q2`` and maxima ``a1``/``a2`` in place). ``decay`` is
    ``1 - lr * weight_decay`` (1 for none); ``eps`` is ``eps * sqrt(1 - b2**t)`` and
    ``step_size`` is ``lr * sqrt(1 - b2**t) / (1 - b1**t)``, as the NumPy kernel folds them;
    every constant arrives as the float32 the NumPy kernel uses."""
    n = p.shape[0]
    word = np.empty(1, np.uint32)
    m = np.empty(blocksize, np.float32)
    v = np.empty(blocksize, np.float32)
    scaled = np.empty(blocksize, np.float32)
    for b in range((n + blocksize - 1) // blocksize):
        lo, hi = b * blocksize, min(n, (b + 1) * blocksize)
        s1, s2 = a1[b], a2[b]
        for j in range(hi - lo):
            i = lo + j
            gi = g[i]
            # a second moment below the map's resolution (code 0) restarts its first moment
            mi = np.float32(0) if q2[i] == 0 else map1[q1[i]] * s1
            vi = map2[q2[i]] * s2
            mi = mi * b1 + gi * one_b1
            vi = vi * b2 + gi * gi * one_b2
            pi = p[i] * decay if decay != 1 else p[i]
            p[i] = pi - mi / (np.sqrt(vi) + eps) * step_size
            m[j], v[j] = mi, vi
        a1[b] = peak1 = _absmax(m, 0, hi - lo, word)
        a2[b] = peak2 = _absmax(v, 0, hi - lo, word)
        _encode_block(m, 0, hi - lo, peak1, q1, lo, table1, scaled)
        _encode_block(v, 0, hi - lo, peak2, q2, lo, table2, scaled)

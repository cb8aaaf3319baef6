"""Block-wise 8-bit quantization with the dynamic (tree) map (Dettmers et al., 2022).

A tensor is cut into blocks of ``blocksize`` elements (the last one shorter); each block keeps
its absolute maximum as one float32 and every element as the uint8 index of the map value nearest
to ``x / absmax``. The dynamic map spends its 8 bits as a sign, a run of zero bits that sets the
decade (``10**-6 .. 10**0``) and linearly spaced fraction bits in the rest, so that small and large
magnitudes get the same relative precision; the unsigned variant gives the sign bit to the
fraction (for strictly non-negative tensors such as Adam's second moment).

Finding the nearest map value is one table look-up, not a search (see ``_Coder``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

__all__ = [
    "QuantState",
    "create_dynamic_map",
    "dequantize_blockwise",
    "quantize_blockwise",
]


def create_dynamic_map(signed: bool = True, max_exponent_bits: int = 7, total_bits: int = 8):
    """Return the dynamic quantization map: ``2**total_bits`` sorted float32 values in [-1, 1]."""
    from ember._core.tensor import _wrap

    return _wrap(_dynamic_map(signed, max_exponent_bits, total_bits))


def _dynamic_map(signed: bool, max_exponent_bits: int, total_bits: int) -> np.ndarray:
    values: list[np.ndarray] = []
    fraction_bits = total_bits - 1 - max_exponent_bits  # bits beyond sign and exponent run
    extra = 2**fraction_bits - 1
    for e in range(max_exponent_bits):
        # decade 10**(e - max_exponent_bits + 1): 2**k midpoints of k+1 points in [0.1, 1]
        k = e + fraction_bits + (0 if signed else 1)
        edges = np.linspace(0.1, 1, 2**k + 1, dtype=np.float32)
        mids = (edges[:-1] + edges[1:]) / np.float32(2)
        scale = np.float32(10.0 ** (e - max_exponent_bits + 1))
        values.append(scale * mids)
        if signed:
            values.append(-scale * mids)
    if extra > 0:
        edges = np.linspace(0.1, 1, extra + 1, dtype=np.float32)
        mids = (edges[:-1] + edges[1:]) / np.float32(2)
        scale = np.float32(10.0 ** (max_exponent_bits - 1 - max_exponent_bits + 1))
        values.append(scale * mids)
        if signed:
            values.append(-scale * mids)
    values.append(np.array([0.0, 1.0], np.float32))
    out = np.concatenate(values).astype(np.float32)
    if out.size > 2**total_bits:
        raise ValueError(f"the map has {out.size} values for {total_bits} bits")
    out = np.concatenate([out, np.zeros(2**total_bits - out.size, np.float32)])
    return np.sort(out)


def _order_key(x: np.ndarray) -> np.ndarray:
    """float32 -> uint32 keys in the floats' order: the sign bit flipped for positives, every
    bit flipped for negatives (so that larger floats always have larger unsigned keys)."""
    mask = (x.view(np.int32) >> 31).view(np.uint32) | np.uint32(0x80000000)
    return x.view(np.uint32) ^ mask


def _key_float(k: np.ndarray) -> np.ndarray:
    """The inverse of ``_order_key``."""
    negative = (k & np.uint32(0x80000000)) == 0
    return np.where(negative, ~k, k ^ np.uint32(0x80000000)).view(np.float32)


class _Coder:
    """Nearest-value encoder for one sorted map.

    Encoding is one table look-up: the top 16 bits of a value's order key select a bucket
    (width 2**-7 relative, below the map's spacing, so at most one decision boundary falls in
    it), and the bucket's entry packs its lowest code in the high half and, when a boundary
    falls inside, ``0x10000 - boundary's low 16 key bits`` in the low half — adding the value's
    low 16 key bits carries into the code exactly when the value is at or above the boundary
    (one gather and a few integer passes; a gather costs ~15 arithmetic passes in NumPy)."""

    def __init__(self, code: np.ndarray):
        code = np.asarray(code, np.float32)
        self.code = code
        self.mid = ((code[:-1].astype(np.float64) + code[1:]) / 2).astype(np.float32)
        keys = np.arange(1 << 16, dtype=np.uint32) << 16
        with np.errstate(invalid="ignore"):
            lo = np.nan_to_num(_key_float(keys), nan=0.0, posinf=1.0, neginf=-1.0)
            hi = np.nan_to_num(_key_float(keys | 0xFFFF), nan=0.0, posinf=1.0, neginf=-1.0)
        clo, chi = self.exact(lo), self.exact(hi)
        self.fast = bool(np.all(chi - clo <= 1))
        table = clo.astype(np.uint32) << 16
        inside = chi > clo
        boundary = _order_key(self.mid[clo[inside]]) & np.uint32(0xFFFF)
        table[inside] += np.uint32(0x10000) - boundary
        self.table = table

    def exact(self, x: np.ndarray) -> np.ndarray:
        """Codes by binary search over the midpoints (a midpoint rounds up)."""
        return np.searchsorted(self.mid, x, side="right").astype(np.int64)

    def encode(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Write the codes of flat ``x`` (float32 values in [-1, 1]) into the uint8 ``out``."""
        if not self.fast:
            out[...] = self.exact(x)
            return out
        key = _order_key(x)
        entry = np.take(self.table, key >> 16, mode="wrap")  # indices < 2**16: in range
        key &= np.uint32(0xFFFF)
        entry += key
        entry >>= 16
        np.copyto(out, entry, casting="unsafe")
        return out


_CODERS: dict[bytes, _Coder] = {}


def coder(code: np.ndarray) -> _Coder:
    """Return the (cached) encoder of a map."""
    code = np.ascontiguousarray(code, np.float32)
    key = code.tobytes()
    c = _CODERS.get(key)
    if c is None:
        c = _CODERS[key] = _Coder(code)
    return c


SIGNED = _dynamic_map(True, 7, 8)
UNSIGNED = _dynamic_map(False, 7, 8)


def blocks_view(x: np.ndarray, blocksize: int):
    """Split a flat array into ``(full blocks as a 2-D view, tail)``."""
    nfull = x.size // blocksize * blocksize
    return x[:nfull].reshape(-1, blocksize), x[nfull:]


def absmax_into(x: np.ndarray, blocksize: int, out: np.ndarray, tmp: np.ndarray) -> None:
    """Per-block ``max(|x|)`` of flat ``x`` into ``out`` (``tmp`` is scratch like ``x``)."""
    np.abs(x, out=tmp)
    full, tail = blocks_view(tmp, blocksize)
    nb = full.shape[0]
    if nb:
        np.max(full, axis=1, out=out[:nb])
    if tail.size:
        out[nb] = tail.max()


def scale_blocks(x: np.ndarray, blocksize: int, factor: np.ndarray, divide: bool = False) -> None:
    """Multiply (or divide) each block of flat ``x`` in place by its entry of ``factor``."""
    full, tail = blocks_view(x, blocksize)
    nb = full.shape[0]
    op = np.divide if divide else np.multiply
    if nb:
        op(full, factor[:nb, None], out=full)
    if tail.size:
        op(tail, factor[nb], out=tail)


_JIT: object = None  # the compiled codecs module, False when numba is absent or turned off


def _jit():
    """``ember.optim._quant8_jit`` when numba imports (and ``EMBER_NUMBA`` is not 0), else None."""
    global _JIT
    if _JIT is None:
        _JIT = False
        if os.environ.get("EMBER_NUMBA", "1") != "0":
            try:
                from ember.optim import _quant8_jit
            except ImportError:
                pass
            else:
                _JIT = _quant8_jit
    return _JIT or None


def _flat(a: np.ndarray, dtype) -> bool:
    return a.dtype == dtype and a.ndim == 1 and a.flags.c_contiguous


def encode_into(
    x: np.ndarray, absmax: np.ndarray, codes: np.ndarray, c: _Coder, blocksize: int, tmp=None
) -> None:
    """Quantize flat float32 ``x`` (destroyed: scaled to [-1, 1]) into ``codes`` and ``absmax``."""
    jit = _jit()
    if (
        jit is not None
        and c.fast
        and _flat(x, np.float32)
        and _flat(codes, np.uint8)
        and _flat(absmax, np.float32)
    ):
        jit.encode_into(x, absmax, codes, c.table, blocksize)
        return
    absmax_into(x, blocksize, absmax, np.empty_like(x) if tmp is None else tmp)
    safe = np.where(absmax == 0, np.float32(1), absmax)
    scale_blocks(x, blocksize, safe, divide=True)
    c.encode(x, codes)


def decode_into(codes: np.ndarray, absmax: np.ndarray, code: np.ndarray, out: np.ndarray, bs):
    """Dequantize flat uint8 ``codes`` into float32 ``out``."""
    jit = _jit()
    if (
        jit is not None
        and _flat(codes, np.uint8)
        and _flat(out, np.float32)
        and _flat(absmax, np.float32)
        and _flat(code, np.float32)
    ):
        jit.decode_into(codes, absmax, code, out, bs)
        return
    np.take(code, codes, out=out, mode="wrap")  # uint8 into 256 values: always in range
    scale_blocks(out, bs, absmax)


@dataclass
class QuantState:
    """What dequantizing needs: the block maxima, the map, the block size, shape and dtype."""

    absmax: object
    code: object
    blocksize: int
    shape: tuple
    dtype: object


def _np(t) -> np.ndarray:
    return t._data if hasattr(t, "_data") else np.asarray(t)


def quantize_blockwise(
    A,
    code=None,
    absmax=None,
    out=None,
    blocksize: int = 4096,
    nested: bool = False,
):
    """Quantize ``A`` block-wise to uint8 codes; return ``(codes, QuantState)``."""
    from ember._core.tensor import _wrap

    if nested:
        raise NotImplementedError("quantize_blockwise: nested=True is not supported")
    if blocksize not in (4096, 2048, 1024, 512, 256, 128, 64):
        raise ValueError(f"Blocksize {blocksize} is not supported.")
    a = _np(A)
    cmap = SIGNED if code is None else _np(code).astype(np.float32)
    x = np.array(a, dtype=np.float32, copy=True).reshape(-1)
    nb = -(-x.size // blocksize)
    am = np.empty(nb, np.float32) if absmax is None else _np(absmax).reshape(-1)
    q = np.empty(x.size, np.uint8) if out is None else _np(out).reshape(-1)
    encode_into(x, am, q, coder(cmap), blocksize)
    qt = out if out is not None else _wrap(q.reshape(a.shape))
    st = QuantState(
        absmax=absmax if absmax is not None else _wrap(am),
        code=code if code is not None else _wrap(cmap),
        blocksize=blocksize,
        shape=tuple(a.shape),
        dtype=getattr(A, "dtype", None),
    )
    return qt, st


def dequantize_blockwise(
    A,
    quant_state: QuantState | None = None,
    absmax=None,
    code=None,
    out=None,
    blocksize: int = 4096,
    nested: bool = False,
):
    """Return the float32 tensor that the codes ``A`` stand for."""
    from ember._core.tensor import _wrap

    if quant_state is None and absmax is None:
        raise ValueError("Either quant_state or absmax must be provided")
    if quant_state is not None:
        absmax, code, blocksize = quant_state.absmax, quant_state.code, quant_state.blocksize
    q = _np(A).reshape(-1)
    cmap = SIGNED if code is None else _np(code).astype(np.float32)
    res = np.empty(q.size, np.float32) if out is None else _np(out).reshape(-1)
    decode_into(q, _np(absmax).reshape(-1).astype(np.float32), cmap, res, blocksize)
    return out if out is not None else _wrap(res.reshape(_np(A).shape))

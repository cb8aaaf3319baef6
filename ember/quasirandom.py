"""``torch.quasirandom``: the SobolEngine (scrambled) Sobol sequence generator.

torch's algorithm on NumPy: the direction numbers of Joe and Kuo (``new-joe-kuo-6.21201``,
search criterion D(6), the table torch compiles in; stored in ``_sobol_direction_numbers.npz``
as SciPy ships it), Gray-code order (each point XORs one direction number into the previous
one, vectorised as a cumulative XOR), Owen's linear matrix scrambling with the matrices and
shift drawn from ember's generator exactly as torch draws them (so a seed gives torch's points).

Credit (see NOTICE): the direction numbers are S. Joe and F. Y. Kuo's (BSD-style licence).
"""

from __future__ import annotations

import os

import numpy as np

import ember
from ember import Tensor

_TABLE = None


def _table():
    global _TABLE
    if _TABLE is None:
        path = os.path.join(os.path.dirname(__file__), "_sobol_direction_numbers.npz")
        with np.load(path) as d:
            _TABLE = (d["poly"].astype(np.int64), d["vinit"].astype(np.int64))
    return _TABLE


def _initial_state(dim: int, bits: int) -> np.ndarray:
    """torch's ``_sobol_engine_initialize_state_``: (dim, bits) direction numbers, scaled."""
    poly, vinit = _table()
    v = np.zeros((dim, bits), np.int64)
    v[0, :] = 1
    p = poly[:dim]
    m = np.floor(np.log2(np.maximum(p, 1))).astype(np.int64)  # the polynomials' degrees
    m[0] = 0
    for j in range(vinit.shape[1]):
        sel = j < m
        v[sel, j] = vinit[:dim][sel, j]
    # the recurrence of each dimension's primitive polynomial, one column at a time
    for j in range(1, bits):
        rows = np.flatnonzero((m <= j) & (m > 0))
        if not rows.size:
            continue
        mm, pp = m[rows], p[rows]
        newv = v[rows, j - mm]
        pow2 = np.ones_like(mm)
        for k in range(int(mm.max())):
            act = k < mm
            pow2 = np.where(act, pow2 << 1, pow2)
            bit = ((pp >> np.maximum(mm - 1 - k, 0)) & 1).astype(bool) & act
            newv = np.where(bit, newv ^ (pow2 * v[rows, max(j - k - 1, 0)]), newv)
        v[rows, j] = newv
    return v * (2 ** np.arange(bits - 1, -1, -1, dtype=np.int64))


def _rightmost_zero(n: np.ndarray) -> np.ndarray:
    # the index of the lowest zero bit of each n: the number of trailing ones
    return np.bitwise_count((n ^ (n + 1)) >> 1).astype(np.int64)


class SobolEngine:
    r"""An engine generating (scrambled) Sobol sequences, torch's ``SobolEngine``: low
    discrepancy quasi-random points in up to 21201 dimensions.

    Args:
        dimension (int): the dimensionality of the sequence.
        scramble (bool): scramble the sequence (Owen's linear matrix scrambling and a random
            digital shift). Default: ``False``.
        seed (int, optional): the seed of the scrambling's generator (else the global one).
    """

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(
                f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]"
            )
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self.sobolstate = ember.from_numpy(_initial_state(dimension, self.MAXBIT))
        if not self.scramble:
            self.shift = ember.zeros(self.dimension, dtype=ember.long)
        else:
            self._scramble()
        self.quasi = self.shift.clone()
        # index 0 of the sequence is the shift itself; torch stores it already scaled, in the
        # default dtype of the time, and casts it per draw (a float64 draw gets its rounding)
        self._first_point = self.quasi[None] / float(1 << self.MAXBIT)
        self.num_generated = 0

    def _points(self, n: int, start: int, dtype) -> Tensor:
        """Advance ``quasi`` by ``n`` Gray-code steps from ``start``; return the n points."""
        if n < 0:
            # torch's message for its (n - 1)-point kernel call when a fresh engine draws 0
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {n}: [{n}, {self.dimension}]"
            )
        if n == 0:
            return ember.empty((0, self.dimension), dtype=dtype)
        cols = _rightmost_zero(np.arange(start, start + n, dtype=np.int64))
        steps = self.sobolstate._data.T[cols]  # (n, dimension)
        steps[0] ^= self.quasi._data
        pts = np.bitwise_xor.accumulate(steps, axis=0)
        self.quasi = ember.from_numpy(np.ascontiguousarray(pts[-1]))
        res = pts.astype(dtype.np) * dtype.np.type(1.0 / (1 << self.MAXBIT))
        return ember.from_numpy(res)

    def _walk(self, n: int, dtype) -> Tensor:
        # the next n points: on a fresh engine the stored index-0 point and n - 1 steps, else
        # n steps on from the last point given out (index num_generated - 1)
        fresh = self.num_generated == 0
        walked = self._points(n - fresh, max(self.num_generated - 1, 0), dtype)
        self.num_generated += n
        if fresh:
            return ember.cat((self._first_point.to(dtype), walked), dim=-2)
        return walked

    def draw(self, n: int = 1, out: Tensor | None = None, dtype=None) -> Tensor:
        """Return the next ``n`` points of the sequence, shape ``(n, dimension)``."""
        result = self._walk(n, ember.get_default_dtype() if dtype is None else dtype)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: Tensor | None = None, dtype=None) -> Tensor:
        """Return the next ``2**m`` points (the sequence's balance needs powers of 2)."""
        n = 2**m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError(
                "The balance properties of Sobol' points require "
                f"n to be a power of 2. {self.num_generated} points have been "
                f"previously generated, then: n={self.num_generated}+2**{m}={total_n}. "
                "If you still want to do this, please use "
                "'SobolEngine.draw()' instead."
            )
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        """Reset the engine to its first point; return ``self``."""
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip ``n`` points (as drawing them); return ``self``."""
        if n or self.num_generated:  # skipping nothing on a fresh engine is allowed
            self._walk(n, ember.float64)
        return self

    def _scramble(self) -> None:
        g = None
        if self.seed is not None:
            g = ember.Generator()
            g.manual_seed(self.seed)
        shift_ints = ember.randint(2, (self.dimension, self.MAXBIT), generator=g)
        self.shift = ember.mv(shift_ints, ember.pow(2, ember.arange(0, self.MAXBIT)))
        ltm = ember.randint(2, (self.dimension, self.MAXBIT, self.MAXBIT), generator=g).tril()
        # torch's _sobol_engine_scramble_: the matrices' diagonals set to 1, bit (MAXBIT - 1 - p)
        # of each new direction number is the parity of (row p of its matrix) & (the old one)
        pow2 = 2 ** np.arange(self.MAXBIT - 1, -1, -1, dtype=np.int64)
        lt = ltm._data.copy()
        i = np.arange(self.MAXBIT)
        lt[:, i, i] = 1
        rows = (lt * pow2).sum(-1)  # (dimension, MAXBIT): one int per matrix row
        v = self.sobolstate._data  # (dimension, MAXBIT)
        par = np.bitwise_count(rows[:, None, :] & v[:, :, None]) & 1  # (dim, j, p)
        self.sobolstate = ember.from_numpy((par * pow2).sum(-1).astype(np.int64))

    def __repr__(self) -> str:
        parts = [f"dimension={self.dimension}"]
        parts += ["scramble=True"] * bool(self.scramble)
        parts += [f"seed={self.seed}"] * (self.seed is not None)
        return f"{type(self).__name__}({', '.join(parts)})"

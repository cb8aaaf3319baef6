"""Flat buffers for the fused path: one contiguous array per quantity for a whole param group.

The optimizer state of every parameter of a group (``exp_avg``, ``momentum_buffer``, ...) is a view
into one flat array per key, and ``step`` counters are 0-d views into one float32 array, so an
update is a handful of NumPy calls over the flat arrays, not a Python loop of ops per parameter.
Parameters and gradients are gathered into flat arrays with one ``concatenate`` each and the new
values written back with one ``copy_`` per parameter (the ember in-place op, so versions bump).
The buffers are rebuilt when the set of parameters with gradients changes or the state is replaced
(``load_state_dict``).
"""

from __future__ import annotations

import numpy as np

from ember._core.tensor import Tensor
from ember._ops import API

_from_numpy = API["from_numpy"]


def can_fuse(params: list[Tensor], foreach) -> bool:
    """Return whether ``params`` (all with gradients) can take the flat path."""
    if foreach is False or not params:
        return False
    dt = params[0]._data.dtype
    if dt.kind != "f":
        return False
    return all(p._data.dtype == dt and p.grad._data.dtype == dt for p in params)


class FlatGroup:
    """Flat arrays for the parameters of one group and their state ``keys``."""

    def __init__(self, params: list[Tensor], state, keys: tuple[str, ...], with_step: bool):
        self.params = params
        self.ids = tuple(map(id, params))
        dtype = params[0]._data.dtype
        sizes = [p._data.size for p in params]
        self.bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n = int(self.bounds[-1])
        self.p = np.empty(n, dtype)
        self.g = np.empty(n, dtype)
        self.tmp = np.empty(n, dtype)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.p_views = [
            _from_numpy(self.p[a:b].reshape(p.shape))
            for p, a, b in zip(params, self.bounds[:-1], self.bounds[1:])
        ]
        self.bufs = {}
        for key in keys:
            buf = np.zeros(n, dtype)
            for p, a, b in zip(params, self.bounds[:-1], self.bounds[1:]):
                s = state[p].get(key)
                if s is not None:
                    buf[a:b] = s._data.reshape(-1)
                state[p][key] = _from_numpy(buf[a:b].reshape(p.shape))
            self.bufs[key] = buf
        self.steps = None
        if with_step:
            steps = np.zeros(len(params), np.float32)
            for i, p in enumerate(params):
                s = state[p].get("step")
                if s is not None:
                    steps[i] = float(s)
                state[p]["step"] = _from_numpy(steps[i : i + 1].reshape(()))
            self.steps = steps
        self.state_ids = self._state_ids(state, keys)

    @staticmethod
    def _ids_of(params, state, keys):
        return tuple(id(state[p].get(k)) for p in params for k in keys)

    def _state_ids(self, state, keys):
        return self._ids_of(self.params, state, keys)

    def gather(self) -> None:
        """Copy the parameters and their gradients into the flat arrays (one call each)."""
        np.concatenate([p._data.reshape(-1) for p in self.params], out=self.p)
        np.concatenate([p.grad._data.reshape(-1) for p in self.params], out=self.g)

    def scatter(self) -> None:
        """Write the flat parameters back into the parameters (in-place ``copy_``)."""
        for p, v in zip(self.params, self.p_views):
            p.copy_(v)

    def per_element(self, values: np.ndarray) -> np.ndarray | float:
        """Spread one value per parameter over its elements (a scalar when all are equal)."""
        if values.min() == values.max():
            return values.flat[0].item()
        return np.repeat(values.astype(self.p.dtype), self.sizes)


def flat_group(opt, index: int, params: list[Tensor], keys, with_step: bool) -> FlatGroup:
    """Return the cached flat buffers of group ``index``, rebuilding them when stale."""
    fg = opt._flat.get(index)
    if fg is not None and fg.ids == tuple(map(id, params)):
        if fg.state_ids == FlatGroup._ids_of(params, opt.state, keys):
            return fg
    fg = FlatGroup(params, opt.state, keys, with_step)
    opt._flat[index] = fg
    return fg

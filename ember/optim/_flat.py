"""Flat buffers for the fused path: one contiguous array per quantity for a whole param group.

A step of the fused path is a handful of NumPy calls over flat arrays, whatever the number of
parameters:

* **Parameters** are gathered once into one flat array per group, and each parameter that is the
  sole holder of its memory is then *re-pointed* at its slice of it
  (``p._data = flat[o:o + n].reshape(p.shape)``), so the in-place update of the flat array is the
  update of every parameter, with no copies. Such a parameter keeps its values, shape, strides and
  contiguity; its ``untyped_storage()`` becomes the group's flat buffer and ``storage_offset()``
  its element offset in it (the layout of torch parameters flattened into one buffer, e.g. cuDNN
  RNN weights); ``data_ptr()`` changes once, at the step that re-points it. Every step bumps each
  parameter's version counter, as torch's in-place ``_foreach`` update does.
* A parameter whose memory is also reachable some other way (a view taken of it, a tensor that
  shares its data — ``p.data``, ``p.detach()``, ``Parameter(t)`` while ``t`` lives —, an array
  from ``p.numpy()``, shared memory, a memory map, a slice of a user's array) is never
  re-pointed, since the other holders would silently stop seeing the updates: it is copied into
  the flat array before the update and back with an in-place ``copy_`` after it (one NumPy call
  each way). It is re-pointed at the end of a later step once it is the sole holder again. The
  check is a reference count (``sys.getrefcount``), a pointer test rather than a NumPy call.
* The buffers are rebuilt (``flat_group``) when the set of parameters with gradients, their
  state (``load_state_dict``) or the array of a re-pointed parameter changes (``p.data = ...``,
  ``module.to(dtype)``, ``share_memory_()``, ``vector_to_parameters``). Parameters re-pointed at
  the previous buffer move into the new one when no view of the previous buffer exists outside
  (again a reference count); otherwise they stay where they are and take the copy path.
* **Gradients**: with ``zero_grad(set_to_none=False)`` the same ``.grad`` tensors live across
  steps and the engine accumulates into them in place. When the same gradient tensor is seen at
  two consecutive steps and nothing else holds it or its memory, it is replaced by a tensor over
  its slice of the flat gradient array (same values, same version counter; the engine's gradients
  are often views of a private base, so the tensor is swapped rather than re-pointed), after
  which steps gather nothing. A replaced gradient the user kept is never written again: if one is
  still held when a new gradient must be gathered, the flat gradient array is left to it and a
  new one made. With the default ``set_to_none=True`` the engine makes fresh gradients at every
  backward: they are gathered with one ``np.concatenate``. The update never writes into flat
  gradients that ``.grad`` tensors view (``grad(True)``/``prepared_grad`` return a scratch copy
  then, as torch's foreach path makes new gradient tensors for ``maximize``/weight decay).
* **Saving**: a re-pointed parameter is a view (storage + offset) of the group's buffer, so
  ``ember.save(model.state_dict())`` writes that buffer once as one storage that every parameter
  views, the layout torch itself writes for tensors sharing a storage, and ``torch.load`` reads it
  (tests/oracle/test_optim_flat.py). Saving a single parameter writes the whole buffer, as torch
  does for a view; ``.clone()`` it first to save its values alone.
* **State** (``exp_avg``, ``momentum_buffer``, ...) of every parameter is a view into one flat
  array per key, and ``step`` counters are 0-d views into one float32 array.
"""

from __future__ import annotations

import sys
from operator import attrgetter
from operator import is_ as _is

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember._core.threads import PARALLEL_MIN, get_num_threads, parallel_pair

__all__ = ["FlatGroup", "OneParam", "can_fuse", "flat_group", "lerp_"]


# a block of the update: p, g, state and scratch blocks of this size fit a core's L2 cache
# together (measured here: an SGD-momentum step over a 535k-param MLP, 0.74 -> ~0.4 ms)
_BLOCK_BYTES = 1 << 18
# parameters from this many elements have their contiguous gradient read in place
_DIRECT_MIN = 1 << 16


# C-level readers for the per-step checks (no Python frame per parameter)
_data_of = attrgetter("_data")
_grad_of = attrgetter("_grad")  # (a parameter is a leaf: ``.grad`` is its ``_grad``)


def _refs(a) -> int:
    return sys.getrefcount(a)


def _item_refs(lst: list, i: int) -> int:
    return sys.getrefcount(lst[i])


def _attr_refs(o) -> int:
    return sys.getrefcount(o.p)


class _Holder:
    __slots__ = ("_data", "p")


def _calibrate() -> tuple[int, int, int]:
    # the reference counts the checks below see for an object held once (by a slot, by a list,
    # by an attribute) and passed straight in: measured, since interpreters count differently
    h = _Holder()
    h._data = np.empty(1)
    h.p = np.empty(1)
    return _refs(h._data), _item_refs([np.empty(1)], 0), _attr_refs(h)


_HELD_ONCE, _ITEM_HELD_ONCE, _ATTR_HELD_ONCE = _calibrate()


def _grad_counts(grads: list, i: int) -> tuple[int, int, int, int]:
    g = grads[i]
    a = g._data
    b = a.base
    gb = g._base
    return (
        sys.getrefcount(g),
        sys.getrefcount(a),
        0 if b is None else sys.getrefcount(b),
        0 if gb is None else sys.getrefcount(gb),
    )


class _Obj:
    _base = None


def _calibrate_grad() -> tuple[int, int, int, int]:
    # a gradient held by its parameter and the step's list of gradients, whose array views the
    # array of its ``_base`` tensor (what the engine leaves after stealing a view), nothing else
    arr = np.empty((2, 2))
    gb, g, p = _Obj(), _Obj(), _Obj()
    gb._data = arr
    g._data, g._base = arr.T, gb
    p._grad = g
    grads = [g]
    del arr, gb, g
    return _grad_counts(grads, 0)


_GRAD_COUNTS = _calibrate_grad()


def _grad_private(grads: list, i: int) -> bool:
    """True if ``grads[i]`` is held only by its parameter (and ``grads``) and its memory only by
    it (directly, or through the ``_base`` tensor only it holds): replacing it is unobservable."""
    g = grads[i]
    a, gb = g._data, g._base
    b = a.base
    if b is None:
        ok = gb is None
    elif gb is None:
        ok = b.base is None
    else:
        ok = gb._data is b and gb._base is None and b.base is None
    del g, a, gb, b
    if not ok:
        return False
    ng, na, nb, ngb = _grad_counts(grads, i)
    cg, ca, cb, cgb = _GRAD_COUNTS
    if ngb == 0:
        cb -= 1  # no ``_base`` tensor holding the viewed array
    return ng <= cg and na <= ca and nb <= cb and ngb <= cgb


def _held(a: np.ndarray, extra: int = 0) -> bool:
    """True if nothing but its holder and ``extra`` known ones refer to ``a``. Call it as
    ``_held(t._data)``, with no other local alias (likewise ``_owns``)."""
    return sys.getrefcount(a) <= _HELD_ONCE + extra


def _owns(a: np.ndarray, extra: int = 0) -> bool:
    """``_held`` for an array that must own its memory (a parameter's)."""
    return a.base is None and sys.getrefcount(a) <= _HELD_ONCE + extra


def _list_item_free(lst: list, i: int) -> bool:
    """True if nothing but ``lst`` refers to ``lst[i]``."""
    return sys.getrefcount(lst[i]) <= _ITEM_HELD_ONCE


def can_fuse(params: list[Tensor], foreach) -> bool:
    """Return whether ``params`` (all with gradients) can take the flat path."""
    if foreach is False or not params:
        return False
    dt = params[0]._data.dtype
    if dt.kind != "f":
        return False
    try:
        return all(p._data.dtype == dt and p._grad._data.dtype == dt for p in params)
    except NotImplementedError:  # a sparse gradient has no flat array: the per-tensor path
        return False


class _Arrays:
    """What the update bodies ask of :class:`FlatGroup` and :class:`OneParam` alike (both have
    ``p``, ``tmp``, ``_scratch`` and ``grad(writable)``)."""

    __slots__ = ()

    def prepared_grad(self, maximize: bool, weight_decay: float = 0) -> np.ndarray:
        """Return the gradient negated for ``maximize`` and plus ``weight_decay * param`` (L2),
        as torch's ``grad = -grad; grad = grad.add(param, alpha=weight_decay)``."""
        g = self.grad(writable=maximize or weight_decay != 0)
        if maximize:
            np.negative(g, out=g)
        if weight_decay != 0:
            np.multiply(self.p, weight_decay, out=self.tmp)
            g += self.tmp
        return g

    def scratch(self, i: int) -> np.ndarray:
        """Return the ``i``-th extra scratch array (beyond ``tmp``), made on first use."""
        while len(self._scratch) <= i:
            self._scratch.append(np.empty_like(self.p))
        return self._scratch[i]


class FlatGroup(_Arrays):
    """Flat arrays for the parameters of one group, their gradients and their state ``keys``."""

    def __init__(
        self,
        params: list[Tensor],
        state,
        keys: tuple[str, ...],
        scalars: tuple[str, ...] = (),
        prev: FlatGroup | None = None,
    ):
        self.params = params
        self.ids = tuple(map(id, params))
        dtype = params[0]._data.dtype
        sizes = [p._data.size for p in params]
        self.bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n = int(self.bounds[-1])
        self.p = np.concatenate([p._data for p in params], axis=None).astype(dtype, copy=False)
        self.g = np.empty(n, dtype)
        self.tmp = np.empty(n, dtype)
        self._gw = None  # scratch gradient, made on first use
        self.sizes = np.asarray(sizes, dtype=np.int64)
        spans = list(zip(self.bounds[:-1].tolist(), self.bounds[1:].tolist()))
        self.spans = spans
        self.views = [self.p[a:b].reshape(p.shape) for p, (a, b) in zip(params, spans)]
        self._bind_params(prev)
        self.g_bound: list = [None] * len(params)  # the flat-gradient view each .grad holds
        self.last_gids: tuple = ()
        self.bufs = {}
        for key in keys:
            buf = np.zeros(n, dtype)
            for p, (a, b) in zip(params, spans):
                s = state[p].get(key)
                if s is not None:
                    buf[a:b] = s._data.reshape(-1)
                state[p][key] = _rewrap(s, buf[a:b].reshape(p.shape))
            self.bufs[key] = buf
        self.scalars: dict[str, np.ndarray] = {}
        for key in scalars:  # 0-d float32 state (``step``, NAdam's ``mu_product``, ...)
            vals = np.zeros(len(params), np.float32)
            for i, p in enumerate(params):
                s = state[p].get(key)
                if s is not None:
                    vals[i] = float(s)
                state[p][key] = _rewrap(s, vals[i : i + 1].reshape(()))
            self.scalars[key] = vals
        # the version counters of each state key's tensors (``scatter`` bumps them)
        self.state_vcs = [[state[p][k]._vc for p in params] for k in (*keys, *scalars)]
        self.steps = self.scalars.get("step")
        self._scratch: list[np.ndarray] = []
        self.state_ids = self._ids_of(params, state, tuple(keys) + tuple(scalars))

    # -- parameters ----------------------------------------------------------------------------
    def _bind_params(self, prev: FlatGroup | None) -> None:
        """Re-point every parameter that is the sole holder of its memory at its flat slice."""
        movable = set()
        if prev is not None:
            # no view of the previous buffer outside: its views list and the array attribute
            if sys.getrefcount(prev.p) <= _ATTR_HELD_ONCE + len(prev.views):
                movable = {id(v) for v in prev.views}
        self.bound_params: list[Tensor] = []
        self.bound_views: list[np.ndarray] = []
        unbound = []
        for i, p in enumerate(self.params):
            if id(p._data) in movable:
                ok = _held(p._data, 2)  # also held by prev.views and prev.bound_views
            else:
                ok = _owns(p._data)
            if ok:
                p._data = self.views[i]
                self.bound_params.append(p)
                self.bound_views.append(self.views[i])
            else:
                unbound.append(i)
        self.unbound = unbound
        self._wrappers = {i: _wrap(self.views[i]) for i in unbound}
        if movable:  # parameters leaving the group get their own memory back, to be re-pointed
            kept = set(self.ids)  # at a later rebuild (else they would stay on the copy path)
            for p in prev.params:
                if id(p) not in kept and id(p._data) in movable and _held(p._data, 2):
                    p._data = p._data.copy()

    def current(self) -> bool:
        """True while every re-pointed parameter still holds its flat view and every other one
        keeps its shape (O(#params) identity tests, no NumPy calls)."""
        if not all(map(_is, map(_data_of, self.bound_params), self.bound_views)):
            return False
        params, views = self.params, self.views
        return all(params[i]._data.shape == views[i].shape for i in self.unbound)

    # -- a step ----------------------------------------------------------------------------------
    def gather(self) -> None:
        """Bring the flat arrays up to date: copy in the parameters that are not re-pointed (one
        call each) and the gradients unless all of them are re-pointed (one call)."""
        params, views = self.params, self.views
        for i in self.unbound:
            np.copyto(views[i], params[i]._data)
        grads = list(map(_grad_of, params))
        self._grads = grads
        if not all(map(_is, map(_data_of, grads), self.g_bound)):
            self._release_stale(grads)
            arrays = [g._data for g in grads]
            n = self.g.size
            if n >= PARALLEL_MIN and len(arrays) > 1 and get_num_threads() > 1:
                # two concatenations, split at the parameter nearest the middle, on two threads
                k = min(max(int(np.searchsorted(self.bounds, n // 2)), 1), len(arrays) - 1)
                cut = int(self.bounds[k])
                g = self.g
                parallel_pair(
                    lambda: np.concatenate(arrays[k:], axis=None, out=g[cut:]),
                    lambda: np.concatenate(arrays[:k], axis=None, out=g[:cut]),
                )
            else:
                np.concatenate(arrays, axis=None, out=self.g)

    def blocks(self, writable: bool = False):
        """Yield ``(lo, hi, g)``: the flat range in cache-sized blocks with the gradient ``g`` of
        ``[lo, hi)``. A large parameter's own contiguous gradient is read in place (no gather
        copy); the small or strided rest is gathered into the flat gradient first. Running the
        whole update one block at a time keeps every array's block in cache across its passes,
        which halves the memory traffic of an update over arrays larger than the cache.
        ``writable`` gives blocks of a gradient copy the update may overwrite (``grad(True)``)."""
        params, views = self.params, self.views
        for i in self.unbound:
            np.copyto(views[i], params[i]._data)
        if writable:
            self.gather()
            pieces = [(0, self.g.size, self.grad(True))]
        else:
            pieces = self._grad_pieces()
        step = _BLOCK_BYTES // self.g.itemsize
        for lo, hi, g in pieces:
            for a in range(0, hi - lo, step):
                b = min(a + step, hi - lo)
                yield lo + a, lo + b, g[a:b]

    def _grad_pieces(self) -> list[tuple[int, int, np.ndarray]]:
        grads = list(map(_grad_of, self.params))
        self._grads = grads
        if all(map(_is, map(_data_of, grads), self.g_bound)):
            return [(0, self.g.size, self.g)]
        self._release_stale(grads)
        pieces, run, spans = [], [], self.spans

        def flush():
            if run:
                lo, hi = spans[run[0]][0], spans[run[-1]][1]
                arrays = [grads[j]._data for j in run]
                np.concatenate(arrays, axis=None, out=self.g[lo:hi])
                pieces.append((lo, hi, self.g[lo:hi]))
                run.clear()

        for i, g in enumerate(grads):
            a = g._data
            if a.size >= _DIRECT_MIN and a.flags.c_contiguous:
                flush()
                pieces.append((*spans[i], a.reshape(-1)))
            else:
                run.append(i)
        flush()
        return pieces

    def run_blocks(self, fn, *arrays, writable: bool = False) -> None:
        """Run ``fn(g, *blocks)`` for every block of ``blocks(writable)``: each flat array
        among ``arrays`` (length of the flat range) is sliced to the block, ``self.tmp`` becomes
        one block-sized scratch reused by every block, other arguments pass as they are."""
        n, tmp = self.g.size, self.tmp
        for lo, hi, g in self.blocks(writable):
            args = [
                tmp[: hi - lo]
                if a is tmp
                else a[lo:hi]
                if isinstance(a, np.ndarray) and a.shape == (n,)
                else a
                for a in arrays
            ]
            fn(g, *args)

    def _release_stale(self, grads: list[Tensor]) -> None:
        """Forget the flat-gradient views that are no longer a parameter's ``.grad``. If one is
        still held (a gradient the user kept), the flat gradient is left to it and replaced."""
        bound = self.g_bound
        for i, g in enumerate(grads):
            if bound[i] is not None and g._data is not bound[i]:
                if not _list_item_free(bound, i):
                    self.g = np.empty_like(self.g)
                    self.g_bound = [None] * len(bound)
                    return
                bound[i] = None

    def grad(self, writable: bool = False) -> np.ndarray:
        """Return the flat gradient; ``writable`` gives an array the update may overwrite (a
        scratch copy when some ``.grad`` views the flat gradient)."""
        if writable and any(v is not None for v in self.g_bound):
            if self._gw is None:
                self._gw = np.empty_like(self.g)
            np.copyto(self._gw, self.g)
            return self._gw
        return self.g

    def scatter(self, writes: int = 1, state_writes: tuple[int, ...] = ()) -> None:
        """Finish a step: bump the versions of the re-pointed parameters (by ``writes``, the
        in-place ops torch's update makes on a parameter) and of the state tensors (by
        ``state_writes``, one count per state key, ``keys`` then ``scalars``), write the other
        parameters back (re-pointing those that became sole holders), and re-point persistent
        gradients."""
        for p in self.bound_params:
            p._vc[0] += writes
        for vcs, n in zip(self.state_vcs, state_writes):
            if n:
                for vc in vcs:
                    vc[0] += n
        if self.unbound:
            self._scatter_unbound(writes)
        grads, self._grads = self._grads, None
        if tuple(map(id, grads)) == self.last_gids:
            self._bind_grads(grads)
        self.last_gids = tuple(map(id, map(_grad_of, self.params)))

    def _scatter_unbound(self, writes: int) -> None:
        params, views, still = self.params, self.views, []
        for i in self.unbound:
            p = params[i]
            if _owns(p._data):
                p._data = views[i]
                p._vc[0] += writes
                self.bound_params.append(p)
                self.bound_views.append(views[i])
                del self._wrappers[i]
            else:
                p.copy_(self._wrappers[i])
                p._vc[0] += writes - 1
                still.append(i)
        self.unbound = still

    def _bind_grads(self, grads: list[Tensor]) -> None:
        """Replace each persistent gradient nobody else holds by a tensor over its slice of the
        flat gradient (same values and version counter), so later steps need no gather."""
        bound, params = self.g_bound, self.params
        for i, p in enumerate(params):
            if grads[i]._data is bound[i] or not _grad_private(grads, i):
                continue
            if bound[i] is not None and not _list_item_free(bound, i):
                continue  # an older gradient still views this slice
            g = grads[i]
            if g._data.shape != p._data.shape or g._data.dtype != self.g.dtype:
                continue
            lo, hi = self.spans[i]
            v = self.g[lo:hi].reshape(g._data.shape)
            np.copyto(v, g._data)
            new = _wrap(v)
            new._vc = g._vc
            p._grad = new
            bound[i] = v

    def zero_grads(self, group_params: list[Tensor]) -> bool:
        """``zero_grad(set_to_none=False)`` in one call when every gradient of the group is a
        plain (no history, no requires_grad) view of the flat gradient; return whether done."""
        params, bound = self.params, self.g_bound
        if len(group_params) != len(params) or not all(map(_is, group_params, params)):
            return False
        grads = [p.grad for p in params]
        for g, v in zip(grads, bound):
            if g is None or g._data is not v or g._grad_fn is not None or g._requires_grad:
                return False
        self.g.fill(0)
        for g in grads:
            g._vc[0] += 1
        return True

    # -- helpers for the algorithms: prepared_grad, scratch (_Arrays), per_element -----------
    @staticmethod
    def _ids_of(params, state, keys):
        # the identity of every state tensor: load_state_dict or a user replacing one rebuilds
        return tuple([id(st.get(k)) for st in map(state.__getitem__, params) for k in keys])

    def per_element(self, values: np.ndarray) -> np.ndarray | float:
        """Spread one value per parameter over its elements (a scalar when all are equal)."""
        if values.min() == values.max():
            return values.flat[0].item()
        return np.repeat(values.astype(self.p.dtype), self.sizes)


class OneParam(_Arrays):
    """One parameter seen through :class:`FlatGroup`'s interface, so that an optimizer's one
    update body also runs per parameter (``foreach=False``, mixed dtypes, shared state): ``p``,
    ``bufs`` and ``scalars`` are the parameter's and its state's own arrays (updated in place),
    ``tmp``/``scratch`` are fresh, and ``done()`` bumps the version counters as torch's in-place
    ops do."""

    __slots__ = (
        "param", "p", "tmp", "bufs", "scalars", "steps", "sizes", "_scratch", "_owned", "_grad"
    )  # fmt: skip

    def __init__(self, param: Tensor, state: dict, keys, scalars, grad=None) -> None:
        self.param = param
        self._grad = grad  # the gradient given to a functional step (else ``param.grad``)
        self.p = param._data
        self.tmp = np.empty_like(self.p)
        self.sizes = np.array([self.p.size], dtype=np.int64)
        self.bufs = {k: state[k]._data for k in keys}
        self.scalars = {k: state[k]._data.reshape(1) for k in scalars}
        self.steps = self.scalars.get("step")
        self._scratch: list[np.ndarray] = []
        self._owned = [state[k] for k in keys] + [state[k] for k in scalars]

    def grad(self, writable: bool = False) -> np.ndarray:
        """Return the gradient's array (a copy the update may overwrite when ``writable``)."""
        g = (self.param.grad if self._grad is None else self._grad)._data
        return np.array(g, dtype=self.p.dtype) if writable else g

    def per_element(self, values: np.ndarray) -> float:
        return values.flat[0].item()

    def run_blocks(self, fn, *arrays, writable: bool = False) -> None:
        """Run ``fn(g, *arrays)`` once, over the whole parameter."""
        fn(self.grad(writable), *arrays)

    def done(self, writes: int = 1, state_writes: tuple[int, ...] = ()) -> None:
        """Bump the versions of the parameter and of its state, as :meth:`FlatGroup.scatter`."""
        self.param._vc[0] += writes
        for t, n in zip(self._owned, state_writes):
            t._vc[0] += n


def _rewrap(old: Tensor | None, view: np.ndarray) -> Tensor:
    """A state tensor over its flat ``view``, keeping the version of the one it replaces."""
    t = _wrap(view)
    if isinstance(old, Tensor):
        t._vc[0] = old._vc[0]
    return t


def lerp_(m: np.ndarray, end: np.ndarray, weight: float, tmp: np.ndarray) -> None:
    """``m.lerp_(end, weight)`` with torch's two formulas (``weight`` below or above 0.5)."""
    np.subtract(end, m, out=tmp)
    if abs(weight) < 0.5:
        tmp *= weight
        m += tmp
    else:
        tmp *= 1 - weight
        np.subtract(end, tmp, out=m)


def flat_group(
    opt, index: int, params: list[Tensor], keys: tuple, scalars: tuple, group: dict
) -> FlatGroup:
    """Return the cached flat buffers of group ``index``, rebuilding them when stale; before a
    rebuild, ``opt._init_state(group, p, state)`` gives a parameter without state torch's
    initial state."""
    fg = opt._flat.get(index)
    if (
        fg is not None
        and fg.ids == tuple(map(id, params))
        and fg.state_ids == FlatGroup._ids_of(params, opt.state, keys + scalars)
        and fg.current()
    ):
        return fg
    opt._flat[index] = None  # drop the cache's reference so that `prev` counts exactly
    for p in params:
        st = opt.state[p]
        if len(st) == 0:
            opt._init_state(group, p, st)
    new = FlatGroup(params, opt.state, keys, scalars, prev=fg)
    opt._flat[index] = new
    return new

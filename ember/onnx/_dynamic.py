"""Sizes that follow the dynamic dims: found by tracing again with those dims one larger.

A trace records concrete sizes (``view(x, shape=(10, 8))``). For every symbol of
``dynamic_axes`` the model is traced once more with that input dim grown by one; an integer
argument that changes between the traces is taken to be ``c + sum(a_k * symbol_k)`` (a
flattened batch, a batch-times-heads...) and is computed in the ONNX graph from the input's
runtime shape instead of being written as a constant.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core.tensor import Tensor
from ember.jit._tracer import TracerWarning
from ember.onnx._graph import flatten as _flatten
from ember.onnx.errors import OnnxExporterWarning


def symbols(graph, dynamic_axes, every: bool = False) -> dict:
    """Return ``{symbol: (input index, axis)}`` for the dynamic dims of the graph's inputs
    (the first place each symbol appears; with ``every``, a list of all of them)."""
    out = {}
    for i, v in enumerate(graph.inputs):
        spec = (dynamic_axes or {}).get(v.name)
        if spec is None:
            continue
        if not isinstance(spec, dict):
            spec = {int(d): f"{v.name}_dynamic_axes_{j + 1}" for j, d in enumerate(spec)}
        for axis, sym in spec.items():
            if every:
                out.setdefault(sym, []).append((i, int(axis)))
            else:
                out.setdefault(sym, (i, int(axis)))
    return out


def grown_args(args, kwargs, graph, where):
    """Return ``(args, kwargs)`` with the input dims ``where`` (``[(input index, axis)]``)
    one larger (the last slice repeated)."""
    flat = []
    for t in _flatten(list(args) + list((kwargs or {}).values())):
        if isinstance(t, Tensor) and all(t is not u for u in flat):
            flat.append(t)
    new = {}
    for i, axis in where:
        t = flat[i]
        a = new[id(t)]._data if id(t) in new else t._data
        idx = np.concatenate([np.arange(a.shape[axis]), [a.shape[axis] - 1]])
        new[id(t)] = _tensor(np.take(a, idx, axis=axis))

    def swap(x):
        if isinstance(x, Tensor):
            return new.get(id(x), x)
        if isinstance(x, tuple):
            return tuple(swap(e) for e in x)
        if isinstance(x, list):
            return [swap(e) for e in x]
        if isinstance(x, dict):
            return {k: swap(e) for k, e in x.items()}
        return x

    return swap(tuple(args)), swap(kwargs) if kwargs is not None else None


def _tensor(a):
    from ember._core.tensor import _wrap

    return _wrap(np.ascontiguousarray(a))


def follow_dynamic_dims(graph, args, kwargs, dynamic_axes, retrace) -> None:
    """Trace again (``retrace(args, kwargs)``) with each dynamic dim grown by one, and all of
    them at once when there are several; note on ``graph``'s nodes the sizes that follow."""
    syms = symbols(graph, dynamic_axes)
    every = symbols(graph, dynamic_axes, every=True)
    runs = {sym: every[sym] for sym in syms}
    if len(syms) > 1:  # all at once: finds sizes that multiply two dims
        runs[JOINT] = [w for ws in every.values() for w in ws]
    grown = {}
    for sym, where in runs.items():
        try:
            with warnings.catch_warnings():  # the first trace already said it all
                warnings.simplefilter("ignore", TracerWarning)
                grown[sym] = retrace(*grown_args(args, kwargs, graph, where))
        except Exception as e:  # noqa: BLE001 (any failure: keep the traced sizes)
            warnings.warn(
                f"the model failed with the dynamic dim {sym!r} one larger ({type(e).__name__}: "
                f"{e}); sizes in the graph follow the example inputs",
                OnnxExporterWarning,
                stacklevel=4,
            )
            return
    if grown:
        annotate(graph, grown, syms)


def annotate(graph, grown: dict, syms: dict) -> None:
    """Compare ``graph`` with the traces in ``grown`` (``{symbol: graph}``, plus ``JOINT``: all
    symbols grown at once, when there are several) and record on each node ``dyn = {param:
    expression}`` for the integer arguments that follow the symbols. An expression is
    ``(c, {monomial: a})`` (a monomial is a tuple of symbols: ``("n",)``, ``("n", "s")``) for
    an int, a list of expressions or None for a tuple of ints."""
    base = {s: graph.inputs[i].shape[axis] for s, (i, axis) in syms.items()}
    for sym, other in grown.items():
        if [n.name for n in other.nodes] != [n.name for n in graph.nodes]:
            warnings.warn(
                f"the model runs different ops when the dynamic dim {sym!r} changes size; the "
                "exported graph follows the example inputs",
                OnnxExporterWarning,
                stacklevel=4,
            )
            return
    for k, node in enumerate(graph.nodes):
        dyn = {}
        for key, value in node.params.items():
            changes = {s: other.nodes[k].params.get(key) for s, other in grown.items()}
            expr = _fit(value, changes, base)
            if expr is not None:
                dyn[key] = expr
        if dyn:
            node.dyn = dyn
    for other in grown.values():
        for v, w in zip(graph.consts, other.consts):
            if v.shape != w.shape:
                warnings.warn(
                    f"a constant of shape {list(v.shape)} changes size with the dynamic dims "
                    "(made from a size, e.g. zeros(x.shape[0], ...)); it is exported with its "
                    "traced size",
                    OnnxExporterWarning,
                    stacklevel=4,
                )
                return


JOINT = "\0all"  # the key of the trace with every symbol grown


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _fit_int(p0: int, changes: dict, base: dict):
    joint = changes.pop(JOINT, None)
    a = {s: int(v) - p0 for s, v in changes.items()}
    coef = {(s,): d for s, d in a.items() if d}
    if joint is not None and int(joint) != p0 + sum(a.values()):
        if len(a) != 2:
            warnings.warn(
                "a size depends on the product of more than two dynamic dims; it is exported "
                "as traced",
                OnnxExporterWarning,
                stacklevel=5,
            )
            return None
        (s1, s2), b = tuple(a), int(joint) - p0 - sum(a.values())
        coef = {(s1,): a[s1] - b * base[s2], (s2,): a[s2] - b * base[s1], (s1, s2): b}
        coef = {m: v for m, v in coef.items() if v}
    if not coef:
        return None
    c = p0 - sum(v * int(np.prod([base[s] for s in m])) for m, v in coef.items())
    return (c, coef)


def _fit(value, changes: dict, base: dict):
    if _is_int(value):
        if not all(_is_int(v) for v in changes.values()):
            return None
        return _fit_int(int(value), dict(changes), base)
    if isinstance(value, (tuple, list)) and value and all(_is_int(e) for e in value):
        if not all(isinstance(v, (tuple, list)) and len(v) == len(value) for v in changes.values()):
            return None
        per = [_fit(e, {s: v[j] for s, v in changes.items()}, base) for j, e in enumerate(value)]
        return per if any(p is not None for p in per) else None
    return None


def size_tensor(ctx, expr) -> str:
    """Return the ONNX name of a one-element int64 tensor computing ``expr`` at run time."""
    c, coef = expr
    total = None
    for monomial, a in coef.items():
        term = None
        for sym in monomial:
            s = ctx.symbol(sym)
            term = s if term is None else ctx.add1("Mul", [term, s])
        if a != 1:
            term = ctx.add1("Mul", [term, ctx.ints([a])])
        total = term if total is None else ctx.add1("Add", [total, term])
    if c:
        total = ctx.add1("Add", [total, ctx.ints([c])])
    return total


def shape_tensor(ctx, values, exprs) -> str:
    """Return a 1-D int64 shape: ``values`` where static, computed where ``exprs`` says."""
    parts = [ctx.ints([v]) if e is None else size_tensor(ctx, e) for v, e in zip(values, exprs)]
    return ctx.add1("Concat", parts, axis=0)

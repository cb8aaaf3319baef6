"""Dynamic shapes: one entry for every size of a dimension, as torch's automatic dynamic.

A function first compiles for the shapes it is called with. When a later call differs in some
dimensions only, and its capture records the very same program (the same kernels, on the same
values, with the same parameters: nothing the program did depended on those sizes), the new
entry is compiled *dynamic* in them: its guards accept any size >= 2 there (0 and 1 stay
specialised, as torch's), and it runs through a shape-generic backend (the IR executor, or the
user's backend, which sees the graph once). ``dynamic=True`` (or ``mark_dynamic``) makes the
marked dimensions eligible without a second size (still proven on the second size seen);
``dynamic=False`` never compiles a dynamic entry.

What makes a program depend on sizes is seen in its trace: a parameter computed from a size
(``view(x.size(0), -1)`` records the number) differs between the two captures, and a size read
by the user's own code (``x.shape``, ``x.size()``, ``len(x)``, ``x.numel()``) keeps the entry
static, since Python may branch on it.
"""

from __future__ import annotations

from ember._dynamo import capture as C


def signature(rec: C.Recorder) -> tuple | None:
    """The trace with its shapes left out, or None when it cannot run at other sizes."""
    if rec.shape_read:
        return None
    out: list = []
    for v in rec.values:
        if v.kind == "ref":
            out.append(("ref", v.id, id(v.tensor)))
        elif v.kind == "input":
            out.append(("input", v.id, v.dtype.str, len(v.shape)))
    for c in rec.calls:
        if type(c) is not C.Call or c.op is None:
            return None  # a data read or a helper kernel: guards and kernels the IR lacks
        args = tuple(_token(a) for a in c.args)
        params = tuple(sorted((k, _token(x)) for k, x in (c.params or {}).items()))
        casts = tuple(str(x) for x in c.casts or ())
        target = None if c.target is None else c.target.id
        out.append((c.label, args, params, casts, target, len(c.outs)))
    return tuple(out)


def _token(a):
    if type(a) is C.Value:
        return ("value", a.id)
    return (type(a).__name__, repr(a))


def changed_dims(old: list, new: list, contiguous: list) -> frozenset | None:
    """The (tensor, dim) pairs whose sizes differ between two calls' input shapes, when every
    other size is equal, the new sizes are >= 2 and the tensors are contiguous; else None."""
    if len(old) != len(new):
        return None
    dims = set()
    for i, (a, b) in enumerate(zip(old, new)):
        if len(a) != len(b):
            return None
        for d, (m, n) in enumerate(zip(a, b)):
            if m != n:
                if n < 2 or m == 0 or not contiguous[i]:
                    return None
                dims.add((i, d))
    return frozenset(dims) or None


def marked(tensors: list) -> frozenset:
    """The dims ``mark_dynamic`` marked on these tensors."""
    out = set()
    for i, t in enumerate(tensors):
        n = t._data.ndim
        out |= {(i, d % n) for d in getattr(t, "_dynamo_dynamic_indices", ()) if -n <= d < n}
    return frozenset(out)


def shape_guard(i: int, shape: tuple, dims) -> str:
    """The guard source for input ``i``'s shape: equal sizes, except ``>= 2`` in ``dims``."""
    parts = [f"len(ts[{i}]._data.shape) == {len(shape)}"]
    for d, n in enumerate(shape):
        op = ">=" if (i, d) in dims else "=="
        parts.append(f"ts[{i}]._data.shape[{d}] {op} {2 if op == '>=' else n}")
    parts.append(f"ts[{i}]._data.flags.c_contiguous")
    return " and ".join(parts)

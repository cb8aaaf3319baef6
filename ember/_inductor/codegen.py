"""Code generation: a recorded trace becomes one plain Python function.

One line per kernel call, calling the op table's array-level forward (or its NumPy ufunc,
into a reused buffer) directly: no Tensors, no dispatch, no autograd recording. Buffers come
from a liveness-based plan: a pointwise result that never leaves the function takes a
preallocated buffer of its shape and dtype whose previous value is dead.
"""

from __future__ import annotations

import numpy as np

from ember._dynamo.capture import OUT_TARGET, Call, Read, Value, read_value

_UFUNC_DTYPES = {np.dtype(t) for t in ("float32", "float64", "int64", "int32", "bool")}


class GuardFail(Exception):
    """A data guard of the compiled code failed: the program must run another way."""


_UFUNCS: dict = {}


def _ufuncs() -> dict:
    """{op: ufunc} for the ops whose forward is a bare NumPy ufunc when called without params."""
    if not _UFUNCS:
        from ember._ops import pointwise as P
        from ember._ops import unary as U

        for name, uf in (
            ("_add", np.add),
            ("_sub", np.subtract),
            ("_mul", np.multiply),
            ("_div", np.true_divide),
            ("_reciprocal", np.reciprocal),
        ):
            if hasattr(P, name):
                _UFUNCS[getattr(P, name)] = uf
        for name, uf in (("_sin", np.sin), ("_cos", np.cos), ("_tanh", np.tanh)):
            if hasattr(U, name):
                _UFUNCS[getattr(U, name)] = uf
    return _UFUNCS


def _same(a, b) -> bool:
    return a == b or (a != a and b != b)


def generate(name: str, params: list, calls: list, outputs: list, escapes: set, env: dict):
    """Return the source of ``def name(*params)`` running ``calls`` and returning ``outputs``
    (Values or None); ``escapes``: value ids whose arrays outlive the call (never put in a
    reused buffer). ``env`` receives the globals the source refers to."""
    env.setdefault("np", np)
    env.setdefault("GuardFail", GuardFail)
    env.setdefault("_aa", np.asarray)
    env.setdefault("_read", read_value)
    env.setdefault("_same", _same)
    ufuncs = _ufuncs()
    calls = _live(calls, outputs)
    names: dict = {}  # value id -> variable name holding its array
    lines = [f"def {name}({', '.join(p.name for p in params)}):"]
    for p in params:
        names[p.id] = p.name

    # liveness: the last position each storage (root) is used at
    last: dict = {}
    for pos, c in enumerate(calls):
        vals = [c.value] if type(c) is Read else [a for a in c.args if type(a) is Value]
        if type(c) is Call and c.target is not None:
            vals.append(c.target)
        for v in vals:
            last[v.root] = pos
    escaping = {v.root for v in outputs if v is not None} | set(escapes)
    for p in params:
        escaping.add(p.root)

    free: dict = {}  # (shape, dtype) -> [buffer names]
    dying: dict = {}  # position -> [(key, buffer name)]
    nbuf = 0
    consts = 0

    def arg(a, cast):
        nonlocal consts
        if type(a) is Value:
            ref = names.get(a.id)
            if ref is None:  # a reference: read afresh on every run
                ref = names[a.id] = a.name
                env[f"_r{a.id}"] = a.tensor
                lines.append(f"    {a.name} = _r{a.id}._data")
            if cast is not None:
                env[f"_dt{a.id}_{cast}"] = cast
                return f"{ref}.astype(_dt{a.id}_{cast})"
            return ref
        if a is None or type(a) in (bool, int, str):
            return repr(a)
        if type(a) is float and a == a and a not in (float("inf"), float("-inf")):
            return repr(a)
        consts += 1
        env[f"_k{consts}"] = a
        return f"_k{consts}"

    for pos, c in enumerate(calls):
        for key, buf in dying.pop(pos - 1, ()):
            free.setdefault(key, []).append(buf)
        if type(c) is Read:
            v = arg(c.value, None)
            env[f"_g{pos}"] = c.result
            lines.append(f"    if not _same(_read({c.kind!r}, {v}), _g{pos}): raise GuardFail")
            continue
        casts = c.casts or [None] * len(c.args)
        args = [arg(a, casts[i] if i < len(casts) else None) for i, a in enumerate(c.args)]
        fname = f"_f{pos}"
        env[fname] = c.fn
        kw = ""
        if c.params:
            env[f"_p{pos}"] = c.params
            kw = f", **_p{pos}"
        uf = ufuncs.get(c.op) if not c.params and c.op is not None else None
        out = c.outs[0]
        if c.target is not None:
            dst = names[c.target.id]
            names[out.id] = dst
            if c.params.get("out") is OUT_TARGET:
                env[f"_p{pos}"] = {k: v for k, v in c.params.items() if k != "out"}
                lines.append(f"    {fname}({', '.join(args)}, out={dst}{kw})  # {c.label}_")
                continue
            if uf is not None and out.dtype == c.target.dtype and out.dtype in _UFUNC_DTYPES:
                env[f"_u{pos}"] = uf
                lines.append(f"    _u{pos}({', '.join(args)}, out={dst})  # {c.label}_")
            else:
                lines.append(
                    f"    np.copyto({dst}, {fname}({', '.join(args)}{kw}), casting='unsafe')"
                    f"  # {c.label}_"
                )
            continue
        if c.multi:
            outs = [o.name for o in c.outs]
            for o in c.outs:
                names[o.id] = o.name
            lines.append(f"    {', '.join(outs)}, = {fname}({', '.join(args)}{kw})  # {c.label}")
            if c.op is not None:  # (helper kernels return arrays already)
                for o in outs:
                    if o != "_":
                        lines.append(f"    {o} = _aa({o})")
            continue
        names[out.id] = out.name
        if (
            uf is not None
            and out.root == out.id
            and out.id not in escaping
            and out.dtype in _UFUNC_DTYPES
            and last.get(out.id, -1) > pos
        ):
            key = (out.shape, out.dtype.str)
            pool = free.get(key)
            if pool:
                buf = pool.pop()
            else:
                buf = f"_b{nbuf}"
                nbuf += 1
                env[buf] = np.empty(out.shape, out.dtype)
            env[f"_u{pos}"] = uf
            lines.append(f"    {out.name} = _u{pos}({', '.join(args)}, out={buf})  # {c.label}")
            dying.setdefault(last[out.id], []).append((key, buf))
        elif uf is not None:
            env[f"_u{pos}"] = uf
            lines.append(f"    {out.name} = _u{pos}({', '.join(args)})  # {c.label}")
        else:
            lines.append(f"    {out.name} = _aa({fname}({', '.join(args)}{kw}))  # {c.label}")
    rets = []
    for v in outputs:
        rets.append("None" if v is None else arg(v, None))
    lines.append(f"    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})")
    return "\n".join(lines) + "\n"


def _live(calls: list, outputs: list) -> list:
    """Drop the calls whose results nothing reads (dead code: a formula's gradient for an
    input that needs none); in-place writes, data guards and random draws always stay."""
    used = {v.id for v in outputs if v is not None}
    kept = []
    for c in reversed(calls):
        if type(c) is Read:
            used.add(c.value.id)
            kept.append(c)
            continue
        if (
            c.target is None
            and not getattr(c.fn, "draws", False)
            and not any(o.id in used for o in c.outs)
        ):
            continue
        kept.append(c)
        for a in c.args:
            if type(a) is Value:
                used.add(a.id)
        if c.target is not None:
            used.add(c.target.id)
    kept.reverse()
    return kept


def build(name: str, source: str, env: dict):
    """Compile the generated ``source`` and return the function ``name``."""
    code = compile(source, f"<ember compiled {name}>", "exec")
    exec(code, env)
    return env[name]

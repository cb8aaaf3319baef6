"""Code generation: a recorded trace becomes one plain Python function.

One line per kernel call, calling the op table's array-level forward (or its NumPy ufunc,
into a reused buffer) directly: no Tensors, no dispatch, no autograd recording. Buffers come
from a liveness-based plan: a pointwise result that never leaves the function takes a
preallocated buffer of its shape and dtype whose previous value is dead.
"""

from __future__ import annotations

import types

import numpy as np

from ember._dynamo.capture import OUT_TARGET, read_value
from ember._inductor import kernels
from ember._inductor import numba_kernels as NK

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_UFUNC_DTYPES = {np.dtype(t) for t in ("float32", "float64", "int64", "int32", "bool")}


class GuardFail(Exception):
    """A data guard of the compiled code failed: the program must run another way."""


_UFUNCS: dict = {}


def _ufuncs() -> dict:
    """{op: ufunc} for the ops whose forward, called without params on arrays of the dtypes
    in ``_UFUNC_DTYPES``, is exactly one call of a NumPy ufunc (``np.add(x, y)``)."""
    if not _UFUNCS:
        from ember._ops import pointwise as P
        from ember._ops import unary as U

        for mod in (P, U):
            for name, op in vars(mod).items():
                if name.startswith("_") and isinstance(getattr(op, "forward", None), np.ufunc):
                    _UFUNCS[op] = op.forward
        for mod, name, uf in (
            (P, "_add", np.add),
            (P, "_sub", np.subtract),
            (P, "_mul", np.multiply),  # (_scalar_in_float32: a plain ufunc but for halves)
            (P, "_div", np.true_divide),
            (P, "_reciprocal", np.reciprocal),
            (U, "_neg", np.negative),  # (refuses bool, which never reaches compiled code)
            (U, "_abs", np.absolute),
        ):
            if hasattr(mod, name):
                _UFUNCS[getattr(mod, name)] = uf
    return _UFUNCS


def _ufunc_name(env: dict, uf) -> str:
    """The name the generated source calls NumPy's ufunc ``uf`` by (``np_multiply``)."""
    nm = f"np_{uf.__name__}"
    env.setdefault(nm, uf)
    return nm


def _promotes_alike(dts: list, casts) -> bool:
    # every input is an array (``dts``: their dtypes, None for a constant) and NumPy's
    # promotion of them is the dtype the op casts them to: the ufunc converts each element
    # exactly as ``astype`` would, without the copy
    if len(casts) != len(dts) or any(d is None for d in dts):  # (dtype == None is float64)
        return False
    to = {np.dtype(c) for c in casts if c is not None}
    return len(to) == 1 and to <= _UFUNC_DTYPES and np.result_type(*dts) in to


_VALUES_POOLS = ("max_pool2d", "max_pool3d")
_POOL_GEOMETRY = ("kernel", "stride", "padding", "dilation", "ceil_mode")


def _values_only_pool(n, rets_set, meta, pools) -> bool:
    """True (and ``pools`` told) when ``n`` computes max-pooling indices that only the
    gather of the values reads (inference, or no gradient for the input): the values are
    then computed by ``kernels.window_max``, and the indices not at all."""
    from ember.nn._functional import pooling

    if n._payload is not pooling._max_indices or len(n._outputs) != 1:
        return False
    idx = n._outputs[0]
    uses = idx._uses
    if idx in rets_set or len(uses) != 1 or uses[0].offset != 1:
        return False
    user = uses[0].user
    if getattr(getattr(user, "_op", None), "name", None) != "max_pool2d_with_indices":
        return False
    x = n._inputs[0]
    if user._inputs[0] is not x or any(v._node._kind != "prim::Constant" for v in n._inputs[1:]):
        return False
    consts = tuple(_attr(v._node, "value") for v in n._inputs[1:])
    if kernels.window_max("x", "y", "", meta.get(x), consts) is None:
        return False
    pools[user] = (meta.get(x), consts)
    return True


def _c_contiguous(m) -> bool:
    # whether capture value ``m``'s strides are C order's (dims of size 1 may have any)
    step = m.dtype.itemsize
    for n, st in zip(reversed(m.shape), reversed(m.strides)):
        if n != 1 and st != step:
            return False
        step *= n
    return True


def _same(a, b) -> bool:
    return a == b or (a != a and b != b)


def generate(
    name: str,
    params: list,
    calls: list,
    outputs: list,
    escapes: set,
    env: dict,
    n_results: int | None = None,
):
    """Return the source of ``def name(*params)`` running ``calls`` and returning ``outputs``
    (Values or None): the trace is lowered to the IR (``to_ir.to_graph``), optimised by the
    IR passes (``optimize``) and emitted (``emit``). ``escapes``: capture value ids whose
    arrays outlive the call (never put in a reused buffer). ``env`` receives the globals the
    source refers to, and the optimised graph as ``env["graph"]``. The first ``n_results``
    outputs (all by default) are results: CSE never merges their storage (see ``optimize``)."""
    from ember._inductor import to_ir

    low = to_ir.to_graph(params, calls, outputs)
    optimize(low, n_results)
    if NK.enabled():
        _pointwise_backwards(low)
    env["graph"] = low.graph
    return emit(name, low, escapes, env)


def optimize(low, n_results: int | None = None) -> None:
    """The IR passes a compiled graph gets: dead code elimination, and common subexpression
    elimination when no node writes in place or runs a kernel with effects (CSE knows no
    aliasing: a value read before and after a write into its storage would merge). A node
    making the storage of one of the first ``n_results`` outputs is never merged: each result
    owns its storage, as in eager."""
    from ember.jit import passes

    g = low.graph
    passes.dce(g)
    if any(
        getattr(n, "_inplace", 0) or getattr(getattr(n, "_payload", None), "effects", False)
        for n in g.nodes()
    ):
        return  # (a write, or a kernel writing into data: batch norm's running statistics)
    rets = g.outputs()
    rets = rets[: low.n_outputs if n_results is None else n_results]
    owned = {low.meta[v].root for v in rets if v in low.meta}
    marked = []
    for n in g.nodes():
        if getattr(n, "_payload", None) is None and any(
            o in low.meta and low.meta[o].root in owned for o in n._outputs
        ):
            n._payload = _OWNED  # (CSE leaves nodes with a payload alone)
            marked.append(n)
    passes.cse(g)
    for n in marked:
        del n._payload
    passes.dce(g)


_OWNED = object()


def _pointwise_backwards(low) -> None:
    """Spell the array-level backwards of ``sin`` and ``mul`` as their ufunc calls (``cos``
    then ``mul``; ``mul`` per needed input), each the same NumPy call on the same operands as
    the formula's (products commute exactly), so the fused kernels take them into their runs.
    Only with numba kernels (the NumPy code keeps the formulas' inlined kernels)."""
    from ember._dynamo.capture import Value
    from ember._ops import pointwise as P
    from ember._ops import unary as U

    g, meta = low.graph, low.meta
    sin_bw = U._sin.array_backward_fn.np_fn
    mul_bw = P._mul.array_backward_fn.np_fn
    fresh = [max((m.id for m in meta.values()), default=0) + 1]

    def value_like(m):
        # a new capture value of ``m``'s shape and dtype, row-major
        like = types.SimpleNamespace(
            shape=m.shape, dtype=m.dtype, strides=_row_major(m.shape, m.dtype.itemsize)
        )
        fresh[0] += 1
        return Value(fresh[0] - 1, "op", like, None)

    def op_node(op, ins, anchor, m):
        n = g.create(f"aten::{op.name}", ins, 1)
        n._op, n._inplace, n._multi = op, 0, False
        n.insertBefore(anchor)
        o = n.output()
        meta[o] = m
        o.setDebugName(m.name)
        return o

    for n in list(g.nodes()):
        pay = getattr(n, "_payload", None)
        func = getattr(pay, "func", None)
        if func not in (sin_bw, mul_bw) or pay.keywords or len(pay.args) != 1:
            continue
        ms = [meta.get(v) for v in n._inputs]
        if ms[0] is None or ms[0].dtype not in _FLOATS:
            continue
        if any(m is not None and m.dtype != ms[0].dtype for m in ms):
            continue
        outs = n._outputs
        if func is sin_bw:
            gv, xv = n._inputs
            if len(outs) != 1 or outs[0] not in meta or ms[1] is None:
                continue
            t = op_node(U._cos, [xv], n, value_like(ms[1]))
            new = [op_node(P._mul, [t, gv], n, meta[outs[0]])]
        else:
            ctx = pay.args[0]
            need = ctx.needs_input_grad
            if need[0] and need[1] and ctx.next_functions[0] == ctx.next_functions[1]:
                continue  # (x * x: its shortcut)
            gv, xv, yv = n._inputs
            if len(outs) != 2:
                continue
            pairs = ((0, yv, ms[2]), (1, xv, ms[1]))  # (gradient k is g times the other)
            if any(
                outs[k]._uses
                and not (
                    need[k]
                    and outs[k] in meta
                    and (m is not None or type(_attr(v._node, "value")) in (int, float))
                )
                for k, v, m in pairs
            ):
                continue  # (an operand neither an array of g's dtype nor a number)
            new = [
                op_node(P._mul, [gv, other], n, meta[outs[k]]) if outs[k]._uses else None
                for k, other in ((0, yv), (1, xv))
            ]
        for old, o in zip(outs, new):
            if o is not None:
                old.replaceAllUsesWith(o)
        n.destroy()


def _row_major(shape, itemsize) -> tuple:
    out, step = [], itemsize
    for k in reversed(shape):
        out.append(step)
        step *= k
    return tuple(reversed(out))


def _attr(n, name, default=None):
    a = n._attrs.get(name)
    return default if a is None else a[1]


def _plain(x) -> bool:
    # a constant the source can spell (repr round-trips to the same object's value and type)
    if x is None or type(x) in (bool, int, str):
        return True
    return type(x) is float and x == x and x not in (float("inf"), float("-inf"))


def emit(name: str, low, escapes: set, env: dict) -> str:
    """Return the source of the function running graph ``low.graph`` (see ``generate``).

    Runs of pointwise ufunc calls are fused: each run of two or more becomes one generated
    kernel function (``fused_mul_add_sin_0``), called once, whose intermediates stay local
    and whose result flows through one buffer (a value whose storage dies at the call that
    reads it hands that buffer to the result: ``np_add(v2, _z0, v2)``)."""
    env.setdefault("np", np)
    env.setdefault("GuardFail", GuardFail)
    env.setdefault("_aa", np.asarray)
    env.setdefault("_read", read_value)
    env.setdefault("_same", _same)
    ufuncs = _ufuncs()
    g, meta = low.graph, low.meta
    names: dict = {}  # IR value -> variable name holding its array
    lines = [f"def {name}({', '.join(meta[v].name for v in g.inputs())}):"]
    kernels_src: list = []  # the fused kernel functions, defined before ``name``
    for v in g.inputs():
        names[v] = meta[v].name
    nodes = [n for n in g.nodes() if n._kind != "prim::Constant"]
    rets = g.outputs()[: low.n_outputs]
    rets_set = set(rets)

    def root(v):
        m = meta.get(v)
        return None if m is None else m.root

    # liveness: the last position each storage (root) is used at
    last: dict = {}
    for pos, n in enumerate(nodes):
        for v in n._inputs:
            r = root(v)
            if r is not None:
                last[r] = pos
    escaping = {root(v) for v in rets} | {root(v) for v in g.inputs()} | set(escapes)

    zeros: dict = {}  # 0-d constants
    free: dict = {}  # (shape, dtype) -> [buffer names]
    buf_of: dict = {}  # storage root -> ((shape, dtype), buffer name) it lives in
    release: dict = {}  # position -> [roots whose buffer is free after it]
    nbuf = 0
    consts = 0
    pools: dict = {}  # max-pool value node -> (its input's Value, its window geometry)
    group: list = []  # the pending fused run: (line, label, output, inputs, numba operands)
    numba_srcs: list = []
    use_numba = NK.enabled()
    # the inputs whose layout no guard fixes (a backward's incoming gradients, which may be
    # broadcasts; parameters): a kernel reads them through np.ascontiguousarray (row-major:
    # the same array; else a copy)
    unguarded = set() if name == "forward" else set(g.inputs())

    def put(text):
        flush()
        lines.append(text)

    def arg(v, cast=None):
        nonlocal consts
        ref = names.get(v)
        if ref is None:
            c = v._node
            if c._kind != "prim::Constant":
                raise RuntimeError(f"codegen: %{v.debugName()} has no value")
            kind_x = c._attrs.get("value")
            x = None if kind_x is None else kind_x[1]
            if kind_x is not None and kind_x[0] == "t":  # a reference: read on every run
                m = meta[v]
                ref = names[v] = m.name
                env[f"_r{m.id}"] = x
                put(f"    {ref} = _r{m.id}._data")
            elif _plain(x):
                return repr(x)
            else:
                consts += 1
                env[f"_k{consts}"] = x
                return f"_k{consts}"
        if cast is not None:
            if v in meta and meta[v].dtype == np.dtype(cast):
                return ref  # (the dtype is known: no re-promotion)
            env[f"_dt_{cast}"] = cast
            return f"{ref}.astype(_dt_{cast})"
        return ref

    def place(om, pos, reuse=()):
        # a buffer for value ``om`` made at ``pos``, when it never leaves the function: the
        # buffer of an input in ``reuse`` whose storage dies here (written in place), else a
        # free one of its shape and dtype, else a new one
        nonlocal nbuf
        if not (
            om.root == om.id
            and om.id not in escaping
            and om.dtype in _UFUNC_DTYPES
            and last.get(om.id, -1) > pos
        ):
            return None
        key = (om.shape, om.dtype.str)
        buf = None
        for v in reuse:
            m = meta.get(v)
            held = buf_of.get(m.id) if m is not None and m.root == m.id else None
            if held is not None and held[0] == key and last.get(m.id) == pos:
                buf = buf_of.pop(m.id)[1]
                break
        if buf is None:
            pool = free.get(key)
            if pool:
                buf = pool.pop()
            else:
                buf = f"_b{nbuf}"
                nbuf += 1
                env[buf] = np.empty(om.shape, om.dtype)
        buf_of[om.id] = (key, buf)
        release.setdefault(last[om.id], []).append(om.id)
        return buf

    def flush():
        # the pending run as one kernel function (two or more calls) or as its one line
        if not group:
            return
        if len(group) == 1:
            lines.append(f"    {group[0][0]}  # {group[0][1]}")
            group.clear()
            return
        members = {o._node for _, _, o, _, _ in group}
        made, params, results = set(), [], []
        for _, _, o, ins, _ in group:
            for v in ins:
                nm = names.get(v)
                if nm is not None and v not in made and nm not in params:
                    params.append(nm)
            made.add(o)
        for _, _, o, _, _ in group:
            if o in rets_set or any(u.user not in members for u in o._uses):
                results.append(names[o])
        labels = list(dict.fromkeys(lb for _, lb, _, _, _ in group))
        kname = f"fused_{'_'.join(labels[:6])}_{len(kernels_src)}"
        body = [f"def {kname}({', '.join(params)}):"]
        body += fused_body()
        body.append(f"    return {', '.join(results)}{',' if len(results) == 1 else ''}")
        kernels_src.append("\n".join(body) + "\n")
        lhs = ", ".join(results) + ("," if len(results) == 1 else "")
        lines.append(f"    {lhs} = {kname}({', '.join(params)})  # {' '.join(labels)}")
        group.clear()

    def fused_body():
        # the group's lines, each maximal run of two or more IEEE-exact ops (``fz``) as one
        # numba kernel call (numba_kernels): its intermediates never reach memory
        out, run = [], []

        def end_run():
            if len(run) >= 2:
                out.extend(numba_call(run))
            else:
                out.extend(f"    {ln}  # {lb}" for ln, lb, _, _, _ in run)
            run.clear()

        for entry in [*group, None]:
            if entry is not None and entry[4] is not None:
                m, first = meta[entry[2]], run and meta[run[0][2]]
                if first and (m.shape != first.shape or m.dtype != first.dtype):
                    end_run()  # (one loop runs over one shape)
                run.append(entry)
                continue
            end_run()
            if entry is not None:
                out.append(f"    {entry[0]}  # {entry[1]}")
        return out

    def numba_call(run):
        members = {o._node for _, _, o, _, _ in run}
        step_of = {o: k for k, (_, _, o, _, _) in enumerate(run)}
        arrays, numbers, steps, stored = [], [], [], []
        for _, _, _, _, (uf, operands, _) in run:
            ops = []
            for kind, x in operands:
                if kind == "v" and x in step_of:
                    ops.append(("t", step_of[x]))
                elif kind == "v":
                    nm = names[x]
                    if x in unguarded or meta[x].kind == "ref":  # (parameters: no stride guard)
                        env.setdefault("np_contiguous", np.ascontiguousarray)
                        nm = f"np_contiguous({nm})"
                    if nm not in arrays:
                        arrays.append(nm)
                    ops.append(("i", arrays.index(nm)))
                else:  # (equal numbers are one argument)
                    z = env[x]
                    key = next((y for y in numbers if env[y].tobytes() == z.tobytes()), x)
                    if key not in numbers:
                        numbers.append(key)
                    ops.append(("c", numbers.index(key)))
            steps.append((NK.SYMBOLS.get(uf) or NK.UNARY.get(uf) or NK.FAST[uf], ops))
        lines_ = []
        outs = []
        for k, (_, _, o, _, (_, _, buf)) in enumerate(run):
            if o in rets_set or any(u.user not in members for u in o._uses):
                stored.append(k)
                m = meta[o]
                if buf is None:  # (an array that leaves the function: a new one per call)
                    env.setdefault("np_empty", np.empty)
                    env[f"_shape{m.id}"], env[f"_dtype{m.id}"] = m.shape, m.dtype
                    lines_.append(f"    {names[o]} = np_empty(_shape{m.id}, _dtype{m.id})")
                else:
                    lines_.append(f"    {names[o]} = {buf}")
                outs.append(names[o])
        m = meta[run[0][2]]
        src = NK.source(steps, len(arrays), len(numbers), stored, m.dtype, len(m.shape))
        kn = f"_nk{len(numba_srcs)}"
        numba_srcs.append(src)
        env[kn] = NK.compiled(src)
        for z in numbers:
            env[f"{z}s"] = env[z][()]  # (the number as a scalar of the dtype)
        args_ = [*arrays, *(f"{z}s" for z in numbers), *outs]
        labels = " ".join(lb for _, lb, _, _, _ in run)
        lines_.append(f"    {kn}({', '.join(args_)})  # {labels} (one numba loop)")
        return lines_

    def fusable(uf, ins, args, om, buf):
        # (ufunc, operands, buffer) when the op may join a numba kernel, else None
        if not use_numba or not NK.exact(uf) or om.dtype not in _FLOATS or not om.shape:
            return None
        operands = []
        for v, a in zip(ins, args):
            m = meta.get(v)
            if m is not None:
                if m.dtype != om.dtype or m.shape != om.shape or not _c_contiguous(m):
                    return None
                operands.append(("v", v))
            elif a in zeros:
                operands.append(("c", a))
            else:
                return None
        return (uf, operands, buf)

    def special(n, em, args, pos, label, params=None):
        # an inlined kernel (kernels.py); True when it emitted the node
        metas = [meta.get(v) for v in n._inputs]
        outs = out_names(n)
        oms = [meta.get(o) for o in n._outputs]
        placed: dict = {}

        def out(k, reuse=()):
            # (``reuse``: input positions whose buffer the result may take when it dies here)
            if k not in placed:
                ins = [n._inputs[i] for i in reuse]
                ok = oms[k] is not None and outs[k] != "_"
                buf = place(oms[k], pos, ins) if ok else None
                placed[k] = f", out={buf}" if buf else ""
            return placed[k]

        def number(i, dt):
            return scalars_0d([n._inputs[i]], [args[i]], dt)[0]

        site = kernels.Site(args, metas, outs, oms, params, out, number, env)
        got = em(site)
        if got is None:
            return False
        put(f"    {got[0]}  # {label}")
        lines.extend(f"    {x}" for x in got[1:])
        return True

    def scalars_0d(ins, args, dt):
        # a Python number beside arrays of the result's float dtype: NumPy converts it to that
        # dtype on every call; a 0-d array of it, made once, is the same operand, read faster
        if dt not in _FLOATS or any(v in meta and meta[v].dtype != dt for v in ins):
            return args
        out = list(args)
        for i, v in enumerate(ins):
            if v not in meta:
                x = _attr(v._node, "value")
                if type(x) in (int, float):
                    key = f"_z{len(zeros)}"
                    zeros[key] = env[key] = np.asarray(x, dt)
                    out[i] = key
        return out

    def out_names(n):
        outs = []
        for o in n._outputs:
            m = meta.get(o)
            nm = m.name if m is not None and (o._uses or o in rets_set) else "_"
            if nm != "_":
                names[o] = nm
            outs.append(nm)
        return outs

    for pos, n in enumerate(nodes):
        for r in release.pop(pos - 1, ()):
            held = buf_of.pop(r, None)
            if held is not None:
                free.setdefault(held[0], []).append(held[1])
        kind = n._kind
        if kind == "prim::Guard":
            env[f"_g{pos}"] = _attr(n, "expect")
            v = arg(n._inputs[0])
            put(f"    if not _same(_read({_attr(n, 'read')!r}, {v}), _g{pos}): raise GuardFail")
            continue
        fname = f"_f{pos}"
        op = getattr(n, "_op", None)
        if op is None and _values_only_pool(n, rets_set, meta, pools):
            continue
        if op is None:  # a helper kernel: returns arrays already
            em = kernels.backward_emitter(n._payload)
            if em is not None and special(n, em, [arg(v) for v in n._inputs], pos, kind[7:]):
                continue
            env[fname] = n._payload
            args = ", ".join(arg(v) for v in n._inputs)
            if n._multi:
                put(f"    {', '.join(out_names(n))}, = {fname}({args})  # {kind[7:]}")
            else:
                o = n._outputs[0]
                names[o] = meta[o].name
                put(f"    {names[o]} = _aa({fname}({args}))  # {kind[7:]}")
            continue
        label = op.name
        if label in _VALUES_POOLS:  # eager's values-only max pooling (no gradient needed)
            consts = tuple(_attr(n, k) for k in _POOL_GEOMETRY)
            if kernels.window_max("x", "y", "", meta.get(n._inputs[0]), consts) is not None:
                pools[n] = (meta.get(n._inputs[0]), consts)
        if n in pools:  # max pooling whose indices nothing reads: the values alone
            got = pools.pop(n)
            om = meta[n._outputs[0]]
            names[n._outputs[0]] = om.name
            buf = place(om, pos)
            lines_ = kernels.window_max(
                arg(n._inputs[0]), om.name, f", out={buf}" if buf else "", *got
            )
            put(f"    {lines_[0]}  # {label} (values)")
            lines.extend(f"    {x}" for x in lines_[1:])
            continue
        params = {k: a[1] for k, a in n._attrs.items() if k not in ("casts", "tensor_params")}
        casts = _attr(n, "casts") or ()
        keyed = _attr(n, "tensor_params") or ()
        inplace = getattr(n, "_inplace", 0)
        ins = n._inputs[1 if inplace == 2 else 0 : len(n._inputs) - len(keyed)]
        if (
            casts
            and not params
            and not keyed
            and op in ufuncs
            and _promotes_alike([meta[v].dtype if v in meta else None for v in ins], casts)
        ):
            casts = ()  # (the ufunc's own type resolution converts them the same way)
        args = [arg(v, casts[i] if i < len(casts) else None) for i, v in enumerate(ins)]
        env[fname] = op.forward
        kw = "".join(
            f", {k}={arg(v)}" for k, v in zip(keyed, n._inputs[len(n._inputs) - len(keyed) :])
        )
        if params:
            env[f"_p{pos}"] = params
            kw += f", **_p{pos}"
        uf = ufuncs.get(op) if not params and not keyed else None
        out = n._outputs[0]
        if uf is not None and not all(
            meta[v].dtype in _UFUNC_DTYPES for v in (*ins, out) if v in meta
        ):
            uf = None  # (half precision: the kernel computes in float32)
        if not inplace and not n._multi and not casts and not keyed:
            em = kernels.forward_emitter(op)
            if em is not None and special(n, em, args, pos, label, params):
                continue
        if inplace:
            tgt = n._inputs[0]
            dst = arg(tgt)
            names[out] = dst
            if params.get("out") is OUT_TARGET:
                env[f"_p{pos}"] = {k: v for k, v in params.items() if k != "out"}
                put(f"    {fname}({', '.join(args)}, out={dst}{kw})  # {label}_")
                continue
            om = meta[out]
            if uf is not None and om.dtype == meta[tgt].dtype:
                put(f"    {_ufunc_name(env, uf)}({', '.join(args)}, {dst})  # {label}_")
            else:
                put(
                    f"    np.copyto({dst}, {fname}({', '.join(args)}{kw}), casting='unsafe')"
                    f"  # {label}_"
                )
            continue
        if n._multi:
            outs = out_names(n)
            put(f"    {', '.join(outs)}, = {fname}({', '.join(args)}{kw})  # {label}")
            for nm in outs:
                if nm != "_":
                    lines.append(f"    {nm} = _aa({nm})")
            continue
        om = meta[out]
        names[out] = om.name
        if uf is None:
            put(f"    {om.name} = _aa({fname}({', '.join(args)}{kw}))  # {label}")
            continue
        args = scalars_0d(ins, args, om.dtype)
        buf = place(om, pos, reuse=[v for v in ins if not casts])
        # (the output positional: a keyword costs the call a dict)
        tail = f", {buf}" if buf is not None else ""
        group.append(
            (
                f"{om.name} = {_ufunc_name(env, uf)}({', '.join(args)}{tail})",
                label,
                out,
                ins,
                fusable(uf, ins, args, om, buf),
            )
        )
    flush()
    out_src = []
    for v in rets:
        if v._node._kind == "prim::Constant" and _attr(v._node, "value") is None:
            out_src.append("None")
        else:
            out_src.append(arg(v))
    lines.append(f"    return ({', '.join(out_src)}{',' if len(out_src) == 1 else ''})")
    return "".join(k + "\n" for k in kernels_src) + "\n".join(lines) + "\n"


def build(name: str, source: str, env: dict):
    """Compile the generated ``source`` and return the function ``name``."""
    code = compile(source, f"<ember compiled {name}>", "exec")
    exec(code, env)
    return env[name]

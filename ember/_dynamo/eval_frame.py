"""``torch.compile``'s runtime: a cache of compiled entries per function, each behind guards.

A call flattens its arguments, finds the first entry whose guards hold and runs its generated
code; when none holds, the call is *captured* (run eagerly under the recorder, so its result is
eager's), compiled into a new entry and cached, up to ``config.cache_size_limit`` entries,
after which the function runs eagerly (with torch's warning). An entry that cannot be compiled
(a graph break) runs the function eagerly under the same guards.
"""

from __future__ import annotations

import os
import threading
import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap
from ember._dynamo import capture as C
from ember._ops import registry as R
from ember.nn.modules.module import Module

__all__ = ["OptimizedModule"]

COMPILING = [0]  # > 0 while a capture runs (``is_compiling``)
_TENSOR_SPECS: dict = {}  # n -> the spec of a call with n tensor arguments
_ALL: list = []  # every compiled function's cache, for ``reset``


class Entry:
    """One compiled program: its guards, its code, how to rebuild its result."""

    def __init__(self):
        self.spec = None
        self.check = None  # (tensors) -> bool, generated
        self.run = None  # (tensors) -> result
        self.failure = None  # graph-break reason (the entry runs eagerly)
        self.where = None  # (file, line, function) of the break
        self.source = ""
        self.ops: list = []  # the forward's kernel names (for explain)
        self.backward_source = ""
        self.split = None  # a graph break's run: the module eager, its children compiled
        self.graph = None  # the optimised IR the forward was generated from
        self.backward_graph = None
        self.sig = None  # the trace without its shapes (dynamic.signature)
        self.shapes = None  # the inputs' shapes at capture
        self.dims = None  # the (input, dim) pairs a dynamic entry accepts any size >= 2 in


def _by_identity(obj):
    return ("id", id(obj))


def _flatten(obj, tensors, spec_out, other=_by_identity):
    """Append ``obj``'s tensors to ``tensors`` and its structure to ``spec_out`` (containers,
    Python scalars by value, anything else as ``other(obj)``: by identity for a call's
    arguments)."""
    t = type(obj)
    if t is Tensor or isinstance(obj, Tensor):
        tensors.append(obj)
        spec_out.append(("T", type(obj)))
    elif t in (tuple, list):
        spec_out.append((t, len(obj)))
        for x in obj:
            _flatten(x, tensors, spec_out, other)
    elif t is dict:
        spec_out.append((dict, tuple(obj)))
        for x in obj.values():
            _flatten(x, tensors, spec_out, other)
    elif obj is None or t in (int, float, bool, str, complex):
        spec_out.append((t, obj))
    else:
        spec_out.append(other(obj))


def _unflatten(spec, it_vals):
    """Rebuild the result ``spec`` describes; its tensors come from ``it_vals`` in order."""
    return _build(spec, [0], it_vals)


def _build(spec, pos, it_vals):
    # (a plain recursive function: a self-referencing closure would make a reference cycle
    # holding the outputs, and their graph, until the garbage collector runs)
    kind, meta = spec[pos[0]]
    pos[0] += 1
    if kind == "T":
        return next(it_vals)
    if kind in (tuple, list):
        items = [_build(spec, pos, it_vals) for _ in range(meta)]
        return tuple(items) if kind is tuple else items
    if kind is dict:
        return {k: _build(spec, pos, it_vals) for k in meta}
    return meta


def _unsupported_result(obj):
    raise C.Unsupported(f"returns a {type(obj).__name__}")


def _result_spec(obj, leaves, spec):
    """``_flatten`` for a result: ``_unflatten`` rebuilds it; other objects break the graph."""
    _flatten(obj, leaves, spec, _unsupported_result)


class CompiledFunction:
    """``fn`` compiled: call it as ``fn``."""

    def __init__(self, fn, module=None, fullgraph=False, backend="inductor", options=None,
                 piece=None):  # fmt: skip
        self.fn = fn
        self.piece = piece  # its body as statements (resume.Piece), once a break needs it
        self.resumes: dict = {}  # break line -> resume.Plan (or None: not splittable)
        self.module = module
        self.dynamic = None  # compile(dynamic=): None automatic, True marked, False never
        self.mode = None  # compile(mode=): "reduce-overhead"/"max-autotune" fuse with numba
        self._args = None
        self.fullgraph = fullgraph
        self.backend = backend
        self.options = options or {}
        self.entries: list[Entry] = []
        self.warned = False
        self.breaks: list = []
        self.children: dict = {}  # id(child module) -> its CompiledFunction (graph breaks)
        _ALL.append(self)

    def reset(self):
        self.entries = []
        self.warned = False
        self.breaks = []
        self.children = {}
        self.resumes = {}

    def __call__(self, *args, **kwargs):
        if COMPILING[0] or STATE.inference or R.AUTOCAST:
            return self.fn(*args, **kwargs)
        for a in args:  # the common call: tensors only (its spec is one shared tuple)
            if type(a) is not Tensor:
                break
        else:
            if not kwargs:
                spec = _TENSOR_SPECS.get(len(args))
                if spec is None:
                    spec = _TENSOR_SPECS[len(args)] = ((tuple, len(args)),) + (
                        ("T", Tensor),
                    ) * len(args)
                for e in self.entries:
                    if e.spec is spec and e.check(args):
                        if e.run is None:
                            return self.fn(*args) if e.split is None else e.split(args, {})
                        try:
                            return e.run(args)
                        except GuardFailure:
                            continue
                return self._miss(args, kwargs, list(args), spec)
        tensors: list = []
        spec: list = []
        _flatten(args, tensors, spec)
        if kwargs:
            _flatten(kwargs, tensors, spec)
        spec = tuple(spec)
        if spec == _TENSOR_SPECS.get(len(args)):
            spec = _TENSOR_SPECS[len(args)]
        for e in self.entries:
            if e.spec == spec and e.check(tensors):
                if e.run is None:
                    if e.split is not None:
                        return e.split(args, kwargs)
                    return self.fn(*args, **kwargs)
                try:
                    return e.run(tensors)
                except GuardFailure:
                    continue
        return self._miss(args, kwargs, tensors, spec)

    def _miss(self, args, kwargs, tensors, spec):
        from ember._dynamo import config

        if len(self.entries) >= config.cache_size_limit:
            if not self.warned:
                self.warned = True
                # torch names the code object: a module's is its ``forward``
                name = "forward" if self.module is not None else getattr(self.fn, "__name__", "")
                warnings.warn(
                    f"torch._dynamo hit config.recompile_limit ({config.cache_size_limit})\n"
                    f"   function: '{name}'\n"
                    "   last reason: guard failed\n"
                    'To log all recompilation reasons, use TORCH_LOGS="recompiles".\n'
                    "To diagnose recompilation issues, see "
                    "https://pytorch.org/docs/main/torch.compiler_troubleshooting.html",
                    UserWarning,
                    stacklevel=2,
                )
            return self.fn(*args, **kwargs)
        return self._capture(args, kwargs, tensors, spec)

    def _capture(self, args, kwargs, tensors, spec):
        COMPILING[0] += 1
        try:
            result, rec = C.capture(self.fn, args, kwargs, tensors)
        finally:
            COMPILING[0] -= 1
        self._args = (args, kwargs)  # (for proving dynamic dims; dropped below)
        entry = Entry()
        entry.spec = spec
        try:
            if rec.failure is None:
                _compile_entry(self, entry, rec, tensors, result, self._dynamic_dims(entry, rec,
                               tensors))  # fmt: skip
                if self.backend == "inductor" and not rec.mutated_roots and not rec.effects:
                    _shadow_check(self, entry, args, kwargs, tensors, rec)
        except C.Unsupported as e:
            rec.failure = str(e)
        except Exception as e:  # a compiler bug must never change what the program returns
            rec.failure = f"compiler error: {type(e).__name__}: {e}"
        if rec.failure is not None:
            entry.failure = rec.failure
            if rec.break_line is not None:
                entry.where = (rec.code.co_filename, rec.break_line, rec.code.co_name)
            entry.run = None
            entry.check = _make_check(self, rec, tensors, None)
            self.breaks.append(rec.failure)
            if self.fullgraph:
                from ember._dynamo.exc import Unsupported

                raise Unsupported(rec.failure)
            entry.split = _splitter(self) if self.module is not None else _resumer(self, rec)
        self._args = None
        self.entries.append(entry)
        if entry.run is not None and not rec.mutated_roots and not rec.effects:
            # the result comes from the compiled code, as every later call's does (its
            # autograd node, its refusal of double backward): the capture's draws are replayed
            result = _first_run(entry, tensors, rec.rng_before, result)
        return result

    def _dynamic_dims(self, entry, rec, tensors):
        """The dims this capture compiles dynamic in (automatic dynamic), or None: the sizes
        that differ from an entry whose trace is this one's with other shapes."""
        if self.dynamic is False or rec.failure is not None:
            return None
        from ember._dynamo import dynamic

        entry.sig = dynamic.signature(rec)
        entry.shapes = [t._data.shape for t in tensors]
        if entry.sig is None:
            return None
        contiguous = [t._data.flags.c_contiguous for t in tensors]
        for old in self.entries:
            if old.sig == entry.sig and old.spec == entry.spec and old.dims is None:
                dims = dynamic.changed_dims(old.shapes, entry.shapes, contiguous)
                if dims is not None:
                    return dims
        if self.dynamic is True or dynamic.marked(tensors):
            return self._prove_dims(entry, rec, tensors, contiguous)
        return None

    def _prove_dims(self, entry, rec, tensors, contiguous):
        """``dynamic=True`` / ``mark_dynamic``: capture once more on inputs one larger in the
        marked dims (every dim >= 2 for ``dynamic=True``); the same trace proves them."""
        from ember._dynamo import dynamic

        if rec.mutated_roots or rec.effects or self._args is None:
            return None
        marks = dynamic.marked(tensors)
        dims = frozenset(
            (i, d)
            for i, t in enumerate(tensors)
            for d, n in enumerate(t._data.shape)
            if contiguous[i] and n >= 2 and (self.dynamic is True or (i, d) in marks)
        )
        if not dims:
            return None
        mapping = {}
        for i, t in enumerate(tensors):
            if id(t) not in mapping:
                shape = [n + ((i, d) in dims) for d, n in enumerate(t._data.shape)]
                mapping[id(t)] = _resized(t, shape)
        args, kwargs = self._args
        rts = [mapping[id(t)] for t in tensors]
        import ember

        rng = ember.get_rng_state()
        COMPILING[0] += 1
        try:
            _, rec2 = C.capture(self.fn, _replace(args, mapping), _replace(kwargs, mapping), rts)
        except Exception:
            return None
        finally:
            COMPILING[0] -= 1
            ember.set_rng_state(rng)
        if rec2.failure is not None or dynamic.signature(rec2) != entry.sig:
            return None
        return dims


class GuardFailure(Exception):
    pass


def _first_run(entry, tensors, rng_before, eager):
    """Run a just-compiled entry on the captured inputs with the generator rewound to its
    state before the capture: the same draws (dropout masks), and the same state after. A
    program that wrote into its inputs or buffers is not run twice (its eager result stays)."""
    import ember

    after = ember.get_rng_state()
    ember.set_rng_state(rng_before)
    try:
        return entry.run(tensors)
    except Exception:  # (never: the guards were made from these inputs) eager's result stands
        ember.set_rng_state(after)
        return eager


_NO_FORWARD = object()


def _splitter(cf):
    """The run of a module entry that broke: the module's own code runs eagerly while each
    direct child module runs through its own compiled function (its own guards, entries and
    breaks, splitting further in turn): compiled pieces around the eager part, as torch's
    graph breaks make. None for a function or a module without children."""
    if cf.module is None:
        return None
    kids = []
    for child in cf.module.children():
        if isinstance(child.__dict__.get("forward"), CompiledFunction):
            continue  # compiled already (Module.compile)
        kcf = cf.children.get(id(child))
        if kcf is None:
            kcf = CompiledFunction(child.forward, child, False, cf.backend, cf.options)
            kcf.mode = cf.mode
            cf.children[id(child)] = kcf
        kids.append((child, kcf))
    if not kids:
        return None

    def split(args, kwargs):
        with _SPLIT_LOCK:  # the children's forwards are swapped for the call: one at a time
            return _split_call(cf, kids, args, kwargs)

    return split


_SPLIT_LOCK = threading.RLock()


def _split_call(cf, kids, args, kwargs):
    saved = [child.__dict__.get("forward", _NO_FORWARD) for child, _ in kids]
    for child, kcf in kids:  # (an instance attribute: Module.__call__ calls it)
        object.__setattr__(child, "forward", kcf)
    try:
        return cf.fn(*args, **kwargs)
    finally:
        for (child, _), old in zip(kids, saved):
            if old is _NO_FORWARD:
                del child.__dict__["forward"]
            else:
                object.__setattr__(child, "forward", old)


def _resumer(cf, rec):
    """The run of a plain function's entry that broke: the code before the breaking statement
    compiled, the statement eager, the code after it compiled as a resume function (see
    ``resume``). None when the function cannot be split (it then runs eagerly)."""
    from ember._dynamo import resume

    line = rec.break_line
    if line not in cf.resumes:

        def make(fn, piece):
            piece_cf = CompiledFunction(fn, None, False, cf.backend, cf.options, piece)
            piece_cf.mode = cf.mode
            return piece_cf

        try:  # (a splitter bug must never change what the program does: it runs eagerly)
            if cf.piece is None:
                cf.piece = resume.piece_of(cf.fn) or False
            plan = resume.split(cf.piece, line, make) if cf.piece else None
        except Exception:
            plan = None
        cf.resumes[line] = plan
        for p in plan.pieces if plan is not None else ():
            cf.children[id(p)] = p
    plan = cf.resumes[line]
    return None if plan is None else plan.run


def _modules_of(cf) -> list:
    return [] if cf.module is None else list(cf.module.modules())


def _make_check(cf, rec, tensors, refs, dims=None):
    """Generate the guard function of an entry: ``check(tensors) -> bool``; ``dims``: the
    (input, dim) pairs of a dynamic entry (any size >= 2, contiguous)."""
    from ember._dynamo import dynamic

    env: dict = {"STATE": STATE, "D": D}
    conds = [f"len(ts) == {len(tensors)}"]
    for i, t in enumerate(tensors):
        a = t._data
        env[f"_dt{i}"] = a.dtype
        if dims and any(j == i for j, _ in dims):
            shape = dynamic.shape_guard(i, a.shape, dims)
            arr = f"ts[{i}]._data"
        else:  # (the array bound once: each guard reads it by name)
            shape = (
                f"(_a{i} := ts[{i}]._data).shape == {a.shape!r} and _a{i}.strides == {a.strides!r}"
            )
            arr = f"_a{i}"
        conds.append(
            f"{shape} and {arr}.dtype == _dt{i}"
            f" and ts[{i}]._requires_grad is {t._requires_grad}"
            f" and ts[{i}]._base is {'' if t._base is None else 'not '}None"
        )
    # one tensor passed in two places must be so again (and distinct ones distinct)
    ids = [id(t) for t in tensors]
    for i in range(len(tensors)):
        for j in range(i):
            if ids[i] == ids[j]:
                conds.append(f"ts[{i}] is ts[{j}]")
    if rec is not None and rec.mutated_roots and len(tensors) > 1:
        conds.append(f"len({{id(t._vc) for t in ts}}) == {len({id(t._vc) for t in tensors})}")
    conds.append(f"STATE.grad_enabled is {STATE.grad_enabled}")
    env["_ddt"] = D.get_default_dtype()
    env["_dflt"] = D._default_float  # (the setting itself: no call per guard check)
    conds.append("_dflt[0] is _ddt")
    for k, m in enumerate(_modules_of(cf)):
        env[f"_m{k}"] = m
        conds.append(f"_m{k}.training is {m.training}")
    if refs:
        owners = {}
        for m in _modules_of(cf):
            for d in (m._parameters, m._buffers):
                for key, p in d.items():
                    if p is not None:
                        owners.setdefault(id(p), (d, key))
        for v in refs:
            t = v.tensor
            env[f"_r{v.id}"] = t
            env[f"_rdt{v.id}"] = t._data.dtype
            conds.append(
                f"(_ra := _r{v.id}._data).shape == {t._data.shape!r} and _ra.dtype == "
                f"_rdt{v.id} and _r{v.id}._requires_grad is {t._requires_grad}"
            )
            own = owners.get(id(t))
            if own is not None:
                env[f"_o{v.id}"] = own[0]
                conds.append(f"_o{v.id}.get({own[1]!r}) is _r{v.id}")
    src = "def check(ts):\n    return (\n        " + "\n        and ".join(conds) + "\n    )\n"
    exec(compile(src, "<ember guards>", "exec"), env)
    env["check"].source = src
    return env["check"]


def _log(source: str, cf) -> None:
    if cf.options.get("trace.enabled") or "output_code" in os.environ.get("EMBER_LOGS", ""):
        print(source)


def _compile_entry(cf, entry, rec, tensors, result, dims=None):
    from ember._inductor import aot, codegen

    leaves: list = []
    rspec: list = []
    _result_spec(result, leaves, rspec)
    inputs = [v for v in rec.values if v.kind == "input"]
    calls = list(rec.calls)  # the forward (the backward's calls are appended after)
    # an output that is an input or reference object itself comes back as that object
    in_pos = {id(t): i for i, t in enumerate(tensors)}
    out_plan = []  # ("input", i) | ("ref", Tensor) | ("val", k)
    out_vals = []
    for t in leaves:
        if id(t) in in_pos:
            out_plan.append(("input", in_pos[id(t)], None))
            continue
        v = rec.by_tensor.get(id(t)) or rec.by_array.get(id(t._data))
        if v is None:
            raise C.Unsupported("returns a tensor the recorder did not see made")
        if v.kind == "ref" and v.tensor is t:
            out_plan.append(("ref", t, None))
            continue
        out_plan.append(("val", len(out_vals), t))
        out_vals.append(v)
    refs = [v for v in rec.values if v.kind == "ref"]
    if cf.backend != "inductor" or dims:
        # a dynamic entry runs shape-generic: the user's backend, else the IR executor
        backend = cf.backend if callable(cf.backend) or not dims else "eager"
        entry.dims = dims
        return _compile_other(
            cf, entry, rec, tensors, calls, inputs, out_vals, out_plan, rspec, backend
        )
    grad = STATE.grad_enabled and any(
        p[0] == "val" and t._grad_fn is not None for p, t in zip(out_plan, leaves)
    )
    bw = None
    from ember._inductor import numba_kernels

    fusion = numba_kernels.MODE[0] = numba_kernels.mode_of(cf.mode)
    try:
        if grad:
            bw = aot.derive_backward(rec, tensors, leaves, out_plan)
            saved = bw.saved
        else:
            saved = []
        env: dict = {}
        source = codegen.generate(
            "forward", inputs, calls, out_vals + saved, set(), env, n_results=len(out_vals)
        )
    finally:
        numba_kernels.MODE[0] = None
    fwd = codegen.build("forward", source, env)
    entry.source = source
    entry.graph = env["graph"]
    entry.ops = [c.label for c in calls if type(c) is C.Call]
    _log(source, cf)
    if bw is not None:
        entry.backward_source = bw.source
        entry.backward_graph = bw.graph
        _log(bw.source, cf)
    # bump the version of inputs written in place, as eager does
    bumps: dict = {}
    for c in calls:
        if type(c) is C.Call and c.target is not None:
            r = rec.values[c.target.root]
            if r.kind in ("input", "ref"):
                bumps[r.id] = bumps.get(r.id, 0) + 1
    in_index = {v.id: i for i, v in enumerate(inputs)}
    bump_inputs = [(in_index[r], n) for r, n in bumps.items() if r in in_index]
    bump_refs = [(rec.values[r].tensor, n) for r, n in bumps.items() if r not in in_index]
    n_in = len(inputs)
    first_of = []  # the tensor of each distinct input value
    seen = set()
    for i, t in enumerate(tensors):
        if id(t) not in seen:
            seen.add(id(t))
            first_of.append(i)
    meta = []
    for kind, _k, t in out_plan:
        if kind != "val":
            meta.append(None)
            continue
        base = t._base
        b = None
        if base is not None:
            if id(base) in in_pos:
                b = ("input", in_pos[id(base)])
            elif any(base is r.tensor for r in refs):
                b = ("ref", base)
        meta.append((t._vc[0], b, t._view_fn))
    nout = len(out_vals)
    # keep nothing of the capture alive (its arrays, its autograd graph)
    out_plan = [(kind, k, None) for kind, k, _ in out_plan]

    entry.run = _make_runner(
        fwd, bw, first_of, n_in, bump_inputs, bump_refs, meta, nout, out_plan, rspec,
        any(type(c) is C.Read for c in calls),
    )  # fmt: skip
    entry.check = _make_check(cf, rec, tensors, refs)
    # verify once: the generated code reproduces eager's result on the captured inputs
    if bw is not None:
        bw.saved = bw.expected = None
    draws = any(getattr(c.fn, "draws", False) for c in calls if type(c) is C.Call)
    if not rec.mutated_roots and not draws and not rec.effects:
        arrays = fwd(*[tensors[i]._data for i in first_of])
        for k, t in enumerate(leaves):
            kind, j, _ = out_plan[k]
            if kind == "val":
                a = arrays[j]
                if (
                    a.shape != t._data.shape
                    or a.dtype != t._data.dtype
                    or not _equal(a, t._data, fusion)
                ):
                    raise C.Unsupported("generated code did not reproduce eager (a bug)")
    for v in rec.values:
        v.arr = None


def _equal(a, b, fusion=None) -> bool:
    # bit for bit, but within a tolerance for kernels that are not bit-exact (max-autotune)
    if fusion == "fast" and a.dtype.kind == "f":
        return np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
    return np.array_equal(a, b, equal_nan=True)


def _make_runner(fwd, bw, first_of, n_in, bump_inputs, bump_refs, meta, nout, out_plan, rspec,
                 guarded):  # fmt: skip
    """Generate an entry's ``run(ts)``: call the forward on the inputs' arrays, bump the
    versions of what it wrote, wrap the results (views keep their bases), attach the
    backward node, and rebuild the result's structure. One straight-line function: the
    per-call cost of a compiled program is this and its guards."""
    from ember._inductor import codegen

    env: dict = {"fwd": fwd, "bw": bw, "_wrap": _wrap, "GuardFail": codegen.GuardFail}
    env["GuardFailure"] = GuardFailure
    body = []
    call = ", ".join(f"ts[{i}]._data" for i in first_of) if n_in else ""
    body.append(f"arrays = fwd({call})")
    for i, n in bump_inputs:
        body.append(f"ts[{first_of[i]}]._vc[0] += {n}")
    for k, (t, n) in enumerate(bump_refs):
        env[f"_bump{k}"] = t
        body.append(f"_bump{k}._vc[0] += {n}")
    vals = [m for m in meta if m is not None]
    for k in range(nout):
        body.append(f"o{k} = _wrap(arrays[{k}])")
        vc, b, vf = vals[k]
        if b is not None:
            if b[0] == "input":
                base = f"ts[{b[1]}]"
            else:
                env[f"_base{k}"] = b[1]
                base = f"_base{k}"
            env[f"_vf{k}"] = vf
            body.append(f"o{k}._base = {base}")
            body.append(f"o{k}._vc = {base}._vc")
            body.append(f"o{k}._view_fn = _vf{k}")
        elif vc:
            body.append(f"o{k}._vc[0] = {vc}")
    if bw is not None:
        outs = "".join(f"o{k}, " for k in range(nout))
        body.append(f"bw.attach([{outs}], arrays[{nout}:], ts)")
    leaves = []
    for kind, k, _ in out_plan:
        if kind == "input":
            leaves.append(f"ts[{k}]")
        elif kind == "ref":
            env[f"_ref{len(leaves)}"] = k
            leaves.append(f"_ref{len(leaves)}")
        else:
            leaves.append(f"o{k}")
    body.append(f"return {_spec_expr(rspec, [0], iter(leaves), env)}")
    if guarded:
        body = ["try:"] + ["    " + x for x in body]
        body += ["except GuardFail:", "    raise GuardFailure from None"]
    src = "def run(ts):\n" + "".join(f"    {x}\n" for x in body)
    exec(compile(src, "<ember compiled run>", "exec"), env)
    env["run"].source = src
    return env["run"]


def _spec_expr(spec, pos, leaves, env) -> str:
    # the source rebuilding the result ``spec`` describes (``_build``, generated)
    kind, meta = spec[pos[0]]
    pos[0] += 1
    if kind == "T":
        return next(leaves)
    if kind in (tuple, list):
        items = [_spec_expr(spec, pos, leaves, env) for _ in range(meta)]
        inner = ", ".join(items)
        if kind is tuple:
            return f"({inner},)" if len(items) == 1 else f"({inner})"
        return f"[{inner}]"
    if kind is dict:
        parts = []
        for key in meta:
            env[f"_key{len(env)}"] = key
            name = f"_key{len(env) - 1}"
            parts.append(f"{name}: {_spec_expr(spec, pos, leaves, env)}")
        return "{" + ", ".join(parts) + "}"
    if meta is None or type(meta) in (bool, int, str):
        return repr(meta)
    env[f"_const{len(env)}"] = meta
    return f"_const{len(env) - 1}"


def _compile_other(cf, entry, rec, tensors, calls, inputs, out_vals, out_plan, rspec, backend):
    """The ``"eager"``/``"aot_eager"`` backends (the IR run by the executor) and a user's
    ``backend(gm, example_inputs)`` (a ``torch.fx.GraphModule`` of the forward)."""
    from ember._inductor import to_ir

    entry.ops = [c.label for c in calls if type(c) is C.Call]
    refs = [v for v in rec.values if v.kind == "ref"]
    entry.check = _make_check(cf, rec, tensors, refs, entry.dims)
    if any(type(c) is C.Read for c in calls):
        raise C.Unsupported("a value read from a tensor (this backend has no data guards)")
    first = {}
    for i, t in enumerate(tensors):
        first.setdefault(id(t), i)
    picks = sorted(set(first.values()))
    if callable(backend):
        gm = to_ir.to_fx(inputs, calls, out_vals)
        compiled = backend(gm, [tensors[i] for i in picks])
        entry.source = gm.code if hasattr(gm, "code") else ""
    elif backend in ("eager", "aot_eager"):
        from ember.jit import executor

        if any(type(c) is C.Call and c.op is None for c in calls):
            raise C.Unsupported("a helper kernel (a recorded random draw) has no op-table node")
        low = to_ir.to_graph(inputs, calls, out_vals, payloads=True)
        from ember.jit import passes

        passes.dce(low.graph)
        graph = entry.graph = low.graph
        entry.source = str(graph)

        def compiled(*xs):
            return executor.run(graph, list(xs))
    else:
        raise C.Unsupported(f"unknown backend {backend!r}")
    _log(entry.source, cf)

    def run(ts):
        outs = list(compiled(*[ts[i] for i in picks]))
        it = []
        for kind, k, _ in out_plan:
            it.append(ts[k] if kind == "input" else k if kind == "ref" else outs[k])
        return _unflatten(rspec, iter(it))

    entry.run = run


def _resized(t: Tensor, shape) -> Tensor:
    a = t._data
    if a.dtype.kind in "fc":
        b = np.random.default_rng(1234).standard_normal(shape).astype(a.dtype)
    else:  # (zeros: valid indices and counts)
        b = np.zeros(shape, a.dtype)
    r = _wrap(b)
    r.requires_grad_(t._requires_grad)
    return r


def _perturbed(t: Tensor) -> Tensor:
    a = t._data
    b = np.copy(a, order="K")
    if a.dtype.kind in "fc":  # new values in a new order (argmax-like results change too)
        b += np.random.default_rng(1234).standard_normal(a.shape).astype(a.dtype)
    p = _wrap(b)
    p.requires_grad_(t._requires_grad)
    return p


def _replace(obj, mapping):
    if isinstance(obj, Tensor):
        return mapping.get(id(obj), obj)
    if type(obj) in (tuple, list):
        return type(obj)(_replace(x, mapping) for x in obj)
    if type(obj) is dict:
        return {k: _replace(v, mapping) for k, v in obj.items()}
    return obj


def _shadow_check(cf, entry, args, kwargs, tensors, rec) -> None:
    """Run the program eagerly and compiled on perturbed inputs: a result that differs means
    the capture froze data computed outside the op table (the entry then runs eagerly)."""
    if any(t._base is not None for t in tensors) or entry.run is None:
        return
    mapping = {}
    for t in tensors:
        if id(t) not in mapping:
            mapping[id(t)] = _perturbed(t)
    pts = [mapping[id(t)] for t in tensors]
    if not entry.check(pts):
        return
    pargs, pkw = _replace(args, mapping), _replace(kwargs, mapping)
    import ember

    rng = ember.get_rng_state()  # both runs draw the same numbers; the caller's state stays
    COMPILING[0] += 1
    try:
        want = cf.fn(*pargs, **pkw)
    except Exception:
        return
    finally:
        COMPILING[0] -= 1
        ember.set_rng_state(rng)
    try:
        got = entry.run(pts)
    except GuardFailure:
        return
    finally:
        ember.set_rng_state(rng)
    lw, lg = [], []
    _result_spec(want, lw, [])
    _result_spec(got, lg, [])
    from ember._inductor.numba_kernels import mode_of

    fusion = mode_of(cf.mode)
    same = len(lw) == len(lg) and all(
        a._data.shape == b._data.shape
        and a._data.dtype == b._data.dtype
        and _equal(a._data, b._data, fusion)
        for a, b in zip(lw, lg)
    )
    if same and STATE.grad_enabled:
        same = _same_grads(lw, lg, list({id(p): p for p in pts}.values()), rec, fusion)
    if not same:
        raise C.Unsupported("a result depends on data computed outside the op table")


def _same_grads(lw, lg, pts, rec, fusion=None) -> bool:
    """Compare the gradients both runs give the perturbed inputs and the parameters (through
    ``autograd.grad``: nobody's ``.grad`` changes)."""
    from ember.autograd import grad

    ow = [t for t in lw if t._grad_fn is not None]
    og = [t for t in lg if t._grad_fn is not None]
    if not ow or len(ow) != len(og):
        return len(ow) == len(og)
    targets = [p for p in pts if p._requires_grad]
    targets += [v.tensor for v in rec.values if v.kind == "ref" and v.tensor._requires_grad]
    if not targets:
        return True
    seeds = [_wrap(np.ones(t._data.shape, t._data.dtype)) for t in ow]
    gw = grad(ow, targets, grad_outputs=seeds, allow_unused=True)
    gg = grad(og, targets, grad_outputs=seeds, allow_unused=True)
    for a, b in zip(gw, gg):
        if (a is None) != (b is None):
            return False
        if a is not None and not _equal(a._data, b._data, fusion):
            return False
    return True


def reset_all() -> None:
    for cf in _ALL:
        cf.reset()


class OptimizedModule(Module):
    """A module returned by ``torch.compile``: calls go through the compiled ``_orig_mod``."""

    def __init__(self, mod: Module, compiled=None) -> None:
        super().__init__()
        self._orig_mod = mod
        # an instance attribute, as torch's: calling the wrapper runs the compiled module call
        self.forward = compiled if compiled is not None else mod.__call__
        self.dynamo_ctx = compiled

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

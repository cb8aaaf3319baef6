"""The backward of a compiled program, derived at compile time from the op table.

The capture ran eagerly, so its autograd graph exists. This module walks it exactly as the
engine would (ready nodes newest first, gradients summed in arrival order, fixed to each
input's shape and dtype), running every node's backward formula once under the recorder:
the formulas are ember ops, so the walk records the backward as a trace of kernel calls, which
the code generator turns into one function. A node with an array-level backward (the engine's
fast path) becomes one kernel line calling it. The forward and backward are then one autograd
node, ``CompiledFunctionBackward``, whose inputs are the program's inputs that require grad.
"""

from __future__ import annotations

import functools
import heapq

import numpy as np

from ember._core.grad_mode import STATE
from ember._core.node import FREED_MSG, Node, edge_of
from ember._core.reductions import add_reduce
from ember._core.tensor import Tensor, _wrap
from ember._dynamo import capture as C
from ember._ops import registry as R
from ember._ops.registry import OpNode


class _Ctx:
    """What an array-level backward reads off its node: the saved arrays, the needs."""

    __slots__ = ("saved_arrays", "needs_input_grad", "_input_meta", "next_functions")
    _post_hooks = None


def _array_backward_kernel(fn, needs, meta, edges, n_grads, params, *arrays):
    ctx = _Ctx()
    ctx.next_functions = edges
    ctx.saved_arrays = arrays[n_grads:]
    ctx.needs_input_grad = needs
    ctx._input_meta = meta
    out = fn(ctx, *arrays[:n_grads], **params)
    if type(out) is not tuple:
        out = (out,)
    return tuple(None if a is None else np.asarray(a) for a in out)


def _sum_to(a, dims, shape):
    if dims:
        a = add_reduce(a, dims, keepdims=True)
    return a.reshape(shape)


class Backward:
    """The compiled backward of one entry."""

    def __init__(self):
        self.saved: list = []  # forward Values the backward reads
        self.source = ""
        self.graph = None  # the optimised IR of the backward
        self.fn = None
        self.seeds: list = []  # (shape, dtype) per differentiable output
        self.diff_outputs: list = []  # output positions (in out_vals order) that get grad_fn
        self.targets: list = []  # index into the call's tensors, per gradient produced

    def attach(self, outs, saved_arrays, ts):
        node = CompiledFunctionBackward()
        node.fn = self.fn
        node.saved = tuple(saved_arrays)
        node.seeds = self.seeds
        edges, meta = [], []
        for i, ref in self.targets:
            t = ts[i] if ref is None else ref
            edges.append(edge_of(t))
            meta.append((t._data.shape, t.dtype))
        node.next_functions = tuple(edges)
        node._input_meta = tuple(meta)
        node._n_outputs = len(self.diff_outputs)
        for nr, k in enumerate(self.diff_outputs):
            o = outs[k]
            o._grad_fn = node
            o._output_nr = nr
            o._requires_grad = True


_DOUBLE_BACKWARD_MSG = "torch.compile with aot_autograd does not currently support double backward"


class CompiledFunctionBackward(Node):
    """The autograd node of a compiled forward: runs the generated backward."""

    def apply(self, grads):
        if self.saved is None:
            raise RuntimeError(FREED_MSG)
        seeds = []
        for g, (shape, dt) in zip(grads, self.seeds):
            seeds.append(np.zeros(shape, dt) if g is None else g._data)
        out = self.fn(*self.saved, *seeds)
        res = tuple(None if a is None else _wrap(a) for a in out)
        if STATE.grad_enabled:  # create_graph=True: differentiable, as torch's, until run
            node = CompiledFunctionBackwardBackward()
            node.next_functions = self.next_functions + tuple(
                (None, 0) if g is None else edge_of(g) for g in grads
            )
            node._input_meta = self._input_meta + tuple(
                None if g is None else (g._data.shape, g.dtype) for g in grads
            )
            live = [t for t in res if t is not None]
            node._n_outputs = len(live)
            for nr, t in enumerate(live):
                t._grad_fn = node
                t._output_nr = nr
                t._requires_grad = True
        return res

    def release(self):
        self.saved = None


class CompiledFunctionBackwardBackward(Node):
    """The gradient of a compiled backward (``create_graph=True``): refuses, as torch's
    AOT-compiled graphs do; ``backend="eager"`` differentiates twice."""

    def apply(self, grads):
        raise RuntimeError(_DOUBLE_BACKWARD_MSG)


def derive_backward(rec: C.Recorder, tensors, leaves, out_plan) -> Backward:
    """Trace the backward of the captured program; return its compiled form."""
    bw = Backward()
    in_pos = {}
    for i, t in enumerate(tensors):
        in_pos.setdefault(id(t), i)
    # targets: inputs and references requiring grad, by the edge gradients flow into
    target_tensors = []  # (index into the call's tensors or None, tensor)
    for i, t in enumerate(tensors):
        if t._requires_grad and in_pos[id(t)] == i:
            target_tensors.append((i, t))
    for v in rec.values:
        if v.kind == "ref" and v.tensor._requires_grad:
            target_tensors.append((None, v.tensor))
    target_of = {}
    for k, (_i, t) in enumerate(target_tensors):
        node, nr = edge_of(t)
        if node is not None:
            target_of[(id(node), nr)] = k
    bw.targets = [(i, t) if i is None else (i, None) for i, t in target_tensors]
    target_grads: list = [None] * len(target_tensors)

    start = len(rec.calls)
    seeds_vals = []
    buffers: dict = {}
    roots = []
    for kind, pos, t in out_plan:
        if kind != "val" or t._grad_fn is None:
            continue
        seed = _wrap(np.ones(t._data.shape, t._data.dtype))
        v = rec.new_value("seed", seed)
        v.name = f"g{len(seeds_vals)}"
        seeds_vals.append(v)
        bw.seeds.append((t._data.shape, t._data.dtype))
        bw.diff_outputs.append(pos)
        node = t._grad_fn
        if id(node) in [id(n) for n in roots]:
            pass
        else:
            roots.append(node)
        buf = buffers.setdefault(node, [None] * node._n_outputs)
        nr = t._output_nr
        buf[nr] = seed if buf[nr] is None else _traced(rec, lambda a=buf[nr], s=seed: a + s)

    # dependencies inside the captured graph
    deps: dict = {}
    seen = set()
    stack = list(roots)
    for n in roots:
        seen.add(n)
    while stack:
        node = stack.pop()
        if id(node) not in rec.node_call or type(node).__mro__[1] is not OpNode:
            raise C.Unsupported(f"backward through {type(node).__name__}")
        _check_hooks(node)
        for nxt, nr in node.next_functions:
            if nxt is None or (id(nxt), nr) in target_of:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)

    ready = [(-n._seq, i, n) for i, n in enumerate(roots) if deps.get(n, 0) == 0]
    heapq.heapify(ready)
    tie = len(ready)
    prev = STATE.grad_enabled
    STATE.grad_enabled = False
    R.add_observer(rec)
    C.ACTIVE.append(rec)
    try:
        while ready:
            node = heapq.heappop(ready)[2]
            grads = buffers.pop(node, None) or [None] * node._n_outputs
            if any(g is not None for g in grads):
                outputs = _apply(rec, node, grads)
            else:
                outputs = (None,) * len(node.next_functions)
            if len(outputs) != len(node.next_functions):
                raise C.Unsupported(f"{type(node).__name__} returned a wrong number of grads")
            meta = node._input_meta
            for i, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                g = outputs[i]
                if g is not None:
                    g = _validate(rec, g, meta[i])
                k = target_of.get((id(nxt), nr))
                if k is not None:
                    if g is not None:
                        old = target_grads[k]
                        target_grads[k] = g if old is None else old + g
                    continue
                left = deps[nxt] - 1
                deps[nxt] = left
                if g is not None:
                    buf = buffers.setdefault(nxt, [None] * nxt._n_outputs)
                    old = buf[nr]
                    buf[nr] = g if old is None else old + g
                if left == 0:
                    heapq.heappush(ready, (-nxt._seq, tie, nxt))
                    tie += 1
    finally:
        R.remove_observer(rec)
        C.ACTIVE.pop()
        STATE.grad_enabled = prev
    if rec.failure is not None:
        raise C.Unsupported(rec.failure)
    calls = rec.calls[start:]
    if any(type(c) is C.Read for c in calls):
        raise C.Unsupported("the backward reads a value from a tensor")
    outs = []
    for g in target_grads:
        outs.append(None if g is None else rec.value_of(g))
    # the forward values the backward reads: passed from the forward run
    fwd_ids = {v.id for v in rec.values[: seeds_vals[0].id]} if seeds_vals else set()
    used = []
    seen_ids = set()
    for c in calls:
        for a in C.call_values(c):
            if a.id in fwd_ids and a.kind != "ref" and a.id not in seen_ids:
                seen_ids.add(a.id)
                used.append(a)
    for v in outs:
        if v is not None and v.id in fwd_ids and v.kind != "ref" and v.id not in seen_ids:
            seen_ids.add(v.id)
            used.append(v)
    for v in used:
        if v.root in rec.mutated_roots:
            raise C.Unsupported("the backward reads a tensor written in place")
    bw.saved = used
    from ember._inductor import codegen

    env: dict = {}
    # the saved values are parameters of the backward: rename them in the trace's eyes
    names = {v.id: f"s{k}" for k, v in enumerate(used)}
    for v in used:
        v.name = names[v.id]
    params = used + seeds_vals
    bw.source = codegen.generate("backward", params, calls, outs, set(), env)
    bw.graph = env["graph"]
    bw.fn = codegen.build("backward", bw.source, env)
    bw.expected = [None if g is None else g._data for g in target_grads]
    _verify(bw, used, seeds_vals)
    return bw


def _verify(bw, used, seeds_vals):
    # the generated backward reproduces the traced gradients, and is linear in the seeds
    saved = [_array_of(v) for v in used]
    ones = [np.ones(s, d) for s, d in bw.seeds]
    got = bw.fn(*saved, *ones)
    for a, b in zip(got, bw.expected):
        if (a is None) != (b is None) or (a is not None and not _equal(a, b)):
            raise C.Unsupported("generated backward did not reproduce eager's (a bug)")


def _equal(a, b) -> bool:
    # bit for bit, but within a tolerance for kernels that are not bit-exact (max-autotune)
    from ember._inductor import numba_kernels

    if numba_kernels.MODE[0] == "fast" and a.dtype.kind == "f":
        return np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
    return np.array_equal(a, b, equal_nan=True)


def _array_of(v):
    return v.tensor._data if v.tensor is not None else v.arr


def _check_hooks(node):
    if node._tensor_hooks or node._retain_hooks or node._pre_hooks or node._post_hooks:
        raise C.Unsupported("a hook on a backward node")


def _traced(rec, fn):
    prev = STATE.grad_enabled
    STATE.grad_enabled = False
    R.add_observer(rec)
    try:
        return fn()
    finally:
        R.remove_observer(rec)
        STATE.grad_enabled = prev


# ops whose backward formula ignores the arrays among its params (when the predicate holds):
# training batch norm recomputes its statistics from the saved input; the arithmetic of an
# in-place write (``x.mul_(2)``) never reads its target, the array under ``out``
def _only_out(p) -> bool:
    return not any(isinstance(x, np.ndarray) for k, x in p.items() if k != "out")


_ARRAY_PARAMS_UNREAD = {
    "native_batch_norm": lambda p: p.get("training") is True,
    **dict.fromkeys(("add", "sub", "mul", "div"), _only_out),
}


def _apply(rec, node, grads):
    op = node.op
    if node.params and any(isinstance(x, np.ndarray) for x in node.params.values()):
        unread = _ARRAY_PARAMS_UNREAD.get(op.name)
        made = all(  # arrays a recorded kernel made (eval batch norm's statistics) are values
            _recorded(rec, x) for x in node.params.values() if isinstance(x, np.ndarray)
        )
        if not made and (unread is None or not unread(node.params)):
            # the formula would read capture-time arrays: data the trace would freeze
            raise C.Unsupported(f"the backward of {op.name} reads an array parameter")
        return _formula(node, grads)
    if op.array_backward_fn is not None:
        arrays = [None if g is None else g._data for g in grads]
        out = op.array_backward_fn(node, *arrays, **node.params)
        if out is not NotImplemented:
            single = type(out) is not tuple
            outs = (out,) if single else out
            args = [rec.value_of(g) if g is not None else None for g in grads]
            tsaved = () if node._saved is None else node.saved_tensors
            for s in tsaved:
                if isinstance(s, np.ndarray):
                    raise C.Unsupported("array saved outside a tensor")
            args += [rec.value_of(t) if isinstance(t, Tensor) else t for t in tsaved]
            results = tuple(None if a is None else _wrap(np.asarray(a)) for a in outs)
            live = [r for r in results if r is not None]
            vals = [rec.new_value("op", r) for r in live]
            np_fn = getattr(op.array_backward_fn, "np_fn", None)
            if np_fn is not None and len(grads) == 1:
                # a NumPy formula behind checks on dtypes and ranks, which hold on every run
                # as they held now: call it directly, on a context built once
                ctx = _Ctx()
                ctx.next_functions = _edge_tokens(node.next_functions)
                ctx.needs_input_grad = node.needs_input_grad
                ctx._input_meta = node._input_meta
                ctx.saved_arrays = None
                fn = functools.partial(np_fn, ctx, **node.params)
                single = single and len(results) == 1 and results[0] is not None
            else:
                fn = functools.partial(
                    _array_backward_kernel,
                    op.array_backward_fn,
                    node.needs_input_grad,
                    node._input_meta,
                    _edge_tokens(node.next_functions),
                    len(grads),
                    node.params,
                )
                single = False
            call = C.Call(None, fn, args, {}, vals, multi=not single)
            call.label = f"{type(node).__name__}.array_backward"
            call.slots = [i for i, r in enumerate(results) if r is not None]
            rec.calls.append(call)
            if not single:
                _pad(call, len(results))
            return results
    return _formula(node, grads)


def _recorded(rec, a) -> bool:
    v = rec.by_array.get(id(a))
    return v is not None and v.kind == "op"


def _formula(node, grads):
    out = node.op.backward_fn(node, *grads, **node.params)
    return out if type(out) is tuple else (out,)


def _edge_tokens(edges):
    # the node's edges as comparable tokens (a formula may ask whether two inputs are one)
    ids: dict = {}
    return tuple(
        (ids.setdefault(id(n), len(ids)) if n is not None else None, nr) for n, nr in edges
    )


def _pad(call, n):
    # the kernel returns one entry per input gradient, None where there is none: give the
    # None ones throwaway names so the generated unpacking lines up
    outs = []
    it = iter(call.outs)
    for i in range(n):
        if i in call.slots:
            outs.append(next(it))
        else:
            dummy = C.Value.__new__(C.Value)
            dummy.id = -1
            dummy.name = "_"
            dummy.root = -1
            outs.append(dummy)
    call.outs = outs


def _validate(rec, g, meta):
    if meta is None:
        return g
    shape, dtype = meta
    if g._data.shape != shape:
        a = g._data
        if a.dtype.kind not in "fc" or a.dtype.itemsize < 4:
            raise C.Unsupported("a half-precision gradient summed to its input's shape")
        gshape = a.shape
        lead = len(gshape) - len(shape)
        dims = tuple(range(lead)) + tuple(
            lead + k for k, s in enumerate(shape) if s == 1 and gshape[lead + k] != 1
        )
        res = _wrap(_sum_to(a, dims, shape))
        fn = functools.partial(_sum_to, dims=dims, shape=tuple(shape))
        fn.__name__ = "sum_to"
        rec.record_kernel(fn, [rec.value_of(g)], {}, res, "sum_to")
        g = res
    if g.dtype is not dtype:
        if g.dtype.is_complex and not dtype.is_complex:
            raise C.Unsupported("a complex gradient for a real input")
        g = g.to(dtype)
    return g

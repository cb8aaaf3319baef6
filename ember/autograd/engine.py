"""The backward engine: iterative, in torch's order.

1. From the roots, walk the graph (an explicit stack, never recursion) and count, for every node,
   how many edges lead into it.
2. Keep a heap of ready nodes keyed by sequence number, newest first (torch's order; leaves'
   ``AccumulateGrad`` nodes run as soon as they are ready).
3. Pop a node, run its hooks and backward, fix each produced gradient to its input's shape
   (sum over broadcast dims) and dtype, add it into the next node's buffer, and push the next
   node once all its incoming edges have delivered.
Without ``retain_graph`` each node frees its saved tensors after running.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap
from ember.autograd.node import AccumulateGrad, edge_of


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs, create_graph):
    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs is not None else None
        if g is None:
            if out._requires_grad:
                if out._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not (out.dtype.is_floating_point or out.dtype.is_complex):
                    raise RuntimeError(
                        "grad can be implicitly created only for real scalar outputs but got "
                        f"{out.dtype!r}"
                    )
                g = _wrap(np.ones(out._data.shape, dtype=out.dtype.np))
        elif isinstance(g, Tensor):
            if g._data.shape != out._data.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}]"
                    f" has a shape of {out.shape}."
                )
            if g.dtype.is_complex != out.dtype.is_complex:
                raise RuntimeError(
                    f"For complex Tensors, both grad_output and output are required to have the "
                    f"same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} "
                    f"and output[{i}] has a dtype of {out.dtype}."
                )
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        grads.append(g)
    return grads


def backward(
    tensors,
    grad_tensors=None,
    retain_graph=None,
    create_graph=False,
    grad_variables=None,
    inputs=None,
) -> None:
    """Compute the sum of gradients of ``tensors`` w.r.t. graph leaves into their ``.grad``."""
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors if grad_tensors is not None else grad_variables)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    if grad_tensors is not None and len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(grad_tensors)} tensors and {len(tensors)} gradients")
    for i, t in enumerate(tensors):
        if not t._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(tensors, grad_tensors, create_graph)
    _run(tensors, grads, retain_graph, create_graph, inputs, accumulate=True)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """Return the gradients of ``outputs`` w.r.t. ``inputs`` (without touching ``.grad``)."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs)
    if grad_outputs is not None and len(grad_outputs) != len(outputs):
        raise RuntimeError(
            f"grad requires one grad_output per output: got {len(grad_outputs)} and {len(outputs)}"
        )
    for i, t in enumerate(outputs):
        if not t._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs, create_graph)
    result = _run(outputs, grads, retain_graph, create_graph, inputs, accumulate=False)
    for i, g in enumerate(result):
        if g is None:
            if materialize_grads:
                result[i] = _wrap(np.zeros(inputs[i]._data.shape, inputs[i].dtype.np))
            elif not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
    return tuple(result)


# ---------------------------------------------------------------------------------------------


def _graph(roots, targets):
    """Return (dependency counts, set of nodes whose backward must run)."""
    deps: dict = {}
    children: dict = {}
    seen = set()
    stack = [n for n in roots if n is not None]
    order = []
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        kids = [n for n, _ in node.next_functions if n is not None]
        children[node] = kids
        stack.extend(k for k in kids if k not in seen)
    if targets is None:
        needed = seen
    else:
        # a node is needed if a target is reachable from it: fixpoint in reverse discovery order
        needed = set(targets)
        changed = True
        while changed:
            changed = False
            for node in reversed(order):
                if node not in needed and any(k in needed for k in children[node]):
                    needed.add(node)
                    changed = True
    for node in needed:
        for k in children[node]:
            if k in needed:
                deps[k] = deps.get(k, 0) + 1
    return deps, needed, children


def _run(outputs, grads, retain_graph, create_graph, inputs, accumulate):
    roots = []
    buffers: dict = {}
    for out, g in zip(outputs, grads):
        node, nr = edge_of(out)
        if node is None:
            continue
        if node not in buffers:
            buffers[node] = [None] * _n_outputs(node)
            roots.append(node)
        _add(buffers[node], nr, g)
    # what to capture: targets are (node, output_nr) slots
    capture = None
    targets = None
    if inputs is not None:
        capture = {}
        targets = set()
        for i, t in enumerate(inputs):
            node, nr = edge_of(t)
            if node is None:
                continue
            capture.setdefault(node, []).append((nr, i, t))
            targets.add(node)
    deps, needed, children = _graph(roots, targets)
    results = [None] * (len(inputs) if inputs is not None else 0)

    prev = STATE.grad_enabled
    STATE.grad_enabled = create_graph
    try:
        with np.errstate(all="ignore"):
            ready = []
            counter = 0
            for node in roots:
                if deps.get(node, 0) == 0 and node in needed:
                    heapq.heappush(ready, (-node._seq, counter, node))
                    counter += 1
            while ready:
                _, _, node = heapq.heappop(ready)
                grads_in = buffers.pop(node, None) or [None] * _n_outputs(node)
                grads_in = _call_pre_hooks(node, grads_in)
                if capture is not None and node in capture:
                    for nr, i, t in capture[node]:
                        g = grads_in[nr]
                        if accumulate:
                            if not isinstance(node, AccumulateGrad) and g is not None:
                                _accumulate_into(t, g, create_graph)
                        else:
                            results[i] = g
                    if not any(k in needed for k in children[node]) and not (
                        accumulate and isinstance(node, AccumulateGrad)
                    ):
                        continue
                if isinstance(node, AccumulateGrad):
                    if accumulate and grads_in[0] is not None:
                        _accumulate_into(node.variable, grads_in[0], create_graph)
                    continue
                if all(g is None for g in grads_in):
                    grads_out = (None,) * len(node.next_functions)
                else:
                    grads_out = node.apply(grads_in)
                    if node._post_hooks:
                        for hook in tuple(node._post_hooks.values()):
                            r = hook(grads_out, tuple(grads_in))
                            if r is not None:
                                grads_out = tuple(r)
                if not retain_graph:
                    node.release()
                _propagate(node, grads_out, buffers, deps, needed, ready)
    finally:
        STATE.grad_enabled = prev
    return results


def _n_outputs(node) -> int:
    return node._n_outputs


def _add(buf, nr, g):
    while len(buf) <= nr:
        buf.append(None)
    buf[nr] = g if buf[nr] is None else buf[nr] + g


def _call_pre_hooks(node, grads_in):
    hooks = node._tensor_hooks
    if hooks:
        for nr, table in hooks.items():
            for hook in tuple(table.values()):
                if nr < len(grads_in) and grads_in[nr] is not None:
                    r = hook(grads_in[nr])
                    if r is not None:
                        grads_in[nr] = r
    if isinstance(node, AccumulateGrad):
        leaf_hooks = node.variable._hooks
        if leaf_hooks and grads_in[0] is not None:
            for hook in tuple(leaf_hooks.values()):
                r = hook(grads_in[0])
                if r is not None:
                    grads_in[0] = r
    if node._pre_hooks:
        for hook in tuple(node._pre_hooks.values()):
            r = hook(tuple(grads_in))
            if r is not None:
                grads_in = list(r)
    retain = node._retain_hooks
    if retain:
        for nr, table in retain.items():
            for hook in tuple(table.values()):
                if nr < len(grads_in) and grads_in[nr] is not None:
                    hook(grads_in[nr])
    return grads_in


def _propagate(node, grads_out, buffers, deps, needed, ready):
    edges = node.next_functions
    if len(grads_out) != len(edges):
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients (expected "
            f"{len(edges)}, got {len(grads_out)})"
        )
    meta = node._input_meta
    for i, (nxt, nr) in enumerate(edges):
        if nxt is None or nxt not in needed:
            continue
        g = grads_out[i]
        if g is not None:
            if meta and meta[i] is not None:
                g = _validate(node, i, g, meta[i])
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = [None] * _n_outputs(nxt)
            _add(buf, nr, g)
        deps[nxt] -= 1
        if deps[nxt] == 0:
            heapq.heappush(ready, (-nxt._seq, id(nxt), nxt))


def _validate(node, i, g, meta):
    """Fix gradient ``g`` to the shape and dtype of input ``i`` (torch's validate_outputs)."""
    shape, dtype = meta
    if not isinstance(g, Tensor):
        raise TypeError(
            f"function {node.name()} returned a gradient of type "
            f"{type(g).__name__} at index {i}, expected a Tensor"
        )
    if g._data.shape != shape:
        g = sum_to(g, shape, node, i)
    if g.dtype is not dtype:
        g = g.to(dtype)
    return g


def sum_to(g: Tensor, shape: Sequence[int], node=None, i: int = 0) -> Tensor:
    """Return ``g`` summed over the dimensions along which ``shape`` was broadcast to it."""
    gshape = g._data.shape
    lead = len(gshape) - len(shape)
    if lead < 0 or any(s != 1 and s != gs for s, gs in zip(shape, gshape[lead:])):
        where = (
            f"function {node.name()} returned an invalid gradient at index {i} - " if node else ""
        )
        raise RuntimeError(
            f"{where}got {list(gshape)} but expected shape compatible with {list(shape)}"
        )
    dims = tuple(range(lead)) + tuple(
        lead + k for k, s in enumerate(shape) if s == 1 and gshape[lead + k] != 1
    )
    if dims:
        g = g.sum(dims, keepdim=True)
    if lead:
        g = g.reshape(shape) if g._data.shape != tuple(shape) else g
    elif g._data.shape != tuple(shape):
        g = g.reshape(shape)
    return g


def _accumulate_into(t: Tensor, g: Tensor, create_graph: bool) -> None:
    """Add ``g`` into ``t.grad`` (in place when no graph is being built, as torch)."""
    if g.dtype is not t.dtype:
        g = g.to(t.dtype)
    if g._data.shape != t._data.shape:
        g = sum_to(g, t._data.shape)
    old = t._grad
    if old is None:
        if not create_graph:
            g = g.detach()
            a = g._data
            if a.base is not None or not a.flags.writeable or not a.flags.c_contiguous:
                g = _wrap(np.array(a, copy=True, order="C"))
        t._grad = g
    elif create_graph or old._requires_grad:
        t._grad = old + g
    else:
        np.add(old._data, g._data, out=old._data, casting="unsafe")
        old._vc[0] += 1

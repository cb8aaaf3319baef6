"""The backward engine: iterative, in torch's order.

1. From the roots, walk the graph with an explicit stack (never recursion) and count, for every
   node, how many edges lead into it. With ``inputs=``, mark the nodes that lead to an input:
   only those run (``backward``), and the inputs' gradients are captured on the way (``grad``).
2. Keep a heap of ready nodes keyed by sequence number, newest first (torch's order; leaves'
   ``AccumulateGrad`` nodes run as soon as they are ready).
3. Pop a node, run its hooks and backward, fix each produced gradient to its input's shape
   (sum over broadcast dims) and dtype, add it into the next node's buffer, and push the next
   node once all its incoming edges have delivered.
Without ``retain_graph`` each node frees its saved tensors after running. Backward runs with grad
mode set to ``create_graph``.
"""

from __future__ import annotations

import heapq
import itertools
import warnings
from collections.abc import Mapping

import numpy as np

from ember._core.anomaly import FLAGS as _ANOMALY
from ember._core.grad_mode import STATE
from ember._core.node import AccumulateGrad, edge_of
from ember._core.tensor import ABOVE as _TENSOR_ABOVE
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import ABOVE as _OPS_ABOVE
from ember._ops.registry import OpNode
from ember._ops.sum_to import sum_to

# ---------------------------------------------------------------------------------------------
# the public functions


def backward(
    tensors,
    grad_tensors=None,
    retain_graph=None,
    create_graph=False,
    grad_variables=None,
    inputs=None,
) -> None:
    """Compute the sum of gradients of ``tensors`` w.r.t. graph leaves into their ``.grad``."""
    if grad_variables is not None:
        warnings.warn(
            "`grad_variables` is deprecated. Use `grad_tensors` instead.",
            FutureWarning,
            stacklevel=2,
        )
        if grad_tensors is not None:
            raise RuntimeError(
                "`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                "`backward()`. Please only use `grad_tensors`."
            )
        grad_tensors = grad_variables
    inputs_tuple = () if inputs is None else _inputs_tuple(inputs, "backward")
    if inputs is not None and not inputs_tuple:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = (tensors,) if isinstance(tensors, Tensor) else tuple(tensors)
    grads = _make_grads(tensors, _tensor_or_tensors_to_tuple(grad_tensors, len(tensors)))
    if retain_graph is None:
        retain_graph = create_graph
    _run_backward(tensors, grads, retain_graph, create_graph, inputs_tuple, True, True)


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
    """Return the gradients of ``outputs`` w.r.t. ``inputs`` (a tuple, or a dict for a dict of
    inputs), without touching ``.grad``."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs_tuple = _inputs_tuple(inputs, "grad")
    if not inputs_tuple:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use "
            "torch.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    grad_outputs = _tensor_or_tensors_to_tuple(grad_outputs, len(outputs))
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        result = _grad_batched(
            outputs, grad_outputs, retain_graph, create_graph, inputs_tuple, allow_unused
        )
    else:
        grads = _make_grads(outputs, grad_outputs)
        result = _run_backward(
            outputs, grads, retain_graph, create_graph, inputs_tuple, allow_unused, False
        )
    if materialize_grads:
        result = tuple(
            r
            if r is not None
            else _wrap(np.zeros(t._data.shape, t._data.dtype)).requires_grad_(create_graph)
            for r, t in zip(result, inputs_tuple)
        )
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return result


def _grad_batched(outputs, grad_outputs, retain_graph, create_graph, inputs, allow_unused):
    """``grad(..., is_grads_batched=True)``: the first dimension of every grad_output is a
    batch of vectors; one backward pass per vector (the graph kept until the last), the
    gradients stacked along a new first dimension (torch vmaps the backward instead)."""
    from ember._ops.cat_split import stack

    sizes = set()
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if isinstance(g, Tensor):
            if g.dim() == 0 or g._data.shape[1:] != out._data.shape:
                raise RuntimeError(
                    "If `is_grads_batched=True`, we interpret the first dimension of each "
                    "grad_output as the batch dimension. The sizes of the remaining dimensions "
                    "are expected to match the shape of corresponding output, but a mismatch "
                    f"was detected: grad_output[{i}] has a shape of {g.shape[1:]} and "
                    f"output[{i}] has a shape of {out.shape}. If you only want some tensors in "
                    "`grad_output` to be considered batched, consider using vmap."
                )
            sizes.add(g._data.shape[0])
    if len(sizes) != 1:  # (torch's vmap raises ValueError here too)
        raise ValueError(
            "is_grads_batched=True needs every grad_output to be a tensor with the same batch "
            f"size (its first dimension), but got batch sizes {sorted(sizes)}"
        )
    (batch,) = sizes
    rows = []
    for b in range(batch):
        grads = _make_grads(outputs, tuple(g[b] if g is not None else None for g in grad_outputs))
        keep = retain_graph or b < batch - 1
        rows.append(_run_backward(outputs, grads, keep, create_graph, inputs, allow_unused, False))
    return tuple(None if column[0] is None else stack(list(column)) for column in zip(*rows))


def _inputs_tuple(inputs, fn: str) -> tuple:
    if isinstance(inputs, Tensor):
        return (inputs,)
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(
            f"`inputs` argument to `{fn}()` must be a dict, not {type(inputs).__name__}. "
            "Other Mapping types are not supported."
        )
    return tuple(inputs)


def _tensor_or_tensors_to_tuple(tensors, length: int) -> tuple:
    if tensors is None:
        return (None,) * length
    if isinstance(tensors, Tensor):
        return (tensors,)
    return tuple(tensors)


def _make_grads(outputs, grads) -> tuple:
    """Check the given output gradients; create the implicit ones (ones for scalar outputs)."""
    new_grads = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if isinstance(g, Tensor):
            if g._data.shape != out._data.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                    f"output[{i}] has a shape of {out.shape}."
                )
            if out.dtype.is_complex != g.dtype.is_complex:
                raise RuntimeError(
                    "For complex Tensors, both grad_output and output are required to have the "
                    f"same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} "
                    f"and output[{i}] has a dtype of {out.dtype}."
                )
            new_grads.append(g)
        elif g is None:
            if out._requires_grad:
                if out._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError(
                        "grad can be implicitly created only for real scalar outputs but got "
                        f"{out.dtype}"
                    )
                new_grads.append(_wrap(np.ones(out._data.shape, dtype=out._data.dtype)))
            else:
                new_grads.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    return tuple(new_grads)


def _run_backward(outputs, grads, keep_graph, create_graph, inputs, allow_unused, accumulate):
    """torch's ``Engine::run_backward``: build the roots and targets, execute, check results."""
    if len(outputs) != len(grads):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    roots = []
    for i, (t, g) in enumerate(zip(outputs, grads)):
        node, nr = edge_of(t)
        if node is None:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        roots.append((node, nr, g))
    targets = []
    for t in inputs:
        if accumulate:
            # backward(inputs=[non_leaf]) fills non_leaf.grad through retain_grad, as torch
            t.retain_grad()
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        targets.append(edge_of(t))
    del grads
    if accumulate and create_graph:
        _warn_create_graph_once()
    captured = execute(roots, targets, keep_graph, create_graph, accumulate)
    if accumulate:
        return None
    for i, g in enumerate(captured):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"The differentiated Tensor at index {i} appears to not have been used in the "
                "graph. Set allow_unused=True if this is the desired behavior."
            )
    return tuple(captured)


_warned_create_graph = False


def _warn_create_graph_once() -> None:
    global _warned_create_graph
    if not _warned_create_graph:
        _warned_create_graph = True
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.",
            UserWarning,
            stacklevel=4,
        )


# ---------------------------------------------------------------------------------------------
# the engine

# the backward passes running (reentrant backward nests them): (id, checkpoint_valid)
GRAPH_TASKS: list = []
_task_ids = itertools.count()


def execute(roots, targets, keep_graph: bool, create_graph: bool, accumulate: bool) -> list:
    """Run the graph backward from ``roots`` (``(node, output_nr, grad)`` triples).

    ``targets`` are ``(node, output_nr)`` edges. With ``accumulate`` (``backward``), only nodes
    leading to a target (and the targets) run; without it (``grad``), the gradient reaching each
    target is captured and returned in order, and nodes run only if they lead to a target.
    No targets with ``accumulate``: every node runs.
    """
    task = _GraphTask(roots, targets, accumulate)
    del roots
    prev = STATE.grad_enabled
    STATE.grad_enabled = create_graph
    # reentrant checkpointing needs a plain backward(): no grad(), no inputs=
    GRAPH_TASKS.append((next(_task_ids), accumulate and not targets))
    try:
        _run(task, _node_caller(), keep_graph)
    finally:
        STATE.grad_enabled = prev
        GRAPH_TASKS.pop()
    return task.captured


class _GraphTask:
    """The plan of one backward pass, made before any node runs, and its running state.

    ``buffers``: the gradients collected so far for each node's outputs; ``deps``: how many
    edges into each node have not delivered yet; ``wanted``: the nodes gradients go to (None:
    all); ``captures``: ``{node: [(output_nr, index into captured)]}`` for ``grad()``'s inputs
    and ``needed`` the nodes that must run for them (both None without targets); ``ready``:
    the heap of nodes whose every edge has delivered, newest (highest sequence number) first;
    ``owned``: ``{id: tensor}`` of the buffered gradients the engine made itself (sums, the
    zeros a slice's gradient is written into) and nobody else holds yet: later gradients for
    the same slot are added into them in place, as torch's InputBuffer does.
    """

    __slots__ = (
        "buffers",
        "deps",
        "wanted",
        "captures",
        "needed",
        "captured",
        "ready",
        "tie",
        "owned",
    )

    def __init__(self, roots, targets, accumulate: bool) -> None:
        root_nodes = []
        self.buffers = buffers = {}
        for node, nr, g in roots:
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * node._n_outputs
                root_nodes.append(node)
            _add(buf, nr, g)
        self.deps, parents = _dependencies(root_nodes, bool(targets))
        self.captures = self.needed = self.wanted = None
        if targets:
            self.captures = captures = {}
            if accumulate:
                marked = {node for node, _ in targets if node is not None}
                self.needed = _ancestors(marked, parents) | marked
            else:
                for i, (node, nr) in enumerate(targets):
                    if node is not None:
                        captures.setdefault(node, []).append((nr, i))
                self.needed = _ancestors(set(captures), parents)
            self.wanted = self.needed | set(captures)
        self.captured = [None] * len(targets)
        self.tie = itertools.count()  # (heap ties: insertion order)
        self.owned = {}
        self.ready = [
            (-node._seq, next(self.tie), node)
            for node in root_nodes
            if self.deps.get(node, 0) == 0 and (self.wanted is None or node in self.wanted)
        ]
        heapq.heapify(self.ready)


def _run(task: _GraphTask, call, keep_graph: bool) -> None:
    """The loop (micrograd's, in torch's order): take the newest ready node and the gradients
    collected for it, run it, free what it saved, send its gradients on."""
    ready, buffers, captures, pop = task.ready, task.buffers, task.captures, heapq.heappop
    owned = task.owned
    plain = call is _call_function
    while ready:
        node = pop(ready)[2]
        grads = buffers.pop(node, None) or [None] * node._n_outputs
        if owned:  # handed on: from now on someone else may hold them
            for g in grads:
                if g is not None:
                    owned.pop(id(g), None)
        if captures is not None and node in captures and not _capture(task, node, grads):
            continue
        if node._grad_slice is not None and _send_slice(task, node, grads, call):
            del grads
            if not keep_graph:
                node.release()
            continue
        if (
            plain
            and node._tensor_hooks is None
            and node._retain_hooks is None
            and node._pre_hooks is None
            and node._post_hooks is None
            and type(node) is not AccumulateGrad
            and (node._apply_undefined or _any_defined(grads))
        ):
            outputs = node.apply(grads)  # ``_call_function`` with nothing but the backward
        else:
            outputs = call(node, grads)
        del grads  # (AccumulateGrad steals a gradient nobody else references)
        if not keep_graph:
            node.release()
        _send(task, node, outputs)
        del outputs


def _capture(task: _GraphTask, node, grads: list) -> bool:
    """Record the gradients reaching ``grad()``'s inputs at ``node``; return whether the node
    itself runs. A node only captured runs its tensor hooks and not its backward; a node that
    also leads to another input is captured before its hooks, as torch."""
    places = task.captures[node]
    if node not in task.needed:
        grads = _tensor_pre_hooks(node, grads)
        for nr, i in places:
            task.captured[i] = grads[nr]
        return False
    for nr, i in places:
        task.captured[i] = grads[nr]
    return True


def _send(task: _GraphTask, node, outputs) -> None:
    """Deliver ``node``'s gradients along its edges: each is fixed to its input's shape and
    dtype (``_validate``), added into the next node's buffer, and the next node becomes ready
    once all its edges have delivered."""
    edges = node.next_functions
    if len(outputs) != len(edges):
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients "
            f"(expected {len(edges)}, got {len(outputs)})"
        )
    deps, wanted, buffers, meta = task.deps, task.wanted, task.buffers, node._input_meta
    for i, (nxt, nr) in enumerate(edges):
        if nxt is None:
            continue
        left = deps[nxt] = deps[nxt] - 1
        if wanted is not None and nxt not in wanted:
            continue
        g = outputs[i]
        if g is not None:
            m = meta[i]
            if type(g) is not Tensor or (
                m is not None and (g._data.shape != m[0] or g.dtype is not m[1])
            ):
                g = _validate(node, i, g, m)
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = [None] * nxt._n_outputs
            old = buf[nr]
            if old is None:
                buf[nr] = g
            else:
                buf[nr] = _accumulate(task.owned, old, g)
        if left == 0:
            heapq.heappush(task.ready, (-nxt._seq, next(task.tie), nxt))


def _accumulate(owned: dict, old, g):
    """Return the sum of a buffered gradient ``old`` and a new one ``g`` (both validated to the
    input's shape and dtype): added into ``old`` in place when the engine made it and nobody
    else holds it, else a new sum, itself owned when the pass records no graph."""
    if type(old) is not Tensor:
        return _buffer_add(old, g)
    key = id(old)
    if key in owned:
        a = old._data
        b = g._data if type(g) is Tensor else None
        if type(b) is np.ndarray and a.shape == b.shape and a.dtype == b.dtype:
            np.add(a, b, out=a)
            return old
        del owned[key]
        return _buffer_add(old, g)
    out = old + g
    if not STATE.grad_enabled and type(g) is Tensor and _writable(out._data):
        owned[id(out)] = out
    return out


def _writable(a) -> bool:
    # a fresh dense array of ember's own (not a meta tensor's read-only stand-in)
    return type(a) is np.ndarray and a.flags.writeable and a.flags.c_contiguous


def _send_slice(task: _GraphTask, node, grads: list, call) -> bool:
    """Run a select/slice node (``node._grad_slice(**params)`` is the index of its output in
    its input) by writing its gradient into that slice of the next node's buffer: the
    gradients of ``x[0]``, ..., ``x[T-1]`` fill one buffer rather than making T zero tensors
    of ``x``'s size and adding them. Return False (the node runs as usual) when hooks,
    anomaly mode, the profiler, a recorded backward or an unusual gradient need the node's
    own backward."""
    g = grads[0]
    if (
        type(g) is not Tensor
        or call is not _call_function
        or STATE.grad_enabled
        or node._tensor_hooks
        or node._retain_hooks
        or node._pre_hooks
        or node._post_hooks
        or not _writable(g._data)
    ):
        return False
    (nxt, nr), m = node.next_functions[0], node._input_meta[0]
    if nxt is None or m is None or m[1] is not g.dtype:
        return False
    owned, buffers = task.owned, task.buffers
    wanted = task.wanted is None or nxt in task.wanted
    if wanted:
        key = node._grad_slice(**node.params)
        buf = buffers.get(nxt)
        if buf is None:
            buf = buffers[nxt] = [None] * nxt._n_outputs
        old = buf[nr]
        if old is None:
            a = np.zeros(m[0], g._data.dtype)
            a[key] = g._data
            buf[nr] = t = _wrap(a)
            owned[id(t)] = t
        elif type(old) is Tensor and id(old) in owned:
            a = old._data
            a[key] += g._data
        else:
            a = np.zeros(m[0], g._data.dtype)
            a[key] = g._data
            buf[nr] = _accumulate(owned, old, _wrap(a))
    left = task.deps[nxt] = task.deps[nxt] - 1
    if left == 0 and wanted:
        heapq.heappush(task.ready, (-nxt._seq, next(task.tie), nxt))
    return True


def _node_caller():
    """How the nodes of this pass run: inside the profiler's events while it records, with
    anomaly checks in anomaly mode, else torch's ``call_function`` (hooks, then backward)."""
    if NODE_PROFILER:
        profiled, anomaly = NODE_PROFILER[0], _ANOMALY.enabled
        return lambda node, grads: profiled(node, grads, anomaly)
    return _call_function_anomaly if _ANOMALY.enabled else _call_function


# ember.profiler's view of backward nodes: while a profiler records, one function
# ``(node, grads, anomaly) -> outputs`` that runs the node (``_call_function``) inside its events
NODE_PROFILER: list = []


def current_graph_task_id() -> int:
    """Return the id of the innermost backward pass running, or -1 outside backward."""
    return GRAPH_TASKS[-1][0] if GRAPH_TASKS else -1


def _is_checkpoint_valid() -> bool:
    """Return False inside a backward pass run by ``grad()`` or ``backward(inputs=...)``."""
    return GRAPH_TASKS[-1][1] if GRAPH_TASKS else True


def _dependencies(root_nodes, want_parents: bool):
    """Return ({node: number of edges into it}, {node: its parents} or None), iteratively."""
    deps: dict = {}
    parents: dict | None = {} if want_parents else None
    seen = set(root_nodes)
    stack = list(root_nodes)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if parents is not None:
                parents.setdefault(nxt, []).append(node)
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps, parents


def _ancestors(marked: set, parents: dict) -> set:
    """Return every node with a path to a node of ``marked`` (torch's ``exec_info.needed_``)."""
    found: set = set()
    stack = list(marked)
    while stack:
        for p in parents.get(stack.pop(), ()):
            if p not in found:
                found.add(p)
                stack.append(p)
    return found


def _buffer_add(old, g):
    # torch's InputBuffer: a sparse gradient already there goes second (new + old)
    if not STATE.grad_enabled and old.is_sparse:
        return g + old
    return old + g


def _add(buf, nr, g):
    if g is None:
        return
    old = buf[nr]
    buf[nr] = g if old is None else old + g


def _call_function(node, grads: list) -> tuple:
    """torch's ``call_function``: tensor hooks, retain_grad hooks, pre-hooks, the backward,
    post-hooks. Returns the gradients for the node's inputs (one per ``next_functions``)."""
    if node._tensor_hooks or node._retain_hooks or type(node) is AccumulateGrad:
        grads = _tensor_pre_hooks(node, grads)
    if node._pre_hooks:
        grads = _node_pre_hooks(node, grads)
    grads_in = tuple(grads) if node._post_hooks else None
    if _any_defined(grads) or node._apply_undefined:
        outputs = node.apply(grads)
    else:  # nothing flowed in: torch's built-in nodes return undefined gradients
        outputs = (None,) * len(node.next_functions)
    if grads_in is not None:
        needs = node.needs_input_grad if isinstance(node, OpNode) else None
        if needs is not None and len(needs) == len(outputs):
            # torch's built-in nodes leave the gradients of inputs not requiring grad undefined
            outputs = tuple([g if need else None for g, need in zip(outputs, needs)])
        outputs = _node_post_hooks(node, outputs, grads_in)
    return outputs


def _call_function_anomaly(node, grads: list) -> tuple:
    """``_call_function`` under anomaly detection: NaN results raise, errors name the node."""
    try:
        outputs = _call_function(node, grads)
        if _ANOMALY.check_nan:
            for i, g in enumerate(outputs):
                if g is not None and bool(np.isnan(g._data).any()):
                    raise RuntimeError(
                        f"Function '{node.name()}' returned nan values in its {i}th output."
                    )
        return outputs
    except Exception:
        trace = node.metadata_.get("traceback_") if node.metadata_ else None
        warnings.warn(
            f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
            + ("".join(trace) if trace else "  (not recorded)\n"),
            UserWarning,
            stacklevel=2,
        )
        raise


def _any_defined(grads) -> bool:
    # a function, so that no local of the caller keeps a gradient alive (AccumulateGrad steals
    # a gradient only when nobody else references it)
    for g in grads:
        if g is not None:
            return True
    return False


def _tensor_pre_hooks(node, grads: list) -> list:
    hooks = node._tensor_hooks
    if hooks:
        for nr, hook in tuple(hooks.values()):
            grads[nr] = _run_tensor_hook(hook, grads[nr])
    if type(node) is AccumulateGrad:
        hooks = node.variable._hooks
        if hooks:
            for hook in tuple(hooks.values()):
                grads[0] = _run_tensor_hook(hook, grads[0])
    hooks = node._retain_hooks
    if hooks:
        for nr, hook in tuple(hooks.values()):
            if grads[nr] is not None:
                hook(grads[nr])
    return grads


def _hook_name(hook) -> str:
    name = getattr(hook, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


def _run_tensor_hook(hook, g):
    r = hook(g)
    if r is None:
        return g
    if g is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(r, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
    if r.dtype is not g.dtype:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the type of value (was {g.type()} got "
            f"{r.type()})"
        )
    if r._data.shape != g._data.shape:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    return r


def _check_hook_result(hook, result, n: int) -> list:
    result = list(result)
    if len(result) != n:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
            f"{len(result)}, but expected {n})"
        )
    return result


def _node_pre_hooks(node, grads: list) -> list:
    for hook in tuple(node._pre_hooks.values()):
        r = hook(tuple(grads))
        if r is not None:
            grads = _check_hook_result(hook, r, len(grads))
    return grads


def _node_post_hooks(node, outputs, grads_in: tuple) -> tuple:
    outputs = tuple(outputs)
    for hook in tuple(node._post_hooks.values()):
        r = hook(outputs, grads_in)
        if r is not None:
            outputs = tuple(_check_hook_result(hook, r, len(outputs)))
    return outputs


def _validate(node, i, g, meta):
    """Fix gradient ``g`` to the shape and dtype of input ``i`` (torch's validate_outputs)."""
    if type(g) is not Tensor and not isinstance(g, Tensor):
        raise TypeError(
            f"function {node.name()} returned a gradient of type "
            f"{type(g).__name__} at index {i}, expected a Tensor"
        )
    if meta is None or g.is_sparse:  # sparse gradients are built at their input's size
        return g
    shape, dtype = meta
    if g._data.shape != shape:
        g = sum_to(g, shape, node, i)
    if g.dtype is not dtype:
        if g.dtype.is_complex and not dtype.is_complex:
            g = g.real  # torch keeps the real part of a real input's gradient, silently
        g = g.to(dtype)
    return g


_TENSOR_ABOVE.backward = backward  # Tensor.backward (the core imports nothing above it)
_OPS_ABOVE.grad = grad  # backward formulas differentiating a composite (linalg_extra)

"""``ember.autograd.functional``: Jacobians, Hessians and their products with vectors.

Everything here is reverse mode on top of ``autograd.grad``:

* ``vjp`` is one backward pass seeded with ``v``;
* ``jvp`` uses the double-backward trick: ``u -> u^T J`` is linear in a dummy seed ``u``, so
  differentiating it with respect to ``u`` along ``v`` gives ``J v``;
* ``vhp`` differentiates the gradient once more, ``hvp`` applies the trick to the gradient;
* ``jacobian`` runs one backward pass per output element and stacks the rows; ``hessian`` is
  the Jacobian of the gradient.

ember has no vmap, so ``vectorize=True`` computes the same rows one at a time, and the
``"forward-mode"`` strategies (accepted with ``vectorize=True`` only, as torch) return the
same Jacobian computed in reverse mode, in the containers torch's forward path returns.

Arguments and results travel as tuples internally; each public function remembers whether
the caller passed a bare Tensor and unwraps its results to match.
"""

from __future__ import annotations

from collections.abc import Callable

import ember
from ember._core.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ember._core.tensor import Tensor
from ember.autograd.engine import grad as _grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_OUTPUTS = "outputs of the user-provided function"

# -- packing ----------------------------------------------------------------------------------


def _pack(value, what: str, fn: str) -> tuple[bool, tuple]:
    """(was the value a tuple, the value as a tuple of Tensors) — torch's TypeError otherwise."""
    packed = isinstance(value, tuple)
    items = value if packed else (value,)
    for index, item in enumerate(items):
        if isinstance(item, Tensor):
            continue
        where = f"the value at index {index}" if packed else f"the given {what}"
        raise TypeError(
            f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but "
            f"{where} has type {type(item)}."
        )
    return packed, items


def _unpack(values: tuple, packed: bool):
    return values if packed else values[0]


def _unpack_blocks(blocks: tuple, rows_packed: bool, cols_packed: bool):
    # a tuple (one entry per output) of tuples (one entry per input)
    if not cols_packed:
        blocks = tuple(row[0] for row in blocks)
    return _unpack(blocks, rows_packed)


def _release(tree, keep_graph: bool):
    """Detach every tensor of a nested tuple, unless the caller asked for a graph."""
    if keep_graph:
        return tree
    if isinstance(tree, Tensor):
        return tree.detach()
    return tuple(_release(item, keep_graph) for item in tree)


def _private_copies(tensors: tuple, create_graph: bool, requires_grad: bool) -> tuple:
    # We differentiate with respect to our own aliases, never the caller's tensors. With
    # create_graph a tensor that already requires grad is reached through a view, so the
    # results stay connected to the caller's graph; everything else is cut off.
    copies = []
    for t in tensors:
        if create_graph and t.requires_grad:
            copies.append(t.view_as(t))
        else:
            copies.append(t.detach().requires_grad_(requires_grad))
    return tuple(copies)


# -- checks -----------------------------------------------------------------------------------

_V_FOR_SCALAR_OUTPUT = (
    "The vector v can only be None if the user-provided function returns a single Tensor "
    "with a single element."
)
_V_FOR_SCALAR_INPUT = (
    "The vector v can only be None if the input to the user-provided function is a single "
    "Tensor with a single element."
)


def _prepare_vector(v, like: tuple, like_packed: bool, create_graph: bool, fn: str, missing: str):
    """Check ``v`` against the tensors it multiplies; ``None`` is only allowed for one scalar."""
    if v is None:
        if len(like) == 1 and like[0].nelement() == 1:
            return None
        raise RuntimeError(missing)
    _, v = _pack(v, "v", fn)
    v = _private_copies(v, create_graph, requires_grad=False)
    if len(v) != len(like):
        if like_packed:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for index, (vec, ref) in enumerate(zip(v, like)):
        if vec.size() == ref.size():
            continue
        entry = f"Entry {index} in " if like_packed else ""
        raise RuntimeError(
            f"{entry}v has invalid size: should be {ref.size()} but got {vec.size()}."
        )
    return v


_INDEPENDENT_OF_INPUT = (
    "The output of the user-provided function is independent of input {i}. This is not "
    "allowed in strict mode."
)

# strict mode: what it means for an intermediate result not to require grad, by what it is
_CONSTANT = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
    "outputs must be computed in a differentiable manner from the input when running in "
    "strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
    "user-provided function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
    "function with respect to input {i} is independent of the input. This is not allowed in "
    "strict mode. You should ensure that your function is twice differentiable and that the "
    "jacobian depends on the inputs (this would be violated by a linear function for "
    "example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
    "independent of the input. This is not allowed in strict mode. You should ensure that "
    "your function is thrice differentiable and that the hessian depends on the inputs.",
}


def _strict(tensors, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(_INDEPENDENT_OF_INPUT.format(i=i))
        if not t.requires_grad:
            raise RuntimeError(_CONSTANT[kind].format(i=i))


# strict mode: a product that came back empty (None), by the pass that produced it
_MISSING = {
    "back": _INDEPENDENT_OF_INPUT,
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. "
    "This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
    "{i} in the grad_jacobian. This is not allowed in strict mode as it prevents from using "
    "the double backward trick to replace forward mode AD.",
}


def _detached_result_message(order: str, i: int) -> str:
    return (
        f"The {order} of the user-provided function is independent of input {i}. This is not "
        "allowed in strict mode when create_graph=True."
    )


def _densify(grads, like: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Replace the ``None`` of unused inputs by zeros (strict mode raises instead)."""
    order = "hessian" if stage.startswith("double") else "jacobian"
    dense = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_MISSING[stage].format(i=i))
            g = ember.zeros_like(like[i])
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(_detached_result_message(order, i))
        dense.append(g)
    return tuple(dense)


# -- the one differentiation primitive --------------------------------------------------------


def _backward(outputs, wrt, seeds=None, create_graph=False, retain_graph=None) -> tuple:
    """``autograd.grad`` that treats outputs outside the graph as contributing nothing.

    Returns one entry per tensor of ``wrt``; ``None`` where nothing reached it.
    """
    if seeds is None:
        seeds = [None] * len(outputs)
    live = [(out, seed) for out, seed in zip(outputs, seeds) if out is not None]
    live = [(out, seed) for out, seed in live if out.requires_grad]
    if not live:
        return (None,) * len(wrt)
    return _grad(
        [out for out, _ in live],
        wrt,
        [seed for _, seed in live],
        allow_unused=True,
        create_graph=create_graph,
        retain_graph=retain_graph,
    )


def _evaluate(func: Callable, inputs: tuple, strict: bool, fn: str) -> tuple[bool, tuple]:
    packed, outputs = _pack(func(*inputs), _OUTPUTS, fn)
    _strict(outputs, "outputs", strict)
    return packed, outputs


def _product_grad_mode(create_graph: bool):
    # the final product is differentiable when asked for, or when the caller's mode says so
    return set_grad_enabled(bool(create_graph) or is_grad_enabled())


# -- products ---------------------------------------------------------------------------------


def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Return ``(func(inputs), v^T J)``: the outputs and the vector-Jacobian product."""
    with enable_grad():
        in_packed, inputs = _pack(inputs, "inputs", "vjp")
        inputs = _private_copies(inputs, create_graph, requires_grad=True)
        out_packed, outputs = _evaluate(func, inputs, strict, "vjp")
        v = _prepare_vector(v, outputs, out_packed, create_graph, "vjp", _V_FOR_SCALAR_OUTPUT)
    with _product_grad_mode(create_graph):
        vj = _backward(outputs, inputs, v, create_graph=create_graph)
        vj = _densify(vj, inputs, strict, create_graph, "back")
    return (
        _unpack(_release(outputs, create_graph), out_packed),
        _unpack(_release(vj, create_graph), in_packed),
    )


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Return ``(func(inputs), J v)``: the outputs and the Jacobian-vector product."""
    with enable_grad():
        in_packed, inputs = _pack(inputs, "inputs", "jvp")
        inputs = _private_copies(inputs, create_graph, requires_grad=True)
        v = _prepare_vector(v, inputs, in_packed, create_graph, "jvp", _V_FOR_SCALAR_INPUT)
        out_packed, outputs = _evaluate(func, inputs, strict, "jvp")
        # u^T J as a differentiable function of a zero seed u
        seeds = tuple(ember.zeros_like(out, requires_grad=True) for out in outputs)
        u_j = _backward(outputs, inputs, seeds, create_graph=True)
        _strict(u_j, "grad_inputs", strict)
    with _product_grad_mode(create_graph):
        jv = _backward(u_j, seeds, v, create_graph=create_graph)
        jv = _densify(jv, outputs, strict, create_graph, "back_trick")
    return (
        _unpack(_release(outputs, create_graph), out_packed),
        _unpack(_release(jv, create_graph), out_packed),
    )


def _hessian_problem(func: Callable, inputs, v, create_graph: bool, strict: bool, fn: str):
    """Shared start of vhp/hvp: the inputs, v, the scalar output and its gradient (a graph)."""
    in_packed, inputs = _pack(inputs, "inputs", fn)
    inputs = _private_copies(inputs, create_graph, requires_grad=True)
    v = _prepare_vector(v, inputs, in_packed, create_graph, fn, _V_FOR_SCALAR_INPUT)
    out_packed, outputs = _evaluate(func, inputs, strict, fn)
    if out_packed or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn} should contain a single element"
        )
    gradient = _backward(outputs, inputs, create_graph=True)
    _strict(gradient, "jacobian", strict)
    return in_packed, inputs, v, outputs[0], gradient


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Return ``(func(inputs), v^T H)`` for a scalar function ``func``."""
    with enable_grad():
        in_packed, inputs, v, output, gradient = _hessian_problem(
            func, inputs, v, create_graph, strict, "vhp"
        )
    with _product_grad_mode(create_graph):
        vh = _backward(gradient, inputs, v, create_graph=create_graph)
        vh = _densify(vh, inputs, strict, create_graph, "double_back")
    return _release(output, create_graph), _unpack(_release(vh, create_graph), in_packed)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Return ``(func(inputs), H v)`` for a scalar function ``func``."""
    with enable_grad():
        in_packed, inputs, v, output, gradient = _hessian_problem(
            func, inputs, v, create_graph, strict, "hvp"
        )
        # H is symmetric, so H v = (v^T H)^T: differentiate u^T H along v (u a zero seed)
        seeds = tuple(ember.zeros_like(inp, requires_grad=True) for inp in inputs)
        u_h = _backward(gradient, inputs, seeds, create_graph=True)
        _strict(gradient, "hessian", strict)
    with _product_grad_mode(create_graph):
        hv = _backward(u_h, seeds, v, create_graph=create_graph)
        hv = _densify(hv, inputs, strict, create_graph, "double_back_trick")
    return _release(output, create_graph), _unpack(_release(hv, create_graph), in_packed)


# -- full matrices ----------------------------------------------------------------------------


_STRATEGIES = frozenset({"forward-mode", "reverse-mode"})


def _check_strategy(strategy: str, message: str) -> None:
    if strategy not in _STRATEGIES:
        raise AssertionError(message)


def _forward_mode_jacobian(func, inputs, create_graph, strict, vectorize):
    # torch's checks, in torch's order
    if create_graph:
        raise NotImplementedError(
            "torch.autograd.functional.jacobian: `create_graph=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either '
            'set `create_graph=False` or `strategy="reverse-mode"`.'
        )
    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either '
            'set `strict=False` or `strategy="reverse-mode"`.'
        )
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
            "only implemented for `vectorize=True`."
        )
    # Forward mode never detaches: its Jacobian is a differentiable function of the caller's
    # tensors that require grad. We compute it in reverse mode with a graph, then keep the
    # graph of a block only where it reaches one of those tensors.
    keep_graph = is_grad_enabled()
    with enable_grad():
        in_packed, tensors = _pack(inputs, "inputs", "jacobian")
        copies = _private_copies(tensors, create_graph=True, requires_grad=True)
        callers = [c for c, t in zip(copies, tensors) if t.requires_grad]
        # (torch's forward path names neither the argument's function nor ours here)
        out_packed, outputs = _pack(func(*copies), "outputs", "None")
        blocks = tuple(
            tuple(
                _graph_if_reaching(block, callers, keep_graph)
                for block in _jacobian_of(out, i, copies, False, True)
            )
            for i, out in enumerate(outputs)
        )
    if not in_packed:
        return _unpack_blocks(blocks, out_packed, False)
    # torch's forward path hands back lists where the inputs were a tuple
    rows = [list(row) for row in blocks]
    return rows if out_packed else rows[0]


def _graph_if_reaching(block, sources: list, keep_graph: bool):
    if not (keep_graph and sources and block.requires_grad):
        return block.detach()
    reached = _grad(
        [block], sources, [ember.ones_like(block)], allow_unused=True, retain_graph=True
    )
    return block if any(g is not None for g in reached) else block.detach()


def _jacobian_of(out, i, inputs, strict, create_graph) -> tuple:
    """d out / d inputs[k] for every k, each of shape ``out.shape + inputs[k].shape``."""
    columns = [[] for _ in inputs]  # per input: one gradient per element of ``out``
    elements = out.reshape(-1)
    for j in range(out.nelement()):
        grads = _backward((elements[j],), inputs, retain_graph=True, create_graph=create_graph)
        for k, g in enumerate(grads):
            if g is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of input "
                        f"{k}. This is not allowed in strict mode."
                    )
                g = ember.zeros_like(inputs[k])
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(_detached_result_message("jacobian", i))
            columns[k].append(g)
    return tuple(
        ember.stack(rows, dim=0).view(out.size() + inp.size()) for rows, inp in zip(columns, inputs)
    )


def jacobian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """Return the Jacobian of ``func`` at ``inputs``: per (output, input) pair a tensor of
    shape ``output.shape + input.shape`` (nested tuples for tuple inputs/outputs)."""
    _check_strategy(
        strategy,
        'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
        'function has more outputs than inputs, "forward-mode" tends to be more '
        'performant. Otherwise, prefer to use "reverse-mode".',
    )
    if strategy == "forward-mode":
        return _forward_mode_jacobian(func, inputs, create_graph, strict, vectorize)
    with enable_grad():
        in_packed, inputs = _pack(inputs, "inputs", "jacobian")
        inputs = _private_copies(inputs, create_graph, requires_grad=True)
        out_packed, outputs = _evaluate(func, inputs, strict, "jacobian")
        if vectorize and strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                "not supported together. Please either set `strict=False` or "
                "`vectorize=False`."
            )
        blocks = tuple(
            _jacobian_of(out, i, inputs, strict, create_graph) for i, out in enumerate(outputs)
        )
        return _unpack_blocks(_release(blocks, create_graph), out_packed, in_packed)


def hessian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """Return the Hessian of the scalar function ``func`` at ``inputs`` (for tuple inputs, a
    tuple of tuples: block ``[i][j]`` has shape ``inputs[i].shape + inputs[j].shape``)."""
    in_packed, inputs = _pack(inputs, "inputs", "hessian")
    _check_strategy(
        outer_jacobian_strategy,
        'Expected strategy to be either "forward-mode" or "reverse-mode".',
    )

    def scalar(*args):
        value = func(*args)
        packed, values = _pack(value, _OUTPUTS, "hessian")
        _strict(values, "outputs", strict)
        if packed or not isinstance(value, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if value.nelement() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element"
            )
        return value.squeeze()

    def gradient(*args):
        # a tuple per input, always: the inner Jacobian sees its inputs as a tuple
        g = jacobian(scalar, args, create_graph=True)
        _strict(g, "jacobian", strict)
        return g

    blocks = jacobian(
        gradient,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _unpack_blocks(blocks, in_packed, in_packed)

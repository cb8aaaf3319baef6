"""``torch.func`` transforms on ember's reverse-mode autograd: ``vmap``, ``grad``,
``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``stack_module_state``.

``vmap`` runs the function once per slice of the mapped dimension and stacks the results (no
batching rules: same values, a Python loop over the batch). ``grad`` differentiates with
``autograd.grad`` on a fresh alias of each input, keeping the graph when an input already
requires grad, so the transforms nest (``vmap(grad(f))``, ``grad(grad(f))``, ``jacfwd(jacrev(f))``).
``jvp`` and ``jacfwd`` are computed in reverse mode (the double-backward trick and rows of the
Jacobian), giving forward mode's values.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ember
from ember._core.grad_mode import enable_grad
from ember._core.tensor import Tensor
from ember.autograd.engine import grad as _autograd_grad

# ------------------------------------------------------------------------------ pytrees


def _flatten(tree) -> tuple[list, Any]:
    """Return the leaves of ``tree`` (tuples, lists and dicts are containers) and its spec."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for x in tree:
            lv, sp = _flatten(x)
            leaves += lv
            specs.append((len(lv), sp))
        kind = type(tree) if not hasattr(tree, "_fields") else ("namedtuple", type(tree))
        return leaves, (kind, specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for k, x in tree.items():
            lv, sp = _flatten(x)
            leaves += lv
            specs.append((k, len(lv), sp))
        return leaves, (dict, specs)
    return [tree], None


def _unflatten(leaves: list, spec) -> Any:
    if spec is None:
        return leaves[0]
    kind, specs = spec
    if kind is dict:
        out, i = {}, 0
        for k, n, sp in specs:
            out[k] = _unflatten(leaves[i : i + n], sp)
            i += n
        return out
    items, i = [], 0
    for n, sp in specs:
        items.append(_unflatten(leaves[i : i + n], sp))
        i += n
    if isinstance(kind, tuple):  # a namedtuple
        return kind[1](*items)
    return kind(items)


def _broadcast_dims(dims, tree, what: str) -> list:
    """Return one in/out dim per leaf of ``tree``, ``dims`` being an int/None or a prefix tree."""
    leaves, spec = _flatten(tree)
    if dims is None or isinstance(dims, int):
        return [dims] * len(leaves)
    if spec is None or not isinstance(dims, (tuple, list, dict)):
        raise ValueError(f"vmap: {what} is not compatible with the structure of the inputs")
    kind, specs = spec
    out = []
    if kind is dict:
        for k, _, _sp in specs:
            out += _broadcast_dims(dims[k], tree[k], what)
        return out
    if len(dims) != len(specs):
        raise ValueError(
            f"vmap: {what} has {len(dims)} entries but the value it describes has {len(specs)}"
        )
    for d, x in zip(dims, tree):
        out += _broadcast_dims(d, x, what)
    return out


# ------------------------------------------------------------------------------ vmap


def vmap(
    func: Callable,
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """Return ``func`` mapped over dimension ``in_dims`` of its inputs, the results stacked
    along ``out_dims``."""
    name = getattr(func, "__name__", repr(func))
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}"
        )

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        dims = _broadcast_dims(in_dims, args, "in_dims")
        leaves, spec = _flatten(args)
        sizes = []
        for leaf, d in zip(leaves, dims):
            if d is None:
                continue
            if not isinstance(leaf, Tensor):
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an "
                    f"input but the input is of type {type(leaf)}. We cannot vmap over non-"
                    "Tensor arguments, please use None as the respective in_dim"
                )
            nd = leaf.dim()
            if not -nd <= d < nd:
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some "
                    f"input, but that input is a Tensor of dimensionality {nd} so expected "
                    f"in_dim to satisfy -{nd} <= in_dim < {nd}."
                )
            sizes.append(leaf.shape[d])
        if not sizes:
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one input must be a "
                "Tensor mapped over a dimension (in_dims all None)"
            )
        if any(s != sizes[0] for s in sizes):
            raise ValueError(
                "vmap: Expected all tensors to have the same size in the mapped dimension, got "
                f"sizes {sizes} for the mapped dimension"
            )
        results = []
        # the samples run one after another, so 'different' is the loop as it is; 'same'
        # replays the generator's state for every sample; 'error' (the default) fails when a
        # sample draws from it, as torch's random ops do under vmap
        gen = ember.random.default_generator
        state = gen.get_state() if randomness != "different" else None
        for i in range(sizes[0]):
            if randomness == "same" and i:
                gen.set_state(state)
            sliced = [x if d is None else x.select(d, i) for x, d in zip(leaves, dims)]
            results.append(func(*_unflatten(sliced, spec), **kwargs))
            if randomness == "error" and i == 0 and not gen.get_state().equal(state):
                gen.set_state(state)
                raise RuntimeError(
                    "vmap: called random operation while in randomness error mode. Please "
                    "either use the 'same' or 'different' randomness flags on vmap or perform "
                    "the randomness operation out of vmap"
                )
        first_leaves, out_spec = _flatten(results[0])
        odims = _broadcast_dims(out_dims, results[0], "out_dims")
        columns = [_flatten(r)[0] for r in results]
        stacked = []
        for j, (leaf, od) in enumerate(zip(first_leaves, odims)):
            if od is None:
                stacked.append(leaf)
                continue
            if not isinstance(leaf, Tensor):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                    f"{type(leaf)}. Did you mean to set out_dims= to None for output?"
                )
            stacked.append(ember.stack([c[j] for c in columns], dim=od))
        return _unflatten(stacked, out_spec)

    return wrapped


# ------------------------------------------------------------------------------ grad


def _diff_inputs(args: tuple, argnums) -> tuple[list, list, Any, bool]:
    """Return (args with fresh differentiable aliases, their leaves, spec, keep_graph)."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    args = list(args)
    picked = tuple(args[n] for n in nums)
    leaves, spec = _flatten(picked)
    keep = any(isinstance(x, Tensor) and x.requires_grad for x in _flatten(tuple(args))[0])
    fresh = []
    for x in leaves:
        if not isinstance(x, Tensor):
            raise RuntimeError(
                f"grad(f)(*args): Expected arguments to be Tensors, got {type(x).__name__}"
            )
        fresh.append(x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True))
    new = _unflatten(fresh, spec)
    for n, v in zip(nums, new):
        args[n] = v
    return args, fresh, spec, keep


def _call_diff(func, args: tuple, kwargs: dict, argnums, has_aux: bool):
    """Call ``func`` with ``args[argnums]`` replaced by fresh differentiable aliases (under
    grad mode); return (those leaves, their spec, keep_graph, output, aux or None)."""
    args, fresh, spec, keep = _diff_inputs(args, argnums)
    out = func(*args, **kwargs)
    aux = None
    if has_aux:
        out, aux = out
    return fresh, spec, keep, out, aux


def _maybe_detach(tree, keep: bool):
    if keep:
        return tree
    leaves, spec = _flatten(tree)
    return _unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """Return a function computing ``(gradient of func w.r.t. args[argnums], func(...))``."""

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        with enable_grad():
            args, fresh, spec, keep = _diff_inputs(args, argnums)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(
                        "grad_and_value(f)(*args): output of function f should be a tuple: "
                        "(output, aux) if has_aux is True"
                    )
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                    f"{type(out)}"
                )
            if out.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                    f"got tensor with {out.dim()} dims. Maybe you wanted to use the vjp or "
                    "jacrev APIs instead?"
                )
            if out.requires_grad:
                grads = _autograd_grad(out, fresh, create_graph=keep, allow_unused=True)
            else:
                grads = [None] * len(fresh)
            grads = [ember.zeros_like(x) if g is None else g for g, x in zip(grads, fresh)]
        g = _unflatten(list(grads), spec)
        g = g[0] if isinstance(argnums, int) else g
        value = _maybe_detach(out, keep)
        if has_aux:
            return _maybe_detach(g, keep), (value, _maybe_detach(aux, keep))
        return _maybe_detach(g, keep), value

    return wrapped


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """Return a function computing the gradient of ``func`` (a scalar) w.r.t. ``args[argnums]``
    (and ``func``'s auxiliary output with ``has_aux``)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapped


# ------------------------------------------------------------------------------ vjp / jvp


def vjp(func: Callable, *primals, has_aux: bool = False):
    """Return ``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives the vector-Jacobian
    products, one per primal (and the aux output with ``has_aux``)."""
    with enable_grad():
        argnums = tuple(range(len(primals)))
        fresh, spec, keep, out, aux = _call_diff(func, primals, {}, argnums, has_aux)
    out_leaves, out_spec = _flatten(out)

    def vjp_fn(cotangents, *, retain_graph: bool = True, create_graph: bool | None = None):
        ct, ct_spec = _flatten(cotangents)
        if ct_spec != out_spec and len(ct) != len(out_leaves):
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as "
                "pytree structure of outputs to the function"
            )
        pairs = [(o, c) for o, c in zip(out_leaves, ct) if o.requires_grad]
        cg = keep if create_graph is None else create_graph
        if pairs:
            grads = _autograd_grad(
                [o for o, _ in pairs],
                fresh,
                [c for _, c in pairs],
                retain_graph=retain_graph,
                create_graph=cg,
                allow_unused=True,
            )
        else:
            grads = [None] * len(fresh)
        grads = [ember.zeros_like(x) if g is None else g for g, x in zip(grads, fresh)]
        return _maybe_detach(tuple(_unflatten(list(grads), spec)), cg)

    res = (_maybe_detach(out, keep), vjp_fn)
    return res + (_maybe_detach(aux, keep),) if has_aux else res


def jvp(
    func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False
):
    """Return ``(func(*primals), J @ tangents)`` (computed with two reverse passes)."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    res = vjp(func, *primals, has_aux=has_aux)
    out, vjp_fn = res[0], res[1]
    out_leaves, out_spec = _flatten(out)
    with enable_grad():
        # u -> J^T u is linear; differentiating <J^T u, t> with respect to u gives J t
        us = [ember.zeros_like(o).requires_grad_(True) for o in out_leaves]
        back = vjp_fn(_unflatten(us, out_spec), create_graph=True)
        total = sum((b * t).sum() for b, t in zip(_flatten(back)[0], _flatten(tangents)[0]))
        if isinstance(total, Tensor) and total.requires_grad:
            jt = _autograd_grad(total, us, allow_unused=True)
        else:
            jt = [None] * len(us)
    jt = [ember.zeros_like(u) if g is None else g.detach() for g, u in zip(jt, us)]
    result = (out, _unflatten(jt, out_spec))
    return result + (res[2],) if has_aux else result


def linearize(func: Callable, *primals: Any) -> tuple[Any, Callable]:
    """Return ``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` gives the Jacobian-vector
    product of ``func`` at ``primals`` (the graph is recorded once and reused)."""
    out, vjp_fn = vjp(func, *primals)
    out_leaves, out_spec = _flatten(out)
    with enable_grad():
        us = [ember.zeros_like(o).requires_grad_(True) for o in out_leaves]
        back = _flatten(vjp_fn(_unflatten(us, out_spec), create_graph=True))[0]

    def jvp_fn(*tangents: Any) -> Any:
        flat_t = _flatten(tangents)[0]
        if len(flat_t) != len(primals):
            raise RuntimeError(
                f"Expected the tangents to have {len(primals)} elements (one per primal), "
                f"got {len(flat_t)}"
            )
        for i, (t, p) in enumerate(zip(flat_t, primals)):
            if tuple(t.shape) != tuple(p.shape):
                raise RuntimeError(
                    f"tangent:{i} with shape {t.shape} in flattened pytree doesn't match the "
                    f"shape {p.shape} of the corresponding primal."
                )
        with enable_grad():
            total = sum((b * t).sum() for b, t in zip(back, flat_t) if b is not None)
            if isinstance(total, Tensor) and total.requires_grad:
                jt = _autograd_grad(total, us, allow_unused=True, retain_graph=True)
            else:
                jt = [None] * len(us)
        jt = [ember.zeros_like(u) if g is None else g.detach() for g, u in zip(jt, us)]
        return _unflatten(jt, out_spec)

    return _detach_tree(out), jvp_fn


def _detach_tree(tree: Any) -> Any:
    leaves, spec = _flatten(tree)
    return _unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


# ------------------------------------------------------------------------------ Jacobians


def jacrev(
    func: Callable,
    argnums: Any = 0,
    *,
    has_aux: bool = False,
    chunk_size=None,
    _preallocate_and_copy: bool = False,
) -> Callable:
    """Return a function computing the Jacobian of ``func`` w.r.t. ``args[argnums]``: for each
    output, a tensor of shape ``output.shape + input.shape``."""

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        with enable_grad():
            fresh, spec, keep, out, aux = _call_diff(func, args, kwargs, argnums, has_aux)
            out_leaves, out_spec = _flatten(out)
            per_output = []
            for o in out_leaves:
                rows = [[] for _ in fresh]
                flat = o.reshape(-1)
                for k in range(flat.numel()):
                    if flat.requires_grad:
                        gs = _autograd_grad(
                            flat[k], fresh, retain_graph=True, create_graph=keep, allow_unused=True
                        )
                    else:
                        gs = [None] * len(fresh)
                    for r, g, x in zip(rows, gs, fresh):
                        r.append(ember.zeros_like(x) if g is None else g)
                jac = []
                for r, x in zip(rows, fresh):
                    j = ember.stack(r) if r else ember.zeros((0,) + tuple(x.shape), dtype=x.dtype)
                    jac.append(j.reshape(tuple(o.shape) + tuple(x.shape)))
                jac = _unflatten(jac, spec)
                per_output.append(jac[0] if isinstance(argnums, int) else jac)
        result = _maybe_detach(_unflatten(per_output, out_spec), keep)
        return (result, _maybe_detach(aux, keep)) if has_aux else result

    return wrapped


def jacfwd(
    func: Callable, argnums: Any = 0, has_aux: bool = False, *, randomness: str = "error"
) -> Callable:
    """Return a function computing the Jacobian of ``func`` w.r.t. ``args[argnums]``, column by
    column as forward mode does (each column is a Jacobian-vector product, taken here as the
    derivative of the vector-Jacobian product ``J^T u`` with respect to ``u``)."""

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        with enable_grad():
            fresh, spec, keep, out, aux = _call_diff(func, args, kwargs, argnums, has_aux)
            out_leaves, out_spec = _flatten(out)
            us = [ember.zeros_like(o).requires_grad_(True) for o in out_leaves]
            live = [(o, u) for o, u in zip(out_leaves, us) if o.requires_grad]
            if live:
                back = _autograd_grad(
                    [o for o, _ in live],
                    fresh,
                    [u for _, u in live],
                    create_graph=True,
                    allow_unused=True,
                )
            else:
                back = [None] * len(fresh)
            # jac[i][j]: d output i / d input j
            jac = [[None] * len(fresh) for _ in out_leaves]
            for j, (x, b) in enumerate(zip(fresh, back)):
                cols = [[] for _ in out_leaves]
                flat = None if b is None or not b.requires_grad else b.reshape(-1)
                for k in range(x.numel()):
                    if flat is None:
                        gs = [None] * len(us)
                    else:
                        gs = _autograd_grad(
                            flat[k], us, retain_graph=True, create_graph=keep, allow_unused=True
                        )
                    for c, g, u in zip(cols, gs, us):
                        c.append(ember.zeros_like(u) if g is None else g)
                for i, (c, o) in enumerate(zip(cols, out_leaves)):
                    shape = tuple(o.shape) + tuple(x.shape)
                    if c:
                        jac[i][j] = ember.stack(c, dim=-1).reshape(shape)
                    else:
                        jac[i][j] = ember.zeros(shape, dtype=o.dtype)
            per_output = []
            for row in jac:
                r = _unflatten(row, spec)
                per_output.append(r[0] if isinstance(argnums, int) else r)
        result = _maybe_detach(_unflatten(per_output, out_spec), keep)
        return (result, _maybe_detach(aux, keep)) if has_aux else result

    return wrapped


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """Return a function computing the Hessian of ``func`` w.r.t. ``args[argnums]``."""
    return jacfwd(jacrev(func, argnums), argnums)


# ------------------------------------------------------------------------------ ensembles


def stack_module_state(models) -> tuple[dict, dict]:
    """Return the parameters (as new leaves requiring grad) and buffers of ``models`` stacked
    along a new leading dimension, keyed by name: the inputs of ``vmap`` over an ensemble."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({bool(m.training) for m in models}) > 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    if len({type(m) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        names = [k for k, _ in named(models[0])]
        return {k: ember.stack([dict(named(m))[k].detach() for m in models]) for k in names}

    params = {k: v.requires_grad_(True) for k, v in stacked(lambda m: m.named_parameters()).items()}
    buffers = stacked(lambda m: m.named_buffers())
    return params, buffers

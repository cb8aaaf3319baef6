"""Custom autograd Functions (``torch.autograd.Function``).

A subclass declares ``forward`` and ``backward`` as static methods; ``apply`` runs ``forward``
under ``no_grad`` and, when an input requires grad, makes the outputs children of one graph
node, an instance of ``<Class>Backward`` that is also the ``ctx`` both methods receive::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

The newer style splits the first into ``forward(*args)`` and
``setup_context(ctx, inputs, output)``. The checks (returned gradient count, non-tensor
inputs, saved-tensor versions, dirty and non-differentiable outputs) follow torch's
``custom_function.cpp`` and ``python_function.cpp``, with torch's messages.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import sys
import traceback
import warnings
from typing import Any

import numpy as np

from ember._core import profiling as _profiling
from ember._core.anomaly import FLAGS as _ANOMALY
from ember._core.grad_mode import STATE
from ember._core.node import FREED_MSG, Node, SavedTensor, edge_of, move_retain_hook
from ember._core.tensor import Tensor, _wrap

__all__ = [
    "FunctionCtx",
    "BackwardCFunction",
    "FunctionMeta",
    "Function",
    "once_differentiable",
    "InplaceFunction",
]

_function_ids = itertools.count()


class FunctionCtx:
    """What ``forward``/``setup_context`` use to pass state to ``backward`` (the ``ctx``)."""

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Save tensors (or None) for ``backward``, where ``ctx.saved_tensors`` returns them,
        checked against in-place changes."""
        self.to_save = tensors

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """Save tensors for ``jvp``, where ``ctx.saved_tensors`` returns them (used by a
        Function that defines ``jvp`` and no ``backward``, under forward AD)."""
        for t in tensors:
            if not (isinstance(t, Tensor) or t is None):
                raise AssertionError(
                    "save_for_forward expects all arguments to be tensors; you should "
                    "save non-tensors as attributes on ctx."
                )
        self.saved_for_forward = tensors

    def mark_dirty(self, *args: Tensor) -> None:
        """Mark input tensors as modified in place by ``forward`` (they must be returned)."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args: Tensor) -> None:
        """Mark outputs as not differentiable: they do not require grad, and ``backward``
        receives zeros for them."""
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        """Set whether undefined output gradients reach ``backward`` as zeros (default) or
        as None."""
        self.materialize_grads = value

    def mark_shared_storage(self, *pairs) -> None:
        warnings.warn(
            "`mark_shared_storage` is deprecated. Tensors with shared storages are "
            "automatically tracked. Note that calls to `set_()` are not tracked",
            FutureWarning,
            stacklevel=2,
        )


class BackwardCFunction(Node, FunctionCtx):
    """The graph node of one ``Function.apply`` call; also its ``ctx``.

    No ``__slots__``: ``ctx`` takes arbitrary attributes.
    """

    _forward_cls: type
    _apply_undefined = True
    materialize_grads = True
    to_save: tuple = ()
    dirty_tensors: tuple = ()
    non_differentiable: tuple = ()

    def __init__(self):
        super().__init__()
        self.needs_input_grad = ()
        self._saved = None
        self._had_saved = False
        self._is_tensor_input = ()
        self._output_meta = ()

    def __repr__(self) -> str:
        # torch's node classes of custom Functions live in torch.autograd.function
        return f"<torch.autograd.function.{type(self).__name__} object at {id(self):#x}>"

    # ---------------------------------------------------------------------- saved tensors
    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``, checked against in-place changes."""
        saved = self._saved
        if saved is None:
            if self._had_saved:
                raise RuntimeError(FREED_MSG)
            return ()
        return tuple(s.unpack(self) if s is not None else None for s in saved)

    @property
    def saved_variables(self) -> tuple:
        warnings.warn(
            "'saved_variables' is deprecated; use 'saved_tensors'", FutureWarning, stacklevel=2
        )
        return self.saved_tensors

    def release(self) -> None:
        self._saved = None

    # ---------------------------------------------------------------------- backward
    def _get_user_fn(self):
        cls = self._forward_cls
        # the one of the two the class overrides (neither: the base backward, which raises)
        own = [fn for fn in (cls.backward, cls.vjp) if fn not in (Function.backward, Function.vjp)]
        if len(own) > 1:
            raise RuntimeError(
                "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
                "You should only implement one of them."
            )
        return own[0] if own else cls.backward

    def apply(self, grads) -> tuple:
        """Run the user's ``backward`` on the output gradients (materialized as zeros unless
        ``set_materialize_grads(False)``); return one gradient per tensor input."""
        if self._saved is None and self._had_saved:
            raise RuntimeError(FREED_MSG)
        grads = list(grads)
        if self.materialize_grads:
            for i, g in enumerate(grads):
                meta = self._output_meta[i] if i < len(self._output_meta) else None
                if g is None and meta is not None:
                    grads[i] = _wrap(np.zeros(meta[0], dtype=meta[1]))
        result = self._get_user_fn()(self, *grads)
        return self._check_result(result)

    def _check_result(self, result) -> tuple:
        # torch's PyNode::apply: trailing Nones may be dropped, then one value per forward input
        name = self.name()
        if not isinstance(result, tuple):
            result = (result,)
        n_inputs = len(self._is_tensor_input)
        if len(result) > n_inputs and all(r is None for r in result[n_inputs:]):
            result = result[:n_inputs]
        if len(result) != n_inputs:
            raise RuntimeError(
                f"function {name} returned an incorrect number of gradients (expected "
                f"{n_inputs}, got {len(result)})"
            )
        grads = []
        for i, (g, is_tensor) in enumerate(zip(result, self._is_tensor_input)):
            if not is_tensor:
                if g is not None:
                    raise RuntimeError(
                        f"function {name} returned a gradient different than None at position "
                        f"{i + 1}, but the corresponding forward input was not a Variable"
                    )
                continue
            if g is not None and not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            grads.append(g)
        return tuple(grads)


class FunctionMeta(type):
    """Gives every Function subclass its node class, ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        backward_cls._autograd_function_id = next(_function_ids)
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class of custom differentiable operations: subclass it with static ``forward``
    and ``backward`` (and optionally ``setup_context``), call ``apply``."""

    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are "
            "all static, so you should invoke them on the class itself. Instantiating an "
            "autograd function will raise an error in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """Compute the outputs: ``forward(ctx, *args)``, or ``forward(*args)`` together with
        ``setup_context``. Runs under ``no_grad``."""
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        """Fill ``ctx`` from the inputs and output (with a ``forward`` that takes no ctx)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """Return one gradient per ``forward`` input (None for non-tensors) given one gradient
        per output."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """Return the forward-mode derivatives of the outputs (override to define them)."""
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` and record one node for the call when an input requires grad."""
        has_setup_context = cls.setup_context is not Function.setup_context
        args, kwargs = _bind(cls.forward, args, kwargs, skip_ctx=not has_setup_context)
        ctx = cls._backward_cls()
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        needs = tuple(t and a.requires_grad for a, t in zip(args, is_tensor))
        ctx._is_tensor_input = is_tensor
        ctx.needs_input_grad = needs
        executable = STATE.grad_enabled and any(needs)
        if executable:
            tensors = [a for a, t in zip(args, is_tensor) if t]
            ctx.next_functions = tuple(edge_of(a) for a in tensors)
            ctx._input_meta = tuple((a._data.shape, a.dtype) for a in tensors)
            if _ANOMALY.enabled:
                ctx.metadata["traceback_"] = traceback.format_stack(sys._getframe(1))
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        # the profiler's range around the forward, named after the class as torch's (the
        # recorder sits above autograd: reached through the core's slot)
        rng = _profiling.begin_range(cls.__name__) if _profiling.ACTIVE else None
        try:
            if has_setup_context:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            STATE.grad_enabled = prev
            if rng is not None:
                _profiling.end_range(rng)
        result = _wrap_outputs(ctx, args, outputs, executable)
        fad = sys.modules.get("ember.autograd.forward_ad")
        if fad is not None and fad._current_level >= 0 and _jvp_only(cls):
            result = fad._custom_function_jvp(cls, ctx, args, result)
        return result


def _jvp_only(cls) -> bool:
    # a Function that defines its jvp but no backward: forward AD must use that jvp (the
    # double-backward trick, used otherwise, needs the backward)
    return (
        cls.jvp is not Function.jvp
        and cls.backward is Function.backward
        and cls.vjp is Function.vjp
    )


def _bind(fn, args, kwargs, skip_ctx):
    """Move keyword arguments that name positional parameters of ``forward`` into ``args``
    (torch counts them as inputs); keyword-only ones stay keywords. With ``setup_context``
    (``skip_ctx`` False), defaults are filled in too, so ``inputs`` holds every argument."""
    if skip_ctx and not kwargs:
        return args, kwargs
    sig = inspect.signature(fn)
    if skip_ctx:
        params = list(sig.parameters.values())[1:]
        sig = sig.replace(parameters=params)
    bound = sig.bind(*args, **kwargs)
    if not skip_ctx:
        bound.apply_defaults()
    return bound.args, bound.kwargs


def _wrap_outputs(ctx, inputs, outputs, executable):
    """Attach the outputs to ``ctx`` (torch's ``_wrap_outputs``); save tensors; return them."""
    is_tuple = isinstance(outputs, tuple)
    raw = outputs if is_tuple else (outputs,)
    input_ids = {id(a) for a in inputs if isinstance(a, Tensor)}
    dirty = {id(t) for t in ctx.dirty_tensors}
    non_diff = {id(t) for t in ctx.non_differentiable}
    output_ids = {id(o) for o in raw if isinstance(o, Tensor)}
    if dirty - output_ids:
        raise RuntimeError(
            "Some elements marked as dirty during the forward method were not returned as "
            "output. The inputs that are modified inplace must all be outputs of the Function."
        )
    for t in ctx.dirty_tensors:
        t._vc[0] += 1  # torch bumps the version of every tensor marked dirty
    n_tensor_outputs = len(output_ids)
    results = []
    meta = []
    for i, out in enumerate(raw):
        if not isinstance(out, Tensor):
            results.append(out)
            meta.append(None)
            continue
        meta.append((out._data.shape, out._data.dtype))
        is_input = id(out) in input_ids
        is_modified = id(out) in dirty
        differentiable = (
            executable
            and id(out) not in non_diff
            and (out.dtype.is_floating_point or out.dtype.is_complex)
        )
        results.append(
            _set_history(ctx, out, i, is_input, is_modified, differentiable, n_tensor_outputs)
        )
    ctx._n_outputs = len(raw)
    ctx._output_meta = tuple(meta)
    if executable:
        _save_variables(ctx, results)
    else:
        ctx.to_save = ()
    return tuple(results) if is_tuple else results[0]


def _set_history(ctx, var, nr, is_input, is_modified, differentiable, n_outputs):
    from ember._ops.registry import _rebase_history

    if not differentiable:
        if not var._requires_grad:
            if is_input and not is_modified:
                var = _alias(var)
            return var
        if is_input or var._base is None:
            # torch detaches in place a fresh output, returns a detached alias of an input
            return var.detach() if is_input else var.detach_()
        return var
    if is_modified:
        if var.grad_fn is None and var._requires_grad:
            raise RuntimeError(
                "a leaf Variable that requires grad has been used in an in-place operation."
            )
        if not is_input:
            warnings.warn(
                "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors "
                "that have been mutated should be passed to ctx.mark_dirty().",
                UserWarning,
                stacklevel=4,
            )
        if var._base is not None and n_outputs > 1:
            raise RuntimeError(
                "If your Function modifies inplace an input that is a view of another Tensor, "
                "your Function cannot return more than one Tensor. This is not supported by the "
                "current autograd engine. You should either make sure the input is not a view "
                "(using .clone() for example) or make your Function only return one Tensor "
                "(potentially splitting it into two Functions: one doing the inplace that "
                "returns a single Tensor and a second one that does the other operations). You "
                "can ask on the forum https://discuss.pytorch.org/ if you need help to do this "
                "change."
            )
        var._grad = None
        if var._base is not None:
            _rebase_history(var, ctx)  # the base's history becomes CopySlices
        else:
            old = (var.grad_fn, var._output_nr)
            var.grad_fn = ctx
            var._output_nr = nr
            var._requires_grad = True
            move_retain_hook(var, *old)
        return var
    if is_input:
        var = _alias(var)
    var.grad_fn = ctx
    var._output_nr = nr
    var._requires_grad = True
    if var._base is not None:
        # torch forbids modifying such a view in place (CreationMeta::IN_CUSTOM_FUNCTION)
        var._view_in_custom_function = True
    return var


def _alias(t: Tensor) -> Tensor:
    """A view of all of ``t`` made without recording: an input returned as an output gets its
    own identity, as torch's ``_view_as_self_with_no_grad``."""
    prev = STATE.grad_enabled
    STATE.grad_enabled = False
    try:
        return t.view_as(t)
    finally:
        STATE.grad_enabled = prev


def _save_variables(ctx, outputs) -> None:
    to_save = ctx.to_save
    ctx.to_save = ()
    if not to_save:
        return
    out_nr = {id(o): i for i, o in enumerate(outputs) if isinstance(o, Tensor)}
    saved = []
    for i, t in enumerate(to_save):
        if t is None:
            saved.append(None)
        elif not isinstance(t, Tensor):
            raise TypeError(
                f"save_for_backward can only save variables, but argument {i} is of type "
                f"{type(t).__name__}"
            )
        elif id(t) in out_nr and t.grad_fn is ctx:
            saved.append(SavedTensor(t, is_output=True, output_nr=out_nr[id(t)]))
        else:
            saved.append(SavedTensor(t))
    ctx._saved = tuple(saved)
    ctx._had_saved = True


# ---------------------------------------------------------------------------------------------
# once_differentiable


class DelayedError(Node):
    """A node that raises when the graph is differentiated through it (torch's
    ``DelayedError``, shown as ``Error``)."""

    __slots__ = ("msg",)

    def __init__(self, msg: str, inputs):
        super().__init__()
        self.msg = msg
        self.next_functions = tuple(edge_of(t) for t in inputs)
        self._input_meta = tuple((t._data.shape, t.dtype) for t in inputs)

    def apply(self, grads):
        raise RuntimeError(self.msg)


DelayedError.__name__ = "Error"


def once_differentiable(fn):
    """Decorate a ``backward`` that cannot itself be differentiated: it runs under
    ``no_grad``, and differentiating its results again raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        try:
            outputs = fn(ctx, *args, **kwargs)
        finally:
            STATE.grad_enabled = prev
        if not STATE.grad_enabled:
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        fake = []
        for v in outs:
            if v is not None:
                v = v.detach()
                v._requires_grad = True
            fake.append(v)
        node = DelayedError(
            "trying to differentiate twice a function that was marked with @once_differentiable",
            [v for v in fake if v is not None],
        )
        results = []
        nr = 0
        for v in fake:
            if v is None:
                results.append(None)
                continue
            r = v.detach()
            r.grad_fn = node
            r._output_nr = nr
            r._requires_grad = True
            nr += 1
            results.append(r)
        node._n_outputs = nr
        return tuple(results)

    return wrapper


class InplaceFunction(Function):
    """Kept for backward compatibility: use :class:`Function`."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

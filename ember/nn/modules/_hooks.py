"""Module hooks: forward pre/post hooks, full backward (pre-)hooks, state-dict hooks, the
global module hooks and ``RemovableHandle``; ``Module`` inherits the ``_ModuleHooks`` mixin."""

from __future__ import annotations

import functools
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable

from ember.utils.hooks import RemovableHandle

__all__ = [
    "RemovableHandle",
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_backward_hook",
]


def _store(table: OrderedDict, value, *, side=(), mark=(), prepend=False) -> RemovableHandle:
    """Put ``value`` in ``table`` under a fresh handle id and return the handle.

    Every hook table in ember is an id-keyed OrderedDict; per-hook options (``with_kwargs``,
    ``always_call``) live in *side tables* holding ``id -> True``.  ``side`` lists the side
    tables the handle must clean on ``remove()``; ``mark`` the ones this hook is entered in.
    One helper for all of them keeps the registration methods to their checks and docstrings.
    """
    handle = RemovableHandle(table, extra_dict=list(side) if side else None)
    table[handle.id] = value
    for flags in mark:
        flags[handle.id] = True
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


# global hooks (``register_module_*``); ``_global_hook_ids`` holds the id of every live one,
# so the call fast path tests one dict.  ``with_kwargs`` and ``always_call`` are side tables,
# as for a module's own hooks.
_global_hook_ids: OrderedDict = OrderedDict()
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
# whether the global backward hooks are full (True), legacy (False) or none yet (None)
_global_is_full_backward_hook: dict = {"value": None}

_MIXED_BACKWARD = (
    "Cannot use both regular backward hooks and full backward hooks {}. Please use only one "
    "of them."
)


def _claim_backward_kind(state: dict | None, owner, full: bool, where: str) -> None:
    """Record that ``owner`` uses full (or legacy) backward hooks; the two kinds never mix.
    ``state`` is the global flag dict, or None for a module's own ``_is_full_backward_hook``."""
    current = state["value"] if state is not None else owner._is_full_backward_hook
    if current is (not full):
        raise RuntimeError(_MIXED_BACKWARD.format(where))
    if state is not None:
        state["value"] = full
    else:
        owner._is_full_backward_hook = full


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Register a forward pre-hook common to all modules."""
    return _store(_global_forward_pre_hooks, hook, side=[_global_hook_ids], mark=[_global_hook_ids])


def register_module_forward_hook(
    hook: Callable, *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """Register a forward hook common to all modules."""
    kw, always = _global_forward_hooks_with_kwargs, _global_forward_hooks_always_called
    chosen = [flags for flags, on in ((kw, with_kwargs), (always, always_call)) if on]
    return _store(
        _global_forward_hooks,
        hook,
        side=[_global_hook_ids, kw, always],
        mark=[_global_hook_ids, *chosen],
    )


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """Register a backward pre-hook common to all modules (run before the module's own)."""
    return _store(
        _global_backward_pre_hooks, hook, side=[_global_hook_ids], mark=[_global_hook_ids]
    )


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """Register a backward hook common to all modules (run before the module's own)."""
    _claim_backward_kind(_global_is_full_backward_hook, None, True, "as a global Module hook")
    return _store(_global_backward_hooks, hook, side=[_global_hook_ids], mark=[_global_hook_ids])


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """Register a legacy (non-full) backward hook common to all modules; deprecated in favour
    of ``register_module_full_backward_hook``."""
    _claim_backward_kind(_global_is_full_backward_hook, None, False, "as a global Module hook")
    return _store(_global_backward_hooks, hook, side=[_global_hook_ids], mark=[_global_hook_ids])


_HOOK_DICTS = (
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


class _ModuleHooks:
    """Hook registration and the hooked call path of ``Module``."""

    def _add_call_hook(self, table: str, hook, *, options=(), chosen=(), prepend=False):
        # a hook that acts on calls: turns the hooked call path on for this module
        d = self.__dict__
        handle = _store(
            d[table],
            hook,
            side=[d[o] for o in options],
            mark=[d[o] for o in chosen],
            prepend=prepend,
        )
        d["_has_hooks"] = True
        return handle

    # ------------------------------------------------------------------ hooks
    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Register ``hook(module, args)`` (or ``hook(module, args, kwargs)`` with
        ``with_kwargs``) to run before forward; it may return new args."""
        kw = "_forward_pre_hooks_with_kwargs"
        return self._add_call_hook(
            "_forward_pre_hooks",
            hook,
            options=[kw],
            chosen=[kw] if with_kwargs else [],
            prepend=prepend,
        )

    def register_forward_hook(
        self,
        hook: Callable,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Register ``hook(module, args, output)`` (``hook(module, args, kwargs, output)``
        with ``with_kwargs``) to run after forward; it may return a new output."""
        kw, always = "_forward_hooks_with_kwargs", "_forward_hooks_always_called"
        chosen = [name for name, on in ((kw, with_kwargs), (always, always_call)) if on]
        return self._add_call_hook(
            "_forward_hooks", hook, options=[kw, always], chosen=chosen, prepend=prepend
        )

    def register_full_backward_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """Register ``hook(module, grad_output)`` to run when the gradients w.r.t. the
        module's outputs are computed; it may return a new grad_output."""
        return self._add_call_hook("_backward_pre_hooks", hook, prepend=prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Register a legacy ``hook(module, grad_input, grad_output)`` on the grad_fn of the
        module's (first) output: ``grad_input`` are the gradients of that last node's inputs.
        Deprecated in favour of ``register_full_backward_hook``."""
        _claim_backward_kind(None, self, False, "on a single Module")
        return self._add_call_hook("_backward_hooks", hook)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False):
        """Register ``hook(module, grad_input, grad_output)`` to run when the gradients
        w.r.t. the module's inputs are computed; it may return a new grad_input."""
        _claim_backward_kind(None, self, True, "on a single Module")
        return self._add_call_hook("_backward_hooks", hook, prepend=prepend)

    def _get_backward_hooks(self) -> tuple[list, list]:
        """Return (full backward hooks, legacy backward hooks), the global ones first."""
        by_kind: dict = {True: [], False: []}
        for kind, table in (
            (_global_is_full_backward_hook["value"], _global_backward_hooks),
            (self._is_full_backward_hook, self._backward_hooks),
        ):
            if kind is not None:
                by_kind[kind].extend(table.values())
        return by_kind[True], by_kind[False]

    # state-dict hooks do not touch calls, so they leave the fast call path alone
    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, prefix, keep_vars)`` to run before ``state_dict``."""
        return _store(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, state_dict, prefix, local_metadata)`` to run after
        ``state_dict`` (it edits the dict in place and returns None)."""
        hook._from_public_api = True  # state_dict rejects a return value from these
        return self._register_state_dict_hook(hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        # the private form may return a new dict, which replaces the state dict
        return _store(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)`` to run before loading."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(
        self, hook: Callable, with_module: bool = False
    ) -> RemovableHandle:
        """Register ``hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` (the module first with ``with_module``) to run before
        loading: the private spelling older code (checkpoint conversions) uses."""
        if with_module:
            hook = functools.partial(_with_module, hook, self)
        return _store(self._load_state_dict_pre_hooks, hook)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, incompatible_keys)`` to run after loading."""
        return _store(self._load_state_dict_post_hooks, hook)

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        if not (self.__dict__["_has_hooks"] or _global_hook_ids):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    _call_impl = __call__

    def _call_with_hooks(self, args: tuple, kwargs: dict):
        from ember.nn.modules._backward_hook import BackwardHook

        full, legacy = [], []
        if self._backward_hooks or _global_backward_hooks:
            full, legacy = self._get_backward_hooks()
        tracker = None
        if full or self._backward_pre_hooks or _global_backward_pre_hooks:
            tracker = BackwardHook(
                self,
                dict(enumerate(full)),
                {**_global_backward_pre_hooks, **self._backward_pre_hooks},
            )
        state = self.__dict__
        # hook ids are unique across all tables, so one membership test per option table
        # covers the global hooks and the module's own (the global ones run first)
        pre_kw = state["_forward_pre_hooks_with_kwargs"]
        own_kw = state["_forward_hooks_with_kwargs"]
        own_always = state["_forward_hooks_always_called"]
        glob_kw = _global_forward_hooks_with_kwargs
        glob_always = _global_forward_hooks_always_called
        already_ran: set = set()  # the always_call hooks that ran before a failure
        result = None
        try:
            pre_hooks = (*_global_forward_pre_hooks.items(), *state["_forward_pre_hooks"].items())
            for key, hook in pre_hooks:
                if key in pre_kw:
                    args, kwargs = _kwargs_pre_hook_result(hook(self, args, kwargs), args, kwargs)
                    continue
                # a plain pre-hook may return new args; a single value is wrapped
                out = hook(self, args)
                if out is not None:
                    args = out if isinstance(out, tuple) else (out,)
            if tracker is not None:
                args = tracker.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            # read the tables after forward, which may itself add or remove hooks
            for key, hook in (*_global_forward_hooks.items(), *state["_forward_hooks"].items()):
                if key in own_always or key in glob_always:
                    already_ran.add(key)
                if key in own_kw or key in glob_kw:
                    replaced = hook(self, args, kwargs, result)
                else:
                    replaced = hook(self, args, result)
                if replaced is not None:
                    result = replaced
            if tracker is not None:
                result = tracker.setup_output_hook(result)
            if legacy:
                _attach_legacy_hooks(self, legacy, args, result)
            return result
        except Exception:
            # the always_call hooks that have not run yet still see the call, with the latest
            # result (None when forward itself failed); their own errors become warnings, and
            # a replacement one returns is what the next one sees.  As torch does, a global
            # hook gets the (module, args, result) form here even when registered
            # with_kwargs: only the module's own kwargs table is consulted.
            for key, hook in (*_global_forward_hooks.items(), *state["_forward_hooks"].items()):
                if key in already_ran or not (key in own_always or key in glob_always):
                    continue
                replaced = _call_silenced(hook, self, args, kwargs, result, key in own_kw)
                if replaced is not None:
                    result = replaced
            raise


def _kwargs_pre_hook_result(out, args: tuple, kwargs: dict):
    """The ``(args, kwargs)`` after a with_kwargs pre-hook returned ``out``."""
    if out is None:
        return args, kwargs
    if isinstance(out, tuple) and len(out) == 2:
        return out
    raise RuntimeError(
        f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got {out}."
    )


class _WrappedHook:
    """A legacy module backward hook as a node post-hook: ``hook(module, *node_hook_args)``."""

    def __init__(self, hook: Callable, module, node) -> None:
        self.hook = hook
        self.module = weakref.ref(module)
        self.node = weakref.ref(node)

    def __call__(self, grad_inputs, grad_outputs):
        from ember.autograd.engine import _validate

        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        # torch validates (sums broadcast gradients back to the input shapes) before post-hooks
        node = self.node()
        metas = node._input_meta if node is not None else ()
        if len(metas) == len(grad_inputs):
            grad_inputs = tuple(
                g if g is None or m is None else _validate(node, i, g, m)
                for i, (g, m) in enumerate(zip(grad_inputs, metas))
            )
        return self.hook(module, grad_inputs, grad_outputs)


def _attach_legacy_hooks(module, hooks: list, args: tuple, result) -> None:
    """Register the legacy backward hooks on the grad_fn of the first output tensor."""
    from ember._core.tensor import Tensor

    var = result
    while not isinstance(var, Tensor):
        if isinstance(var, dict):
            var = next(v for v in var.values() if isinstance(v, Tensor))
        else:
            var = var[0]
    grad_fn = var.grad_fn
    if grad_fn is None:
        return
    for hook in hooks:
        grad_fn.register_hook(_WrappedHook(hook, module, grad_fn))
    _maybe_warn_legacy_hook(args, result, grad_fn)


_LEGACY = "Using a non-full backward hook "
_DOCUMENTED = " Please use register_full_backward_hook to get the documented behavior."


def _maybe_warn_legacy_hook(inputs, result, grad_fn) -> None:
    """Warn, as torch does, when the legacy hook will miss part of grad_input/grad_output."""
    from ember._core.tensor import Tensor

    def warn(msg: str) -> None:
        warnings.warn(msg, FutureWarning, stacklevel=4)

    if isinstance(result, Tensor):
        result = (result,)
    elif not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
        return warn(
            "Using non-full backward hooks on a Module that does not return a single Tensor or "
            "a tuple of Tensors is deprecated and will be removed in future versions. This "
            "hook will be missing some of the grad_output." + _DOCUMENTED
        )
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    elif not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
        return warn(
            "Using non-full backward hooks on a Module that does not take as input a single "
            "Tensor or a tuple of Tensors is deprecated and will be removed in future versions. "
            "This hook will be missing some of the grad_input." + _DOCUMENTED
        )
    out_fns = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
        warn(
            _LEGACY + "when outputs are nested in python data structure is deprecated and will "
            "be removed in future versions. This hook will be missing some grad_output."
        )
    elif len(out_fns) > 1:
        warn(
            _LEGACY + "when outputs are generated by different autograd Nodes is deprecated "
            "and will be removed in future versions. This hook will be missing some "
            "grad_output." + _DOCUMENTED
        )
    else:
        in_fns = {i.grad_fn for i in inputs if i.grad_fn is not None}
        if in_fns != {n for n, _ in grad_fn.next_functions}:
            warn(
                _LEGACY + "when the forward contains multiple autograd Nodes is deprecated and "
                "will be removed in future versions. This hook will be missing some "
                "grad_input." + _DOCUMENTED
            )


def _with_module(hook, module, *args):
    return hook(module, *args)


def _call_silenced(hook, module, args, kwargs, result, with_kwargs):
    """Run an always_call hook on the failure path: its return value, or None (and a
    warning) when it raises itself."""
    try:
        return hook(module, args, kwargs, result) if with_kwargs else hook(module, args, result)
    except Exception as e:
        warnings.warn(
            "module forward hook with ``always_call=True`` raised an exception that was "
            f"silenced as another error was raised in forward: {str(e)}",
            stacklevel=2,
        )
        return None

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


# global hooks (``register_module_*``); ``_global_hook_ids`` holds the id of every live one,
# so the call fast path tests one dict
_global_hook_ids: OrderedDict = OrderedDict()
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
# whether the global backward hooks are full (True), legacy (False) or none yet (None)
_global_is_full_backward_hook: dict = {"value": None}


def _global_handle(hooks: OrderedDict, value, *extra) -> RemovableHandle:
    handle = RemovableHandle(hooks, extra_dict=[_global_hook_ids, *extra])
    hooks[handle.id] = value
    _global_hook_ids[handle.id] = True
    return handle


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Register a forward pre-hook common to all modules."""
    return _global_handle(_global_forward_pre_hooks, hook)


def register_module_forward_hook(
    hook: Callable, *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """Register a forward hook common to all modules."""
    handle = _global_handle(
        _global_forward_hooks, (hook, with_kwargs), _global_forward_hooks_always_called
    )
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """Register a backward pre-hook common to all modules (run before the module's own)."""
    return _global_handle(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """Register a backward hook common to all modules (run before the module's own)."""
    if _global_is_full_backward_hook["value"] is False:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a "
            "global Module hook. Please use only one of them."
        )
    _global_is_full_backward_hook["value"] = True
    return _global_handle(_global_backward_hooks, hook)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """Register a legacy (non-full) backward hook common to all modules; deprecated in favour
    of ``register_module_full_backward_hook``."""
    if _global_is_full_backward_hook["value"] is True:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a "
            "global Module hook. Please use only one of them."
        )
    _global_is_full_backward_hook["value"] = False
    return _global_handle(_global_backward_hooks, hook)


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

    # ------------------------------------------------------------------ hooks
    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Register ``hook(module, args)`` (or ``hook(module, args, kwargs)`` with
        ``with_kwargs``) to run before forward; it may return new args."""
        handle = RemovableHandle(
            self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs
        )
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        self._has_hooks = True
        return handle

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
        handle = RemovableHandle(
            self._forward_hooks,
            extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called],
        )
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        self._has_hooks = True
        return handle

    def register_full_backward_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """Register ``hook(module, grad_output)`` to run when the gradients w.r.t. the
        module's outputs are computed; it may return a new grad_output."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        self._has_hooks = True
        return handle

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Register a legacy ``hook(module, grad_input, grad_output)`` on the grad_fn of the
        module's (first) output: ``grad_input`` are the gradients of that last node's inputs.
        Deprecated in favour of ``register_full_backward_hook``."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a "
                "single Module. Please use only one of them."
            )
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        self._has_hooks = True
        return handle

    def _get_backward_hooks(self) -> tuple[list, list]:
        """Return (full backward hooks, legacy backward hooks), the global ones first."""
        full: list = []
        legacy: list = []
        glob = _global_is_full_backward_hook["value"]
        if glob is not None:
            (full if glob else legacy).extend(_global_backward_hooks.values())
        if self._is_full_backward_hook is not None:
            (full if self._is_full_backward_hook else legacy).extend(self._backward_hooks.values())
        return full, legacy

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False):
        """Register ``hook(module, grad_input, grad_output)`` to run when the gradients
        w.r.t. the module's inputs are computed; it may return a new grad_input."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a "
                "single Module. Please use only one of them."
            )
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        self._has_hooks = True
        return handle

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, prefix, keep_vars)`` to run before ``state_dict``."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, state_dict, prefix, local_metadata)`` to run after
        ``state_dict`` (it edits the dict in place and returns None)."""
        hook._from_public_api = True  # (as torch marks it: state_dict checks the return)
        return self._register_state_dict_hook(hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        # the private form may return a new dict, which replaces the state dict
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)`` to run before loading."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = functools.partial(_with_module, hook, self)
        return handle

    def _register_load_state_dict_pre_hook(
        self, hook: Callable, with_module: bool = False
    ) -> RemovableHandle:
        """Register ``hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` (the module first with ``with_module``) to run before
        loading: the private spelling older code (checkpoint conversions) uses."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = (
            functools.partial(_with_module, hook, self) if with_module else hook
        )
        return handle

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, incompatible_keys)`` to run after loading."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        if not (self.__dict__["_has_hooks"] or _global_hook_ids):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    _call_impl = __call__

    def _call_with_hooks(self, args: tuple, kwargs: dict):
        from ember.nn.modules._backward_hook import BackwardHook

        bw_hook = None
        full, legacy = [], []
        if self._backward_hooks or _global_backward_hooks:
            full, legacy = self._get_backward_hooks()
        if full or self._backward_pre_hooks or _global_backward_pre_hooks:
            bw_hook = BackwardHook(
                self,
                dict(enumerate(full)),
                {**_global_backward_pre_hooks, **self._backward_pre_hooks},
            )
        called_always = False
        try:
            for hook_id, hook in (
                *_global_forward_pre_hooks.items(),
                *self._forward_pre_hooks.items(),
            ):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    out = hook(self, args, kwargs)
                    if out is not None:
                        if not (isinstance(out, tuple) and len(out) == 2):
                            raise RuntimeError(
                                "forward pre-hook must return None or a tuple of "
                                f"(new_args, new_kwargs), but got {out}."
                            )
                        args, kwargs = out
                else:
                    out = hook(self, args)
                    if out is not None:
                        args = out if isinstance(out, tuple) else (out,)
            if bw_hook is not None:
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            called_always = True
            for hook, with_kwargs in _global_forward_hooks.values():
                out = hook(self, args, kwargs, result) if with_kwargs else hook(self, args, result)
                if out is not None:
                    result = out
            for hook_id, hook in self._forward_hooks.items():
                if hook_id in self._forward_hooks_with_kwargs:
                    out = hook(self, args, kwargs, result)
                else:
                    out = hook(self, args, result)
                if out is not None:
                    result = out
            if bw_hook is not None:
                result = bw_hook.setup_output_hook(result)
            if legacy:
                _attach_legacy_hooks(self, legacy, args, result)
            return result
        except Exception:
            if not called_always:
                for hook_id, entry in _global_forward_hooks.items():
                    if hook_id in _global_forward_hooks_always_called:
                        hook, with_kwargs = entry
                        _call_silenced(hook, self, args, kwargs, None, with_kwargs)
                for hook_id, hook in self._forward_hooks.items():
                    if hook_id in self._forward_hooks_always_called:
                        with_kwargs = hook_id in self._forward_hooks_with_kwargs
                        _call_silenced(hook, self, args, kwargs, None, with_kwargs)
            raise


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


def _call_silenced(hook, module, args, kwargs, result, with_kwargs) -> None:
    try:
        if with_kwargs:
            hook(module, args, kwargs, result)
        else:
            hook(module, args, result)
    except Exception as e:
        warnings.warn(
            "module forward hook with ``always_call=True`` raised an exception that was "
            f"silenced as another error was raised in forward: {str(e)}",
            stacklevel=2,
        )

"""Module hooks: forward pre/post hooks, full backward (pre-)hooks, state-dict hooks, the
global module hooks and ``RemovableHandle``; ``Module`` inherits the ``_ModuleHooks`` mixin."""

from __future__ import annotations

import functools
import itertools
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable

__all__ = [
    "RemovableHandle",
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
]


class RemovableHandle:
    """A handle whose ``remove()`` takes a hook out of the dicts it was registered in."""

    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        if extra_dict is None:
            extra_dict = []
        elif not isinstance(extra_dict, list):
            extra_dict = [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self) -> None:
        """Remove the hook."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


# global hooks (``register_module_*``); ``_global_hook_ids`` holds the id of every live one,
# so the call fast path tests one dict
_global_hook_ids: OrderedDict = OrderedDict()
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()


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
        ``state_dict`` (it edits the dict in place)."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)`` to run before loading."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = functools.partial(_with_module, hook, self)
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
        if (
            self._backward_hooks
            or self._backward_pre_hooks
            or _global_backward_hooks
            or _global_backward_pre_hooks
        ):
            bw_hook = BackwardHook(
                self,
                {**_global_backward_hooks, **self._backward_hooks},
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

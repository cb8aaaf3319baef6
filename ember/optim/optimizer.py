"""Optimizer: the base class of every algorithm, with torch's param-group and state-dict contract.

Parameters live in ``param_groups`` (a list of dicts whose ``"params"`` are tensors and whose other
keys are the hyper-parameters), per-parameter state in ``state`` (keyed by the tensor itself).
``state_dict()`` replaces tensors by their index in the groups, exactly as torch, so a state dict
written by ``ember.save`` loads into ``torch.optim`` and the reverse.
"""

from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

from ember._core import profiling as _profiler
from ember._core.dtype import float32
from ember._core.grad_mode import no_grad
from ember._core.tensor import Tensor
from ember._ops.torch_utilities import typename
from ember.utils.hooks import RemovableHandle

__all__ = [
    "Optimizer",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
    "required",
]


class _RequiredParameter:
    """Singleton marking a hyper-parameter that a param group must give."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimizer's ``step``."""
    handle = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimizer's ``step``."""
    handle = RemovableHandle(_global_post_hooks)
    _global_post_hooks[handle.id] = hook
    return handle


def _typename(obj) -> str:
    # torch.typename: a tensor's legacy type name (torch.DoubleTensor...), else its class's
    return typename(obj) if isinstance(obj, Tensor) else typename(type(obj))


def _hooked_step(step):
    """Wrap a subclass's ``step``: run hooks around it, without grad, and count the steps."""

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        self = args[0]
        rng = _profiler.begin_range(_step_range(self)) if _profiler.ACTIVE else None
        try:
            return _run_hooked(step, self, args, kwargs)
        finally:
            if rng is not None:
                _profiler.end_range(rng)

    wrapper._ember_hooked = True
    return wrapper


def _step_range(opt) -> str:
    return f"Optimizer.step#{type(opt).__name__}.step"  # the profiler's range, as torch's


def _run_hooked(step, self, args, kwargs):
    """Run ``step`` between its hooks: global pre-hooks first, then the optimizer's (any may hand
    back new ``(args, kwargs)``); after it the optimizer's post-hooks, then the global ones."""
    before = (*_global_pre_hooks.values(), *self._optimizer_step_pre_hooks.values())
    for hook in before:
        replaced = hook(self, args, kwargs)
        if replaced is None:
            continue
        if not isinstance(replaced, tuple) or len(replaced) != 2:
            raise RuntimeError(
                f"{step} must return None or a tuple of (new_args, new_kwargs), but got {replaced}."
            )
        args, kwargs = replaced
    out = step(*args, **kwargs)
    self._opt_called = True
    after = (*self._optimizer_step_post_hooks.values(), *_global_post_hooks.values())
    for hook in after:
        hook(self, args, kwargs)
    return out


def _fold(hooks: OrderedDict, value, *lead):
    """Call every hook as ``hook(*lead, value)``; a hook returning something replaces ``value``."""
    for hook in hooks.values():
        replaced = hook(*lead, value)
        value = value if replaced is None else replaced
    return value


# the optimizer's own hook tables (all empty on a new or unpickled optimizer)
_HOOK_TABLES = (
    "_optimizer_step_pre_hooks",
    "_optimizer_step_post_hooks",
    "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks",
    "_optimizer_load_state_dict_pre_hooks",
    "_optimizer_load_state_dict_post_hooks",
)


def _no_grad_step(step):
    """Run ``step`` with grad mode off (closures re-enable it themselves)."""

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        with no_grad():
            return step(*args, **kwargs)

    return wrapper


class Optimizer:
    """Base class for all optimizers.

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (param groups).
        defaults: the default value of each hyper-parameter, used by groups that do not set it.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        for table in _HOOK_TABLES:
            setattr(self, table, OrderedDict())
        self._flat: dict = {}  # flat buffers per group index (optim/_flat.py)
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be "
                "an iterable of Tensors or dicts, but got " + _typename(params)
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        # pickles and ``load_state_dict`` land here: hook tables missing from an old pickle
        # start empty, flat buffers survive (a stale one is rebuilt from at the next step), and
        # an old pickle's defaults get the ``differentiable`` flag every optimizer now has
        vars(self).update(state)
        own = vars(self)
        for table in _HOOK_TABLES + ("_flat",):
            if table not in own:
                own[table] = {} if table == "_flat" else OrderedDict()
        if "differentiable" not in self.defaults:
            self.defaults["differentiable"] = False

    def __repr__(self) -> str:
        text = f"{type(self).__name__} ("
        for number, group in enumerate(self.param_groups):
            keys = "".join(f"    {k}: {group[k]}\n" for k in sorted(group) if k != "params")
            text += f"\nParameter Group {number}\n{keys}"
        return text + ")"

    # -- hooks ---------------------------------------------------------------------------------
    def _register(self, hooks: OrderedDict, hook: Callable, prepend: bool = False):
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs)`` to run before ``step``."""
        return self._register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs)`` to run after ``step``."""
        return self._register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """Register ``hook(optimizer)`` to run before ``state_dict`` builds the dict."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """Register ``hook(optimizer, state_dict)``, which may return a replacement dict."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """Register ``hook(optimizer, state_dict)``, which may return a replacement dict."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """Register ``hook(optimizer)`` to run after ``load_state_dict``."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dict ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Return ``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        # a parameter is numbered by its position over all groups: within a group by its last
        # place, across groups by the first group that lists it (torch's numbering)
        number: dict[int, int] = {}
        position = 0
        groups = []
        for group in self.param_groups:
            params = group["params"]
            local = {id(p): position + i for i, p in enumerate(params)}
            for key, value in local.items():
                number.setdefault(key, value)
            position += len(params)
            saved = dict(group)
            del saved["params"]
            saved["params"] = [number[id(p)] for p in params]
            groups.append(saved)
        state = {}
        for key, value in self.state.items():
            state[number[id(key)] if isinstance(key, Tensor) else key] = value
        return _fold(
            self._optimizer_state_dict_post_hooks, {"state": state, "param_groups": groups}, self
        )

    @staticmethod
    def _cast_state_value(param: Tensor, value: Tensor, fused_or_capturable: bool, key) -> Tensor:
        if key == "step":
            return value.to(dtype=float32) if fused_or_capturable else value
        if param.is_floating_point():
            return value.to(dtype=param.dtype)
        return value

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict made by ``state_dict()`` (of this library or torch's)."""
        state_dict = _fold(self._optimizer_load_state_dict_pre_hooks, state_dict.copy(), self)
        if not getattr(self, "_loads_8bit", False) and any(
            isinstance(s, dict) and "absmax1" in s for s in state_dict["state"].values()
        ):  # an 8-bit optimizer's quantized states (optim/optim8bit.py): dequantize them
            from ember.optim.optim8bit import to_32bit

            state_dict = to_32bit(state_dict, self)
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group "
                "that doesn't match the size of optimizer's group"
            )
        # saved number -> (this optimizer's parameter, whether its group steps fused/capturable:
        # those keep ``step`` as float32)
        target: dict = {}
        for group, saved in zip(groups, saved_groups):
            for p, n in zip(group["params"], saved["params"]):
                target[n] = p
        float_step = {
            n: bool(g.get("fused", False) or g.get("capturable", False))
            for g in state_dict["param_groups"]
            for n in g["params"]
        }

        def cast(param, value, n, key=None):
            # tensors take the parameter's floating dtype (``step`` aside); containers recurse
            if isinstance(value, Tensor):
                return self._cast_state_value(param, value, float_step.get(n, False), key)
            if isinstance(value, dict):
                return {k: cast(param, v, n, k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(cast(param, v, n) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for n, value in state_dict["state"].items():
            if n in target:
                state[target[n]] = cast(target[n], value, n)
            else:
                state[n] = value
        for group, saved in zip(groups, saved_groups):  # saved hyper-parameters, own tensors
            saved["params"] = group["params"]
            if "param_names" in group:
                saved.setdefault("param_names", group["param_names"])
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    # -- gradients and groups ------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to ``None`` by default, else to zeros)."""
        if _profiler.ACTIVE:
            rng = _profiler.begin_range(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad")
            try:
                return self._zero_grad(set_to_none)
            finally:
                _profiler.end_range(rng)
        return self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none: bool) -> None:
        for index, group in enumerate(self.param_groups):
            fg = None if set_to_none else self._flat.get(index)
            if fg is not None and fg.zero_grads(group["params"]):
                continue  # one fill of the group's flat gradient (optim/_flat.py)
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    with no_grad():
                        g.zero_()

    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Perform a single optimization step (subclasses implement it)."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a param group (a dict with ``"params"`` and optional hyper-parameters)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. "
                "Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError(
                    "all optimizer params should be with/without names. "
                    "Some param names are missing"
                )
        leaves_only = not self.defaults.get("differentiable")
        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, "
                    "but one of the params is " + _typename(param)
                )
            if leaves_only and not param.is_leaf and not param.retains_grad:
                raise ValueError("can't optimize a non-leaf Tensor")
        missing = [k for k, v in self.defaults.items() if v is required and k not in param_group]
        if missing:
            raise ValueError(
                "parameter group didn't specify a value of required optimization "
                f"parameter {missing[0]}"
            )
        for name, default in self.defaults.items():
            param_group.setdefault(name, default)
        if len(tensors) != len({id(p) for p in tensors}):
            import warnings

            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error; "
                "see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        named = "param_names" in param_group
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if named is not ("param_names" in group):
                txt = "with names" if named else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {txt} to the optimizer"
                )
        if not seen.isdisjoint(id(p) for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

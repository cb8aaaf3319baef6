"""``nn.Module``: the base class of layers and models, with torch's contract."""

from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import ember
from ember._core.tensor import Tensor
from ember._ops.torch_utilities import typename as _typename
from ember.nn.modules._hooks import (
    _HOOK_DICTS,
    RemovableHandle,
    _ModuleHooks,
    register_module_backward_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from ember.nn.modules._to_args import parse_to
from ember.nn.parameter import Buffer, Parameter, is_lazy

__all__ = [
    "Module",
    "RemovableHandle",
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_backward_hook",
]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class ABOVE:
    """What the layers above give ``Module``, filled when they are imported (``import ember``
    imports them): ``compiled_forward(forward, module, fullgraph, backend, options)``
    (``ember.compiler``: the compiled forward ``Module.compile`` installs)."""

    compiled_forward = None


# the three member tables of a module, in the order torch looks names up
_MEMBER_TABLES = ("_parameters", "_buffers", "_modules")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if self.missing_keys or self.unexpected_keys:
            return super().__repr__()
        return "<All keys matched successfully>"

    __str__ = __repr__


def _addindent(text: str, width: int) -> str:
    """Indent every line of ``text`` after the first by ``width`` spaces; lines that are only
    whitespace come out empty (how nested module reprs are laid out)."""
    head, *tail = text.split("\n")
    pad = " " * width
    return "\n".join([head, *(pad + line if line.strip() else "" for line in tail)])


def _join(prefix: str, name: str) -> str:
    """The dotted path of ``name`` under ``prefix`` ('' is the root)."""
    return f"{prefix}.{name}" if prefix else name


def _missing_forward(self, *input: Any) -> None:
    """Define the computation performed at every call. Subclasses override it."""
    raise NotImplementedError(
        f'Module [{type(self).__name__}] is missing the required "forward" function'
    )


_forward_unimplemented = _missing_forward  # torch's name, for code that compares with it


def _check_member_name(kind: str, name, dotted_message: str) -> None:
    """The checks every registered name passes: a non-empty string without dots."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(dotted_message)
    if not name:
        raise KeyError(f'{kind} name can\'t be empty string ""')


def _overrides(module: Module, method: str) -> bool:
    """Whether ``module``'s class defines its own ``method`` (get/set_extra_state)."""
    return getattr(type(module), method, None) is not getattr(Module, method)


class Module(_ModuleHooks):
    """Base class for all neural network modules, as ``torch.nn.Module``."""

    dump_patches: bool = False
    _version: int = 1
    training: bool
    call_super_init: bool = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        from ember.nn.modules._device_init import scope_device

        scope_device(cls)  # ember's layers: device="meta" builds their tensors there

    def __init__(self, *args, **kwargs) -> None:
        if not self.call_super_init:
            # arguments are only allowed when they are forwarded to a cooperative base
            cls = type(self).__name__
            if kwargs:
                raise TypeError(
                    f"{cls}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'"
                )
            if args:
                raise TypeError(
                    f"{cls}.__init__() takes 1 positional argument but {len(args) + 1} were given"
                )
        # straight into __dict__: __setattr__ needs these tables to exist
        state = self.__dict__
        state.update(
            training=True,
            _parameters={},
            _buffers={},
            _non_persistent_buffers_set=set(),
            _modules={},
            _has_hooks=False,
            _is_full_backward_hook=None,
        )
        state.update((table, OrderedDict()) for table in _HOOK_DICTS)
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward: Callable[..., Any] = _missing_forward

    # ------------------------------------------------------------------ registration
    def _check_new_member(self, table: str, kind: str, name, dotted_message: str) -> None:
        if table not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        _check_member_name(kind, name, dotted_message)
        if name not in self.__dict__[table] and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter) to the module."""
        self._check_new_member("_buffers", "buffer", name, 'buffer name can\'t contain "."')
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        transient = self._non_persistent_buffers_set
        (transient.discard if persistent else transient.add)(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter to the module."""
        self._check_new_member(
            "_parameters", "parameter", name, 'parameter name can\'t contain "."'
        )
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(
                    f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                    "(torch.nn.Parameter or None required)"
                )
            if param.grad_fn:
                raise ValueError(
                    f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                    f"parameters must be created explicitly. To express '{name}' "
                    "as a function of another Tensor, compute the value in "
                    "the forward() method."
                )
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module, reachable as the attribute ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_new_member(
            "_modules", "module", name, f'module name can\'t contain ".", got: {name}'
        )
        self._modules[name] = module

    def register_module(self, name: str, module: Module | None) -> None:
        """Alias for :meth:`add_module`."""
        self.add_module(name, module)

    def _walk_to(self, names: list[str]) -> Module:
        # follow attribute names from self, each step a Module
        node = self
        for step in names:
            if not hasattr(node, step):
                raise AttributeError(f"{node._get_name()} has no attribute `{step}`")
            node = getattr(node, step)
            if not isinstance(node, Module):
                raise AttributeError(f"`{step}` is not an nn.Module")
        return node

    def _owner_and_leaf(self, target: str) -> tuple[Module, str]:
        # the module holding the last component of a dotted path, and that component
        owner_path, _, leaf = target.rpartition(".")
        owner = self.get_submodule(owner_path)
        if not hasattr(owner, leaf):
            raise AttributeError(f"{owner._get_name()} has no attribute `{leaf}`")
        return owner, leaf

    def get_submodule(self, target: str) -> Module:
        """Return the submodule at the dotted path ``target`` ('' is self)."""
        return self._walk_to(target.split(".")) if target else self

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Set the submodule at the dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        *path, leaf = target.split(".")
        owner = self._walk_to(path)
        present = hasattr(owner, leaf)
        if strict and not present:
            raise AttributeError(f"{owner._get_name()} has no attribute `{leaf}`")
        if present and not isinstance(getattr(owner, leaf), Module):
            raise AttributeError(f"`{leaf}` is not an nn.Module")
        setattr(owner, leaf, module)

    def get_parameter(self, target: str) -> Parameter:
        """Return the parameter at the dotted path ``target``."""
        owner, leaf = self._owner_and_leaf(target)
        found = getattr(owner, leaf)
        if not isinstance(found, Parameter):
            raise AttributeError(f"`{leaf}` is not an nn.Parameter")
        return found

    def get_buffer(self, target: str) -> Tensor:
        """Return the buffer at the dotted path ``target``."""
        owner, leaf = self._owner_and_leaf(target)
        if leaf not in owner._buffers:
            raise AttributeError(f"`{leaf}` is not a buffer")
        return owner._buffers[leaf]

    def get_extra_state(self) -> Any:
        """Return extra state to put in the state dict (override with set_extra_state)."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-"
            "report.yml to report this bug."
        )

    def set_extra_state(self, state: Any) -> None:
        """Set extra state from a loaded state dict (override with get_extra_state)."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-"
            "report.yml to report this bug."
        )

    # ------------------------------------------------------------------ attribute protocol
    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: the member tables
        state = self.__dict__
        for table in _MEMBER_TABLES:
            members = state.get(table)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _forget(self, name: str, *tables: str) -> None:
        # drop ``name`` from the instance dict and the given member tables
        state = self.__dict__
        state.pop(name, None)
        for table in tables:
            state[table].pop(name, None)
        state["_non_persistent_buffers_set"].discard(name)

    def __setattr__(self, name: str, value: Any) -> None:
        state = self.__dict__
        params = state.get("_parameters")
        modules = state.get("_modules")
        buffers = state.get("_buffers")
        # A Parameter or Module value claims the name; otherwise a name already registered
        # keeps its kind and only accepts a value of that kind (or None).
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, "_buffers", "_modules")
            self.register_parameter(name, value)
        elif name in (params or ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)"
                )
            self.register_parameter(name, None)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, "_parameters", "_buffers")
            modules[name] = value
        elif name in (modules or ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as child module '{name}' "
                    "(torch.nn.Module or None expected)"
                )
            modules[name] = None
        elif isinstance(value, Buffer) or name in (buffers or ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as buffer '{name}' "
                    "(torch.nn.Buffer, torch.Tensor or None expected)"
                )
            # a Buffer carries its own persistence; a plain tensor keeps the name's
            keep = (
                value.persistent
                if isinstance(value, Buffer)
                else name not in state["_non_persistent_buffers_set"]
            )
            self.register_buffer(name, value, keep)
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for table in _MEMBER_TABLES:
            members = self.__dict__.get(table, ())
            if name in members:
                del members[name]
                if table == "_buffers":
                    self.__dict__["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        # class attributes, instance attributes and members; names that are not identifiers
        # (Sequential's "0", "1", ...) are left out, duplicates are kept as torch keeps them
        names = [
            *dir(type(self)),
            *self.__dict__,
            *self._parameters,
            *self._modules,
            *self._buffers,
        ]
        return sorted(n for n in names if not n[0].isdigit())

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        # pickles from before a table existed get it empty
        restored = self.__dict__
        for table in _HOOK_DICTS:
            restored.setdefault(table, OrderedDict())
        for key, default in (
            ("_non_persistent_buffers_set", set()),
            ("_is_full_backward_hook", None),
            ("_has_hooks", False),
        ):
            restored.setdefault(key, default)

    # ------------------------------------------------------------------ iteration
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        if recurse:
            owners = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            owners = iter([(prefix, self)])
        seen: set = set()
        for path, owner in owners:
            for name, member in get_members_fn(owner):
                if member is None or member in seen:
                    continue
                if remove_duplicate:
                    seen.add(member)
                yield _join(path, name), member

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Return an iterator over the module's parameters."""
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_parameters(
        self,
        prefix: str = "",
        recurse: bool = True,
        remove_duplicate: bool = True,
    ) -> Iterator[tuple[str, Parameter]]:
        """Return an iterator over (name, parameter) pairs."""
        return self._named_members(
            lambda m: m._parameters.items(), prefix, recurse, remove_duplicate
        )

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Return an iterator over the module's buffers."""
        return (b for _, b in self.named_buffers(recurse=recurse))

    def named_buffers(
        self,
        prefix: str = "",
        recurse: bool = True,
        remove_duplicate: bool = True,
    ) -> Iterator[tuple[str, Tensor]]:
        """Return an iterator over (name, buffer) pairs."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self) -> Iterator[Module]:
        """Return an iterator over the immediate child modules."""
        return (child for _, child in self.named_children())

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Return an iterator over (name, module) pairs of immediate children."""
        seen: set = set()
        for name, child in self._modules.items():
            if child is None or child in seen:
                continue
            seen.add(child)
            yield name, child

    def modules(self) -> Iterator[Module]:
        """Return an iterator over all modules in the tree, self first."""
        return (m for _, m in self.named_modules())

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """Return an iterator over (name, module) pairs of the tree, self first."""
        memo = set() if memo is None else memo
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        # through each child's own named_modules, so a subclass that overrides it is heard
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, _join(prefix, name), remove_duplicate)

    # ------------------------------------------------------------------ modes, grads, apply
    def train(self, mode: bool = True) -> Module:
        """Set training mode (affects Dropout, BatchNorm...); return self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode; return self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` of all parameters; return self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None by default)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Apply ``fn`` to every submodule (children first) and to self; return self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def share_memory(self) -> Module:
        """Return self (NumPy memory of CPU tensors; kept for torch's API)."""
        return self._apply(lambda t: t.share_memory_() if hasattr(t, "share_memory_") else t)

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with ember.no_grad():
                param_applied = fn(param)
            if param_applied is not param:
                # torch replaces .data in place so existing references see the new values
                param.data = param_applied
            if param.grad is not None:
                with ember.no_grad():
                    grad_applied = fn(param.grad)
                if grad_applied is not param.grad:
                    param.grad.data = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Replace parameters and buffers with uninitialized tensors of the same shape and
        dtype on ``device``."""
        return self._apply(lambda t: ember.empty_like(t, device=device), recurse=recurse)

    def to(self, *args, **kwargs) -> Module:
        """Move and/or cast parameters and buffers: ``to(dtype)``, ``to(device)``,
        ``to(device, dtype)``, ``to(tensor)``; only floating point tensors change dtype."""
        device, dtype, _, fmt = parse_to(*args, **kwargs)
        if device is not None:
            ember.zeros(0).to(device)  # validates; a CUDA device raises ember's error
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(
                "nn.Module.to only accepts floating point or complex "
                f"dtypes, but got desired dtype={dtype}"
            )

        def convert(t: Tensor) -> Tensor:
            if device is not None and t.device != ember.device(device):
                try:
                    t = t.to(device)  # (to meta: the data dropped)
                except NotImplementedError as e:
                    raise NotImplementedError(
                        f"{e} Please use torch.nn.Module.to_empty() instead of "
                        "torch.nn.Module.to() when moving module from meta to a different device."
                    ) from None
            if fmt is not None and t.dim() in (4, 5):
                # torch: the format applies to the 4-D/5-D parameters and buffers only
                floating = t.is_floating_point() or t.is_complex()
                return t.to(dtype=dtype if floating else None, memory_format=fmt)
            if dtype is not None and (t.is_floating_point() or t.is_complex()):
                return t.to(dtype)
            return t

        return self._apply(convert)

    def _cast_floats(self, dtype) -> Module:
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self) -> Module:
        """Cast floating point parameters and buffers to float32."""
        return self._cast_floats(ember.float32)

    def double(self) -> Module:
        """Cast floating point parameters and buffers to float64."""
        return self._cast_floats(ember.float64)

    def half(self) -> Module:
        """Cast floating point parameters and buffers to float16."""
        return self._cast_floats(ember.float16)

    def bfloat16(self) -> Module:
        """Cast floating point parameters and buffers to bfloat16."""
        return self._cast_floats(ember.bfloat16)

    def type(self, dst_type) -> Module:
        """Cast all parameters and buffers to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self) -> Module:
        """Return self (everything lives on the CPU)."""
        return self._apply(lambda t: t)

    def cuda(self, device=None) -> Module:
        """Raise ember's CUDA error (no CUDA backend)."""
        return self._apply(lambda t: t.cuda(device))

    # ------------------------------------------------------------------ state dict
    def _own_state(self) -> dict:
        """This module's own entries of a state dict: parameters, then persistent buffers,
        skipping the ``None`` placeholders."""
        transient = self._non_persistent_buffers_set
        state = {k: v for k, v in self._parameters.items() if v is not None}
        state.update(
            (k, v) for k, v in self._buffers.items() if v is not None and k not in transient
        )
        return state

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """Put this module's own parameters and persistent buffers into ``destination``."""
        for name, value in self._own_state().items():
            destination[prefix + name] = value if keep_vars else value.detach()
        if _overrides(self, "get_extra_state"):
            destination[f"{prefix}{_EXTRA_STATE_KEY_SUFFIX}"] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Return an OrderedDict of the parameters and persistent buffers (with
        ``_metadata``), keys as dotted paths in registration order."""
        if args:
            # positional (destination, prefix, keep_vars): deprecated, as torch
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.state_dict for details.",
                FutureWarning,
                stacklevel=2,
            )
            # a keyword given explicitly wins over its positional slot
            slots = list(args) + [None] * (3 - len(args))
            destination = slots[0] if destination is None else destination
            prefix = slots[1] if prefix == "" and len(args) > 1 else prefix
            keep_vars = slots[2] if keep_vars is False and len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        # the version of each module's layout, keyed by its path without the trailing dot
        meta = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = meta
        for pre in self._state_dict_pre_hooks.values():
            pre(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(
                    destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars
                )
        for post in self._state_dict_hooks.values():
            replaced = post(self, destination, prefix, meta)
            if replaced is None:
                continue
            if getattr(post, "_from_public_api", False):
                raise RuntimeError("state_dict post-hook must return None")
            destination = replaced
        return destination

    def _load_tensor(self, name, current, key, incoming, assign, error_msgs) -> None:
        """Load one checkpoint tensor into the member ``name``; problems go to error_msgs."""
        if not isinstance(incoming, Tensor):
            error_msgs.append(
                f'While copying the parameter named "{key}", '
                "expected torch.Tensor or Tensor-like object from checkpoint but "
                f"received {type(incoming)}"
            )
            return
        lazy = is_lazy(current)
        if not lazy:
            # a checkpoint may store a 0-d tensor as shape (1,)
            if current.ndim == 0 and tuple(incoming.shape) == (1,):
                incoming = incoming[0]
            if incoming.shape != current.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {incoming.shape} "
                    f"from checkpoint, the shape in current model is {current.shape}."
                )
                return
        try:
            with ember.no_grad():
                if assign:
                    # the checkpoint's tensor becomes the member; a Parameter stays a
                    # Parameter and keeps the model's requires_grad
                    if isinstance(current, Parameter):
                        wanted = current.requires_grad
                        if isinstance(incoming, Parameter):
                            incoming.requires_grad_(wanted)
                        else:
                            incoming = Parameter(incoming, requires_grad=wanted)
                    setattr(self, name, incoming)
                elif not lazy:
                    current.copy_(incoming)
                elif not is_lazy(incoming):  # uninitialised into uninitialised: no-op
                    current.materialize(incoming.shape)
                    current.copy_(incoming)
        except Exception as ex:
            error_msgs.append(
                f'While copying the parameter named "{key}", '
                f"whose dimensions in the model are {current.size()} and "
                f"whose dimensions in the checkpoint are {incoming.size()}, "
                f"an exception occurred : {ex.args}."
            )

    def _load_from_state_dict(
        self,
        state_dict,
        prefix,
        local_metadata,
        strict,
        missing_keys,
        unexpected_keys,
        error_msgs,
    ) -> None:
        """Copy this module's own parameters and buffers from ``state_dict``."""
        for pre in self._load_state_dict_pre_hooks.values():
            pre(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                error_msgs)  # fmt: skip
        own = self._own_state()
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, current in own.items():
            key = prefix + name
            if key in state_dict:
                self._load_tensor(name, current, key, state_dict[key], assign, error_msgs)
            elif strict:
                missing_keys.append(key)
        extra_key = f"{prefix}{_EXTRA_STATE_KEY_SUFFIX}"
        if _overrides(self, "set_extra_state"):
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if not strict:
            return
        # a key under this prefix is expected when it names one of this module's own
        # entries, or lies under one of its children (which judge the rest themselves)
        for key in state_dict:
            if key == extra_key or not key.startswith(prefix):
                continue
            head, nested, _ = key[len(prefix) :].partition(".")
            if head not in (self._modules if nested else own):
                unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign=False):
        """Copy parameters and buffers from ``state_dict`` into this module and its
        descendants; return ``_IncompatibleKeys(missing_keys, unexpected_keys)``."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        # a private copy: pre-hooks may edit the dict they are given
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        report = _IncompatibleKeys(missing, unexpected)  # shares the lists being filled

        def visit(module: Module, entries, prefix: str) -> None:
            # metadata is keyed by the path without its trailing dot (the root is "")
            meta = dict(metadata.get(prefix[:-1], {})) if metadata else {}
            if assign:
                meta["assign_to_params_buffers"] = assign
            # each module records every problem; strict decides below what is an error
            module._load_from_state_dict(entries, prefix, meta, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is None:
                    continue
                below = f"{prefix}{name}."
                visit(child, {k: v for k, v in entries.items() if k.startswith(below)}, below)
            for post in module._load_state_dict_post_hooks.values():
                if post(module, report) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace."
                    )

        visit(self, state_dict, "")
        if strict:
            for label, keys in (("Unexpected", unexpected), ("Missing", missing)):
                if keys:
                    quoted = ", ".join(f'"{k}"' for k in keys)
                    errors.insert(0, f"{label} key(s) in state_dict: {quoted}. ")
        if errors:
            details = "\n\t".join(errors)
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t{details}"
            )
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ printing
    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """Return the extra text shown in this module's repr (override in layers)."""
        return ""

    def __repr__(self) -> str:
        # one line when the module has only a one-line extra_repr; otherwise the extra_repr
        # lines and then "(name): child" for each child, indented by two spaces
        extra = self.extra_repr()
        own = extra.split("\n") if extra else []
        children = [
            f"({name}): {_addindent(repr(child), 2)}" for name, child in self._modules.items()
        ]
        if children or len(own) > 1:
            body = "".join(f"\n  {line}" for line in own + children) + "\n"
        else:
            body = "".join(own)
        return f"{self._get_name()}({body})"

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's forward in place with ``ember.compile`` (same arguments)."""
        kwargs.pop("mode", None)
        kwargs.pop("dynamic", None)
        forward = self.forward
        self.forward = ABOVE.compiled_forward(
            forward, self, kwargs.get("fullgraph", False), kwargs.get("backend", "inductor"),
            kwargs.get("options"),
        )  # fmt: skip

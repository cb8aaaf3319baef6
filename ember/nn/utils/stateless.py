"""``nn.utils.stateless``: call a module with some parameters/buffers temporarily replaced
(the implementation behind ``ember.func.functional_call``)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from ember._core.tensor import Tensor
from ember.nn.modules.module import Module
from ember.nn.utils._named_member_accessor import NamedMemberAccessor  # noqa: F401

__all__ = ["functional_call"]

_MISSING: Any = object()


def _tie_groups(module: Module) -> dict[str, tuple[str, ...]]:
    """Map each parameter/buffer name whose tensor is reachable under other names too to all
    of those names (a tensor's names form one group)."""
    names_of: dict[int, list[str]] = {}
    every = (
        *module.named_parameters(remove_duplicate=False),
        *module.named_buffers(remove_duplicate=False),
    )
    for name, tensor in every:
        names_of.setdefault(id(tensor), []).append(name)
    return {name: tuple(group) for group in names_of.values() if len(group) > 1 for name in group}


def _spread_over_ties(module: Module, given: dict[str, Tensor]) -> dict[str, Tensor]:
    """Return ``given`` with each value also under every name tied to its key. Names of one
    group given different tensors are an error; the same tensor under several is fine (torch
    raises KeyError when a group is given partly, even consistently: ember does not)."""
    groups = _tie_groups(module)
    spread = dict(given)
    for name, value in given.items():
        group = groups.get(name, ())
        if len({id(given[n]) for n in group if n in given}) > 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(group)}, "
                "which are tied. Consider using tie_weights=False"
            )
        spread.update(dict.fromkeys(group, value))
    return spread


def _get_submodule(root: Module, path: str, memo: dict[str, Module]) -> Module:
    if not path:
        return root
    if path in memo:
        return memo[path]
    prefix, dot, attr = path.rpartition(".")
    module = _get_submodule(root, prefix, memo) if dot else root
    try:
        submodule = getattr(module, attr)
    except AttributeError as ex:
        raise AttributeError(f"{module._get_name()} has no attribute `{attr}`") from ex
    if not isinstance(submodule, Module):
        raise TypeError(f"submodule `{path}`: {submodule} is not an instance of torch.nn.Module")
    memo[path] = submodule
    return submodule


def _swap_tensor(module: Module, name: str, tensor: Any) -> Any:
    """Put ``tensor`` (or remove the entry, for ``_MISSING``) at ``module.<name>``; return the
    previous value (``_MISSING`` when there was none)."""
    if tensor is not _MISSING and not isinstance(tensor, Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for table in (module._parameters, module._buffers):
        if name in table:
            orig = table[name]
            if tensor is not _MISSING:
                table[name] = tensor
            else:
                del table[name]
            return orig
    orig = getattr(module, name) if hasattr(module, name) else _MISSING
    if orig is not _MISSING and not isinstance(orig, Tensor) and orig is not None:
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


def _swap_tensors_dict(
    root: Module, named_tensors: dict[str, Any], memo: dict[str, Module]
) -> dict[str, Any]:
    orig: dict[str, Any] = {}
    try:
        for name, tensor in named_tensors.items():
            prefix, _, attr = name.rpartition(".")
            orig[name] = _swap_tensor(_get_submodule(root, prefix, memo), attr, tensor)
    except Exception:
        for name, tensor in orig.items():
            prefix, _, attr = name.rpartition(".")
            _swap_tensor(_get_submodule(root, prefix, memo), attr, tensor)
        raise
    return orig


@contextlib.contextmanager
def _reparametrize_module(
    module: Module,
    parameters_and_buffers: dict[str, Tensor],
    tie_weights: bool = False,
    strict: bool = False,
) -> Iterator[None]:
    """Context in which ``module``'s tensors named in ``parameters_and_buffers`` are replaced;
    the originals are restored on exit (also on exceptions)."""
    if tie_weights:
        untied = _spread_over_ties(module, parameters_and_buffers)
    else:
        untied = parameters_and_buffers
    if strict:
        keys = set(untied)
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing_keys, unexpected_keys = sorted(valid - keys), sorted(keys - valid)
        error_msgs = []
        if unexpected_keys:
            error_msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected_keys))}.")
        if missing_keys:
            error_msgs.append(f"Missing key(s): {', '.join(map(repr, missing_keys))}.")
        if error_msgs:
            raise RuntimeError(
                "Error(s) in reparametrizing for {}:\n\t{}".format(
                    module._get_name(), "\n\t".join(error_msgs)
                )
            )
    memo: dict[str, Module] = {}
    orig: dict[str, Any] = {}
    try:
        orig = _swap_tensors_dict(module, untied, memo)
        yield
    finally:
        new = _swap_tensors_dict(module, orig, memo)
        # as torch: the caller's dict sees tensors the module re-assigned during the call
        parameters_and_buffers.update({k: new[k] for k in parameters_and_buffers if k in new})


def _functional_call(
    module: Module,
    parameters_and_buffers: dict[str, Tensor],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(
        module, parameters_and_buffers, tie_weights=tie_weights, strict=strict
    ):
        return module(*args, **kwargs)


def functional_call(
    module: Module,
    parameters_and_buffers: dict[str, Tensor],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Deprecated alias of ``ember.func.functional_call`` (one dict only): return
    ``module(*args, **kwargs)`` with the given parameters and buffers substituted."""
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be "
        "removed in a future version of PyTorch. Please use `torch.func.functional_call` "
        "instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return _functional_call(
        module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict
    )

"""NamedMemberAccessor: get, set, swap and delete a module's tensors and submodules by path.

torch's ``torch.nn.utils._named_member_accessor`` (used by ``torch.func`` and stateless calls):
paths such as ``"layer1.conv1.weight"``, with the intermediate submodules cached.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from ember._core.tensor import Tensor
from ember.nn.modules.module import Module

__all__ = ["NamedMemberAccessor", "set_tensor", "swap_tensor", "swap_submodule"]

_MISSING: Tensor = object()  # type: ignore[assignment]


def _name(module: Module) -> str:
    return module._get_name()


def _check_name(name: str, what: str = "tensor") -> None:
    if "." in name:
        raise KeyError(f'{what} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{what} name can\'t be empty string ""')


def set_tensor(module: Module, name: str, tensor: Tensor) -> None:
    """Set ``module``'s parameter, buffer or attribute ``name`` to ``tensor``."""
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")
    if not isinstance(tensor, Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    _check_name(name)
    if name in module._parameters:
        module._parameters[name] = tensor
    elif name in module._buffers:
        module._buffers[name] = tensor
    else:
        setattr(module, name, tensor)


def swap_tensor(module: Module, name: str, tensor: Tensor, allow_missing: bool = False) -> Tensor:
    """Set ``module.<name>`` to ``tensor`` (``_MISSING`` deletes it); return the old value."""
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")
    if tensor is not _MISSING and not isinstance(tensor, Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    _check_name(name)
    # a registered parameter or buffer is swapped in its table, keeping its kind
    for table in (module._parameters, module._buffers):
        if name in table:
            orig = table.pop(name) if tensor is _MISSING else table[name]
            if tensor is not _MISSING:
                table[name] = tensor
            return orig
    # any other attribute: it must hold a tensor (or None), or be absent when allowed
    if hasattr(module, name):
        orig = getattr(module, name)
    else:
        if not allow_missing:
            raise AttributeError(f"{_name(module)} has no attribute `{name}`")
        orig = _MISSING
    if orig is not _MISSING and not isinstance(orig, Tensor) and orig is not None:
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


def swap_submodule(module: Module, name: str, submodule: Module) -> Module:
    """Replace ``module``'s child ``name`` by ``submodule``; return the old child."""
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")
    if not isinstance(submodule, Module):
        raise TypeError(f"{submodule} is not an instance of torch.nn.Module")
    _check_name(name, "submodule")
    if name not in module._modules:
        raise KeyError(f"submodule {name} does not exist")
    orig = module._modules[name]
    if not isinstance(orig, Module):
        raise TypeError(f"{name} attribute is not an instance of torch.nn.Module")
    module._modules[name] = submodule
    return orig


def _same_length(names, values):
    names = names if isinstance(names, (list, tuple)) else list(names)
    values = values if isinstance(values, (list, tuple)) else list(values)
    if len(names) != len(values):
        raise AssertionError(
            "names and values must have the same length, "
            f"got {len(names)} names and {len(values)} values"
        )
    return names, values


class NamedMemberAccessor:
    """Access a module's submodules, parameters and buffers by dotted path, caching lookups."""

    def _owner(self, path: str) -> tuple[Module, str]:
        # the (cached) module holding the last component of ``path``, and that component
        parent, _, leaf = path.rpartition(".")
        return self.get_submodule(parent), leaf

    def __init__(self, module: Module) -> None:
        self.module = module
        self.memo: dict[str, Module] = {}

    def get_submodule(self, name: str) -> Module:
        """Return the submodule at ``name`` (``""``: the module itself)."""
        if not name:
            return self.module
        if name in self.memo:
            return self.memo[name]
        prefix, dot, attr = name.rpartition(".")
        module = self.get_submodule(prefix) if dot else self.module
        try:
            submodule = getattr(module, attr)
        except AttributeError as ex:
            raise AttributeError(f"{_name(module)} has no attribute `{attr}`") from ex
        if not isinstance(submodule, Module):
            raise TypeError(
                f"submodule `{name}`: {submodule} is not an instance of torch.nn.Module"
            )
        self.memo[name] = submodule
        return submodule

    def swap_submodule(self, path: str, value: Module) -> Module:
        """Replace the submodule at ``path`` by ``value``; return the old one."""
        return swap_submodule(*self._owner(path), value)

    def get_tensor(self, name: str) -> Tensor:
        """Return the tensor at ``name`` (e.g. ``"layer1.conv1.weight"``)."""
        submodule, attr = self._owner(name)
        try:
            tensor = getattr(submodule, attr)
        except AttributeError as ex:
            raise AttributeError(f"{_name(submodule)} has no attribute `{name}`") from ex
        if not isinstance(tensor, Tensor) and tensor is not None:
            raise TypeError(f"{tensor} is not an instance of torch.Tensor")
        return tensor

    def set_tensor(self, name: str, value: Tensor) -> None:
        """Set the tensor at ``name`` to ``value``."""
        set_tensor(*self._owner(name), value)

    def del_tensor(self, name: str) -> None:
        """Delete the tensor at ``name``."""
        submodule, attr = self._owner(name)
        try:
            delattr(submodule, attr)
        except AttributeError as ex:
            raise AttributeError(f"{_name(submodule)} has no attribute `{name}`") from ex

    def swap_tensor(self, name: str, value: Tensor, allow_missing: bool = False) -> Tensor:
        """Set the tensor at ``name`` to ``value``; return the old one."""
        owner, attr = self._owner(name)
        return swap_tensor(owner, attr, value, allow_missing=allow_missing)

    def get_tensors(self, names: Iterable[str]) -> list[Tensor]:
        """Return the tensors at ``names``."""
        return list(map(self.get_tensor, names))

    def set_tensors(self, names: Iterable[str], values: Iterable[Tensor]) -> None:
        """Set the tensors at ``names`` to ``values``."""
        names, values = _same_length(names, values)
        for name, value in zip(names, values):
            self.set_tensor(name, value)

    def set_tensors_dict(self, named_tensors: dict[str, Tensor]) -> None:
        """Set each tensor at a key of ``named_tensors`` to its value."""
        for name, value in named_tensors.items():
            self.set_tensor(name, value)

    def del_tensors(self, names: Iterable[str]) -> None:
        """Delete the tensors at ``names``."""
        for name in names:
            self.del_tensor(name)

    def swap_tensors(
        self, names: Iterable[str], values: Iterable[Tensor], allow_missing: bool = False
    ) -> list[Tensor]:
        """Set the tensors at ``names`` to ``values``; return the old ones."""
        names, values = _same_length(names, values)
        return [self.swap_tensor(n, v, allow_missing=allow_missing) for n, v in zip(names, values)]

    def swap_tensors_dict(
        self, named_tensors: dict[str, Tensor], allow_missing: bool = False
    ) -> tuple[dict[str, Tensor], list[str]]:
        """Swap in ``named_tensors``; return the old tensors and the keys that were missing.

        On an error (or missing keys without ``allow_missing``) every swap is undone.
        """
        previous: dict[str, Tensor] = {}

        def undo() -> None:
            # put back what was swapped out (absent ones are deleted again)
            for path, old in previous.items():
                self.swap_tensor(path, old, allow_missing=True)

        try:
            for path, tensor in named_tensors.items():
                previous[path] = self.swap_tensor(path, tensor, allow_missing=True)
        except Exception:
            undo()
            raise
        missing = [path for path, old in previous.items() if old is _MISSING]
        if missing and not allow_missing:
            undo()
            raise RuntimeError(f"Missing key(s): {', '.join(map(repr, missing))}.")
        return previous, missing

    def check_keys(self, keys: Iterable[str]) -> tuple[list[str], list[str]]:
        """Return the sorted missing and unexpected keys of ``keys`` against the module's."""
        given = set(keys)
        known = {path for path, _ in self.named_tensors(remove_duplicate=False)}
        return sorted(known - given), sorted(given - known)

    # the module's own iterators, under the accessor's names
    def named_parameters(self, remove_duplicate: bool = True) -> Iterable[tuple[str, Tensor]]:
        """Iterate over the module's parameters."""
        return self.module.named_parameters(remove_duplicate=remove_duplicate)

    def named_buffers(self, remove_duplicate: bool = True) -> Iterable[tuple[str, Tensor]]:
        """Iterate over the module's buffers."""
        return self.module.named_buffers(remove_duplicate=remove_duplicate)

    def named_tensors(self, remove_duplicate: bool = True) -> Iterable[tuple[str, Tensor]]:
        """Iterate over the module's parameters, then its buffers."""
        return itertools.chain(
            self.named_parameters(remove_duplicate), self.named_buffers(remove_duplicate)
        )

    def named_modules(self, remove_duplicate: bool = True) -> Iterable[tuple[str, Module]]:
        """Iterate over the module's submodules (itself first)."""
        return self.module.named_modules(remove_duplicate=remove_duplicate)

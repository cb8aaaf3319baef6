"""NamedMemberAccessor: get, set, swap and delete a module's tensors and submodules by path.

torch's ``torch.nn.utils._named_member_accessor`` (used by ``torch.func`` and stateless calls):
paths such as ``"layer1.conv1.weight"``, with the intermediate submodules cached.
"""

from __future__ import annotations

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
    if name in module._parameters:
        orig = module._parameters[name]
        if tensor is not _MISSING:
            module._parameters[name] = tensor
        else:
            del module._parameters[name]
    elif name in module._buffers:
        orig = module._buffers[name]
        if tensor is not _MISSING:
            module._buffers[name] = tensor
        else:
            del module._buffers[name]
    else:
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
        prefix, _, attr = path.rpartition(".")
        return swap_submodule(self.get_submodule(prefix), attr, value)

    def get_tensor(self, name: str) -> Tensor:
        """Return the tensor at ``name`` (e.g. ``"layer1.conv1.weight"``)."""
        prefix, _, attr = name.rpartition(".")
        submodule = self.get_submodule(prefix)
        try:
            tensor = getattr(submodule, attr)
        except AttributeError as ex:
            raise AttributeError(f"{_name(submodule)} has no attribute `{name}`") from ex
        if not isinstance(tensor, Tensor) and tensor is not None:
            raise TypeError(f"{tensor} is not an instance of torch.Tensor")
        return tensor

    def set_tensor(self, name: str, value: Tensor) -> None:
        """Set the tensor at ``name`` to ``value``."""
        prefix, _, attr = name.rpartition(".")
        set_tensor(self.get_submodule(prefix), attr, value)

    def del_tensor(self, name: str) -> None:
        """Delete the tensor at ``name``."""
        prefix, _, attr = name.rpartition(".")
        submodule = self.get_submodule(prefix)
        try:
            delattr(submodule, attr)
        except AttributeError as ex:
            raise AttributeError(f"{_name(submodule)} has no attribute `{name}`") from ex

    def swap_tensor(self, name: str, value: Tensor, allow_missing: bool = False) -> Tensor:
        """Set the tensor at ``name`` to ``value``; return the old one."""
        prefix, _, attr = name.rpartition(".")
        return swap_tensor(self.get_submodule(prefix), attr, value, allow_missing=allow_missing)

    def get_tensors(self, names: Iterable[str]) -> list[Tensor]:
        """Return the tensors at ``names``."""
        return [self.get_tensor(name) for name in names]

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
        return [
            self.swap_tensor(name, value, allow_missing=allow_missing)
            for name, value in zip(names, values)
        ]

    def swap_tensors_dict(
        self, named_tensors: dict[str, Tensor], allow_missing: bool = False
    ) -> tuple[dict[str, Tensor], list[str]]:
        """Swap in ``named_tensors``; return the old tensors and the keys that were missing.

        On an error (or missing keys without ``allow_missing``) every swap is undone.
        """
        orig_named_tensors = {}
        missing_keys = []
        try:
            for name, tensor in named_tensors.items():
                orig_tensor = self.swap_tensor(name, tensor, allow_missing=True)
                if orig_tensor is _MISSING:
                    missing_keys.append(name)
                orig_named_tensors[name] = orig_tensor
        except Exception:
            for name, orig_tensor in orig_named_tensors.items():
                self.swap_tensor(name, orig_tensor, allow_missing=True)
            raise
        if missing_keys and not allow_missing:
            for name, orig_tensor in orig_named_tensors.items():
                self.swap_tensor(name, orig_tensor, allow_missing=True)
            raise RuntimeError(f"Missing key(s): {', '.join(map(repr, missing_keys))}.")
        return orig_named_tensors, missing_keys

    def check_keys(self, keys: Iterable[str]) -> tuple[list[str], list[str]]:
        """Return the sorted missing and unexpected keys of ``keys`` against the module's."""
        keys = set(keys)
        valid_keys = {name for name, _ in self.named_tensors(remove_duplicate=False)}
        return sorted(valid_keys - keys), sorted(keys - valid_keys)

    def named_parameters(self, remove_duplicate: bool = True) -> Iterable[tuple[str, Tensor]]:
        """Iterate over the module's parameters."""
        yield from self.module.named_parameters(remove_duplicate=remove_duplicate)

    def named_buffers(self, remove_duplicate: bool = True) -> Iterable[tuple[str, Tensor]]:
        """Iterate over the module's buffers."""
        yield from self.module.named_buffers(remove_duplicate=remove_duplicate)

    def named_tensors(self, remove_duplicate: bool = True) -> Iterable[tuple[str, Tensor]]:
        """Iterate over the module's parameters, then its buffers."""
        yield from self.module.named_parameters(remove_duplicate=remove_duplicate)
        yield from self.module.named_buffers(remove_duplicate=remove_duplicate)

    def named_modules(self, remove_duplicate: bool = True) -> Iterable[tuple[str, Module]]:
        """Iterate over the module's submodules (itself first)."""
        yield from self.module.named_modules(remove_duplicate=remove_duplicate)

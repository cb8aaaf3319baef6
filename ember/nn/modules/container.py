"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

import itertools
import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, islice

from ember._core.tensor import Tensor
from ember.nn.modules.module import Module, _addindent, _typename
from ember.nn.parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _abs_index(idx, size: int) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx + size if idx < 0 else idx


def _shift_insert(table: dict, index: int, module) -> None:
    """Insert ``module`` under key ``str(index)`` of a "0".."n-1"-keyed table, moving the
    entries from ``index`` on one key up (last first, so none is overwritten) in place."""
    for pos in reversed(range(index, len(table))):
        table[str(pos + 1)] = table[str(pos)]
    table[str(index)] = module


def _checked_pairs(kind: str, pairs):
    """Yield the (key, value) pairs of an update sequence, each checked as it is reached."""
    for j, pair in enumerate(pairs):
        if not isinstance(pair, Iterable):
            raise TypeError(
                f"{kind} update sequence element #{j} should be Iterable; is{type(pair).__name__}"
            )
        if len(pair) != 2:
            raise ValueError(
                f"{kind} update sequence element #{j} has length {len(pair)}; 2 is required"
            )
        yield pair[0], pair[1]


def _renumber(module: Module) -> None:
    # keys stay "0".."n-1" after a deletion, as torch
    values = list(module._modules.values())
    module.__dict__["_modules"] = {str(i): m for i, m in enumerate(values)}


class Sequential(Module):
    """Modules run one after another: ``Sequential(*modules)`` or ``Sequential(OrderedDict)``."""

    def __init__(self, *args) -> None:
        super().__init__()
        # one OrderedDict names the modules; otherwise they are numbered
        named = len(args) == 1 and isinstance(args[0], OrderedDict)
        pairs = args[0].items() if named else ((str(i), m) for i, m in enumerate(args))
        for key, module in pairs:
            self.add_module(key, module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            # a slice keeps the keys (and the subclass)
            kept = list(self._modules)[idx]
            return type(self)(OrderedDict((k, self._modules[k]) for k in kept))
        i = _abs_index(idx, len(self))
        return next(islice(self._modules.values(), i, None))

    def __setitem__(self, idx, module: Module) -> None:
        key = list(self._modules.keys())[_abs_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            key = list(self._modules.keys())[_abs_index(idx, len(self))]
            delattr(self, key)
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                "add operator supports only objects of Sequential class, but "
                f"{str(type(other))} is given."
            )
        ret = Sequential()
        for layer in chain(self, other):
            ret.append(layer)
        return ret

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                "add operator supports only objects of Sequential class, but "
                f"{str(type(other))} is given."
            )
        return self.extend(other)

    def __mul__(self, other: int) -> Sequential:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        ret = Sequential()
        for _ in range(other):
            for layer in self:
                ret.append(layer)
        return ret

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def pop(self, key) -> Module:
        """Remove and return the module at index ``key``."""
        v = self[key]
        del self[key]
        return v

    def append(self, module: Module) -> Sequential:
        """Append ``module`` at the end; return self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert ``module`` before ``index``; return self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not (-n <= index <= n):
            raise IndexError(f"Index out of range: {index}")
        _shift_insert(self._modules, index + n if index < 0 else index, module)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Append every module of ``sequential``; return self."""
        for layer in sequential:
            self.append(layer)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered (unlike a plain Python list)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            # a slice is a new list of the same modules (renumbered from 0)
            return type(self)(list(self)[idx])
        return self._modules[str(_abs_index(idx, len(self)))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_abs_index(idx, len(self))), module)

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_abs_index(idx, len(self))))
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        # always a plain ModuleList, numbered from 0
        return ModuleList(chain(self, other))

    def __repr__(self) -> str:
        reprs = [repr(item) for item in self]
        if not reprs:
            return self._get_name() + "()"
        spans = [[0, 0]]
        blocks = [reprs[0]]
        for i, r in enumerate(reprs[1:], 1):
            if r == blocks[-1]:
                spans[-1][1] += 1
                continue
            spans.append([i, i])
            blocks.append(r)
        lines = []
        for (start, end), b in zip(spans, blocks):
            local = f"({start}): {b}"
            if start != end:
                local = f"({start}-{end}): {end - start + 1} x {b}"
            lines.append(_addindent(local, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before ``index``."""
        # no range check, as torch: an index past the end becomes that key
        _shift_insert(self._modules, index, module)

    def append(self, module: Module) -> ModuleList:
        """Append ``module`` at the end; return self."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key) -> Module:
        """Remove and return the module at index ``key``."""
        v = self[key]
        del self[key]
        return v

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append the modules of an iterable; return self."""
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


class ModuleDict(Module):
    """An ordered dict of modules, registered."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove all modules."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove and return the module of ``key``."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        """Return the keys."""
        return self._modules.keys()

    def items(self):
        """Return the (key, module) pairs."""
        return self._modules.items()

    def values(self):
        """Return the modules."""
        return self._modules.values()

    def update(self, modules) -> None:
        """Update from a mapping or an iterable of (key, module) pairs."""
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an "
                "iterable of key/value pairs, but got " + type(modules).__name__
            )
        # a mapping (or another ModuleDict) keeps its own order; anything else is a sequence
        # of pairs
        if isinstance(modules, (Mapping, ModuleDict)):
            pairs = modules.items()
        else:
            pairs = _checked_pairs("ModuleDict", modules)
        for key, module in pairs:
            self[key] = module


def _param_line(k, p, dtype_text) -> str:
    if isinstance(p, Tensor):
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        size = "x".join(map(str, p.shape))
        return f"  ({k}): {kind} containing: [{dtype_text(p)} of size {size}]"
    return f"  ({k}): Object of type: {type(p).__name__}"


class ParameterList(Module):
    """A list of parameters (tensors become Parameters), registered."""

    def __init__(self, values: Iterable | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            start, stop, step = idx.indices(len(self))
            out = self.__class__()
            for i in range(start, stop, step):
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(idx, len(self))))

    def __setitem__(self, idx: int, param) -> None:
        idx = _abs_index(idx, len(self))
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        return setattr(self, str(idx), param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return (self[i] for i in range(self._size))

    def __iadd__(self, parameters: Iterable) -> ParameterList:
        return self.extend(parameters)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value) -> ParameterList:
        """Append ``value`` (a tensor becomes a Parameter); return self."""
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values: Iterable) -> ParameterList:
        """Append the values of an iterable; return self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(
                "ParameterList.extend should be called with an iterable, but got "
                + type(values).__name__
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_param_line(k, p, lambda t: t.dtype) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (tensors become Parameters), registered."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key) -> str:
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is "
                f"not a string (type is '{type(key).__name__}'). Open an issue on "
                "github if you need non-string keys."
            )
        return key

    def __getitem__(self, key: str):
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key: str, value) -> None:
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """Return a shallow copy."""
        return ParameterDict(OrderedDict(self.items()))

    def setdefault(self, key: str, default=None):
        """Return ``self[key]``, first setting it to ``default`` if absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove all items."""
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str):
        """Remove and return the value of ``key``."""
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        """Remove and return the last inserted (key, value) pair."""
        k, _ = self._keys.popitem()
        self._keys[k] = None
        val = self[k]
        del self[k]
        return k, val

    def get(self, key: str, default=None):
        """Return ``self[key]`` if present, else ``default``."""
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default=None) -> ParameterDict:
        """Return a new ParameterDict with ``keys`` all set to ``default``."""
        return ParameterDict(zip(keys, itertools.repeat(default)))

    def keys(self):
        """Return the keys."""
        return self._keys.keys()

    def items(self):
        """Return the (key, value) pairs."""
        return ((k, self[k]) for k in self._keys)

    def values(self):
        """Return the values."""
        return (self[k] for k in self._keys)

    def update(self, parameters) -> None:
        """Update from a mapping or an iterable of (key, value) pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an "
                "iterable of key/value pairs, but got " + type(parameters).__name__
            )
        # ordered mappings keep their order; a plain mapping is taken in sorted key order
        # (as torch); anything else is a sequence of pairs
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = parameters.items()
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = _checked_pairs("ParameterDict", parameters)
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(_param_line(k, p, _typename) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

"""Small helpers of the layers: ``_pair`` and friends, and state-dict prefix stripping."""

from __future__ import annotations

import collections.abc
from itertools import chain, repeat
from typing import Any

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


class _functional:
    """``_fn = _functional("max_pool2d")``: a layer's ``nn.functional`` function, looked up in
    ``nn.functional`` each time the layer runs, as torch's layers call ``F.max_pool2d``: a
    function patched into ``nn.functional`` (FLOP counters, tracers) is the one that runs."""

    __slots__ = ("name",)
    module = None  # ember.nn.functional, once imported

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj, owner=None):
        if _functional.module is None:
            import ember.nn.functional

            _functional.module = ember.nn.functional
        return getattr(_functional.module, self.name)


def _fields(module, *names: str, bare: int = 0) -> str:
    """A layer's ``extra_repr``: its attributes ``names`` as ``name=value``, the first ``bare``
    of them as the value alone (``LocalResponseNorm``'s ``2, alpha=...``)."""
    return ", ".join(
        str(getattr(module, n)) if i < bare else f"{n}={getattr(module, n)}"
        for i, n in enumerate(names)
    )


def _constants_repr(module) -> str:
    """``extra_repr`` of a layer whose repr lists its ``__constants__``, as ``name=value``."""
    return _fields(module, *type(module).__constants__)


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """Reverse ``t`` and repeat each element ``n`` times (conv padding to ``F.pad`` order)."""
    return tuple(chain.from_iterable(repeat(x, n) for x in reversed(t)))


def _list_with_default(out_size, defaults):
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size) :])]


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` (e.g. DataParallel's ``"module."``) from the keys of ``state_dict``
    and of its ``_metadata``, in place."""
    _strip_prefix(state_dict, prefix, lambda key: key.startswith(prefix))
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        # the metadata also has an entry for the wrapped module itself, under its bare name
        # ("module" for "module."), which becomes the root's entry ""; the root's own stays
        bare = prefix.replace(".", "")
        _strip_prefix(
            metadata, prefix, lambda key: key != "" and (key == bare or key.startswith(prefix))
        )


def _strip_prefix(mapping: dict, prefix: str, renamed) -> None:
    # move each key ``renamed`` selects to the key without the prefix (at the end, in order)
    for key in [k for k in mapping if renamed(k)]:
        mapping[key[len(prefix) :]] = mapping.pop(key)

"""Collation: merge a list of samples into a batch (``default_collate``), or convert one sample's
NumPy arrays to tensors (``default_convert``), as ``torch.utils.data``.

In a DataLoader worker, a batch of tensors is stacked straight into shared memory, so sending it
to the main process moves only a file descriptor.
"""

from __future__ import annotations

import collections
import copy
import re
from collections.abc import Callable

import numpy as np

import ember
from ember._core.tensor import Tensor, _wrap

__all__ = [
    "collate",
    "collate_float_fn",
    "collate_int_fn",
    "collate_numpy_array_fn",
    "collate_numpy_scalar_fn",
    "collate_str_fn",
    "collate_tensor_fn",
    "default_collate",
    "default_collate_fn_map",
    "default_convert",
]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _text_or_object(dtype) -> bool:
    """Whether a NumPy dtype holds strings, bytes or objects (such arrays are not tensors)."""
    return np_str_obj_array_pattern.search(dtype.str) is not None


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _rebuild(template, values):
    """``values`` (a dict for a mapping, a list for a sequence) in ``template``'s own container
    type: a mutable container is copied and filled in place (keeping its other state), any
    other is called with ``values``; a type that cannot be built either way gives ``values``
    as a plain dict or list."""
    if isinstance(values, dict):
        mutable, fill = collections.abc.MutableMapping, _fill_mapping
    else:
        mutable, fill = collections.abc.MutableSequence, _fill_sequence
    try:
        if isinstance(template, mutable):
            out = copy.copy(template)
            fill(out, values)
            return out
        return type(template)(values)
    except TypeError:
        return values


def _fill_mapping(out, values: dict) -> None:
    out.update(values)


def _fill_sequence(out, values: list) -> None:
    for position, value in enumerate(values):
        out[position] = value


def default_convert(data):
    """Return ``data`` with every NumPy array and NumPy scalar in it converted to a tensor,
    recursing into mappings, namedtuples, tuples (which become lists) and sequences; anything
    else (strings, arrays of strings or objects) is returned unchanged."""
    if isinstance(data, Tensor):
        return data
    kind = type(data)
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_"):
        if kind is np.ndarray and _text_or_object(data.dtype):
            return data
        return ember.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {key: default_convert(data[key]) for key in data})
    if _is_namedtuple(data):
        return kind(*map(default_convert, data))
    if isinstance(data, tuple):
        return list(map(default_convert, data))  # a tuple becomes a list, as in torch
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, list(map(default_convert, data)))
    return data


def _registered(elem, collate_fn_map):
    """The collate function ``collate_fn_map`` has for ``elem``: its exact type's, else the
    first key (in insertion order) ``elem`` is an instance of; None if neither."""
    if collate_fn_map is None:
        return None
    exact = collate_fn_map.get(type(elem))
    if exact is not None:
        return exact
    for key, fn in collate_fn_map.items():
        if isinstance(elem, key):
            return fn
    return None


def collate(batch, *, collate_fn_map: dict[type | tuple[type, ...], Callable] | None = None):
    """Return ``batch`` (a list of samples) collated: the function registered in
    ``collate_fn_map`` for the samples' type (exact type first, then the first key the samples
    are an instance of) merges leaves; mappings, namedtuples and sequences are collated field by
    field."""
    first = batch[0]
    leaf = _registered(first, collate_fn_map)
    if leaf is not None:
        return leaf(batch, collate_fn_map=collate_fn_map)

    def merge(samples):
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(first, collections.abc.Mapping):
        return _rebuild(first, {key: merge([sample[key] for sample in batch]) for key in first})
    if _is_namedtuple(first):
        return type(first)(*map(merge, zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        if len({len(sample) for sample in batch}) > 1:
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [merge(column) for column in zip(*batch)]  # columns stay tuples, as torch's
        return fields if isinstance(first, tuple) else _rebuild(first, fields)
    raise TypeError(default_collate_err_msg_format.format(type(first)))


def _stack_shared(batch) -> Tensor | None:
    """Stack equal-shape, equal-dtype tensors that need no graph straight into shared memory;
    return None for anything else (``ember.stack`` then promotes, or raises torch's error)."""
    from ember.multiprocessing._shared_memory import new_shared_array

    elem = batch[0]
    shape, dtype = elem._data.shape, elem._data.dtype
    for t in batch:
        if t._data.shape != shape or t._data.dtype != dtype or t._requires_grad:
            return None
    out = new_shared_array((len(batch), *shape), dtype)
    np.stack([t._data for t in batch], out=out)
    return _wrap(out)


def collate_tensor_fn(batch, *, collate_fn_map=None) -> Tensor:
    """Stack a batch of tensors along a new first dimension (in a worker: in shared memory)."""
    from ember.utils.data._utils.worker import get_worker_info

    if get_worker_info() is not None:
        out = _stack_shared(batch)
        if out is not None:
            return out
    return ember.stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """Collate NumPy arrays as tensors (arrays of strings or objects raise)."""
    dtype = batch[0].dtype
    if _text_or_object(dtype):
        raise TypeError(default_collate_err_msg_format.format(dtype))
    return collate(list(map(ember.as_tensor, batch)), collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None) -> Tensor:
    """Collate NumPy scalars into a 1-d tensor of their dtype."""
    return ember.as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None) -> Tensor:
    """Collate Python floats into a float64 tensor (not the default dtype), as torch."""
    return ember.tensor(batch, dtype=ember.float64)


def collate_int_fn(batch, *, collate_fn_map=None) -> Tensor:
    """Collate Python ints (int64) or bools (bool) into a tensor."""
    return ember.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    """Keep strings and bytes as the list they came in."""
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Return ``batch`` (a list of samples) merged into a batch with a new outer dimension.

    Tensors, NumPy arrays and NumPy scalars -> a stacked tensor; ``float`` -> a float64 tensor;
    ``int`` -> an int64 tensor (``bool`` -> bool); ``str``/``bytes`` -> the list unchanged;
    a mapping -> the same mapping of collated values; a namedtuple -> the same namedtuple of
    collated fields; a tuple -> a list, and another sequence -> the same sequence, of collated
    fields. Extend it by adding ``type: fn(batch, *, collate_fn_map)`` entries to
    ``default_collate_fn_map``.
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)

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


def default_convert(data):
    """Return ``data`` with every NumPy array and NumPy scalar in it converted to a tensor,
    recursing into mappings, namedtuples, tuples (which become lists) and sequences; anything
    else (strings, arrays of strings or objects) is returned unchanged."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return ember.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:  # the mapping type cannot be built from a dict
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # torch's backwards compatibility
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map: dict[type | tuple[type, ...], Callable] | None = None):
    """Return ``batch`` (a list of samples) collated: the function registered in
    ``collate_fn_map`` for the samples' type (exact type first, then the first key the samples
    are an instance of) merges leaves; mappings, namedtuples and sequences are collated field by
    field."""
    elem = batch[0]
    elem_type = type(elem)

    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(
                    {
                        key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                        for key in elem
                    }
                )
                return clone
            return elem_type(
                {
                    key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                    for key in elem
                }
            )
        except TypeError:
            return {
                key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem
            }
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(
            *(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch))
        )
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type(
                [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
            )
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]

    raise TypeError(default_collate_err_msg_format.format(elem_type))


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
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([ember.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


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

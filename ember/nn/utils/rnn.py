"""Variable-length sequences for recurrent layers (torch.nn.utils.rnn).

A ``PackedSequence`` stores the timesteps of a batch of sequences sorted longest first, time
major: ``data`` holds, for each step ``t``, the rows of the ``batch_sizes[t]`` sequences still
running. Packing and padding are one ``index_select`` each (so gradients flow through them);
the indices are computed in NumPy from the lengths.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

import ember
from ember._core.tensor import Tensor
from ember._ops.registry import _shapes_broadcast_error, dispatch, op

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """Holds the data and ``batch_sizes`` of a packed batch of sequences (see module doc)."""

    def __new__(
        cls,
        data: Tensor,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """Return a copy with ``data`` converted by ``Tensor.to`` (the same object if unchanged)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self, *args, **kwargs) -> PackedSequence:
        return self.to("cpu")

    def pin_memory(self) -> PackedSequence:
        return self

    def double(self) -> PackedSequence:
        return self.to(dtype=ember.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=ember.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=ember.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=ember.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=ember.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=ember.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=ember.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=ember.uint8)

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """Return the inverse of ``permutation`` (``None`` stays ``None``)."""
    if permutation is None:
        return None
    inv = np.empty_like(permutation._data)
    inv[permutation._data] = np.arange(inv.size, dtype=inv.dtype)
    return ember.from_numpy(inv)


def _batch_sizes(lengths: np.ndarray) -> np.ndarray:
    # batch_sizes[t] = how many sequences are longer than t (lengths sorted longest first)
    steps = np.arange(int(lengths[0]) if lengths.size else 0)
    return (lengths[None, :] > steps[:, None]).sum(1).astype(np.int64)


def _packed_rows(batch_sizes: np.ndarray, stride_t: int, stride_b: int) -> np.ndarray:
    """Flat padded positions (``t * stride_t + b * stride_b``) of the packed rows, in order."""
    t = np.repeat(np.arange(batch_sizes.size), batch_sizes)
    starts = np.concatenate(([0], np.cumsum(batch_sizes)[:-1]))
    b = np.arange(t.size) - np.repeat(starts, batch_sizes)
    return t * stride_t + b * stride_b


@op("pack_padded_sequence", grad_fn="PackPaddedSequenceBackward0")
def _pack_rows(x, rows):
    return x.reshape(-1, *x.shape[2:])[rows]


@_pack_rows.backward
def _(ctx, g, rows):
    shape, dtype = ctx._input_meta[0]
    flat = ember.zeros((shape[0] * shape[1], *shape[2:]), dtype=dtype)
    return flat.index_add(0, ember.from_numpy(rows), g).view(shape)


def pack_padded_sequence(
    input: Tensor,
    lengths: Tensor | list[int],
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Return a ``PackedSequence`` of the padded batch ``input`` with sequence ``lengths``."""
    lens = np.asarray(lengths._data if isinstance(lengths, Tensor) else lengths, dtype=np.int64)
    sorted_indices = None
    batch_dim = 0 if batch_first else 1
    if not enforce_sorted:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = ember.from_numpy(order.astype(np.int64))
        input = input.index_select(batch_dim, sorted_indices)
    B = input.shape[batch_dim]
    if lens.size != B:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
            f"(batch_size={B})"
        )
    if lens.size and lens[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if np.any(np.diff(lens) > 0):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
            "sidestep this requirement if you do not need ONNX exportability."
        )
    batch_sizes = _batch_sizes(lens)
    T = input.shape[1 - batch_dim]
    rows = _packed_rows(batch_sizes, 1, T) if batch_first else _packed_rows(batch_sizes, B, 1)
    data = dispatch(_pack_rows, (input,), {"rows": rows})
    return PackedSequence(data, ember.from_numpy(batch_sizes), sorted_indices, None)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Return ``(padded, lengths)``: the inverse of ``pack_padded_sequence``."""
    batch_sizes = sequence.batch_sizes._data
    T = batch_sizes.size
    if total_length is not None:
        if total_length < T:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being {T}"
            )
        T = total_length
    data = sequence.data
    B = int(batch_sizes[0]) if batch_sizes.size else 0
    rest = tuple(data.shape[1:])
    n = data.shape[0]
    # padded position -> packed row, or the extra padding row n
    where = np.full(T * B, n, dtype=np.int64)
    where[_packed_rows(batch_sizes, B, 1)] = np.arange(n)
    pad = ember.full((1, *rest), padding_value, dtype=data.dtype)
    padded = ember.cat([data, pad]).index_select(0, ember.from_numpy(where)).view(T, B, *rest)
    lengths = (batch_sizes[None, :] > np.arange(B)[:, None]).sum(1).astype(np.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    unsorted = sequence.unsorted_indices
    if unsorted is not None:
        padded = padded.index_select(0 if batch_first else 1, unsorted)
        lengths = lengths[unsorted._data]
    return padded, ember.from_numpy(lengths)


def pad_sequence(
    sequences: Tensor | list[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Return the sequences stacked along a new batch dim, padded to the longest one."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            "pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences)}"
        )
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    longest = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences[1:]:
        if tuple(s.shape[1:]) != trailing:
            # torch copies each sequence into a buffer shaped by the first one
            err = _shapes_broadcast_error([(s.shape[0], *trailing), tuple(s.shape)])
            if err is not None:
                raise err
    rows = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            pad = ember.full((missing, *s.shape[1:]), padding_value, dtype=s.dtype)
            s = ember.cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    return ember.stack(rows, 0 if batch_first else 1)


def unpad_sequence(
    padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False
) -> list[Tensor]:
    """Return the list of sequences of a padded batch, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[: int(n)] for seq, n in zip(padded_sequences, lengths)]


def pack_sequence(sequences: list[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Return a ``PackedSequence`` of a list of variable-length sequences."""
    lengths = ember.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Return the list of sequences held by a ``PackedSequence``."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

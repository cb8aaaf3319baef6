"""Datasets, as ``torch.utils.data.dataset``: the map-style ``Dataset`` (``__getitem__`` and
``__len__``), the iterable-style ``IterableDataset`` (``__iter__``), and the combinators
``TensorDataset``, ``StackDataset``, ``ConcatDataset``, ``ChainDataset``, ``Subset`` and
``random_split``."""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import warnings
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

from ember._core.tensor import Tensor

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """A map from keys to samples: subclasses define ``__getitem__`` (and usually ``__len__``,
    which the default samplers and ``len(DataLoader)`` need). A ``__getitems__(indices)`` method,
    if defined, fetches a whole batch at once."""

    def __getitem__(self, index) -> _T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[_T_co]) -> ConcatDataset[_T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], Iterable[_T_co]):
    """A stream of samples: subclasses define ``__iter__``. With ``num_workers > 0`` every worker
    iterates its own copy; use ``get_worker_info()`` in ``__iter__`` (or a ``worker_init_fn``)
    to give each worker its share, or the data is yielded once per worker."""

    def __add__(self, other: Dataset[_T_co]):
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Samples are ``tuple(t[i] for t in tensors)``; all tensors have the same first size."""

    tensors: tuple[Tensor, ...]

    def __init__(self, *tensors: Tensor) -> None:
        if len({t.size(0) for t in tensors}) > 1:  # (no tensors at all is allowed)
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(map(operator.itemgetter(index), self.tensors))

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Samples are tuples (``StackDataset(a, b)``) or dicts (``StackDataset(x=a, y=b)``) of the
    samples of equally long datasets at the same index."""

    datasets: tuple | dict

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or"
                "``dict``- (via ``kwargs``) like input/output, but both types are given."
            )
        if not (args or kwargs):
            raise ValueError("At least one dataset should be passed")
        # samples are tuples for positional datasets, dicts for keyword ones
        self.datasets = args or kwargs
        members = list(kwargs.values()) if kwargs else list(args)
        self._length = len(members[0])
        if any(len(member) != self._length for member in members[1:]):
            raise ValueError("Size mismatch between datasets")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: member[index] for key, member in self.datasets.items()}
        return tuple(member[index] for member in self.datasets)

    def _column(self, dataset, indices: list) -> list:
        if _batch_getter(dataset) is not None:
            items = dataset.__getitems__(indices)
            if len(items) != len(indices):
                raise ValueError(
                    "Nested dataset's output size mismatch."
                    f" Expected {len(indices)}, got {len(items)}"
                )
            return items
        return [dataset[idx] for idx in indices]

    def __getitems__(self, indices: list):
        if isinstance(self.datasets, dict):
            batch: list = [{} for _ in indices]
            for k, dataset in self.datasets.items():
                for sample, data in zip(batch, self._column(dataset, indices)):
                    sample[k] = data
            return batch
        columns = [self._column(dataset, indices) for dataset in self.datasets]
        return [tuple(sample) for sample in zip(*columns)]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[_T_co]):
    """The concatenation of map-style datasets: index ``i`` runs through each in turn."""

    datasets: list[Dataset[_T_co]]
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence) -> list[int]:
        """Return the running totals of the datasets' lengths (the end index of each one)."""
        return list(itertools.accumulate(map(len, sequence)))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(member, IterableDataset) for member in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        total = len(self)
        if idx < 0:
            if idx < -total:
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += total
        # the member whose end lies past idx, and idx's offset from that member's start
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]

    @property
    def cummulative_sizes(self) -> list[int]:
        warnings.warn(
            "`cummulative_sizes` attribute is renamed to `cumulative_sizes`",
            FutureWarning,
            stacklevel=2,
        )
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """The chaining of iterable datasets: iterates each in turn, lazily."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = datasets

    def _members(self):
        # checked one at a time, when reached (the members may be a lazy iterable)
        for member in self.datasets:
            if not isinstance(member, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield member

    def __iter__(self):
        for member in self._members():
            yield from member

    def __len__(self) -> int:
        return sum(len(member) for member in self._members())


class Subset(Dataset[_T_co]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    dataset: Dataset[_T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[_T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        # a subclass that changes single-item access must change batch access too, since the
        # DataLoader fetches through __getitems__
        cls = type(self)
        overrides_item = cls.__getitem__ is not Subset.__getitem__
        keeps_batch = cls.__getitems__ is Subset.__getitems__
        if overrides_item and keeps_batch:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]"
            )

    def _source(self, positions: list[int]) -> list:
        return [self.indices[p] for p in positions]

    def __getitem__(self, idx):
        # a list of positions is passed on as one list of the dataset's own indices
        return self.dataset[self._source(idx) if isinstance(idx, list) else self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[_T_co]:
        wanted = self._source(indices)
        fetch_batch = _batch_getter(self.dataset)
        if fetch_batch is not None:
            return fetch_batch(wanted)
        return [self.dataset[i] for i in wanted]

    def __len__(self) -> int:
        return len(self.indices)


def _batch_getter(dataset):
    """``dataset.__getitems__`` when it has a callable one (fetching a batch at once), else None."""
    getter = getattr(dataset, "__getitems__", None)
    return getter if callable(getter) else None


def _default_generator():
    from ember.random import default_generator

    return default_generator


def random_split(dataset: Dataset[_T], lengths: Sequence[int | float], generator=None):
    """Return non-overlapping ``Subset``s of ``dataset`` of the given ``lengths`` (or fractions
    summing to 1, the remainder given out round-robin), drawn by a random permutation from
    ``generator`` (default: ember's default generator)."""
    if generator is None:
        generator = _default_generator()
    size = len(dataset)
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        lengths = _lengths_from_fractions(size, lengths)
    if sum(lengths) != size:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")

    import ember

    order = ember.randperm(sum(lengths), generator=generator).tolist()
    splits, start = [], 0
    for length in lengths:
        splits.append(Subset(dataset, order[start : start + length]))
        start += length
    return splits


def _lengths_from_fractions(size: int, fractions) -> list[int]:
    """Whole lengths for fractions of ``size``: each floored, then the samples left over given
    one at a time to the splits in order, wrapping around; warns for an empty split."""
    for position, fraction in enumerate(fractions):
        if not 0 <= fraction <= 1:
            raise ValueError(f"Fraction at index {position} is not between 0 and 1")
    lengths = [math.floor(size * fraction) for fraction in fractions]
    for extra in range(size - sum(lengths)):
        lengths[extra % len(lengths)] += 1
    for position in (p for p, n in enumerate(lengths) if n == 0):
        warnings.warn(
            f"Length of split at index {position} is 0. This might result in an empty dataset.",
            stacklevel=3,
        )
    return lengths

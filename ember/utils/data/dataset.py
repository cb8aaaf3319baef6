"""Datasets, as ``torch.utils.data.dataset``: the map-style ``Dataset`` (``__getitem__`` and
``__len__``), the iterable-style ``IterableDataset`` (``__iter__``), and the combinators
``TensorDataset``, ``StackDataset``, ``ConcatDataset``, ``ChainDataset``, ``Subset`` and
``random_split``."""

from __future__ import annotations

import bisect
import itertools
import math
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
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Samples are tuples (``StackDataset(a, b)``) or dicts (``StackDataset(x=a, y=b)``) of the
    samples of equally long datasets at the same index."""

    datasets: tuple | dict

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args:
            if kwargs:
                raise ValueError(
                    "Supported either ``tuple``- (via ``args``) or"
                    "``dict``- (via ``kwargs``) like input/output, but both types are given."
                )
            self._length = len(args[0])
            if any(self._length != len(dataset) for dataset in args):
                raise ValueError("Size mismatch between datasets")
            self.datasets = args
        elif kwargs:
            tmp = list(kwargs.values())
            self._length = len(tmp[0])
            if any(self._length != len(dataset) for dataset in tmp):
                raise ValueError("Size mismatch between datasets")
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def _column(self, dataset, indices: list) -> list:
        if callable(getattr(dataset, "__getitems__", None)):
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
        r, s = [], 0
        for e in sequence:
            s += len(e)
            r.append(s)
        return r

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]

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

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset[_T_co]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    dataset: Dataset[_T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[_T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        if (
            type(self).__getitem__ is not Subset.__getitem__
            and type(self).__getitems__ is Subset.__getitems__
        ):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]"
            )

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[_T_co]:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _default_generator():
    from ember.random import default_generator

    return default_generator


def random_split(dataset: Dataset[_T], lengths: Sequence[int | float], generator=None):
    """Return non-overlapping ``Subset``s of ``dataset`` of the given ``lengths`` (or fractions
    summing to 1, the remainder given out round-robin), drawn by a random permutation from
    ``generator`` (default: ember's default generator)."""
    if generator is None:
        generator = _default_generator()
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset.",
                    stacklevel=2,
                )
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")

    import ember

    indices = ember.randperm(sum(lengths), generator=generator).tolist()
    return [
        Subset(dataset, indices[offset - length : offset])
        for offset, length in zip(itertools.accumulate(lengths), lengths)
    ]

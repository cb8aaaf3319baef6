"""Samplers, as ``torch.utils.data.sampler``: iterables of dataset indices (or, for
``BatchSampler``, of lists of indices) that decide the order a DataLoader reads in.

Random samplers draw from ember's generators in the calls and block sizes torch uses, so a seed
gives torch's index stream (tests/oracle/test_data_oracle.py compares them).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

import ember

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]

_T_co = TypeVar("_T_co", covariant=True)


class Sampler(Generic[_T_co]):
    """Base class of samplers: subclasses define ``__iter__`` (and ``__len__`` when the length
    is known, as ``len(DataLoader)`` needs it)."""

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Yield ``0, 1, ..., len(data_source) - 1``."""

    data_source: Sized

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _draw_seed(generator=None) -> int:
    """One int64 drawn from ``generator`` (the default one if None), as torch draws the seeds
    of its samplers' private generators and of DataLoader workers."""
    return int(ember.empty((), dtype=ember.int64).random_(generator=generator).item())


def _fresh_generator():
    # a generator seeded from the default one, as torch: each iteration gets a new order
    g = ember.Generator()
    g.manual_seed(_draw_seed())
    return g


class RandomSampler(Sampler[int]):
    """Yield random indices: a permutation (repeated whole, then cut, when ``num_samples``
    exceeds the length), or ``num_samples`` independent draws with ``replacement=True``."""

    data_source: Sized
    replacement: bool

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator=None,
    ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={self.replacement}"
            )
        count = self.num_samples
        if not (isinstance(count, int) and count > 0):
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={count}"
            )

    @property
    def num_samples(self) -> int:
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = _fresh_generator() if self.generator is None else self.generator
        if self.replacement:
            # drawn in blocks of 32 (then the rest), the block sizes torch draws in, so that a
            # seed gives the same stream of indices however far it is read
            whole, rest = divmod(self.num_samples, 32)
            for size in [32] * whole + [rest]:
                draw = ember.randint(0, n, (size,), dtype=ember.int64, generator=generator)
                yield from draw.tolist()
            return
        # whole permutations while they fit, then the head of one more
        whole, rest = divmod(self.num_samples, n)
        for take in [n] * whole + [rest]:
            yield from ember.randperm(n, generator=generator).tolist()[:take]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """Yield the given ``indices`` in a random order."""

    indices: Sequence[int]

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        order = ember.randperm(len(self.indices), generator=self.generator)
        yield from map(self.indices.__getitem__, order.tolist())

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """Yield ``num_samples`` indices drawn with probabilities proportional to ``weights``
    (with replacement by default)."""

    num_samples: int
    replacement: bool

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator=None,
    ) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        weights_tensor = ember.as_tensor(weights, dtype=ember.float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError(
                "weights should be a 1d sequence but given "
                f"weights have shape {tuple(weights_tensor.shape)}"
            )
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        picks = ember.multinomial(
            self.weights, self.num_samples, replacement=self.replacement, generator=self.generator
        )
        yield from picks.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Group the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter, or
    dropped with ``drop_last=True``)."""

    def __init__(
        self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool
    ) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        source = iter(self.sampler)
        while True:
            batch = list(itertools.islice(source, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        whole, partial = divmod(len(self.sampler), self.batch_size)
        return whole + (1 if partial and not self.drop_last else 0)

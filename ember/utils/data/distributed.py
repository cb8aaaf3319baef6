"""``DistributedSampler``: each of ``num_replicas`` processes reads its own shard, as
``torch.utils.data.distributed``.

The order (shuffled from a generator seeded with ``seed + epoch``) is padded by repeating its
start until it divides evenly, or cut with ``drop_last``; replica ``rank`` takes every
``num_replicas``-th index from position ``rank``. The shards are disjoint apart from the padding
and cover the dataset. ember's ``randperm`` stream is its own, so a shuffled order differs from
torch's for the same seed; the unshuffled order, padding and sharding are torch's exactly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import TypeVar

import ember
from ember.utils.data.dataset import Dataset
from ember.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]

_T_co = TypeVar("_T_co", covariant=True)


def _default_group_setting(what: str) -> int:
    # the default group's rank or world size; torch's ValueError when none was initialized
    import ember.distributed as dist

    if not dist.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return getattr(dist, what)()


class DistributedSampler(Sampler[_T_co]):
    """Yield the indices of replica ``rank``'s shard of ``dataset``; call :meth:`set_epoch` at
    the start of each epoch (before creating the DataLoader iterator) to reshuffle."""

    def __init__(
        self,
        dataset: Dataset,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None:
            num_replicas = _default_group_setting("get_world_size")
        if rank is None:
            rank = _default_group_setting("get_rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(self.dataset)
        if self.drop_last and n % self.num_replicas != 0:
            # drop the tail so that every replica gets the same number of samples
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[_T_co]:
        n = len(self.dataset)
        if self.shuffle:
            g = ember.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = ember.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))

        # exactly total_size indices: the tail dropped (drop_last), or the list repeated from
        # its start as often as needed to pad it
        indices = list(itertools.islice(itertools.cycle(indices), self.total_size))
        if len(indices) != self.total_size:
            raise AssertionError(
                f"Number of indices ({len(indices)}) does not match total_size ({self.total_size})"
            )
        indices = indices[self.rank :: self.num_replicas]  # this replica's interleaved share
        if len(indices) != self.num_samples:
            raise AssertionError(
                f"Number of subsampled indices ({len(indices)}) does not match num_samples "
                f"({self.num_samples})"
            )
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: with ``shuffle=True`` each epoch has its own order (the same on every
        replica, so the shards stay disjoint)."""
        self.epoch = epoch

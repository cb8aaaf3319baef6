"""Fetchers: turn one index (or a batch of indices) into one collated sample or batch.
Shared by the single-process iterator and the worker processes."""

from __future__ import annotations

import itertools


class _BaseDatasetFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index):
        raise NotImplementedError


class _IterableDatasetFetcher(_BaseDatasetFetcher):
    """Draw the next samples from the iterator of an ``IterableDataset`` (the "index" only says
    how many)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        wanted = len(possibly_batched_index)
        data = list(itertools.islice(self.dataset_iter, wanted))
        self.ended = len(data) < wanted  # came up short: the iterator is exhausted
        if not data or (self.drop_last and self.ended):
            raise StopIteration
        return self.collate_fn(data)


class _MapDatasetFetcher(_BaseDatasetFetcher):
    """Index a map-style dataset (through ``__getitems__`` for a whole batch when it has one)."""

    def fetch(self, possibly_batched_index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        fetch_batch = getattr(self.dataset, "__getitems__", None)  # (any truthy attribute)
        if fetch_batch:
            return self.collate_fn(fetch_batch(possibly_batched_index))
        return self.collate_fn([self.dataset[i] for i in possibly_batched_index])

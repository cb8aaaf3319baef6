"""Fetchers: turn one index (or a batch of indices) into one collated sample or batch.
Shared by the single-process iterator and the worker processes."""

from __future__ import annotations


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
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


class _MapDatasetFetcher(_BaseDatasetFetcher):
    """Index a map-style dataset (through ``__getitems__`` for a whole batch when it has one)."""

    def fetch(self, possibly_batched_index):
        if self.auto_collation:
            if getattr(self.dataset, "__getitems__", None):
                data = self.dataset.__getitems__(possibly_batched_index)
            else:
                data = [self.dataset[idx] for idx in possibly_batched_index]
        else:
            data = self.dataset[possibly_batched_index]
        return self.collate_fn(data)

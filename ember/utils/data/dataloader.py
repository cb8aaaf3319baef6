"""``DataLoader``: batches from a dataset, in the main process or in worker processes, as
``torch.utils.data.DataLoader``.

With ``num_workers=0`` an iterator fetches and collates each batch itself. With
``num_workers > 0`` (``_MultiProcessingDataLoaderIter``) it starts that many processes (the
default ``multiprocessing`` start method, fork on Linux, or ``multiprocessing_context``), each
with its own index queue, and one result queue shared by all:

* tasks ``(task_idx, batch_indices)`` go to the workers round-robin, ``prefetch_factor`` per
  worker in flight; each result sent back triggers the next task;
* results are returned in task order (``in_order=True``; early arrivals wait in
  ``_early``) or as they come (``in_order=False``);
* batches travel through shared memory (``ember.multiprocessing``): workers collate into it,
  pickle the batch themselves and send its descriptors over a socket pair made for that worker
  (``reductions.fd_channel``), so the result queue carries a few hundred bytes per batch;
* an exception in a worker comes back wrapped and is re-raised with the worker's traceback; a
  worker that dies is noticed by the SIGCHLD handler, or by the ``MP_STATUS_CHECK_INTERVAL``
  poll of ``_try_get_data``, and reported as "DataLoader worker (pid(s) N) exited unexpectedly";
  ``timeout`` bounds the wait for each batch;
* the workers stop when the iterator is exhausted, deleted (a ``break``, an exception, a
  ``KeyboardInterrupt``), or, with ``persistent_workers=True``, when the loader is deleted:
  ``_shutdown_workers`` sets the done event, sends ``None`` to each index queue, joins the
  workers and terminates any that did not exit.
"""

from __future__ import annotations

import multiprocessing as python_multiprocessing
import os
import warnings
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import ember.multiprocessing as ember_mp
from ember._core import profiling as _profiler
from ember.utils.data import _utils
from ember.utils.data._utils.collate import default_collate, default_convert
from ember.utils.data._utils.worker import get_worker_info
from ember.utils.data.dataset import Dataset, IterableDataset
from ember.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    _draw_seed,
)

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

_T_co = TypeVar("_T_co", covariant=True)


class _DatasetKind:
    """The two kinds of dataset a loader reads (map-style or iterable), as torch's."""

    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        """Return the fetcher that turns sampler indices into (collated) batches."""
        if kind == _DatasetKind.Map:
            return _utils.fetch._MapDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)
        return _utils.fetch._IterableDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)


class _InfiniteConstantSampler(Sampler):
    """``itertools.repeat(None)``: the sampler of an ``IterableDataset``."""

    def __iter__(self):
        while True:
            yield None


def _cpu_count() -> int | None:
    if hasattr(os, "sched_getaffinity"):
        try:
            return len(os.sched_getaffinity(0))
        except OSError:
            pass
    return os.cpu_count()


class DataLoader(Generic[_T_co]):
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader``.

    Args:
        dataset: a map-style ``Dataset`` (``__getitem__``/``__len__``) or an ``IterableDataset``.
        batch_size: samples per batch (default 1); ``None`` disables batching (each sample goes
            through ``collate_fn``, by default ``default_convert``).
        shuffle: reshuffle a map-style dataset every epoch (a ``RandomSampler``).
        sampler: the order of the indices (an iterable of indices); excludes ``shuffle``.
        batch_sampler: yields lists of indices; excludes ``batch_size``, ``shuffle``,
            ``sampler`` and ``drop_last``.
        num_workers: worker processes; 0 loads in the main process.
        collate_fn: merges a list of samples into a batch (default ``default_collate``).
        pin_memory: accepted; CPU memory needs no pinning (warns, as torch without an
            accelerator).
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a batch from the workers (0: forever) before raising.
        worker_init_fn: called with the worker id in each worker, after seeding.
        multiprocessing_context: a start method name (``"fork"``, ``"spawn"``...) or a context.
        generator: the generator for ``RandomSampler`` and for the workers' base seed.
        prefetch_factor: batches in flight per worker (default 2 with workers).
        persistent_workers: keep the workers (and their dataset copies) between epochs.
        pin_memory_device: deprecated, as torch.
        in_order: return batches in sampler order (default), or as workers finish them.
    """

    dataset: Dataset[_T_co]
    batch_size: int | None
    num_workers: int
    pin_memory: bool
    drop_last: bool
    timeout: float
    sampler: Sampler | Iterable
    pin_memory_device: str
    prefetch_factor: int | None
    _iterator: _BaseDataLoaderIter | None
    __initialized = False

    def __init__(
        self,
        dataset: Dataset[_T_co],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler[list] | Iterable[list] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        prefetch_factor = _check_worker_options(
            num_workers, timeout, prefetch_factor, persistent_workers
        )
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context  # validated by the setter
        self.in_order = in_order

        iterable = isinstance(dataset, IterableDataset)
        self._dataset_kind = _DatasetKind.Iterable if iterable else _DatasetKind.Map
        if iterable:
            # an iterable dataset decides its own order: none of these may be given
            for option, value, given in (
                ("shuffle", shuffle, shuffle not in (False, None)),
                ("sampler", sampler, sampler is not None),
                ("batch_sampler", batch_sampler, batch_sampler is not None),
            ):
                if given:
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {option} "
                        f"option, but got {option}={value}"
                    )
        else:
            shuffle = bool(shuffle)
        self.batch_size, self.drop_last, self.sampler, self.batch_sampler = _sampling_plan(
            dataset, iterable, batch_size, shuffle, sampler, batch_sampler, drop_last, generator
        )
        self.generator = generator
        # batches of samples are collated; single samples (batch_size=None) only converted
        self.collate_fn = collate_fn or (
            default_collate if self._auto_collation else default_convert
        )
        self.persistent_workers = persistent_workers
        self.__initialized = True
        # len(self) of an IterableDataset, kept to warn when more batches come than announced
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if not self.num_workers:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError(
                    "multiprocessing_context can only be used with "
                    "multi-process loading (num_workers > 0), but got "
                    f"num_workers={self.num_workers}"
                )
            if isinstance(context, str):
                methods = ember_mp.get_all_start_methods()
                if context not in methods:
                    raise ValueError(
                        "multiprocessing_context option "
                        f"should specify a valid start method in {methods!r}, "
                        f"but got multiprocessing_context={context!r}"
                    )
                context = ember_mp.get_context(context)
            if not isinstance(context, python_multiprocessing.context.BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context "
                    "object or a string specifying the start method, but got "
                    f"multiprocessing_context={context}"
                )
        self.__multiprocessing_context = context

    def __setattr__(self, attr, val) -> None:
        if self.__initialized and attr in _FROZEN_AFTER_INIT:
            raise ValueError(
                f"{attr} attribute should not be set after {self.__class__.__name__} is initialized"
            )
        super().__setattr__(attr, val)

    def __iter__(self) -> _BaseDataLoaderIter:
        if not (self.persistent_workers and self.num_workers > 0):
            return self._get_iterator()
        # persistent workers: one iterator for the loader's life, reset at each epoch
        if self._iterator is None:
            self._iterator = self._get_iterator()
        else:
            self._iterator._reset(self)
        return self._iterator

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        # what the iterators draw from: batches of indices, or single indices
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._dataset_kind != _DatasetKind.Iterable:
            return len(self._index_sampler)
        # the dataset's own length, in batches: a guess torch makes too, since each worker may
        # end with an incomplete batch
        samples = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is None:
            return samples
        full, partial = divmod(samples, self.batch_size)
        return full + (1 if partial and not self.drop_last else 0)

    def check_worker_number_rationality(self) -> None:
        """Warn when more workers are asked for than this process has CPUs."""
        if not self.num_workers:
            return
        cpus = _cpu_count()
        if cpus is not None and self.num_workers <= cpus:
            return
        if cpus is None:
            suggested = (
                "DataLoader is not able to compute a suggested max number of worker in "
                "current system."
            )
        else:
            affinity = (
                "" if hasattr(os, "sched_getaffinity") else " (`cpuset` is not taken into account)"
            )
            suggested = (
                f"Our suggested max number of worker in current system is {cpus}{affinity}, "
                "which is smaller than what this DataLoader is going to create."
            )
        warnings.warn(
            f"This DataLoader will create {self.num_workers} worker processes in total. "
            f"{suggested} Please be aware that excessive worker creation might get "
            "DataLoader running slow or even freeze, lower the worker number to avoid "
            "potential slowness/freeze if necessary.",
            stacklevel=2,
        )


# attributes that define the batches; a loader refuses to change them once built
_FROZEN_AFTER_INIT = frozenset(
    ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")
)


def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers):
    """Validate the worker options in torch's order; return the effective prefetch factor
    (2 per worker unless given)."""
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; "
            "use num_workers=0 to disable multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0:
        if prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
                "to None."
            )
        if persistent_workers:
            raise ValueError("persistent_workers option needs num_workers > 0")
        return None
    if prefetch_factor is None:
        return 2
    if prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    return prefetch_factor


def _sampling_plan(
    dataset, iterable: bool, batch_size, shuffle, sampler, batch_sampler, drop_last, generator
):
    """Check how indices and batches are to be formed; return the loader's ``(batch_size,
    drop_last, sampler, batch_sampler)``.  A given ``batch_sampler`` decides what the other
    four options would (they must be left at their defaults) and makes the first two
    None/False; a missing sampler is the dataset kind's default; a ``batch_size`` batches the
    sampler's indices (``None`` turns batching off)."""
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and any(
        (batch_size != 1, shuffle, sampler is not None, drop_last)
    ):
        raise ValueError(
            "batch_sampler option is mutually exclusive "
            "with batch_size, shuffle, sampler, and "
            "drop_last"
        )
    if batch_sampler is None and batch_size is None and drop_last:
        raise ValueError(
            "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
        )
    if sampler is None:
        sampler = _default_sampler(dataset, iterable, shuffle, generator)
    if batch_sampler is not None:
        return None, False, sampler, batch_sampler
    batches = None if batch_size is None else BatchSampler(sampler, batch_size, drop_last)
    return batch_size, drop_last, sampler, batches


def _default_sampler(dataset, iterable: bool, shuffle, generator):
    if iterable:
        return _InfiniteConstantSampler()
    if shuffle:
        return RandomSampler(dataset, generator=generator)
    return SequentialSampler(dataset)


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader) -> None:
        # the iterator's own copy of the loader's settings, under torch's private names
        for source, copy in _ITER_SETTINGS:
            setattr(self, copy, getattr(loader, source))
        self._shared_seed = None
        _warn_pin_memory(loader)
        self._pin_memory = False  # CPU memory: nothing to pin, batches pass through unchanged
        # one int64 draw from the loader's generator per iterator: the workers' base seed
        self._base_seed = _draw_seed(loader.generator)
        _BaseDataLoaderIter._reset(self, loader, first_iter=True)  # not a subclass's _reset

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        # StopIteration from the sampler ends the epoch
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self) -> Any:
        if _profiler.ACTIVE:  # the profiler's range around each batch, as torch's
            rng = _profiler.begin_range(f"enumerate(DataLoader)#{type(self).__name__}.__next__")
            try:
                return self._next()
            finally:
                _profiler.end_range(rng)
        return self._next()

    def _next(self) -> Any:
        if self._sampler_iter is None:
            self._reset()
        data = self._next_data()
        self._num_yielded += 1
        announced = self._IterableDataset_len_called
        if (
            self._dataset_kind == _DatasetKind.Iterable
            and announced is not None
            and self._num_yielded > announced
        ):
            self._warn_past_length(announced)
        return data

    def _warn_past_length(self, announced: int) -> None:
        message = (
            f"Length of IterableDataset {self._dataset} was reported to be "
            f"{announced}(when accessing len(dataloader)), but "
            f"{self._num_yielded} samples have been fetched. "
        )
        if self._num_workers > 0:
            message += (
                "For multiprocessing data-loading, this could be caused by not properly "
                "configuring the IterableDataset replica at each worker. Please see "
                "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset "
                "for examples."
            )
        warnings.warn(message, stacklevel=3)

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


# (loader attribute, iterator attribute)
_ITER_SETTINGS = (
    ("dataset", "_dataset"),
    ("_dataset_kind", "_dataset_kind"),
    ("_auto_collation", "_auto_collation"),
    ("drop_last", "_drop_last"),
    ("_index_sampler", "_index_sampler"),
    ("num_workers", "_num_workers"),
    ("timeout", "_timeout"),
    ("collate_fn", "_collate_fn"),
    ("persistent_workers", "_persistent_workers"),
)


def _warn_pin_memory(loader) -> None:
    # CPU only: pinning is accepted and ignored, with torch's warnings for a machine without
    # an accelerator
    if not loader.pin_memory:
        return
    if loader.pin_memory_device:
        warnings.warn(
            "pin_memory_device is deprecated, the current accelerator will be used as the "
            f"device,ignore pin_memory_device='{loader.pin_memory_device}'.",
            stacklevel=3,
        )
    warnings.warn(
        "'pin_memory' argument is set as true but no accelerator is found, then device "
        "pinned memory won't be used.",
        stacklevel=3,
    )


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        if self._num_workers != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires num_workers == 0")
        kind, dataset = self._dataset_kind, self._dataset
        options = (self._auto_collation, self._collate_fn, self._drop_last)
        self._dataset_fetcher = _DatasetKind.create_fetcher(kind, dataset, *options)

    def _next_data(self):
        # StopIteration from the sampler or from an iterable dataset ends the epoch
        return self._dataset_fetcher.fetch(self._next_index())


from ember.utils.data._multiprocessing_iter import _MultiProcessingDataLoaderIter  # noqa: E402

"""The DataLoader worker process: its loop, seeding and ``get_worker_info``, as torch's.

A worker takes ``(task_idx, indices)`` from its index queue, fetches and collates the batch, and
puts ``(task_idx, batch)`` on the shared result queue. The result is pickled here, in the worker's
own thread, so a batch that cannot be pickled comes back as an error instead of being dropped by
the queue's feeder thread (which would leave the main process waiting); tensors in it travel
through shared memory (``ember.multiprocessing``). ``None`` on the index queue ends the loop;
``_ResumeIteration`` restarts the epoch of a persistent worker.
"""

from __future__ import annotations

import os
import queue
import random
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from typing import Any

from ember.utils.data._utils import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper, signal_handling

__all__ = ["WorkerInfo", "get_worker_info"]


class ManagerWatchdog:
    """Tell whether the process that started this worker is still alive: an orphaned process
    is re-parented, so its parent pid changes (and never changes back)."""

    def __init__(self) -> None:
        self.manager_pid = os.getppid()
        self.manager_dead = False

    def is_alive(self) -> bool:
        self.manager_dead = self.manager_dead or os.getppid() != self.manager_pid
        return not self.manager_dead


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What a DataLoader worker knows about itself: ``id`` (0 .. num_workers - 1),
    ``num_workers``, ``seed`` (its ember and ``random`` seed) and ``dataset`` (this process's copy
    of the dataset)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: str | None = "multiprocessing"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Return this DataLoader worker's :class:`WorkerInfo`, or None in the main process.

    An ``IterableDataset`` uses it to yield only its share of the data in each worker, and a
    ``worker_init_fn`` to set up each worker's copy of the dataset (open a file, seed a library).
    """
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """Sent by a worker whose ``IterableDataset`` iterator is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers at the start of each epoch after the first."""

    seed: int | None = None


def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """Return the 4 x uint32 seed torch gives NumPy's global RNG in worker ``worker_id``: a
    port of ``numpy.random.SeedSequence`` mixing, so it differs from the ``random`` and ember
    seeds (``base_seed + worker_id``) and from one worker to the next."""
    mask32 = 0xFFFFFFFF
    mult_a, mult_b = 0x931E8875, 0x58F38DED
    mix_mult_l, mix_mult_r = 0xCA01F9DD, 0x4973F715
    xshift = 16
    hash_const_a = 0x43B0D7E5

    def hash_(value: int) -> int:
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & mask32
        hash_const_a = (hash_const_a * mult_a) & mask32
        value = (value * hash_const_a) & mask32
        return (value ^ (value >> xshift)) & mask32

    def mix(x: int, y: int) -> int:
        result = ((mix_mult_l * x) - (mix_mult_r * y)) & mask32
        return (result ^ (result >> xshift)) & mask32

    entropy = [worker_id, base_seed & mask32, base_seed >> 32, 0]
    pool = [hash_(e) for e in entropy]
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash_(pool[i_src]))

    hash_const_b = 0x8B51F9DD
    state = []
    for value in pool:
        value = (value ^ hash_const_b) & mask32
        hash_const_b = (hash_const_b * mult_b) & mask32
        value = (value * hash_const_b) & mask32
        state.append((value ^ (value >> xshift)) & mask32)
    return state


def _limit_threads() -> None:
    # one BLAS thread per worker, as torch.set_num_threads(1): workers share the cores
    import ember

    set_num_threads = getattr(ember, "set_num_threads", None)
    if set_num_threads is not None:
        set_num_threads(1)
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1)


def _encode(idx, data, worker_id: int, fd_sender) -> bytes:
    """Pickle ``(idx, data)`` for the result queue (tensor descriptors through ``fd_sender``);
    a failure becomes the worker's error."""
    try:
        if fd_sender is not None:
            return fd_sender.dumps((idx, data))
        return bytes(ForkingPickler.dumps((idx, data)))
    except Exception:
        wrapper = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
    try:
        return bytes(ForkingPickler.dumps((idx, wrapper)))
    except Exception:  # an exception class that cannot be pickled: keep its message
        wrapper.exc_type = RuntimeError
        return bytes(ForkingPickler.dumps((idx, wrapper)))


def _fetch(fetcher, index, iterable: bool, worker_id: int):
    """One task's result: the batch, the end-of-data marker of an iterable dataset, or the
    error wrapped for the main process."""
    try:
        return fetcher.fetch(index)
    except StopIteration:
        if iterable:
            return _IterableDatasetStopIteration(worker_id)
        return ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
    except Exception:
        return ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")


def _worker_loop(
    dataset_kind,
    dataset,
    index_queue,
    data_queue,
    done_event,
    auto_collation,
    collate_fn,
    drop_last,
    base_seed,
    init_fn,
    worker_id,
    num_workers,
    persistent_workers,
    shared_seed,
    fd_sender=None,
) -> None:
    """Serve ``index_queue`` until told to stop (``None``) or the main process is gone."""
    try:
        import numpy as np

        import ember
        from ember.multiprocessing import init_reductions, reductions
        from ember.utils.data.dataloader import _DatasetKind

        for receiver in list(reductions._receivers.values()):  # the parent's, through fork
            receiver.close()

        signal_handling._set_worker_signal_handlers()
        _limit_threads()
        init_reductions()  # tensor subclasses defined since the main process imported ember

        seed = base_seed + worker_id
        random.seed(seed)
        ember.manual_seed(seed)
        np.random.seed(_generate_state(base_seed, worker_id))

        global _worker_info
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        def new_fetcher():
            return _DatasetKind.create_fetcher(
                dataset_kind, dataset, auto_collation, collate_fn, drop_last
            )

        where = f"in DataLoader worker process {worker_id}"
        # an error in worker_init_fn or in making the fetcher is the answer to the first task
        pending_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = new_fetcher()
        except Exception:
            pending_error = ExceptionWrapper(where=where)

        # set once an IterableDataset replica is exhausted: the worker then only waits for None
        exhausted = False
        watchdog = ManagerWatchdog()
        while watchdog.is_alive():
            try:
                message = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    break  # the main process is shutting down; its None may never come
                continue
            if isinstance(message, _ResumeIteration):
                data_queue.put((message, None))  # acknowledge, then start the new epoch
                exhausted = False
                fetcher = new_fetcher()
                continue
            if message is None:
                if not (done_event.is_set() or exhausted):
                    raise AssertionError(
                        "Received final signal but neither done_event nor iteration_end is set"
                    )
                break
            if exhausted or done_event.is_set():
                continue  # wait for the final None without working
            task, index = message
            if pending_error is not None:
                result, pending_error = pending_error, None
            else:
                result = _fetch(fetcher, index, dataset_kind == _DatasetKind.Iterable, worker_id)
                exhausted = isinstance(result, _IterableDatasetStopIteration)
            data_queue.put(_encode(task, result, worker_id, fd_sender))
            del result, task, index, message  # free the batch before waiting for the next task
    except KeyboardInterrupt:
        pass  # the main process raises KeyboardInterrupt itself
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()

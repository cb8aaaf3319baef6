"""The DataLoader iterator with worker processes (``num_workers > 0``), as torch's
``_MultiProcessingDataLoaderIter``; the protocol is described in ``dataloader.py``.

Bookkeeping, in ember's terms: every task sent gets the next number (``_send_idx``);
``_owner`` maps each outstanding or early-arrived task to the worker it went to, ``_early``
holds results that arrived before their turn (``in_order=True``), and ``_rcvd_idx`` is the task
whose result ``__next__`` hands out next. A worker is *active* (``_workers_status``) while it
may still take tasks; an exhausted ``IterableDataset`` replica, a death or the shutdown makes it
inactive, and tasks owned by an inactive worker that never answered are skipped.
"""

from __future__ import annotations

import os
import pickle
import queue
import time
import warnings

import ember.multiprocessing as ember_mp
from ember.multiprocessing.reductions import fd_channel
from ember.utils.data import _utils
from ember.utils.data._utils import ExceptionWrapper
from ember.utils.data._utils.worker import _IterableDatasetStopIteration, _ResumeIteration
from ember.utils.data.dataloader import _BaseDataLoaderIter, _DatasetKind

_PICKLE_ERRORS = (TypeError, AttributeError, pickle.PicklingError)
_PICKLE_HINT = (
    "Got pickle error when attempting to start a worker Process. "
    "This might be because the worker Process arguments are not picklable. "
    "Python 3.14+ changed the multiprocessing start method in non-Mac POSIX "
    "platforms to 'forkserver', which requires the worker Process arguments "
    "to be picklable. You can also try multiprocessing.set_start_method("
    "'fork')."
)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Iterate once over the loader's dataset, with worker processes (see ``dataloader.py``)."""

    def __init__(self, loader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._num_workers <= 0:
            raise AssertionError(
                "num_workers must be greater than 0 for MultiProcessingDataLoaderIter"
            )
        if self._prefetch_factor <= 0:
            raise AssertionError(
                "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter"
            )
        ctx = loader.multiprocessing_context or ember_mp
        ember_mp.init_reductions()  # tensor subclasses defined since ember was imported
        self._worker_init_fn = loader.worker_init_fn
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._shutdown = False
        self._pids_registered = False
        self._index_queues: list = []
        self._workers: list = []
        self._fd_receivers: list = []
        try:
            for worker_id in range(self._num_workers):
                self._start_worker(ctx, worker_id)
        except BaseException:
            self._workers_status = [True] * len(self._workers)
            self._shutdown_workers()
            raise
        signals = _utils.signal_handling
        signals._set_worker_pids(id(self), tuple(w.pid for w in self._workers))
        signals._set_SIGCHLD_handler()
        self._pids_registered = True
        self._reset(loader, first_iter=True)

    @property
    def _capacity(self) -> int:
        """Tasks allowed in flight over all workers."""
        return self._prefetch_factor * self._num_workers

    def _start_worker(self, ctx, worker_id: int) -> None:
        # the worker sends its batches' shared-memory descriptors over its own channel
        channel = fd_channel(f"dataloader-{os.getpid()}-{id(self)}-{worker_id}")
        sender = None
        if channel is not None:
            sender, receiver = channel
            self._fd_receivers.append(receiver)
        tasks = ctx.Queue()
        tasks.cancel_join_thread()  # never wait for its feeder thread to flush at exit
        args = (
            self._dataset_kind,
            self._dataset,
            tasks,
            self._result_queue,
            self._done_event,
            self._auto_collation,
            self._collate_fn,
            self._drop_last,
            self._base_seed,
            self._worker_init_fn,
            worker_id,
            self._num_workers,
            self._persistent_workers,
            self._shared_seed,
            sender,
        )
        process = ctx.Process(target=_utils.worker._worker_loop, args=args, daemon=True)
        try:
            process.start()
        except _PICKLE_ERRORS:
            warnings.warn(_PICKLE_HINT, stacklevel=3)
            raise
        finally:
            if sender is not None:
                sender.close()  # the worker holds its own copy now
        self._index_queues.append(tasks)
        self._workers.append(process)

    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._owner: dict[int, int] = {}
        self._early: dict[int, object] = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._next_worker = 0  # round-robin cursor over the workers
        if not first_iter:
            self._resume_workers()
        for _ in range(self._capacity):
            self._try_put_index()

    def _resume_workers(self) -> None:
        """Start a new epoch in every persistent worker; results still in flight from the last
        epoch are read and dropped until each worker has acknowledged."""
        for tasks in self._index_queues:
            tasks.put(_ResumeIteration(self._shared_seed))
        waiting = self._num_workers
        while waiting:
            marker, payload = self._get_data()
            if not isinstance(marker, _ResumeIteration):
                continue
            if payload is not None:
                raise AssertionError("Expected return_data to be None when resuming iteration")
            waiting -= 1

    # ------------------------------------------------------------------ receiving results

    def _dead_workers(self) -> list:
        """Active workers that are no longer alive, marked inactive."""
        dead = []
        for worker_id, process in enumerate(self._workers):
            if self._workers_status[worker_id] and not process.is_alive():
                dead.append(process)
                self._mark_worker_as_unavailable(worker_id)
        return dead

    def _try_get_data(self, timeout: float = _utils.MP_STATUS_CHECK_INTERVAL):
        """Return ``(True, (idx, data))``, or ``(False, None)`` after ``timeout`` seconds;
        raise if a worker died meanwhile."""
        try:
            item = self._result_queue.get(timeout=timeout)
            if type(item) is bytes:  # a result the worker pickled itself (see worker.py)
                item = pickle.loads(item)
        except Exception as exc:
            # a timeout, or an error from the SIGCHLD handler or from unpickling: a dead
            # worker is the error to report whichever it was
            dead = self._dead_workers()
            if dead:
                pids = ", ".join(str(p.pid) for p in dead)
                raise RuntimeError(
                    f"DataLoader worker (pid(s) {pids}) exited unexpectedly"
                ) from exc
            if isinstance(exc, queue.Empty):
                return False, None
            raise
        return True, item

    def _get_data(self):
        """The next result from any worker, waiting at most ``timeout`` when one is set."""
        if self._timeout > 0:
            ok, item = self._try_get_data(self._timeout)
            if not ok:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return item
        ok, item = False, None
        while not ok:
            ok, item = self._try_get_data()
        return item

    def _skip_lost_tasks(self) -> bool:
        """Move ``_rcvd_idx`` past tasks whose result will never come; False when no task is
        left to wait for."""
        while self._rcvd_idx < self._send_idx:
            task = self._rcvd_idx
            if task in self._early:
                return True
            owner = self._owner.get(task)
            if owner is not None and self._workers_status[owner]:
                return True
            self._owner.pop(task, None)  # its worker stopped before answering
            self._rcvd_idx += 1
        return False

    def _hand_out(self, task: int, data):
        """Return ``task``'s result to the caller (re-raising a worker's error)."""
        worker_id = self._owner.pop(task)
        if task == self._rcvd_idx:
            self._rcvd_idx += 1
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _next_data(self):
        while True:
            if not self._skip_lost_tasks():
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if self._rcvd_idx in self._early:
                return self._hand_out(self._rcvd_idx, self._early.pop(self._rcvd_idx))
            if self._shutdown or self._tasks_outstanding <= 0:
                raise AssertionError(
                    "Invalid iterator state: shutdown or no outstanding tasks when fetching "
                    "next data"
                )
            task, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable and isinstance(
                data, _IterableDatasetStopIteration
            ):
                # that worker's replica is exhausted: it takes no more tasks
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if task == self._rcvd_idx or not self._in_order:
                return self._hand_out(task, data)
            self._early[task] = data  # ahead of its turn: keep it

    # ------------------------------------------------------------------ sending tasks

    def _pick_worker(self) -> int | None:
        """The next active worker in round-robin order that may take a task (out of order, a
        worker holds at most its share of the capacity), or None."""
        active = sum(self._workers_status)
        for _ in range(self._num_workers):
            worker_id = self._next_worker
            self._next_worker = (worker_id + 1) % self._num_workers
            if not self._workers_status[worker_id]:
                continue
            if self._in_order or self._workers_num_tasks[worker_id] < self._capacity // active:
                return worker_id
        return None

    def _try_put_index(self) -> None:
        if self._tasks_outstanding >= self._capacity:
            raise AssertionError("Number of outstanding tasks exceeded maximum allowed tasks")
        try:
            index = self._next_index()
        except StopIteration:
            return
        worker_id = self._pick_worker()
        if worker_id is None:
            return  # every worker is done: the index is dropped, as torch does
        self._index_queues[worker_id].put((self._send_idx, index))
        self._owner[self._send_idx] = worker_id
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    # ------------------------------------------------------------------ stopping

    def _mark_worker_as_unavailable(self, worker_id: int, shutdown: bool = False) -> None:
        # the worker gets no more tasks; None tells it to exit (it may be dead already)
        if not (self._workers_status[worker_id] or self._persistent_workers or shutdown):
            raise AssertionError("Worker status inconsistent when marking worker as unavailable")
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False
        if self._done_event.is_set() is not shutdown:
            raise AssertionError("_workers_done_event state does not match shutdown flag")

    def _shutdown_workers(self) -> None:
        """Stop the workers: done event, ``None`` to each, join, terminate stragglers."""
        if _utils is None or _utils.python_exit_status is not False or self._shutdown:
            return  # interpreter exit (multiprocessing ends daemonic workers), or done already
        self._shutdown = True
        interval = _utils.MP_STATUS_CHECK_INTERVAL
        try:
            self._done_event.set()
            for worker_id, active in enumerate(self._workers_status[: len(self._workers)]):
                if not (active or self._persistent_workers):
                    continue
                try:
                    self._mark_worker_as_unavailable(worker_id, shutdown=True)
                except (OSError, ValueError):  # its queue is closed (garbage collection)
                    self._workers_status[worker_id] = False
            deadline = time.monotonic() + interval
            for process in self._workers:
                process.join(timeout=max(0.0, deadline - time.monotonic()))
            for q in (*self._index_queues, self._result_queue):
                q.cancel_join_thread()
                q.close()
        finally:
            if self._pids_registered:
                _utils.signal_handling._remove_worker_pids(id(self))
                self._pids_registered = False
            stragglers = [p for p in self._workers if p.is_alive()]
            for process in stragglers:
                process.terminate()
            for process in self._workers:
                process.join(timeout=interval)
            for receiver in self._fd_receivers:
                receiver.close()

    def __del__(self) -> None:
        if getattr(self, "_workers", None) is not None:
            self._shutdown_workers()

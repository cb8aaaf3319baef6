"""The DataLoader iterator with worker processes (``num_workers > 0``), as torch's
``_MultiProcessingDataLoaderIter``; the protocol is described in ``dataloader.py``."""

from __future__ import annotations

import itertools
import os
import pickle
import queue
import time
import warnings

import ember.multiprocessing as ember_mp
from ember.multiprocessing.reductions import fd_channel
from ember.utils.data import _utils
from ember.utils.data._utils import ExceptionWrapper
from ember.utils.data.dataloader import _BaseDataLoaderIter, _DatasetKind


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
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = ember_mp
        ember_mp.init_reductions()  # tensor subclasses defined since ember was imported
        self._worker_init_fn = loader.worker_init_fn

        self._worker_result_queue = ctx.Queue()
        self._worker_pids_set = False
        self._shutdown = False
        self._workers_done_event = ctx.Event()

        self._index_queues = []
        self._workers = []
        self._fd_receivers = []
        try:
            for i in range(self._num_workers):
                # the worker sends its batches' shared-memory descriptors over this channel
                channel = fd_channel(f"dataloader-{os.getpid()}-{id(self)}-{i}")
                sender = None
                if channel is not None:
                    sender, receiver = channel
                    self._fd_receivers.append(receiver)
                index_queue = ctx.Queue()
                # the main process never waits for its feeder thread to flush at exit
                index_queue.cancel_join_thread()
                w = ctx.Process(
                    target=_utils.worker._worker_loop,
                    args=(
                        self._dataset_kind,
                        self._dataset,
                        index_queue,
                        self._worker_result_queue,
                        self._workers_done_event,
                        self._auto_collation,
                        self._collate_fn,
                        self._drop_last,
                        self._base_seed,
                        self._worker_init_fn,
                        i,
                        self._num_workers,
                        self._persistent_workers,
                        self._shared_seed,
                        sender,
                    ),
                )
                w.daemon = True
                try:
                    w.start()
                except (TypeError, AttributeError, pickle.PicklingError):
                    warnings.warn(
                        "Got pickle error when attempting to start a worker Process. "
                        "This might be because the worker Process arguments are not picklable. "
                        "Python 3.14+ changed the multiprocessing start method in non-Mac POSIX "
                        "platforms to 'forkserver', which requires the worker Process arguments "
                        "to be picklable. You can also try multiprocessing.set_start_method("
                        "'fork').",
                        stacklevel=2,
                    )
                    raise
                finally:
                    if sender is not None:
                        sender.close()  # the worker has its own copy now
                self._index_queues.append(index_queue)
                self._workers.append(w)
        except BaseException:
            self._workers_status = [True] * len(self._workers)
            self._shutdown_workers()
            raise

        self._data_queue = self._worker_result_queue
        _utils.signal_handling._set_worker_pids(id(self), tuple(w.pid for w in self._workers))
        _utils.signal_handling._set_SIGCHLD_handler()
        self._worker_pids_set = True
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # index of the next task to send
        self._rcvd_idx = 0  # index of the next task to return from __next__
        # task index -> (worker_id,) while outstanding, (worker_id, data) once it arrived early
        self._task_info: dict[int, tuple] = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # persistent workers: restart each one and drop what is left from the last epoch
            for idx in range(self._num_workers):
                self._index_queues[idx].put(_utils.worker._ResumeIteration(self._shared_seed))
            resume_iteration_cnt = self._num_workers
            while resume_iteration_cnt > 0:
                return_idx, return_data = self._get_data()
                if isinstance(return_idx, _utils.worker._ResumeIteration):
                    if return_data is not None:
                        raise AssertionError(
                            "Expected return_data to be None when resuming iteration"
                        )
                    resume_iteration_cnt -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float = _utils.MP_STATUS_CHECK_INTERVAL):
        """Return ``(True, (idx, data))``, or ``(False, None)`` after ``timeout`` seconds;
        raise if a worker died meanwhile."""
        try:
            item = self._data_queue.get(timeout=timeout)
            if type(item) is bytes:  # a result the worker pickled itself (see worker.py)
                item = pickle.loads(item)
            return (True, item)
        except Exception as e:
            # a timeout, or an error from the SIGCHLD handler or from unpickling: if a worker
            # is dead, that is the error to report
            failed_workers = []
            for worker_id, w in enumerate(self._workers):
                if self._workers_status[worker_id] and not w.is_alive():
                    failed_workers.append(w)
                    self._mark_worker_as_unavailable(worker_id)
            if failed_workers:
                pids_str = ", ".join(str(w.pid) for w in failed_workers)
                raise RuntimeError(
                    f"DataLoader worker (pid(s) {pids_str}) exited unexpectedly"
                ) from e
            if isinstance(e, queue.Empty):
                return (False, None)
            raise

    def _get_data(self):
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def _next_data(self):
        while True:
            # skip tasks of workers that are gone (an exhausted IterableDataset)
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx, None)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break  # has data, or its worker is still active
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier, out of order
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            if self._shutdown or self._tasks_outstanding <= 0:
                raise AssertionError(
                    "Invalid iterator state: shutdown or no outstanding tasks when fetching "
                    "next data"
                )
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable:
                if isinstance(data, _utils.worker._IterableDatasetStopIteration):
                    if self._persistent_workers:
                        self._workers_status[data.worker_id] = False
                    else:
                        self._mark_worker_as_unavailable(data.worker_id)
                    self._try_put_index()
                    continue

            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)  # keep it until its turn
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        if self._tasks_outstanding >= max_tasks:
            raise AssertionError("Number of outstanding tasks exceeded maximum allowed tasks")
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order:
                    break
                if self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(
                    self._workers_status
                ):
                    break
        else:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_idx: int):
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id: int, shutdown: bool = False) -> None:
        # the worker gets no more tasks; None tells it to exit (it may be dead already)
        if not self._workers_status[worker_id] and not self._persistent_workers and not shutdown:
            raise AssertionError("Worker status inconsistent when marking worker as unavailable")
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False
        if self._workers_done_event.is_set() != shutdown:
            raise AssertionError("_workers_done_event state does not match shutdown flag")

    def _shutdown_workers(self) -> None:
        """Stop the workers: done event, ``None`` to each, join, terminate stragglers."""
        if _utils is None or _utils.python_exit_status is True or _utils.python_exit_status is None:
            return  # interpreter exit: multiprocessing terminates daemonic workers itself
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    try:
                        self._mark_worker_as_unavailable(worker_id, shutdown=True)
                    except (OSError, ValueError):  # its queue is closed (garbage collection)
                        self._workers_status[worker_id] = False
            deadline = time.monotonic() + _utils.MP_STATUS_CHECK_INTERVAL
            for w in self._workers:
                w.join(timeout=max(0.0, deadline - time.monotonic()))
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._worker_result_queue.cancel_join_thread()
            self._worker_result_queue.close()
        finally:
            if self._worker_pids_set:
                _utils.signal_handling._remove_worker_pids(id(self))
                self._worker_pids_set = False
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
            for w in self._workers:
                w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
            for receiver in self._fd_receivers:
                receiver.close()

    def __del__(self) -> None:
        if getattr(self, "_workers", None) is not None:
            self._shutdown_workers()

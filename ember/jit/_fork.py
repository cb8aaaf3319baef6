"""``fork``/``wait``: tasks on ember's inter-op thread pool, results as ``Future``s.

NumPy releases the GIL inside its kernels, so large ops of forked tasks overlap. A task runs
with the caller's grad mode; its autograd graph joins the caller's (``backward`` through
``wait``'s result reaches the task's inputs). An exception raised by the task is raised again
by ``wait``, with the task's traceback chained.
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any

__all__ = ["Future", "fork_call", "fork_block", "interop_pool"]

_POOL: list = []
_LOCK = threading.Lock()


def interop_pool() -> concurrent.futures.ThreadPoolExecutor:
    """Return the inter-op pool (``get_num_interop_threads()`` workers), starting it once;
    after that, ``set_num_interop_threads`` refuses as torch's does."""
    with _LOCK:
        if not _POOL:
            from ember._ops import torch_settings

            n = torch_settings.get_num_interop_threads()
            torch_settings._settings["interop_threads"] = n
            _POOL.append(
                concurrent.futures.ThreadPoolExecutor(
                    max_workers=n, thread_name_prefix="ember-interop"
                )
            )
        return _POOL[0]


class Future:
    """The result of ``fork``: ``wait()`` blocks until the task is done and returns its value
    (or raises its exception); ``done()``, ``then(callback)``, ``value()`` as torch's."""

    def __init__(self, value=None, error: BaseException | None = None, _future=None, _task=None):
        self._future, self._task = _future, _task
        self._value, self._error = value, error

    def done(self) -> bool:
        return self._future is None or self._future.done()

    def wait(self) -> Any:
        if self._future is not None:
            # a pool worker waiting for a task not started yet runs it itself (no deadlock
            # when forked tasks fork and wait)
            worker = threading.current_thread().name.startswith("ember-interop")
            if worker and self._task is not None and self._future.cancel():
                fut: concurrent.futures.Future = concurrent.futures.Future()
                try:
                    fut.set_result(self._task())
                except BaseException as e:
                    fut.set_exception(e)
                self._future = fut
            try:
                return self._future.result()
            except BaseException as e:
                raise e.with_traceback(e.__traceback__) from None
        if self._error is not None:
            raise self._error
        return self._value

    def value(self) -> Any:
        return self.wait()

    def then(self, callback) -> Future:
        """Return a Future of ``callback(self)``, run once this one is done."""
        if self._future is None:
            try:
                return Future(callback(self))
            except Exception as e:
                return Future(error=e)
        out: concurrent.futures.Future = concurrent.futures.Future()

        def chain(_):
            try:
                out.set_result(callback(self))
            except BaseException as e:
                out.set_exception(e)

        self._future.add_done_callback(chain)
        return Future(_future=out)

    def set_result(self, value) -> None:
        self._future, self._value, self._error = None, value, None


def _submit(fn, *args, **kwargs) -> Future:
    from ember._core.grad_mode import STATE

    grad = STATE.grad_enabled

    def task():
        STATE.grad_enabled = grad  # the caller's grad mode, as torch's thread-local state
        return fn(*args, **kwargs)

    return Future(_future=interop_pool().submit(task), _task=task)


def fork_call(fn, *args, **kwargs) -> Future:
    """Run ``fn(*args, **kwargs)`` on the inter-op pool; return its Future at once."""
    return _submit(fn, *args, **kwargs)


def fork_block(block, args) -> Future:
    """Run a ``prim::fork`` node's block on the pool (the executor's fork)."""
    from ember.jit.executor import run_block

    def body():
        outs = run_block(block, list(args))
        return outs[0] if len(outs) == 1 else tuple(outs)

    return _submit(body)

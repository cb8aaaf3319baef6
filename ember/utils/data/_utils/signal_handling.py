"""The main process's watch over its DataLoader workers, as torch's ``signal_handling``.

An iterator registers its workers' pids (``_set_worker_pids``). When a child process ends, the
main process gets SIGCHLD and the handler installed by ``_set_SIGCHLD_handler`` looks at the
registered workers without reaping them (``waitid(..., WNOWAIT)``): one that was killed by a
signal or exited with a non-zero code makes it raise torch's ``RuntimeError`` at once, instead of
the main process waiting for data that will never come. The iterator's ``_try_get_data`` then
reports "DataLoader worker (pid(s) N) exited unexpectedly" with that error as its cause.

Workers get ``faulthandler``: a worker that crashes in native code prints where it was.
"""

from __future__ import annotations

import faulthandler
import multiprocessing.util
import os
import signal
import threading

from ember.utils.data import _utils
from ember.utils.data._utils import IS_WINDOWS

_worker_pids: dict[int, tuple[int, ...]] = {}

_SIGCHLD_handler_set = False
"""Whether the SIGCHLD handler is installed (one serves every DataLoader of the process)."""


def _set_worker_pids(key: int, pids: tuple[int, ...]) -> None:
    if key in _worker_pids:
        raise ValueError(
            "_set_worker_pids should be called only once for each _BaseDataLoaderIter."
        )
    _worker_pids[key] = tuple(pids)


def _remove_worker_pids(key: int) -> None:
    if _worker_pids.pop(key, None) is None:
        raise ValueError(f"Cannot find worker information for _BaseDataLoaderIter with id {key}")


def _error_if_any_worker_fails() -> None:
    """Raise torch's RuntimeError if a registered worker was killed or exited with an error."""
    for key, pids in list(_worker_pids.items()):
        for pid in pids:
            try:
                info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except (ChildProcessError, OSError):  # already reaped, or not our child
                continue
            if info is None or info.si_pid == 0:
                continue
            if info.si_code == os.CLD_EXITED and info.si_status != 0:
                msg = (
                    f"DataLoader worker (pid {pid}) exited unexpectedly with exit code "
                    f"{info.si_status}. Details are lost due to multiprocessing. Rerunning with "
                    "num_workers=0 may give better error trace."
                )
            elif info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
                msg = (
                    f"DataLoader worker (pid {pid}) is killed by signal: "
                    f"{signal.strsignal(info.si_status)}. "
                )
                if info.si_status == signal.SIGBUS:
                    msg += (
                        "It is possible that dataloader's workers are out of shared memory. "
                        "Please try to raise your shared memory limit."
                    )
            else:
                continue
            # report each failure once: the other workers are about to be shut down
            _worker_pids[key] = ()
            raise RuntimeError(msg)


def _set_SIGCHLD_handler() -> None:
    """Install the SIGCHLD handler (main thread only; it chains to a previous Python handler)."""
    global _SIGCHLD_handler_set
    if IS_WINDOWS or _SIGCHLD_handler_set:
        return
    if threading.current_thread() is not threading.main_thread():
        return
    previous_handler = signal.getsignal(signal.SIGCHLD)
    if not callable(previous_handler):
        previous_handler = None

    def handler(signum, frame) -> None:
        # at exit, multiprocessing terminates the workers itself
        if not _utils.python_exit_status and not multiprocessing.util._exiting:
            _error_if_any_worker_fails()
        if previous_handler is not None:
            previous_handler(signum, frame)

    signal.signal(signal.SIGCHLD, handler)
    _SIGCHLD_handler_set = True


def _set_worker_signal_handlers() -> None:
    """In a worker: report native crashes (SIGSEGV, SIGBUS, SIGFPE...) with a traceback, leave
    SIGCHLD to the default (the main process's handler is inherited through fork), and ignore
    SIGINT.

    Ctrl-C reaches every process of the terminal's group. torch's workers catch the
    ``KeyboardInterrupt`` and exit, but it can land inside ``Queue.put`` between taking and
    releasing the queue's lock, and the worker then hangs at exit trying to flush that queue.
    Ignoring it is as quiet and cannot hang: the main process's ``KeyboardInterrupt`` shuts the
    workers down (done event, ``None``, terminate after 5 s), and a worker whose main process is
    gone exits on its own."""
    if not faulthandler.is_enabled():
        faulthandler.enable()
    if not IS_WINDOWS:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

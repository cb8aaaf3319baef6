"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` new processes, as
``torch.multiprocessing.spawn``.

Each child writes the traceback of an exception it raises to its own error file and exits
with code 1; the parent's :meth:`ProcessContext.join` waits for any child to end, and when one
fails it terminates the others and raises :class:`ProcessRaisedException` (carrying the child's
traceback) or :class:`ProcessExitedException` (exit code or signal), torch's messages.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import warnings

__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "SpawnContext",
    "spawn",
    "start_processes",
]


class ProcessException(Exception):
    """A child process of :func:`spawn` failed."""

    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def _init_args(self) -> tuple:
        # what __init__ takes, so the exception pickles back into an equal one
        return (self.msg, self.error_index, self.error_pid)

    def __reduce__(self):
        return (type(self), self._init_args())


class ProcessRaisedException(ProcessException):
    """A child process failed with an exception raised by its code."""


class ProcessExitedException(ProcessException):
    """A child process was killed by a signal or exited with a non-zero code."""

    __slots__ = ["exit_code"]

    def __init__(
        self,
        msg: str,
        error_index: int,
        error_pid: int,
        exit_code: int,
        signal_name: str | None = None,
    ):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def _init_args(self) -> tuple:
        return (*super()._init_args(), self.exit_code, self.signal_name)


def _set_pdeathsig() -> None:
    # Linux: a child gets SIGINT when its parent dies, so no orphan keeps running
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, int(signal.SIGINT))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _wrap(fn, i: int, args: tuple, error_file: str) -> None:
    _set_pdeathsig()
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # SIGINT: stopped by the parent
    except Exception:
        import traceback

        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The processes started by :func:`start_processes`; :meth:`join` waits for them."""

    def __init__(self, processes: list, error_files: list) -> None:
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        """Return the children's process ids."""
        return [int(p.pid) for p in self.processes]

    def _join_all(self, timeout: float) -> None:
        import time

        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the children; return True when all ended well,
        False when some still run. If one failed, stop the others (SIGTERM, after
        ``grace_period``; SIGKILL if needed) and raise its error."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()

        raise self._failure(error_index)

    def _failure(self, index: int) -> ProcessException:
        """The exception for child ``index``: its traceback if it left one in its error file,
        else how it ended (a signal, or an exit code)."""
        pid = self.processes[index].pid
        try:
            with open(self.error_files[index], "rb") as fh:
                trace = pickle.load(fh)
        except OSError:  # no error file: the child did not raise, it was killed or exited
            return self._exit_failure(index, pid)
        return ProcessRaisedException(
            f"\n\n-- Process {index:d} terminated with the following error:\n{trace}", index, pid
        )

    def _exit_failure(self, index: int, pid: int) -> ProcessExitedException:
        code = self.processes[index].exitcode
        if code >= 0:
            return ProcessExitedException(
                f"process {index:d} terminated with exit code {code:d}",
                error_index=index,
                error_pid=pid,
                exit_code=code,
            )
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"<Unknown signal {-code}>"
        return ProcessExitedException(
            f"process {index:d} terminated with signal {name}",
            error_index=index,
            error_pid=pid,
            exit_code=code,
            signal_name=name,
        )


class SpawnContext(ProcessContext):
    """Deprecated name of :class:`ProcessContext`."""

    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(
    fn,
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
):
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``; join them
    (return None) or return their :class:`ProcessContext` with ``join=False``."""
    start = multiprocessing.get_context(start_method).Process
    processes, error_files = [], []
    for rank in range(nprocs):
        error_file = _unused_path()
        child = start(target=_wrap, args=(fn, rank, args, error_file), daemon=daemon)
        child.start()
        processes.append(child)
        error_files.append(error_file)
    running = ProcessContext(processes, error_files)
    if join:
        while not running.join():
            pass
        return None
    return running


def _unused_path() -> str:
    """A fresh temporary path with no file at it: a child creates it only when it fails."""
    import tempfile

    fd, path = tempfile.mkstemp(prefix="ember-errorfile-", suffix=".pickle")
    os.close(fd)
    os.unlink(path)
    return path


def spawn(
    fn,
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
):
    """Spawn ``nprocs`` processes that run ``fn(i, *args)`` (``fn`` must be importable: defined
    at the top level of a module). If one fails, the others are stopped and its error is
    raised here. Return None with ``join=True``, else the :class:`ProcessContext`."""
    if start_method != "spawn":
        msg = (
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t"
            " torch.multiprocessing.start_processes(...)"
        )
        warnings.warn(msg, FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")

"""Helpers of the DataLoader, kept at module level so worker processes can pickle them:
collation (``collate``), fetching (``fetch``), the worker loop (``worker``) and the main
process's watch over its workers (``signal_handling``)."""

from __future__ import annotations

import atexit
import multiprocessing.util  # noqa: F401 (see the atexit hook below)
import sys
import traceback

IS_WINDOWS = sys.platform == "win32"

MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between checks that the other side (a worker, or the main process) is still alive
while waiting on a queue, so that nobody hangs on a dead process."""

python_exit_status = False
"""True once the interpreter is exiting: iterators then skip joining their workers (the
``multiprocessing`` exit handler terminates daemonic workers)."""


def _set_python_exit_flag() -> None:
    global python_exit_status
    python_exit_status = True


# registered after multiprocessing's own exit handler (imported above), so it runs before it
# (atexit is last in, first out): the flag is set when multiprocessing terminates the workers
atexit.register(_set_python_exit_flag)


class KeyErrorMessage(str):
    """A ``str`` whose ``repr`` is itself (``KeyError`` prints its argument's repr)."""

    __slots__ = ()

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception and its formatted traceback, to re-raise in another thread or process."""

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        # keep no reference to the traceback: its frames would stay alive
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the wrapped exception type with "Caught <Type> <where>.\\nOriginal Traceback"."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # an exception type that takes other arguments: keep the message at least
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            # this frame and the exception's traceback would hold each other (and the DataLoader
            # iterator in between) until the next garbage collection
            exception = None


from ember.utils.data._utils import collate, fetch, signal_handling, worker  # noqa: E402

__all__ = [
    "ExceptionWrapper",
    "IS_WINDOWS",
    "MP_STATUS_CHECK_INTERVAL",
    "collate",
    "fetch",
    "signal_handling",
    "worker",
]

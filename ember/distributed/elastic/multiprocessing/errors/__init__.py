"""``record``: report the exception that ends a launched process to the launcher, as
``torch.distributed.elastic.multiprocessing.errors.record``.

When the launcher (``python -m ember.distributed.run``) set ``TORCHELASTIC_ERROR_FILE``, the
decorated function's uncaught exception is written there as torch's JSON error record
(message, traceback, timestamp) before it propagates; the launcher prints it when it reports the
failed rank.
"""

from __future__ import annotations

import functools
import json
import os
import time
import traceback

__all__ = ["ChildFailedError", "record"]


class ChildFailedError(Exception):
    """A launched child process failed: ``name`` and ``failures`` ({rank: description})."""

    def __init__(self, name: str, failures: dict) -> None:
        self.name = name
        self.failures = failures
        super().__init__(
            f"{name} FAILED: " + "; ".join(f"rank {r}: {f}" for r, f in failures.items())
        )


def _write_error_file(e: BaseException) -> None:
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    record = {
        "message": {
            "message": f"{type(e).__name__}: {e}",
            "extraInfo": {
                "py_callstack": traceback.format_exc(),
                "timestamp": str(int(time.time())),
            },
        }
    }
    with open(path, "w") as fh:
        json.dump(record, fh)


def record(fn, error_handler=None):
    """Return ``fn`` wrapped so that an exception it raises is recorded for the launcher."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except SystemExit as se:
            if se.code == 0:
                return None
            raise
        except Exception as e:
            _write_error_file(e)
            raise

    return wrapper

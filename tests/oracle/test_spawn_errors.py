"""``ember.multiprocessing.spawn`` failure reports against ``torch.multiprocessing``'s: a child
killed by a signal, one exiting with a code, one raising; and the exceptions' pickling."""

from __future__ import annotations

import os
import pickle
import signal
import sys

import pytest

import ember.multiprocessing as emp

torch = pytest.importorskip("torch")
tmp = pytest.importorskip("torch.multiprocessing")


def _child(rank: int, how: str) -> None:
    if rank != 1:
        return
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "exit":
        sys.exit(7)
    if how == "raise":
        raise KeyError("rank 1 on purpose")


def _report(lib, how):
    try:
        lib.start_processes(_child, args=(how,), nprocs=2, start_method="fork")
    except Exception as exc:  # noqa: BLE001 - compared below
        text = str(exc)
        if how == "raise":  # the traceback's file paths and line numbers are each library's
            text = text.splitlines()[:3] + text.splitlines()[-1:]
        extra = (getattr(exc, "exit_code", None), getattr(exc, "signal_name", None))
        return type(exc).__name__, text, exc.error_index, isinstance(exc.error_pid, int), extra
    return None


@pytest.mark.parametrize("how", ["kill", "exit", "raise", "none"])
def test_start_processes_failures_like_torch(how):
    assert _report(emp, how) == _report(tmp, how)


def test_process_exceptions_pickle_like_torch():
    for lib in (emp, tmp):
        raised = lib.ProcessRaisedException("boom", 2, 1234)
        exited = lib.ProcessExitedException("gone", 1, 99, exit_code=-9, signal_name="SIGKILL")
        for exc in (raised, exited):
            back = pickle.loads(pickle.dumps(exc))
            assert type(back) is type(exc)
            assert (str(back), back.error_index, back.error_pid) == (
                str(exc),
                exc.error_index,
                exc.error_pid,
            )
        back = pickle.loads(pickle.dumps(exited))
        assert (back.exit_code, back.signal_name) == (-9, "SIGKILL")

"""Shared pieces of the ``ember.utils.data`` tests: datasets importable by spawned workers (so
they live in a module of their own, light to import) and the no-orphan-process fixture.

Datasets take the library *name* (``"ember"`` or ``"torch"``) and import it lazily, so the same
class serves the ember tests and the oracle comparisons with torch, and pickles cheaply.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import multiprocessing
import os
import random
import signal
import time

import numpy as np
import pytest

import ember.utils.data as _ember_data


def _lib(name: str):
    return importlib.import_module(name)


def _data_mod(name: str):
    return importlib.import_module(f"{name}.utils.data")


# ------------------------------------------------------------------------------ processes
def _children() -> dict[int, str]:
    """This process's children that are DataLoader-like, as ``{pid: "state cmdline"}``
    (multiprocessing's resource tracker and forkserver live for the whole session by design)."""
    me = os.getpid()
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) != me or "resource_tracker" in cmdline or "forkserver" in cmdline:
            continue
        out[int(entry)] = f"{state} {cmdline[:80]}"
    return out


def _alive(deadline: float) -> tuple[list, dict]:
    end = time.monotonic() + deadline
    collected = False
    while True:
        alive = multiprocessing.active_children()  # also reaps finished children
        kids = _children()
        if (not alive and not kids) or time.monotonic() > end:
            return alive, kids
        if not collected:  # an iterator in a reference cycle shuts its workers down in gc
            gc.collect()
            collected = True
            continue
        time.sleep(0.02)


def _kill(alive: list, kids: dict) -> None:
    for p in alive:  # multiprocessing's: it reaps them itself (a waitpid here would hide them)
        p.kill()
        p.join(5)
    managed = {p.pid for p in alive}
    for pid in kids:
        if pid in managed:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (OSError, ChildProcessError):
            pass


def assert_no_orphans(deadline: float = 10.0) -> None:
    """Fail unless every worker process is gone (joined or reaped) within ``deadline`` s; kill
    the leftovers, so that one leak does not fail the tests after it."""
    alive, kids = _alive(deadline)
    if alive or kids:
        _kill(alive, kids)
        raise AssertionError(f"orphan processes: {alive} / {kids}")


@pytest.fixture
def no_orphans():
    """Check that a test leaves no child process behind."""
    _kill(*_alive(0.5))  # an earlier test's leak was reported by that test
    yield
    assert_no_orphans()


# ------------------------------------------------------------------------------ datasets
class RangeDataset:
    """Sample ``i`` is ``(tensor full of i of shape, i, str(i))`` in library ``lib``; map-style."""

    def __init__(self, n: int, lib: str = "ember", shape=(2, 3), dtype: str = "float32"):
        self.n, self.lib, self.shape, self.dtype = n, lib, shape, dtype

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        L = _lib(self.lib)
        return L.full(self.shape, float(i), dtype=getattr(L, self.dtype)), i, str(i)


class DictDataset:
    """Sample ``i`` is a dict of a NumPy array, a float, a bool and a nested tuple."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return {
            "x": np.arange(4, dtype=np.int32) + i,
            "f": i / 2,
            "flag": bool(i % 2),
            "pair": (np.float64(i), [i, -i]),
        }


class RandomDataset:
    """Sample ``i`` draws from ``random``, NumPy's global RNG and the library's generator, and
    reports the worker it came from: the per-worker seeding must make them differ."""

    def __init__(self, n: int, lib: str = "ember"):
        self.n, self.lib = n, lib

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        L = _lib(self.lib)
        info = _data_mod(self.lib).get_worker_info()
        wid = -1 if info is None else info.id
        return random.random(), float(np.random.rand()), float(L.rand(()).item()), wid


class FailingDataset:
    """Raises ``exc_type(message)`` at index ``bad``."""

    def __init__(self, n: int, bad: int, exc_type=ValueError, message: str = "bad sample"):
        self.n, self.bad, self.exc_type, self.message = n, bad, exc_type, message

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc_type(self.message)
        return i


class DyingDataset:
    """The worker that reads index ``bad`` kills itself with ``sig`` (or exits with ``code``)."""

    def __init__(self, n: int, bad: int, sig: int | None = signal.SIGKILL, code: int = 3):
        self.n, self.bad, self.sig, self.code = n, bad, sig, code

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            if self.sig is None:
                os._exit(self.code)
            faulthandler.disable()  # keep the test output free of the crash report
            os.kill(os.getpid(), self.sig)
            time.sleep(10)
        return i


class SlowDataset:
    """Index ``slow`` sleeps ``seconds``; the others are instant."""

    def __init__(self, n: int, slow: int, seconds: float):
        self.n, self.slow, self.seconds = n, slow, seconds

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if i == self.slow:
            time.sleep(self.seconds)
        return i


class PidDataset:
    """Sample ``i`` is ``(i, pid of the process that read it)``."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return i, os.getpid()


class ShardedRangeMixin:
    """``range(start, end)`` split into contiguous shards, one per DataLoader worker (via the
    library's ``get_worker_info``); subclasses set ``lib`` and derive the library's
    ``IterableDataset``."""

    lib = "ember"

    def __init__(self, start: int, end: int):
        self.start, self.end = start, end

    def __iter__(self):
        info = _data_mod(self.lib).get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = -(-(self.end - self.start) // info.num_workers)
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))


class ShardedRange(ShardedRangeMixin, _ember_data.IterableDataset):
    pass


class ShardedRangeWithLen(ShardedRange):
    def __len__(self) -> int:
        return self.end - self.start


class UnshardedRange(_ember_data.IterableDataset):
    """``range(n)`` in every worker: each sample comes once per worker."""

    def __init__(self, n: int):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


class H5Dataset:
    """The tutorial's HDF5 pattern: the file is opened lazily, once per process, on first use."""

    def __init__(self, path: str, lib: str = "ember"):
        self.path, self.lib = path, lib
        self.file = None
        with self._open() as f:
            self.n = len(f["x"])

    def _open(self):
        import h5py

        return h5py.File(self.path, "r")

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if self.file is None:
            self.file = self._open()
            self.opened_in = os.getpid()
        L = _lib(self.lib)
        return L.from_numpy(self.file["x"][i]), int(self.file["y"][i]), self.opened_in


def worker_init_record(worker_id: int) -> None:
    """A ``worker_init_fn``: records the worker id on the worker's dataset copy."""
    info = _data_mod("ember").get_worker_info()
    info.dataset.init_id = worker_id


class InitRecordDataset:
    def __init__(self, n: int):
        self.n = n
        self.init_id = None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return i, self.init_id


def drop_none_collate(batch):
    """A custom collate_fn that drops ``None`` samples (the "broken sample" pattern)."""
    from ember.utils.data import default_collate

    return default_collate([b for b in batch if b is not None])


class SometimesNoneDataset:
    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return None if i % 3 == 0 else i


# ------------------------------------------------------------------------------ process targets
def child_fill_and_return(q_in, q_out, value: float) -> None:
    """Receive a tensor, fill it with ``value`` in place, send it back with its is_shared(), and
    wait for the parent's "done" (the parent maps what it receives through this process's
    descriptor, so the sender must outlive the receiving, as with torch's file_descriptor
    strategy)."""
    t = q_in.get(timeout=30)
    t.fill_(value)
    q_out.put((t, t.is_shared()))
    assert q_in.get(timeout=30) == "done"


def child_send_new(q_in, q_out, n: int) -> None:
    """Create a tensor in this process, send it, and wait for the parent's "done"."""
    import ember

    t = ember.arange(float(n))
    q_out.put(t)
    assert q_in.get(timeout=30) == "done"


class WaitForDataset:
    """Index ``waiter`` blocks (up to 30 s) until the file ``path`` exists. Reading index
    ``signal_index`` creates it, in any process; with ``signal_index=None`` the test creates it
    itself (for instance once the main process has received another batch)."""

    def __init__(self, n: int, waiter: int, signal_index: int | None, path: str):
        self.n, self.waiter, self.signal_index, self.path = n, waiter, signal_index, path

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if i == self.signal_index:
            with open(self.path, "w"):
                pass
        if i == self.waiter:
            end = time.monotonic() + 30
            while not os.path.exists(self.path) and time.monotonic() < end:
                time.sleep(0.01)
        return i

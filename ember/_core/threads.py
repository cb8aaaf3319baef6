"""Intra-op thread count: ``set_num_threads`` / ``get_num_threads``, as torch's, and ember's
one thread policy.

ember's parallel work is NumPy's: BLAS (matmul, linalg) and any OpenMP pools loaded in the
process. With ``threadpoolctl`` installed (``pip install ember[threads]``) the count is applied
to all of them; without it the count is still recorded and read back, and BLAS keeps the size
it started with (set ``OMP_NUM_THREADS`` before starting Python instead).

Besides BLAS, large kernels whose batch rows are independent (convolutions, max pooling, the
LSTM recurrence) run as two batch halves on one pool thread and the caller (``run_halves``,
``by_halves``), BLAS held to one thread meanwhile, when ``get_num_threads() > 1`` and the work
is at least ``SPLIT_MIN`` elements. ``set_num_threads(1)`` (or ``OPENBLAS_NUM_THREADS=1`` in
the environment) makes everything serial.
"""

from __future__ import annotations

import os
import threading

import numpy as np

_state: dict = {"n": None, "limiter": None}


def _threadpool_limits():
    """Return the ``threadpoolctl`` module, or None when it is not installed."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl


def _default_threads() -> int:
    # torch's default: OMP_NUM_THREADS / MKL_NUM_THREADS if set, else the usable cores
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        v = os.environ.get(var, "")
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def get_num_threads() -> int:
    """Return the number of threads used for intra-op parallelism (BLAS and OpenMP pools)."""
    if _state["n"] is not None:
        return _state["n"]
    return _default_threads()


def set_num_threads(num: int) -> None:
    """Set the number of threads used for intra-op parallelism (BLAS and OpenMP pools)."""
    if isinstance(num, bool) or not isinstance(num, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    tpc = _threadpool_limits()
    if tpc is not None:
        # a limiter applies its limits when created and keeps them until restored
        _state["limiter"] = tpc.threadpool_limits(limits=num)
    _state["n"] = num


__all__ = ["get_num_threads", "set_num_threads"]


# ------------------------------------------------------------------------------ work split

_POOL: dict = {"executor": None}
# below this many elements a second thread costs more than it saves (measured here: handing
# work to the pool's thread and back costs 40-80 us). (A lone elementwise kernel split between
# multi-threaded GEMMs came out no faster: OpenBLAS's own threads spin on the second core after
# a GEMM. The batch halves below hold BLAS to one thread for the whole kernel instead.)
PARALLEL_MIN = 1 << 19


def _executor():
    ex = _POOL["executor"]
    if ex is None:
        from concurrent.futures import ThreadPoolExecutor

        def mark():
            _POOL["worker"] = threading.get_ident()

        ex = ThreadPoolExecutor(1, thread_name_prefix="ember-intra-op", initializer=mark)
        _POOL["executor"] = ex
    return ex


def _on_worker() -> bool:
    # work already on the pool's thread runs whole: waiting on its own queue would deadlock
    return threading.get_ident() == _POOL.get("worker")


def _forget_executor() -> None:  # a forked child has no worker thread: make a new pool there
    _POOL["executor"] = None
    _POOL["worker"] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_executor)


def parallel_pair(first, second) -> None:
    """Run ``first()`` on the pool's thread and ``second()`` on this one; wait for both."""
    if _on_worker():
        first()
        second()
        return
    future = _executor().submit(first)
    second()
    future.result()


# ------------------------------------------------------------------------------ batch halves
#
# ember's NumPy kernels run on the calling thread; only BLAS has threads of its own. A kernel
# whose rows are independent (im2col, an elementwise pass, a pooling window, a per-sample GEMM)
# can instead run as two halves on two threads (NumPy releases the GIL in its loops), with BLAS
# held to one thread meanwhile so that the two halves do not fight OpenBLAS's own threads for
# the two cores. Each element is computed by the same code on the same operands either way, so
# the results are bit-identical to a serial run (nothing is split that sums across the halves).

_BLAS: dict = {"libs": None}
# OPENBLAS_NUM_THREADS=1 (the advice for an oversubscribed machine) keeps ember's kernels
# serial too, whatever torch's own thread count reads
_SERIAL_ENV = os.environ.get("OPENBLAS_NUM_THREADS", "").strip() == "1"
_REGION = threading.Lock()  # one split region at a time; a nested or concurrent one runs whole


def _blas_libs() -> list:
    """The BLAS thread-pool controllers (threadpoolctl's), looked up once; [] without it."""
    libs = _BLAS["libs"]
    if libs is None:
        tpc = _threadpool_limits()
        libs = []
        if tpc is not None:
            ctl = tpc.ThreadpoolController()
            libs = [lib for lib in ctl.lib_controllers if lib.user_api == "blas"]
        _BLAS["libs"] = libs
    return libs


def split_work(work: int, rows: int) -> bool:
    """True when a kernel of ``work`` elements over ``rows`` independent rows is worth running
    as two halves (two threads allowed, at least 2 rows, work above ``SPLIT_MIN``)."""
    return (
        rows > 1
        and work >= SPLIT_MIN
        and get_num_threads() > 1
        and not _SERIAL_ENV
        and not _on_worker()
    )


def run_halves(fn, rows: int) -> None:
    """Call ``fn(lo, hi)`` on ``[0, rows // 2)`` on the pool's thread and on ``[rows // 2,
    rows)`` on this one, BLAS held to one thread meanwhile; ``fn(0, rows)`` when a split region
    is already running (nested, or on another thread)."""
    if not _REGION.acquire(blocking=False):
        fn(0, rows)
        return
    try:
        libs = _blas_libs()
        before = [lib.get_num_threads() for lib in libs]
        for lib, n in zip(libs, before):
            if n != 1:
                lib.set_num_threads(1)
        try:
            mid = rows // 2
            parallel_pair(lambda: fn(0, mid), lambda: fn(mid, rows))
        finally:
            for lib, n in zip(libs, before):
                if n != 1:
                    lib.set_num_threads(n)
    finally:
        _REGION.release()


# a split pays from about this many elements per call (measured here: handing half the work to
# the pool's thread and back costs 40-80 us, ~100k float32 elements of an elementwise pass)
SPLIT_MIN = 1 << 17


def by_halves(fn, n: int, work: int, total: bool = False):
    """Return ``fn(0, n)`` of a batch of ``n`` samples, computed as two batch halves on two
    threads when that pays (``split_work``): the halves concatenated, or with
    ``total`` summed (a weight gradient's sum over the batch, in two partial sums)."""
    if not split_work(work, n):
        return fn(0, n)
    parts = [None, None]

    def run(lo, hi):
        parts[lo != 0] = fn(lo, hi)

    run_halves(run, n)
    if parts[1] is None:  # the split region was busy: run whole
        return parts[0]
    if total:
        parts[0] += parts[1]
        return parts[0]
    return np.concatenate(parts)

"""Intra-op thread count: ``set_num_threads`` / ``get_num_threads``, as torch's.

ember's parallel work is NumPy's: BLAS (matmul, linalg) and any OpenMP pools loaded in the
process. With ``threadpoolctl`` installed (``pip install ember[threads]``) the count is applied
to all of them; without it the count is still recorded and read back, and BLAS keeps the size
it started with (set ``OMP_NUM_THREADS`` before starting Python instead).
"""

from __future__ import annotations

import os

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


# ------------------------------------------------------------------------------ elementwise split

_POOL: dict = {"executor": None}
# below this many elements a second thread costs more than it saves (measured here: an SGD
# step over 100 params of 64x64 is slower split, one over a 535k-param MLP 25% faster)
PARALLEL_MIN = 1 << 19


def _executor():
    ex = _POOL["executor"]
    if ex is None:
        from concurrent.futures import ThreadPoolExecutor

        ex = _POOL["executor"] = ThreadPoolExecutor(1, thread_name_prefix="ember-intra-op")
    return ex


def _forget_executor() -> None:  # a forked child has no worker thread: make a new pool there
    _POOL["executor"] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_executor)


def parallel_halves(fn, n: int, *arrays) -> None:
    """Run ``fn(*arrays)``, elementwise in-place NumPy work on flat arrays of length ``n``, as
    two halves on two threads when ``n`` is large and two threads are allowed (NumPy releases
    the GIL inside its loops, so memory-bound passes get the second core's bandwidth, as torch's
    parallel ``_foreach`` kernels do). Arguments that are not length-``n`` arrays are passed to
    both halves as they are."""
    if n < PARALLEL_MIN or get_num_threads() < 2:
        fn(*arrays)
        return
    h = n // 2
    split = [isinstance(a, np.ndarray) and a.shape == (n,) for a in arrays]
    lo = [a[:h] if s else a for a, s in zip(arrays, split)]
    hi = [a[h:] if s else a for a, s in zip(arrays, split)]
    future = _executor().submit(fn, *hi)
    fn(*lo)
    future.result()


def parallel_pair(first, second) -> None:
    """Run ``first()`` on the pool's thread and ``second()`` on this one; wait for both."""
    future = _executor().submit(first)
    second()
    future.result()

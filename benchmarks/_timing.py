"""Tiny timeit-style timing helper shared by the benchmarks.

``measure(fn)`` warms ``fn`` up, picks an iteration count ``number`` so that one repeat takes at
least ``min_time`` seconds, then runs ``repeat`` repeats of ``number`` calls and reports the best
(minimum) per-call time, like ``timeit``. Unlike ``timeit`` the garbage collector is left enabled
(it is collected once before each repeat): an autograd graph built from Python objects may create
reference cycles, and the cost of collecting them is part of the real cost of a training step.

``measure_interleaved({name: fn})`` does the same for several callables with their repeats run
round-robin, so that load changes on a shared machine affect them alike. With ``settle`` it
sleeps that long before each repeat: a library's idle worker threads spin for a while after its
last call (OpenBLAS's about 0.1 s, OpenMP's), and on a 2-core machine that spinning would
slow whichever library runs next.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# seconds of sleep before each repeat of a multi-threaded step (see measure_interleaved)
SETTLE = 0.25


@dataclass(frozen=True)
class Timing:
    best: float  # seconds per call, min over repeats
    median: float  # seconds per call, median over repeats
    number: int  # calls per repeat
    repeat: int  # number of repeats


def _calibrate(fn: Callable[[], object], warmup: int, min_time: float, max_number: int) -> int:
    for _ in range(warmup):
        fn()
    # Calibrate on a single (already warm) call; at least one call per repeat.
    t0 = time.perf_counter()
    fn()
    single = max(time.perf_counter() - t0, 1e-9)
    return max(1, min(max_number, math.ceil(min_time / single)))


def measure_interleaved(
    fns: dict[str, Callable[[], object]],
    *,
    repeat: int = 5,
    min_time: float = 0.2,
    warmup: int = 3,
    max_number: int = 1_000_000,
    catch: bool = True,
    settle: float = 0.0,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Timing | Exception]:
    """Time several callables with their repeats interleaved (round-robin).

    Each callable gets its own warm-up and calls-per-repeat; then every round runs one repeat of
    each, so a change in machine load during the measurement hits all of them alike and their
    ratios stay meaningful. ``settle`` seconds of sleep precede each repeat (see the module
    docstring). With ``catch`` an exception raised by one callable is returned in
    place of its Timing and the others carry on; without it, it propagates. ``clock``:
    ``time.process_time`` measures CPU time (steadier on a loaded machine, for single-threaded
    steps: it excludes the time spent waiting for a core).
    """
    numbers: dict[str, int] = {}
    results: dict[str, Timing | Exception] = {}
    for name, fn in fns.items():
        try:
            numbers[name] = _calibrate(fn, warmup, min_time, max_number)
        except Exception as e:
            if not catch:
                raise
            results[name] = e
    per_call: dict[str, list[float]] = {name: [] for name in numbers}
    for _ in range(repeat):
        for name, number in numbers.items():
            if name in results:
                continue
            fn = fns[name]
            gc.collect()
            if settle:
                time.sleep(settle)
            try:
                t0 = clock()
                for _ in range(number):
                    fn()
                per_call[name].append((clock() - t0) / number)
            except Exception as e:
                if not catch:
                    raise
                results[name] = e
    for name, times in per_call.items():
        if name not in results:
            results[name] = Timing(min(times), statistics.median(times), numbers[name], repeat)
    return {name: results[name] for name in fns}


def measure(
    fn: Callable[[], object],
    *,
    repeat: int = 5,
    min_time: float = 0.2,
    warmup: int = 3,
    max_number: int = 1_000_000,
) -> Timing:
    """Time ``fn()``: warm up, calibrate calls per repeat, return best-of-``repeat`` per call."""
    return measure_interleaved(
        {"fn": fn},
        repeat=repeat,
        min_time=min_time,
        warmup=warmup,
        max_number=max_number,
        catch=False,
    )["fn"]


def check_outputs(got, ref, tol: float) -> str | None:
    """Return why ember's outputs ``got`` differ from NumPy's ``ref`` (None if they agree).

    Either side may be one array/tensor or a tuple; values must be close within ``tol``, shapes
    equal, and dtypes equal unless NumPy's reference is bool.
    """
    got = list(got) if isinstance(got, tuple) else [got]
    ref = list(ref) if isinstance(ref, tuple) else [ref]
    if len(got) != len(ref):
        return f"{len(got)} outputs, NumPy {len(ref)}"
    for g, r in zip(got, ref):
        g = g.detach().numpy()
        r = np.asarray(r)
        if g.shape != r.shape:
            return f"shape {g.shape} != {r.shape}"
        if g.dtype != r.dtype and r.dtype != np.bool_:
            return f"dtype {g.dtype} != {r.dtype}"
        if not np.allclose(g, r, rtol=tol, atol=tol, equal_nan=True):
            return f"values differ (max abs diff {np.nanmax(np.abs(g - r)):.3g})"
    return None


# ---------------------------------------------------------------------------------------------
# --json records (the benchmark contract; collected by benchmarks/run.py)
# ---------------------------------------------------------------------------------------------


def median_ms(t: Timing | Exception | None) -> float | None:
    """Return the median per-call time of ``t`` in milliseconds (None for an error or no run)."""
    return t.median * 1e3 if isinstance(t, Timing) else None


def bench_record(
    workload: str,
    case: str,
    ember: float | None,
    torch: float | None = None,
    numpy: float | None = None,
    *,
    target: tuple[str, float] | str | None = None,
    status: str | None = None,
    unit: str = "ms",
) -> dict:
    """Return one ``--json`` record: ``{"workload", "case", "unit", "ember", "torch", "numpy",
    "target", "status"}``.

    ``target=("torch", 2.5)`` means ember/torch <= 2.5 (``"numpy"`` likewise); the status is then
    computed here from the figures given: "PASS", "MISS", or None when a figure is missing.
    Any other target is a free-form string whose ``status`` the caller passes.
    """
    if isinstance(target, tuple):
        ref_name, limit = target
        ref = {"torch": torch, "numpy": numpy}[ref_name]
        target = f"ember/{ref_name} <= {limit:g}"
        status = None
        if ember is not None and ref:
            status = "PASS" if ember / ref <= limit else "MISS"

    def num(v):
        return None if v is None or not math.isfinite(v) else float(v)

    return {
        "workload": workload,
        "case": case,
        "unit": unit,
        "ember": num(ember),
        "torch": num(torch),
        "numpy": num(numpy),
        "target": target,
        "status": status,
    }


def write_json(path: str | None, records: list[dict]) -> None:
    """Write ``records`` to ``path`` as a JSON list (nothing when ``path`` is None)."""
    if path is None:
        return
    import json

    with open(path, "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")

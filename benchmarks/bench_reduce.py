#!/usr/bin/env python
"""Reductions and scans on a large tensor: ember vs the same work in plain NumPy (and torch).

    python benchmarks/bench_reduce.py              # full run (about a minute on 2 cores)
    python benchmarks/bench_reduce.py --quick      # CI smoke: fewer / shorter repeats
    python benchmarks/bench_reduce.py --only sum,std
    python benchmarks/bench_reduce.py --size 2000 --dtype float64

Each case reduces a 1000x1000 float32 tensor (``--size``, ``--dtype``) over all elements, over
dim 0 (down the columns, strided) or over dim 1 (along rows, contiguous), forward only, no grad.
The ember column calls the public API (``x.sum(0)``, ``x.max(1)``...); the NumPy column is the
same work written directly in NumPy -- for ``max(dim)`` that is ``argmax`` plus
``take_along_axis`` (values and indices), for ``std`` the unbiased ``np.std(ddof=1)``, for
``logsumexp`` the max-shifted form -- so it is the floor a NumPy-based framework can reach. The
torch column is for reference. Target: ember within 1.2x of NumPy (``PASS``/``MISS``; this never
affects the exit status).

Before timing, ember's result is checked against NumPy's; a failed check (``!``) or an error
(``err``) makes the exit status 1. Timing is ``timeit``-style (``_timing.py``): best of
``--repeat`` repeats, the columns' repeats interleaved so machine load hits them alike.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for _p in (str(HERE), str(REPO)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _timing import (  # noqa: E402
    bench_record,
    check_outputs,
    measure_interleaved,
    median_ms,
    write_json,
)

TARGET = 1.2


def _np_max_dim(a, d):
    idx = np.argmax(a, axis=d, keepdims=True)
    return np.take_along_axis(a, idx, axis=d).squeeze(d), idx.squeeze(d)


def _np_logsumexp(a, d):
    m = np.amax(a, axis=d, keepdims=True)
    return np.log(np.sum(np.exp(a - m), axis=d)) + m.squeeze(d)


# name -> (ember/torch workload on a tensor, NumPy workload on an array)
CASES = {
    "sum": (lambda x: x.sum(), lambda a: np.sum(a)),
    "sum(0)": (lambda x: x.sum(0), lambda a: np.sum(a, axis=0)),
    "sum(1)": (lambda x: x.sum(1), lambda a: np.sum(a, axis=1)),
    "mean": (lambda x: x.mean(), lambda a: np.mean(a)),
    "mean(0)": (lambda x: x.mean(0), lambda a: np.mean(a, axis=0)),
    "mean(1)": (lambda x: x.mean(1), lambda a: np.mean(a, axis=1)),
    "max": (lambda x: x.max(), lambda a: np.max(a)),
    "max(0)": (lambda x: x.max(0), lambda a: _np_max_dim(a, 0)),
    "max(1)": (lambda x: x.max(1), lambda a: _np_max_dim(a, 1)),
    "amax(0)": (lambda x: x.amax(0), lambda a: np.amax(a, axis=0)),
    "amax(1)": (lambda x: x.amax(1), lambda a: np.amax(a, axis=1)),
    "argmax(1)": (lambda x: x.argmax(1), lambda a: np.argmax(a, axis=1)),
    "std": (lambda x: x.std(), lambda a: np.std(a, ddof=1)),
    "std(0)": (lambda x: x.std(0), lambda a: np.std(a, axis=0, ddof=1)),
    "std(1)": (lambda x: x.std(1), lambda a: np.std(a, axis=1, ddof=1)),
    "logsumexp(1)": (lambda x: x.logsumexp(1), lambda a: _np_logsumexp(a, 1)),
    "norm": (lambda x: x.norm(), lambda a: np.sqrt(np.sum(a * a))),
    "norm(1)": (lambda x: x.norm(dim=1), lambda a: np.sqrt(np.sum(a * a, axis=1))),
    "cumsum(1)": (lambda x: x.cumsum(1), lambda a: np.cumsum(a, axis=1)),
    "prod(1)": (lambda x: x.prod(1), lambda a: np.prod(a, axis=1)),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CI smoke: 3 short repeats")
    ap.add_argument("--only", default="", help="comma-separated case names or prefixes")
    ap.add_argument("--size", type=int, default=1000, help="the tensor is size x size")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--min-time", type=float, default=None)
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    args = ap.parse_args(argv)
    repeat = args.repeat or (3 if args.quick else 7)
    min_time = args.min_time or (0.05 if args.quick else 0.2)

    import ember

    try:
        import torch
    except ImportError:
        torch = None

    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.size, args.size)).astype(args.dtype)
    a *= 0.5  # keeps prod and exp in range
    a += 1.0
    x = ember.from_numpy(a.copy())
    t = torch.from_numpy(a.copy()) if torch is not None else None

    wanted = [w for w in args.only.split(",") if w]
    names = [n for n in CASES if not wanted or any(n.startswith(w) for w in wanted)]
    print(f"reductions of a {args.size}x{args.size} {args.dtype} tensor; times in ms per call")
    threads = f"torch threads {torch.get_num_threads()}" if torch is not None else "no torch"
    print(f"numpy {np.__version__}, {threads}; target ember/numpy <= {TARGET}x\n")
    header = f"{'case':<14}{'ember':>9}{'numpy':>9}{'torch':>9}{'e/np':>7}{'e/torch':>9}"
    print(header)
    print("-" * len(header))
    status, misses, records = 0, [], []
    for name in names:
        efn, nfn = CASES[name]
        try:
            problem = check_outputs(efn(x), nfn(a), 1e-3 if args.dtype == "float32" else 1e-9)
        except Exception as e:  # noqa: BLE001 - reported, then the exit status is 1
            problem = f"{type(e).__name__}: {e}"
        fns = {"ember": lambda efn=efn: efn(x), "numpy": lambda nfn=nfn: nfn(a)}
        if t is not None:
            fns["torch"] = lambda efn=efn: efn(t)
        res = measure_interleaved(fns, repeat=repeat, min_time=min_time, warmup=2)

        def ms(key, res=res):
            r = res.get(key)
            return r.best * 1e3 if r is not None and not isinstance(r, Exception) else None

        e, n, tt = ms("ember"), ms("numpy"), ms("torch")
        ratio = e / n if e and n else None
        cells = [f"{v:9.3f}" if v is not None else f"{'err':>9}" for v in (e, n, tt)]
        if tt is None and t is None:
            cells[2] = f"{'-':>9}"
        mark = "!" if problem else ""
        verdict = "" if ratio is None else ("PASS" if ratio <= TARGET else "MISS")
        line = f"{name:<14}{''.join(cells)}{mark}"
        line += f"{ratio:7.2f}" if ratio else f"{'':>7}"
        line += f"{e / tt:9.2f}" if e and tt else f"{'':>9}"
        print(f"{line}  {verdict}")
        records.append(
            bench_record(
                "reduce",
                name,
                None if problem else median_ms(res.get("ember")),
                median_ms(res.get("torch")),
                median_ms(res.get("numpy")),
                target=("numpy", TARGET),
            )
        )
        if problem:
            status = 1
            misses.append(f"{name}: {problem}")
        if verdict == "MISS":
            misses.append(f"{name}: ember/numpy {ratio:.2f}x")
    if misses:
        print("\nNotes:\n  " + "\n  ".join(misses))
    write_json(args.json, records)
    return status


if __name__ == "__main__":
    sys.exit(main())

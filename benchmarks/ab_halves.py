#!/usr/bin/env python
"""A/B of ember's batch-half split (``ember/_core/threads.py``) inside one process.

    python benchmarks/ab_halves.py                      # lenet,resnet,lstm, 10 rounds
    python benchmarks/ab_halves.py --cases lstm --rounds 20

Each round times ember's step with the split off (``SPLIT_MIN`` out of reach: BLAS's own two
threads only), with it on, and torch's step, interleaved (so load changes hit all three alike),
3 calls per figure after one warm-up call. Prints per case the minimum and median wall time
and the median process CPU time (all threads) per call, in ms.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
for _p in (str(HERE), str(HERE.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import bench_lstm  # noqa: E402
import bench_nn  # noqa: E402

import ember  # noqa: E402
import ember._core.threads as threads  # noqa: E402


def _cases(torch, names):
    out = {}
    for name in names:
        if name == "lstm":
            w, x, y = bench_lstm._data()
            steps = [bench_lstm.lib_step(lib, w, x, y)[0] for lib in (torch, ember)]
            out[name] = tuple(steps)
        else:
            t_step, e_step = bench_nn.CASES[name](torch)[:2]
            out[name] = (t_step, e_step)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="lenet,resnet,lstm")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    cases = _cases(torch, args.cases.split(","))
    on = threads.SPLIT_MIN
    modes = {"off": 1 << 62, "on": on}
    wall: dict = {}
    cpu: dict = {}
    for _ in range(args.rounds):
        for name, (t_step, e_step) in cases.items():
            for mode in (*modes, "torch"):
                if mode == "torch":
                    f = t_step
                else:
                    threads.SPLIT_MIN = modes[mode]
                    f = e_step
                time.sleep(0.05)
                f()
                t, p = time.perf_counter(), time.process_time()
                for _ in range(3):
                    f()
                wall.setdefault((name, mode), []).append((time.perf_counter() - t) / 3 * 1e3)
                cpu.setdefault((name, mode), []).append((time.process_time() - p) / 3 * 1e3)
    threads.SPLIT_MIN = on
    for (name, mode), v in wall.items():
        v = np.array(v)
        c = np.median(cpu[(name, mode)])
        print(
            f"{name:7s} {mode:5s} wall min {v.min():8.2f} median {np.median(v):8.2f} ms"
            f"   cpu median {c:8.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""DataLoader throughput: worker processes against loading in the main process, ember and torch.

    python benchmarks/bench_dataloader.py            # full run (~30 s on 2 cores)
    python benchmarks/bench_dataloader.py --quick    # CI smoke (a few seconds)

Workload: a map-style dataset whose ``__getitem__`` burns ~1 ms of CPU in pure Python (the
iteration count is calibrated once, before any worker starts) and returns a 3x32x32 float32
tensor; ``batch_size=64``, default collate. The torch column runs the same dataset code with
``lib=torch``.

Reported, per library (best of ``--repeat`` epochs, the libraries and worker counts interleaved
round-robin so that load from other processes hits them alike):

* ``raw``: 64 calls of the sample work alone, no loader: the floor for one batch;
* ``w0``: ms per batch and batches/s with ``num_workers=0``; overhead = w0 / raw - 1
  (target < 10%: collation and bookkeeping are small next to the work);
* ``w2``: the same with ``num_workers=2`` (persistent workers, after a warm-up epoch, so the
  figure is the steady state, not process start-up); speedup = w0 / w2 (target >= 1.7x);
* ``machine``: the speedup two plain processes get on the same work right now, the ceiling for
  ``w2`` on a machine shared with other jobs; w2's efficiency = speedup / machine;
* CPU accounting, which other jobs barely disturb: CPU time per batch of the main process
  (``time.process_time``) and of the workers (``/proc/<pid>/stat``) over one steady-state epoch,
  against the raw work's CPU time; "projected" = w0 CPU / max(workers CPU / 2, main CPU with
  workers), the speedup two idle cores would give.

Exit status 1 if a loader gave wrong batches (each batch is checked); PASS/MISS never affects it.
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import bench_record, write_json

SHAPE = (3, 32, 32)
BATCH = 64


def burn(n: int) -> int:
    """Pure-Python CPU work (the stand-in for decoding and augmenting a sample)."""
    acc = 0
    for i in range(n):
        acc += i * i
    return acc


def calibrate(target_s: float = 1e-3) -> int:
    """Return the ``burn`` count that takes about ``target_s`` seconds here (best of several)."""
    n = 20_000
    best = min(_timed(burn, n) for _ in range(5))
    return max(1, int(n * target_s / best))


def _timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


class WorkDataset:
    """``__getitem__(i)``: ``burn(n)``, then a 3x32x32 float32 tensor full of ``i``."""

    def __init__(self, lib_name: str, length: int, n: int):
        self.lib_name, self.length, self.n = lib_name, length, n

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i):
        burn(self.n)
        lib = importlib.import_module(self.lib_name)
        return lib.from_numpy(np.full(SHAPE, i, dtype=np.float32))


def _raw_batch(n: int) -> None:
    for _ in range(BATCH):
        burn(n)
        np.full(SHAPE, 0, dtype=np.float32)


def _raw_half(n: int, batches: int) -> None:
    for _ in range(batches * BATCH // 2):
        burn(n)


def machine_speedup(n: int, batches: int) -> float:
    """Return the speedup of 2 processes over 1 on ``batches`` batches of raw work."""
    ctx = multiprocessing.get_context("fork")
    one = _timed(_raw_half, n, 2 * batches)  # all the work in this process
    t0 = time.perf_counter()
    procs = [ctx.Process(target=_raw_half, args=(n, batches)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    two = time.perf_counter() - t0
    return one / two


def _proc_cpu(pid: int) -> float:
    """Return the CPU seconds (user + system) process ``pid`` has used (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_epoch(loader: Loader) -> tuple[float, float]:
    """Return (main-process CPU s, worker-processes CPU s) per batch of one steady-state epoch
    of ``loader`` (its workers already started): what the loader costs, whatever else runs."""
    it = loader.loader._iterator
    pids = [w.pid for w in it._workers] if it is not None else []
    k0 = sum(_proc_cpu(p) for p in pids)
    c0 = time.process_time()
    loader.epoch()
    main = time.process_time() - c0
    kids = sum(_proc_cpu(p) for p in pids) - k0
    return main / loader.batches, kids / loader.batches


class Loader:
    """One library and worker count: times one epoch per call and checks its batches."""

    def __init__(self, lib_name: str, workers: int, n: int, batches: int):
        self.lib_name, self.workers, self.batches = lib_name, workers, batches
        data = importlib.import_module(f"{lib_name}.utils.data")
        ds = WorkDataset(lib_name, batches * BATCH, n)
        kwargs = dict(num_workers=workers)
        if workers:
            kwargs["persistent_workers"] = True
        self.loader = data.DataLoader(ds, batch_size=BATCH, **kwargs)
        self.problem = None
        self.epoch()  # warm-up: start the workers, fill the caches

    def epoch(self) -> float:
        t0 = time.perf_counter()
        seen = 0
        for k, batch in enumerate(self.loader):
            a = batch.numpy()
            if (
                a.shape != (BATCH, *SHAPE)
                or a.dtype != np.float32
                or a[-1, 0, 0, 0] != (k + 1) * BATCH - 1
            ):
                self.problem = f"batch {k}: shape {a.shape}, last value {a[-1, 0, 0, 0]}"
            seen += 1
        dt = time.perf_counter() - t0
        if seen != self.batches:
            self.problem = f"{seen} batches instead of {self.batches}"
        return dt / seen


def json_records(times: dict, raw: float, libs: list[str]) -> list[dict]:
    """Return the ``--json`` records: median ms per batch with 0 and 2 workers, ember and torch,
    with the targets judged on the medians (w0 overhead over the raw work, w2 speedup over w0)."""
    med = {key: statistics.median(v) * 1e3 for key, v in times.items()}
    e0, e2 = med[("ember", 0)], med[("ember", 2)]
    t0, t2 = (med[("torch", 0)], med[("torch", 2)]) if "torch" in libs else (None, None)
    return [
        bench_record(
            "dataloader",
            "num_workers=0, ms/batch",
            e0,
            t0,
            target="ember overhead over the raw work < 10%",
            status="PASS" if e0 / (raw * 1e3) - 1 < 0.10 else "MISS",
        ),
        bench_record(
            "dataloader",
            "num_workers=2, ms/batch",
            e2,
            t2,
            target="ember speedup over num_workers=0 >= 1.7x",
            status="PASS" if e0 / e2 >= 1.7 else "MISS",
        ),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="CI smoke: 1 short repeat")
    ap.add_argument("--repeat", type=int, default=None, help="epochs timed per loader")
    ap.add_argument("--batches", type=int, default=None, help="batches per epoch")
    ap.add_argument("--no-torch", action="store_true", help="skip the torch column")
    ap.add_argument("--json", metavar="PATH", help="also write JSON records (median ms/batch)")
    args = ap.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 4)
    batches = args.batches or (6 if args.quick else 16)

    libs = ["ember"]
    if not args.no_torch:
        try:
            importlib.import_module("torch.utils.data")
            libs.append("torch")
        except ImportError:
            pass

    n = calibrate()
    raw_times = [_timed(_raw_batch, n) for _ in range(2)]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"DataLoader benchmark: batch {BATCH} x {SHAPE} float32, ~1 ms/sample "
        f"(burn({n})), {batches} batches/epoch, best of {repeat}; {cpus} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )

    loaders = {(lib, w): Loader(lib, w, n, batches) for lib in libs for w in (0, 2)}
    times: dict = {key: [] for key in loaders}
    machine = []
    for _ in range(repeat):
        for key, loader in loaders.items():
            times[key].append(loader.epoch())
            raw_times.append(_timed(_raw_batch, n))
        machine.append(machine_speedup(n, batches))
    ceiling = max(machine)
    raw = min(raw_times)

    print(f"raw sample work: {raw * 1e3:.1f} ms per batch ({raw / BATCH * 1e3:.3f} ms per sample)")
    print(f"machine: 2 processes give {ceiling:.2f}x over 1 on the raw work right now")
    header = f"{'lib':<6} {'w0 ms/batch':>11} {'w0 batch/s':>10} {'overhead':>8} "
    header += f"{'w2 ms/batch':>11} {'w2 batch/s':>10} {'speedup':>7} {'efficiency':>10}"
    print(header)
    failed = False
    for lib in libs:
        w0, w2 = min(times[(lib, 0)]), min(times[(lib, 2)])
        overhead = w0 / raw - 1
        speedup = w0 / w2
        print(
            f"{lib:<6} {w0 * 1e3:>11.1f} {1 / w0:>10.1f} {overhead:>7.1%} "
            f"{w2 * 1e3:>11.1f} {1 / w2:>10.1f} {speedup:>6.2f}x {speedup / ceiling:>9.0%}"
        )
        if lib == "ember":
            verdict = [
                f"overhead {'PASS' if overhead < 0.10 else 'MISS'} (< 10%)",
                f"speedup {'PASS' if speedup >= 1.7 else 'MISS'} (>= 1.7x"
                + (", machine ceiling below it now" if ceiling < 1.7 else "")
                + ")",
            ]
            print("ember: " + "; ".join(verdict))
        for w in (0, 2):
            problem = loaders[(lib, w)].problem
            if problem:
                failed = True
                print(f"PROBLEM {lib} num_workers={w}: {problem}")
    print(
        "CPU accounting (independent of other load): CPU s per batch in the main process and in "
        "the workers;\n  projected = w0 CPU / max(workers CPU / 2, main CPU with workers), the "
        "speedup two idle cores would give"
    )
    c0 = time.process_time()
    for _ in range(3):
        _raw_batch(n)
    raw_cpu = (time.process_time() - c0) / 3
    print(f"  raw work: {raw_cpu * 1e3:.1f} ms CPU per batch")
    for lib in libs:
        main0, _ = cpu_epoch(loaders[(lib, 0)])
        main2, kids2 = cpu_epoch(loaders[(lib, 2)])
        projected = main0 / max(kids2 / 2, main2)
        print(
            f"{lib:<6} w0 main {main0 * 1e3:6.1f} ms ({main0 / raw_cpu - 1:+.1%} vs raw) | "
            f"w2 main {main2 * 1e3:5.2f} ms, workers {kids2 * 1e3:6.1f} ms "
            f"({kids2 / raw_cpu - 1:+.1%} vs raw) | projected {projected:.2f}x"
        )
    spread = {k: statistics.median(v) / min(v) - 1 for k, v in times.items()}
    print(
        "median/best - 1 per loader (noise): "
        + ", ".join(f"{lib} w{w}: {s:.0%}" for (lib, w), s in spread.items())
    )
    del loaders
    write_json(args.json, json_records(times, raw, libs))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

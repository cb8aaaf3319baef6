"""All-reduce bandwidth and DDP overlap on 2 ranks: ember on MPI vs raw mpi4py vs ember's local
transport (vs torch's gloo when installed).

    python benchmarks/bench_distributed.py            # launches the workers itself
    python benchmarks/bench_distributed.py --quick    # sizes up to 1 MB, shorter DDP (CI smoke)
    python benchmarks/bench_distributed.py --json PATH

Each worker (``--worker KIND``, run by the driver under mpiexec or ``ember.distributed.run``)
prints one JSON line per measurement from rank 0; the driver prints a table. ``--json`` records:
one per size and ember transport (milliseconds per all-reduce, torch's gloo alongside, raw
mpi4py's time in the MPI case's name) and one per DDP run (microseconds per sample).
Exit status 1 if an ember transport that could run produced no measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

SIZES = [1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26]  # bytes: 1 KB .. 64 MB
QUICK_SIZES = SIZES[:4]  # 1 KB .. 1 MB
HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [p for p in (os.path.dirname(HERE), ROOT) if p not in sys.path]

from _timing import bench_record, write_json  # noqa: E402


def _reps(nbytes: int) -> int:
    return max(3, min(200, (64 << 20) // max(nbytes, 1) // 4))


def _timeit(fn, reps: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps


def worker(kind: str, quick: bool = False) -> None:
    import numpy as np

    sizes = QUICK_SIZES if quick else SIZES
    out = []
    if kind == "mpi4py":  # the same collective, straight on mpi4py
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        for nb in sizes:
            a = np.ones(nb // 4, np.float32)
            comm.Barrier()
            t = _timeit(lambda a=a: comm.Allreduce(MPI.IN_PLACE, a), _reps(nb))
            out.append({"kind": kind, "bytes": nb, "seconds": t})
        rank = comm.rank
    elif kind == "torch":
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo")
        for nb in sizes:
            a = torch.ones(nb // 4)
            dist.barrier()
            out.append(
                {
                    "kind": kind,
                    "bytes": nb,
                    "seconds": _timeit(lambda a=a: dist.all_reduce(a), _reps(nb)),
                }
            )
        rank = dist.get_rank()
        dist.destroy_process_group()
    else:
        import ember
        import ember.distributed as dist

        dist.init_process_group("gloo")
        for nb in sizes:
            a = ember.ones(nb // 4)
            dist.barrier()
            out.append(
                {
                    "kind": kind,
                    "bytes": nb,
                    "seconds": _timeit(lambda a=a: dist.all_reduce(a), _reps(nb)),
                }
            )
        out += _ddp(kind, ember, dist, quick)
        rank = dist.get_rank()
        dist.destroy_process_group()
    if rank == 0:
        for row in out:
            print("BENCH " + json.dumps(row), flush=True)


def _ddp(kind, ember, dist, quick: bool = False) -> list:
    """Time per sample of an MLP's DDP step and the fraction of all-reduce time hidden behind
    backward (1 - exposed wait / time of the same all-reduces run alone)."""
    nn = ember.nn
    model = nn.Sequential(
        nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = ember.randn(64, 784), ember.randint(0, 10, (64,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(ddp(x), y).backward()
        opt.step()

    t = _timeit(step, 3 if quick else 10)
    exposed = []
    for _ in range(2 if quick else 5):
        step()
        exposed.append(ddp._exposed_comm_seconds)
    alone = _timeit(lambda: [dist.all_reduce(b.tensor) for b in ddp._buckets], 2 if quick else 5)
    hidden = max(0.0, 1 - (sum(exposed) / len(exposed)) / alone)
    return [{"kind": kind, "ddp_step_s": t, "per_sample_us": t / 64 * 1e6, "hidden": hidden}]


def _launch(kind: str, quick: bool = False) -> list | None:
    """Run 2 ranks of ``--worker kind``; return rank 0's rows ([] if it failed, None if
    mpiexec is missing for an MPI kind)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    mpiexec = shutil.which(
        "mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    )
    if kind in ("mpi4py", "ember-mpi"):
        if mpiexec is None:
            return None
        cmd = [mpiexec, "-n", "2", sys.executable, HERE, "--worker", kind]
    else:
        env["EMBER_LAUNCH"] = "local"
        cmd = [
            sys.executable,
            "-m",
            "ember.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            HERE,
            "--worker",
            kind,
        ]
    if quick:
        cmd.append("--quick")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    rows = [json.loads(line[6:]) for line in done.stdout.splitlines() if line.startswith("BENCH ")]
    if not rows:
        print(f"{kind}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
    return rows


def _size(nb: int) -> str:
    return f"{nb >> 20} MB" if nb >= 1 << 20 else f"{nb >> 10} KB"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes up to 1 MB, short DDP (CI smoke)")
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    ap.add_argument("--worker", metavar="KIND", help=argparse.SUPPRESS)  # a launched rank
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.quick)
        return 0
    sizes = QUICK_SIZES if args.quick else SIZES
    kinds = ["mpi4py", "ember-mpi", "ember-local"]
    try:
        import torch.distributed  # noqa: F401

        kinds.append("torch")
    except ImportError:
        pass
    launched = {k: _launch(k, args.quick) for k in kinds}
    failed = [k for k, r in launched.items() if k.startswith("ember") and r == []]
    rows = {k: r or [] for k, r in launched.items()}
    print(f"{'size':>8} " + " ".join(f"{k + ' GB/s':>16}" for k in kinds))
    for nb in sizes:
        cells = []
        for k in kinds:
            r = next((r for r in rows[k] if r.get("bytes") == nb), None)
            # bus bandwidth of a 2-rank all-reduce: 2 (n-1)/n * size / time = size / time
            cells.append(f"{nb / r['seconds'] / 1e9:16.3f}" if r else f"{'-':>16}")
        print(f"{nb:>8} " + " ".join(cells))
    for k in kinds:
        for r in rows[k]:
            if "ddp_step_s" in r:
                print(
                    f"DDP MLP step ({k}): {r['per_sample_us']:.1f} us/sample, "
                    f"all-reduce hidden behind backward: {100 * r['hidden']:.0f}%"
                )

    def ms(kind, nb):
        r = next((r for r in rows.get(kind, []) if r.get("bytes") == nb), None)
        return r["seconds"] * 1e3 if r else None

    records = []
    for nb in sizes:
        raw = ms("mpi4py", nb)
        raw_txt = f" (raw mpi4py {raw:.3f} ms)" if raw is not None else ""
        if launched["ember-mpi"] is not None:
            records.append(
                bench_record(
                    "distributed",
                    f"all_reduce {_size(nb)} ember-mpi{raw_txt}",
                    ms("ember-mpi", nb),
                    ms("torch", nb),
                )
            )
        records.append(
            bench_record(
                "distributed",
                f"all_reduce {_size(nb)} ember-local",
                ms("ember-local", nb),
                ms("torch", nb),
            )
        )
    for k in kinds:
        for r in rows[k]:
            if "ddp_step_s" in r:
                records.append(
                    bench_record(
                        "distributed",
                        f"DDP MLP step {k} (hidden {100 * r['hidden']:.0f}%)",
                        r["per_sample_us"],
                        unit="us/sample",
                    )
                )
    write_json(args.json, records)
    if failed:
        print(f"FAILED: no measurements from {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

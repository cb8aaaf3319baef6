"""All-reduce bandwidth and DDP overlap on 2 and 4 ranks: ember on MPI vs raw mpi4py vs
ember's local transport (vs torch's gloo when installed).

    python benchmarks/bench_distributed.py            # launches the workers itself
    python benchmarks/bench_distributed.py --quick    # 2 ranks, up to 1 MB, short DDP (smoke)
    python benchmarks/bench_distributed.py --ranks 2 --kinds ember-mpi   # a subset
    python benchmarks/bench_distributed.py --allreduce-only --json PATH

The all-reduce table gives bus bandwidth (2 (n-1)/n x size / time, GB/s). The DDP lines give
the MLP and the Transformer block (default bucket cap and 1 MB): time per sample of the joined
batch vs one process on its share, and the fraction of the all-reduce time hidden behind
backward. The load average is printed before and after each rank count.

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


def worker(
    kind: str, quick: bool = False, allreduce_only: bool = False, ddp_only: bool = False
) -> None:
    import numpy as np

    sizes = [] if ddp_only else QUICK_SIZES if quick else SIZES
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
        comm = dist.distributed_c10d._default_pg()._comm  # (MPI: the group's communicator)
        for nb in sizes:
            a = ember.ones(nb // 4)
            dist.barrier()
            row = {"kind": kind, "bytes": nb}
            row["seconds"] = _timeit(lambda a=a: dist.all_reduce(a), _reps(nb))
            if comm is not None:  # ember's overhead: ember and raw mpi4py interleaved
                from mpi4py import MPI

                raw, ours = [], []
                for _ in range(5):
                    dist.barrier()
                    raw.append(_timeit(lambda a=a: comm.Allreduce(MPI.IN_PLACE, a._data), 20))
                    dist.barrier()
                    ours.append(_timeit(lambda a=a: dist.all_reduce(a), 20))
                row["overhead"] = min(ours) / min(raw) - 1
            out.append(row)
        if not allreduce_only:
            out += _ddp(kind, ember, dist, quick)
        rank = dist.get_rank()
        dist.destroy_process_group()
    if rank == 0:
        for row in out:
            print("BENCH " + json.dumps(row), flush=True)


def _workload(ember, name: str):
    """Return ``(model, input, target, loss)`` of one rank's share of a DDP workload: the MLP
    (batch 64 of 784 features) or the Transformer block of bench_transformer.py
    (``TransformerEncoderLayer(256, 4, 1024, norm_first=True)``, 8 sequences of 64 tokens)."""
    nn = ember.nn
    ember.manual_seed(0)
    if name == "mlp":
        model = nn.Sequential(
            nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
        )
        x, y = ember.randn(64, 784), ember.randint(0, 10, (64,))
        return model, x, y, nn.CrossEntropyLoss()
    model = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True, norm_first=True)
    x = ember.randn(8, 64, 256)
    return model, x, ember.randn(8, 64, 256), nn.MSELoss()


DDP_CASES = [("mlp", None), ("transformer", None), ("transformer", 1.0)]  # (workload, cap MB)
# ember-mpi only: the Transformer block at 1 MB with the asynchronous all-reduces as MPI
# requests tested by a progress thread (EMBER_MPI_ASYNC=requests), the previous design
MPI_REQUEST_CASE = ("transformer", 1.0, "requests")


def _ddp(kind, ember, dist, quick: bool = False) -> list:
    """Time per sample of DDP steps and the fraction of all-reduce time hidden behind backward
    (1 - wait left after the last rank's backward / time of the same all-reduces run alone,
    each the best of the rounds: the machine's other load only adds to either), with one
    process running the plain module on its share of the batch alongside (its per-sample time
    over the share; the DDP step's over the joined batch), and the share of the gradient bytes
    whose all-reduce had finished when backward ended. Rounds interleave the plain step, the
    DDP step and the all-reduces alone. Wall and CPU time (this process)."""
    rows = []
    n = dist.get_world_size()
    cases = [(name, cap, None) for name, cap in DDP_CASES]
    if kind == "ember-mpi":
        cases.append(MPI_REQUEST_CASE)
    for name, cap, mode in cases:
        if mode is not None:
            os.environ["EMBER_MPI_ASYNC"] = mode
        model, x, y, loss_fn = _workload(ember, name)
        ddp = ember.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap)
        opt = ember.optim.SGD(ddp.parameters(), lr=0.01)

        def step(m, opt=opt, x=x, y=y, loss_fn=loss_fn):
            opt.zero_grad()
            loss_fn(m(x), y).backward()
            opt.step()

        reps = 3 if quick else 12
        step(ddp)  # the first backward: buckets rebuilt at the next forward
        single, wall, cpu, exposed, alone, hidden_bytes = [], [], [], [], [], []
        for _ in range(reps):  # interleaved: the plain module, a DDP step, the all-reduces
            dist.barrier()
            t0 = time.perf_counter()
            step(model)
            single.append(time.perf_counter() - t0)
            dist.barrier()
            t0, c0 = time.perf_counter(), time.process_time()
            step(ddp)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            # the wait after the last rank's backward: the communication not hidden (the
            # rest of this rank's wait is the other ranks' lateness; one host, one clock)
            done = ddp._backward_done_at + ddp._exposed_comm_seconds
            ends = ember.tensor([ddp._backward_done_at], dtype=ember.float64)
            dist.all_reduce(ends, op=dist.ReduceOp.MAX)
            exposed.append(max(0.0, done - ends.item()))
            hidden_bytes.append(ddp._hidden_bytes / sum(b.flat.nbytes for b in ddp._buckets))
            dist.barrier()
            t0 = time.perf_counter()
            for b in ddp._buckets:
                dist.all_reduce(b.tensor)
            alone.append(time.perf_counter() - t0)
        os.environ.pop("EMBER_MPI_ASYNC", None)
        dist.barrier()

        def med(v):
            return sorted(v)[len(v) // 2]

        batch = x.shape[0]
        rows.append(
            {
                "kind": kind,
                "ranks": n,
                "workload": name,
                "bucket_cap_mb": cap,
                "async": mode,
                "buckets": len(ddp._buckets),
                "ddp_step_s": med(wall),
                "per_sample_us": med(wall) / (batch * n) * 1e6,
                "cpu_per_sample_us": med(cpu) / batch * 1e6,
                "single_per_sample_us": med(single) / batch * 1e6,
                "allreduce_alone_s": min(alone),
                "exposed_s": min(exposed),
                "hidden": max(0.0, 1 - min(exposed) / min(alone)),
                "hidden_median": max(0.0, 1 - med(exposed) / med(alone)),
                "hidden_bytes": med(hidden_bytes),
            }
        )
    return rows


def _launch(kind: str, n: int, quick: bool, allreduce_only: bool, ddp_only: bool) -> list | None:
    """Run ``n`` ranks of ``--worker kind``; return rank 0's rows ([] if it failed, None if
    mpiexec is missing for an MPI kind)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    mpiexec = shutil.which(
        "mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    )
    if kind in ("mpi4py", "ember-mpi"):
        if mpiexec is None:
            return None
        cmd = [mpiexec, "-n", str(n), sys.executable, HERE, "--worker", kind]
    else:
        env["EMBER_LAUNCH"] = "local"
        cmd = [sys.executable, "-m", "ember.distributed.run", "--standalone"]
        cmd += ["--nproc-per-node", str(n), HERE, "--worker", kind]
    if quick:
        cmd.append("--quick")
    if allreduce_only:
        cmd.append("--allreduce-only")
    if ddp_only:
        cmd.append("--ddp-only")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    rows = [json.loads(line[6:]) for line in done.stdout.splitlines() if line.startswith("BENCH ")]
    if not rows:
        print(f"{kind} on {n} ranks: failed\n{done.stderr[-2000:]}", file=sys.stderr)
    for r in rows:
        r.setdefault("ranks", n)
    return rows


def _size(nb: int) -> str:
    return f"{nb >> 20} MB" if nb >= 1 << 20 else f"{nb >> 10} KB"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes up to 1 MB, short DDP (CI smoke)")
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    ap.add_argument("--ranks", help="comma-separated rank counts (default 2,4; with --quick 2)")
    ap.add_argument("--allreduce-only", action="store_true", help="skip the DDP steps")
    ap.add_argument("--ddp-only", action="store_true", help="skip the all-reduce sizes")
    ap.add_argument("--kinds", help="comma-separated subset of mpi4py,ember-mpi,ember-local,torch")
    ap.add_argument("--worker", metavar="KIND", help=argparse.SUPPRESS)  # a launched rank
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.quick, args.allreduce_only, args.ddp_only)
        return 0
    sizes = [] if args.ddp_only else QUICK_SIZES if args.quick else SIZES
    kinds = ["mpi4py", "ember-mpi", "ember-local"]
    try:
        import torch.distributed  # noqa: F401

        kinds.append("torch")
    except ImportError:
        pass
    if args.kinds:
        kinds = [k for k in args.kinds.split(",") if k in kinds]
    records, failed = [], []
    ranks = args.ranks or ("2" if args.quick else "2,4")
    for n in [int(v) for v in ranks.split(",")]:
        print(f"== {n} ranks ({_load()} before)", flush=True)
        launched = {k: _launch(k, n, args.quick, args.allreduce_only, args.ddp_only) for k in kinds}
        failed += [
            f"{k} ({n} ranks)" for k, r in launched.items() if k.startswith("ember") and r == []
        ]
        rows = {k: r or [] for k, r in launched.items()}
        print(f"{'size':>8} " + " ".join(f"{k + ' GB/s':>16}" for k in kinds))
        for nb in sizes:
            cells = []
            for k in kinds:
                r = next((r for r in rows[k] if r.get("bytes") == nb), None)
                # bus bandwidth of an n-rank all-reduce: 2 (n-1)/n * size / time
                bw = 2 * (n - 1) / n * nb / r["seconds"] / 1e9 if r else None
                cells.append(f"{bw:16.3f}" if r else f"{'-':>16}")
            print(f"{_size(nb):>8} " + " ".join(cells))
        over = [r for r in rows.get("ember-mpi", []) if "overhead" in r]
        if over:
            cells = ", ".join(f"{_size(r['bytes'])} {100 * r['overhead']:+.1f}%" for r in over)
            print(f"ember-mpi vs mpi4py on the same communicator, interleaved (min of 5): {cells}")
        for k in kinds:
            for r in rows[k]:
                if "ddp_step_s" in r:
                    cap = "default" if r["bucket_cap_mb"] is None else f"{r['bucket_cap_mb']:g} MB"
                    how = f", async {r['async']}" if r.get("async") else ""
                    print(
                        f"DDP {r['workload']} ({k}{how}, bucket cap {cap}, {r['buckets']} "
                        f"buckets): {r['per_sample_us']:.1f} us/sample vs 1 process "
                        f"{r['single_per_sample_us']:.1f}; best of rounds: all-reduce alone "
                        f"{r['allreduce_alone_s'] * 1e3:.2f} ms, left after backward "
                        f"{r['exposed_s'] * 1e3:.2f} ms: hidden {100 * r['hidden']:.0f}% "
                        f"(medians: {100 * r['hidden_median']:.0f}%); bytes reduced during "
                        f"backward {100 * r['hidden_bytes']:.0f}%"
                    )
        print(f"({_load()} after)", flush=True)

        def ms(kind, nb, rows=rows):
            r = next((r for r in rows.get(kind, []) if r.get("bytes") == nb), None)
            return r["seconds"] * 1e3 if r else None

        for nb in sizes:
            raw = ms("mpi4py", nb)
            raw_txt = f" (raw mpi4py {raw:.3f} ms)" if raw is not None else ""
            if launched.get("ember-mpi") is not None and "ember-mpi" in kinds:
                records.append(
                    bench_record(
                        "distributed",
                        f"all_reduce {_size(nb)} {n} ranks ember-mpi{raw_txt}",
                        ms("ember-mpi", nb),
                        ms("torch", nb),
                    )
                )
            if "ember-local" in kinds:
                records.append(
                    bench_record(
                        "distributed",
                        f"all_reduce {_size(nb)} {n} ranks ember-local",
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
                            f"DDP {r['workload']} step {n} ranks {k}"
                            f"{' ' + r['async'] if r.get('async') else ''} "
                            f"cap {r['bucket_cap_mb']} "
                            f"(hidden {100 * r['hidden']:.0f}%, bytes reduced during backward "
                            f"{100 * r['hidden_bytes']:.0f}%, 1 process "
                            f"{r['single_per_sample_us']:.1f})",
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

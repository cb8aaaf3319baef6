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

from _timing import SETTLE, bench_record, write_json  # noqa: E402


def _reps(nbytes: int) -> int:
    return max(3, min(200, (64 << 20) // max(nbytes, 1) // 4))


def _timeit(fn, reps: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps


def worker(
    kind: str,
    quick: bool = False,
    allreduce_only: bool = False,
    ddp_only: bool = False,
    rounds: int | None = None,
    cases: list | None = None,
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
                for _ in range(15):
                    dist.barrier()
                    raw.append(_timeit(lambda a=a: comm.Allreduce(MPI.IN_PLACE, a._data), 10))
                    dist.barrier()
                    ours.append(_timeit(lambda a=a: dist.all_reduce(a), 10))
                row["overhead"] = min(ours) / min(raw) - 1
            out.append(row)
        if comm is not None and not ddp_only:
            out += _half(ember, dist, comm, 1 << 20 if quick else 1 << 22)
        if not allreduce_only:
            out += _ddp(kind, ember, dist, quick, rounds, cases)
        rank = dist.get_rank()
        dist.destroy_process_group()
    if rank == 0:
        for row in out:
            print("BENCH " + json.dumps(row), flush=True)


def _half(ember, dist, comm, count: int) -> list:
    """All-reduce of ``count`` bfloat16 / float16 values both ways MPI can do it: a custom MPI
    operation summing the 16-bit values in NumPy, and widening to float32 around one float32
    ``Allreduce`` (rounding back); with ember's ``all_reduce`` (which picks one) alongside.
    Interleaved, min of 7."""
    import numpy as np
    from mpi4py import MPI

    from ember.distributed import _mpi

    rows = []
    for dt in (ember.bfloat16, ember.float16):
        t = ember.ones(count, dtype=dt)
        op = _mpi._half_op(t._data.dtype, dist.ReduceOp.SUM)

        def custom(t=t, op=op):
            comm.Allreduce(MPI.IN_PLACE, [t._data.view(np.uint16), MPI.UINT16_T], op)

        def widened(t=t):
            wide = t._data.astype(np.float32)
            comm.Allreduce(MPI.IN_PLACE, wide)
            t._data[...] = wide

        got = {"custom_op_s": [], "widened_s": [], "ember_s": []}
        for _ in range(7):
            for key, fn in (("custom_op_s", custom), ("widened_s", widened)):
                dist.barrier()
                got[key].append(_timeit(fn, 3))
            dist.barrier()
            got["ember_s"].append(_timeit(lambda t=t: dist.all_reduce(t), 3))
        row = {"kind": "half", "dtype": str(dt), "count": count}
        rows.append(row | {k: min(v) for k, v in got.items()})
    return rows


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
# how the asynchronous bucket all-reduces run (ember-mpi; the local transport has one design):
# "lanes" the default (a worker thread per group making MPI's blocking calls), "requests"
# MPI's non-blocking calls tested by a progress thread (EMBER_MPI_ASYNC=requests), "lanes-nice"
# the lanes of a second group whose worker thread runs at nice 19 (EMBER_MPI_LANE_NICE)
MPI_DESIGNS = ("lanes", "requests", "lanes-nice")


def _quiet_barrier(dist, comm) -> None:
    """A barrier whose waiting ranks sleep (MPI's Barrier spins on a core, which would slow the
    one-process step timed beside it)."""
    if comm is None:
        dist.barrier()  # (the local transport's waits block in recv)
        return
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(0.0005)


def _med(v):
    v = sorted(v)
    return v[len(v) // 2]


def _median_se(v) -> float:
    """The standard error of the median of ``v``: 1.25 sigma / sqrt(n), sigma from the
    interquartile range (robust to the outlying rounds a loaded machine gives)."""
    v = sorted(v)
    iqr = v[(3 * len(v)) // 4] - v[len(v) // 4]
    return 1.2533 * iqr / 1.349 / len(v) ** 0.5


class _DDPBench:
    """The DDP step at equal work for each design, beside what it is made of. Per round, in
    this order: one process training the plain module on the joined batch with every core
    (the other ranks sleep), every rank training the plain module on its share at once
    (compute only), the buckets' all-reduces alone (blocking, back to back), then one DDP
    step per design. Each time is the slowest rank's (wall) and the sum of the ranks' CPU
    times. BLAS runs ``cores // world_size`` threads per rank when ``world_size`` ranks of
    the default count would oversubscribe the cores (the one-process step: every core).

    The hidden fraction is torch's DDP papers': (T_compute + T_allreduce_alone - T_ddp) /
    T_allreduce_alone, the median over the rounds of each round's (T_compute + T_alone - T_ddp)
    over the median T_alone (the round's terms measured side by side, so that load drifting
    between rounds cancels), with the standard error of that median; ``first_early`` is the
    share of rounds in which the first bucket's MPI call started (recorded timestamps, rank 0)
    before backward ended, ``lane_overlap`` the share of the lane's MPI-call time (waits for
    the peer included) spent before then, ``hidden_bytes`` the share of the gradient bytes
    reduced by then (at most what the last bucket leaves: the buckets are torch's)."""

    def __init__(self, kind, ember, dist, quick: bool, rounds: int | None = None) -> None:
        self.kind, self.ember, self.dist, self.quick = kind, ember, dist, quick
        self.rounds = rounds or (3 if quick else 12)
        self.n = n = dist.get_world_size()
        self.comm = dist.distributed_c10d._default_pg()._comm
        self.cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2
        self.default_threads = ember.get_num_threads()
        self.rank_threads = self.default_threads
        if n * self.default_threads > self.cores:
            self.rank_threads = max(1, self.cores // n)
        self.designs = MPI_DESIGNS if kind == "ember-mpi" else ("default",)
        self.nice_group = None
        if "lanes-nice" in self.designs:
            self.nice_group = dist.new_group(list(range(n)))
            os.environ["EMBER_MPI_LANE_NICE"] = "19"
            dist.all_reduce(ember.zeros(1), group=self.nice_group, async_op=True).wait()
            os.environ.pop("EMBER_MPI_LANE_NICE")

    def timed(self, fn) -> tuple[float, float]:
        """Run ``fn`` on every rank at once; return the slowest rank's wall time and the sum of
        the ranks' CPU times."""
        ember, dist = self.ember, self.dist
        dist.barrier()
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        w = ember.tensor([wall], dtype=ember.float64)
        c = ember.tensor([cpu], dtype=ember.float64)
        dist.all_reduce(w, op=dist.ReduceOp.MAX)
        dist.all_reduce(c)
        return w.item(), c.item()

    def case(self, name: str, cap) -> list:
        ember, dist, n = self.ember, self.dist, self.n
        model, x, y, loss_fn = _workload(ember, name)
        joined = (ember.cat([x] * n), ember.cat([y] * n))
        wrapped = {
            d: ember.nn.parallel.DistributedDataParallel(
                model,
                bucket_cap_mb=cap,
                process_group=self.nice_group if d == "lanes-nice" else None,
            )
            for d in self.designs
        }
        opt = ember.optim.SGD(model.parameters(), lr=0.0)  # lr 0: every round the same work

        def step(m, x=x, y=y):
            opt.zero_grad()
            loss_fn(m(x), y).backward()
            opt.step()

        ember.set_num_threads(self.rank_threads)
        for ddp in wrapped.values():  # the first backward: buckets rebuilt at the next forward
            step(ddp)
            step(ddp)
        buckets = wrapped[self.designs[0]]._buckets

        def alone():
            for b in buckets:
                dist.all_reduce(b.tensor)

        got = {k: [] for k in ("single", "compute", "alone", *self.designs)}
        overlap = {d: [] for d in self.designs}
        first_early = {d: [] for d in self.designs}
        hidden_bytes = {d: [] for d in self.designs}
        for _ in range(self.rounds):
            _quiet_barrier(dist, self.comm)
            if dist.get_rank() == 0:
                ember.set_num_threads(self.cores)
                t0 = time.perf_counter()
                step(model, *joined)
                got["single"].append(time.perf_counter() - t0)
                ember.set_num_threads(self.rank_threads)
                time.sleep(SETTLE)  # (BLAS's idle threads spin for a while after a call)
            _quiet_barrier(dist, self.comm)
            got["compute"].append(self.timed(lambda: step(model)))
            got["alone"].append(self.timed(alone))
            for d, ddp in wrapped.items():
                if d == "requests":
                    os.environ["EMBER_MPI_ASYNC"] = "requests"
                got[d].append(self.timed(lambda ddp=ddp: step(ddp)))
                os.environ.pop("EMBER_MPI_ASYNC", None)
                hidden_bytes[d].append(ddp._hidden_bytes / sum(b.flat.nbytes for b in buckets))
                spans = [s for _, s in ddp._comm_record if s is not None]
                busy = sum(b - a for a, b in spans)
                if busy > 0:
                    end = ddp._backward_done_at
                    overlap[d].append(sum(max(0.0, min(b, end) - a) for a, b in spans) / busy)
                    first_early[d].append(float(spans[0][0] < end))
        ember.set_num_threads(self.default_threads)
        dist.barrier()
        med = {k: _med([w for w, _ in v]) for k, v in got.items() if k != "single" and v}
        cpu = {k: _med([c for _, c in v]) for k, v in got.items() if k != "single" and v}
        single = _med(got["single"]) if got["single"] else None
        batch = x.shape[0] * n
        rows = []
        for d in self.designs:
            per_round = [
                (c[0] + a[0] - t[0]) / med["alone"]
                for c, a, t in zip(got["compute"], got["alone"], got[d], strict=True)
            ]
            rows.append(
                {
                    "kind": self.kind,
                    "ranks": n,
                    "workload": name,
                    "bucket_cap_mb": cap,
                    "design": d,
                    "threads_per_rank": self.rank_threads,
                    "buckets": len(buckets),
                    "ddp_step_s": med[d],
                    "ddp_step_min_s": min(w for w, _ in got[d]),
                    "rounds": self.rounds,
                    "compute_s": med["compute"],
                    "allreduce_alone_s": med["alone"],
                    "single_step_s": single,
                    "per_sample_us": med[d] / batch * 1e6,
                    "single_per_sample_us": single / batch * 1e6 if single else None,
                    "cpu_ddp_s": cpu[d],
                    "cpu_compute_s": cpu["compute"],
                    "cpu_alone_s": cpu["alone"],
                    "hidden": _med(per_round),
                    "hidden_se": _median_se(per_round),
                    "lane_overlap": _med(overlap[d]) if overlap[d] else None,
                    "first_early": sum(first_early[d]) / len(first_early[d])
                    if first_early[d]
                    else None,
                    "hidden_bytes": _med(hidden_bytes[d]),
                }
            )
        return rows


def _ddp(kind, ember, dist, quick=False, rounds=None, cases=None) -> list:
    """The DDP rows of every case (see :class:`_DDPBench`)."""
    bench = _DDPBench(kind, ember, dist, quick, rounds)
    return [row for name, cap in cases or DDP_CASES for row in bench.case(name, cap)]


def _cases(text: str | None) -> list | None:
    """Parse ``--ddp-cases``: ``mlp,transformer:1`` (workload[:bucket cap MB])."""
    if not text:
        return None
    out = []
    for item in text.split(","):
        name, _, cap = item.partition(":")
        out.append((name, float(cap) if cap else None))
    return out


def _launch(kind: str, n: int, quick: bool, allreduce_only: bool, ddp_only: bool, extra=()):
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
    cmd += list(extra)
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


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _print_ddp(rows: list) -> None:
    """One table per DDP case: a line per design (times in ms, medians of the rounds)."""
    cases: dict = {}
    for r in rows:
        cases.setdefault((r["kind"], r["workload"], r["bucket_cap_mb"]), []).append(r)
    for (kind, workload, cap), rs in cases.items():
        r0 = rs[0]
        cap_txt = "default" if cap is None else f"{cap:g} MB"
        single = r0["single_step_s"]
        print(
            f"DDP {workload} on {r0['ranks']} ranks ({kind}, bucket cap {cap_txt}, "
            f"{r0['buckets']} buckets, {r0['threads_per_rank']} BLAS thread(s) per rank): "
            f"compute only {r0['compute_s'] * 1e3:.1f} ms, all-reduce alone "
            f"{r0['allreduce_alone_s'] * 1e3:.2f} ms, 1 process on the joined batch "
            f"{single * 1e3:.1f} ms ({r0['single_per_sample_us']:.0f} us/sample); CPU s (all "
            f"ranks): compute {r0['cpu_compute_s']:.3f} + all-reduce {r0['cpu_alone_s']:.3f}"
        )
        print(
            f"  {'design':<11} {'step ms':>8} {'min ms':>8} {'us/sample':>9} {'hidden':>7} "
            f"{'(se)':>7} {'first early':>11} {'lane in bw':>10} {'bytes in bw':>11} "
            f"{'CPU s':>7}"
        )
        for r in rs:
            print(
                f"  {r['design']:<11} {r['ddp_step_s'] * 1e3:8.1f} "
                f"{r['ddp_step_min_s'] * 1e3:8.1f} "
                f"{r['per_sample_us']:9.0f} {_pct(r['hidden']):>7} "
                f"{'+-' + _pct(r['hidden_se']):>7} {_pct(r['first_early']):>11} "
                f"{_pct(r['lane_overlap']):>10} {_pct(r['hidden_bytes']):>11} "
                f"{r['cpu_ddp_s']:7.3f}"
            )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes up to 1 MB, short DDP (CI smoke)")
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    ap.add_argument("--ranks", help="comma-separated rank counts (default 2,4; with --quick 2)")
    ap.add_argument("--allreduce-only", action="store_true", help="skip the DDP steps")
    ap.add_argument("--ddp-only", action="store_true", help="skip the all-reduce sizes")
    ap.add_argument("--kinds", help="comma-separated subset of mpi4py,ember-mpi,ember-local,torch")
    ap.add_argument("--rounds", type=int, help="DDP rounds per case (default 12, --quick 3)")
    ap.add_argument("--ddp-cases", help="DDP cases, e.g. transformer:1,mlp (workload[:cap MB])")
    ap.add_argument(
        "--priority",
        action="store_true",
        help="(Linux, root) run each rank's scheduling group at nice -19, so that the other "
        "jobs of a shared machine disturb the measurement less (mpiexec starts every rank in "
        "a session, hence a scheduling group, of its own)",
    )
    ap.add_argument("--worker", metavar="KIND", help=argparse.SUPPRESS)  # a launched rank
    args = ap.parse_args(argv)
    if args.worker:
        if args.priority:
            try:
                with open("/proc/self/autogroup", "w") as fh:
                    fh.write("-19")
            except OSError as e:
                print(f"--priority: {e}", file=sys.stderr)
        cases = _cases(args.ddp_cases)
        worker(args.worker, args.quick, args.allreduce_only, args.ddp_only, args.rounds, cases)
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
        extra = (["--rounds", str(args.rounds)] if args.rounds else []) + (
            ["--ddp-cases", args.ddp_cases] if args.ddp_cases else []
        )
        extra += ["--priority"] if args.priority else []
        launched = {
            k: _launch(k, n, args.quick, args.allreduce_only, args.ddp_only, extra) for k in kinds
        }
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
            print(
                "ember-mpi vs mpi4py on the same communicator, interleaved (min of 15 x 10 "
                f"calls): {cells}"
            )
        for r in rows.get("ember-mpi", []):
            if r.get("kind") == "half":
                print(
                    f"all_reduce of {r['count'] >> 20}M {r['dtype']}: custom MPI op "
                    f"{r['custom_op_s'] * 1e3:.1f} ms, widened to float32 "
                    f"{r['widened_s'] * 1e3:.1f} ms (custom "
                    f"{r['widened_s'] / r['custom_op_s']:.2f}x faster); ember's all_reduce "
                    f"{r['ember_s'] * 1e3:.1f} ms"
                )
        for k in kinds:
            _print_ddp([r for r in rows[k] if "ddp_step_s" in r])
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
        for r in rows.get("ember-mpi", []):
            if r.get("kind") == "half":
                records.append(
                    bench_record(
                        "distributed",
                        f"all_reduce {r['count'] >> 20}M {r['dtype']} {n} ranks ember-mpi (custom "
                        f"op {r['custom_op_s'] * 1e3:.2f} ms, widened to float32 "
                        f"{r['widened_s'] * 1e3:.2f} ms)",
                        r["ember_s"] * 1e3,
                    )
                )
        for k in kinds:
            for r in rows[k]:
                if "ddp_step_s" in r:
                    records.append(
                        bench_record(
                            "distributed",
                            f"DDP {r['workload']} step {n} ranks {k} {r['design']} "
                            f"cap {r['bucket_cap_mb']} (hidden {_pct(r['hidden'])}, "
                            f"1 process {r['single_per_sample_us']:.1f})",
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

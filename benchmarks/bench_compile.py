"""ember eager vs ember compiled vs torch eager (and torch.compile with --torch-compile).

Workloads: a 200-tiny-op chain forward+backward, an MLP 784-512-256-10 train step (batch 128),
batch-1 MLP inference. Prints one line per workload: median milliseconds per step and the
compiled/torch-eager ratio; the first compiled call (capture + compile) in seconds.

    PYTHONPATH=. python benchmarks/bench_compile.py [--torch-compile] [--repeat N] [--json PATH]
    PYTHONPATH=. python benchmarks/bench_compile.py --quick    # 5 repeats (CI smoke)

``--json`` writes one record per workload and mode (ember eager and ember compiled against torch
eager, torch.compile when run, and the first compiled call in seconds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE), str(HERE.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _timing import bench_record, write_json  # noqa: E402


def _timeit(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _chain(lib):
    def f(x):
        for _ in range(50):
            x = x * 1.01
            x = x + 0.1
            x = x.sin()
            x = x - 0.05
        return x.sum()

    x = lib.randn(16, requires_grad=True)
    return f, x


def _chain_step(f, x):
    def step():
        x.grad = None
        f(x).backward()

    return step


def _mlp(lib, batch):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                          nn.Linear(256, 10))  # fmt: skip
    x = lib.randn(batch, 784)
    y = lib.randint(0, 10, (batch,))
    return model, x, y


def _train_step(lib, model, x, y):
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return step


def _infer(lib, model, x):
    def step():
        with lib.no_grad():
            model(x)

    return step


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 repeats per case (CI smoke)")
    ap.add_argument("--torch-compile", action="store_true")
    ap.add_argument("--repeat", type=int, default=None, help="timed steps per case (default 30)")
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    args = ap.parse_args(argv)
    args.repeat = args.repeat or (5 if args.quick else 30)
    import ember

    try:
        import torch
    except ImportError:
        torch = None
    rows, records = [], []

    def bench(name, make):
        row = {"name": name}
        row["ember"] = _timeit(make(ember, False), args.repeat)
        t0 = time.perf_counter()
        step = make(ember, True)
        step()
        row["first"] = time.perf_counter() - t0
        row["compiled"] = _timeit(step, args.repeat)
        if torch is not None:
            row["torch"] = _timeit(make(torch, False), args.repeat)
            if args.torch_compile:
                t0 = time.perf_counter()
                step = make(torch, True)
                step()
                row["torch_first"] = time.perf_counter() - t0
                row["torch_compiled"] = _timeit(step, args.repeat)
        rows.append(row)
        line = f"{name:34s} ember {row['ember']:8.3f} ms  compiled {row['compiled']:8.3f} ms"
        line += f"  (first call {row['first']:.2f} s)"
        if "torch" in row:
            line += f"  torch {row['torch']:8.3f} ms  ratio {row['compiled'] / row['torch']:.2f}x"
        if "torch_compiled" in row:
            tc, tf = row["torch_compiled"], row["torch_first"]
            line += f"  torch.compile {tc:.3f} ms (first {tf:.1f} s)"
        print(line, flush=True)
        t = row.get("torch")
        records.append(bench_record("compile", f"{name} eager", row["ember"], t))
        records.append(bench_record("compile", f"{name} compiled", row["compiled"], t))
        records.append(
            bench_record(
                "compile",
                f"{name} first compiled call",
                row["first"],
                row.get("torch_first"),
                unit="s",
            )
        )
        if "torch_compiled" in row:
            records.append(
                bench_record(
                    "compile",
                    f"{name} compiled vs torch.compile",
                    row["compiled"],
                    row["torch_compiled"],
                )
            )

    def chain(lib, compiled):
        f, x = _chain(lib)
        return _chain_step(lib.compile(f) if compiled else f, x)

    def mlp_train(lib, compiled):
        model, x, y = _mlp(lib, 128)
        return _train_step(lib, lib.compile(model) if compiled else model, x, y)

    def mlp_infer(lib, compiled):
        model, x, _ = _mlp(lib, 1)
        return _infer(lib, lib.compile(model) if compiled else model, x)

    bench("200-op chain fwd+bwd", chain)
    bench("MLP 784-512-256-10 b128 train step", mlp_train)
    bench("MLP b1 inference", mlp_infer)
    write_json(args.json, records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

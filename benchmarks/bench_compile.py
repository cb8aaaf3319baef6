"""ember eager vs ember compiled vs torch eager (and torch.compile with --torch-compile).

Workloads: a 200-tiny-op chain forward+backward, an MLP 784-512-256-10 train step (batch 128),
batch-1 MLP inference, a LeNet-5 train step (batch 32), batch-1 LeNet inference, a pre-LN
Transformer encoder block train step with AdamW (d 256, 4 heads, seq 64, batch 16: the model of
bench_transformer.py) and an LSTM train step (hidden 256, seq 35, batch 32: bench_lstm.py's).
The modes of a workload are timed interleaved (round-robin repeats,
``_timing.measure_interleaved``), so load on a shared machine hits them alike. Prints one line
per workload: median milliseconds per step and the compiled/torch-eager ratio; the first
compiled call (capture + compile) in seconds (CPU seconds with --cpu-time); the load average
first.

    PYTHONPATH=. python benchmarks/bench_compile.py [--torch-compile] [--repeat N] [--json PATH]
    PYTHONPATH=. python benchmarks/bench_compile.py --quick    # 5 repeats (CI smoke)
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_compile.py --threads 1 \
        --cpu-time --torch-compile --memory                      # the issue's figures

``--json`` writes one record per workload and mode (ember eager and ember compiled against torch
eager, torch.compile when run, and the first compiled call in seconds).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE), str(HERE.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _timing import bench_record, measure_interleaved, write_json  # noqa: E402


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


def _lenet(lib, batch):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10),
    )  # fmt: skip
    x = lib.randn(batch, 1, 28, 28)
    y = lib.randint(0, 10, (batch,))
    return model, x, y


def _transformer(lib, compiled):
    import bench_transformer as T

    lib.manual_seed(0)
    model = T._layer(lib)
    x, tgt = lib.randn(T.B, T.T, T.E), lib.randn(T.B, T.T, T.E)
    return T._step_fn(lib, lib.compile(model) if compiled else model, x, tgt)


def _lstm(lib, compiled):
    import bench_lstm as L

    w, x, y = L._data()
    step, model = L.lib_step(lib, w, x, y)
    if compiled:
        model.compile()  # (in place: the step calls the model object itself)
    return step


def _growth(step, n=100) -> int:
    """Bytes traced by tracemalloc that ``step`` holds more after ``n`` calls than after 10
    (reference cycles collected before each reading: what a step keeps, not when gc runs)."""
    import gc
    import tracemalloc

    tracemalloc.start()
    try:
        for i in range(n):
            step()
            if i == 9:
                gc.collect()
                base = tracemalloc.get_traced_memory()[0]
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 repeats per case (CI smoke)")
    ap.add_argument("--torch-compile", action="store_true")
    ap.add_argument(
        "--mode", default=None, help="ember.compile(mode=...): reduce-overhead, max-autotune"
    )
    ap.add_argument("--repeat", type=int, default=None, help="timed repeats per case (default 15)")
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch.set_num_threads(N) (set OPENBLAS_NUM_THREADS=N for NumPy's BLAS too): on a "
        "loaded machine, threads spinning against each other dominate otherwise",
    )
    ap.add_argument(
        "--cpu-time",
        action="store_true",
        help="time CPU (process) time instead of wall time: steadier on a loaded machine; use "
        "with --threads 1 and OPENBLAS_NUM_THREADS=1",
    )
    ap.add_argument("--only", metavar="TEXT", help="run the workloads whose name contains TEXT")
    ap.add_argument(
        "--memory",
        action="store_true",
        help="also trace memory (tracemalloc) over 100 compiled steps: the growth from step 10 "
        "to step 100 (flat: a few KB at most)",
    )
    args = ap.parse_args(argv)
    args.repeat = args.repeat or (5 if args.quick else 15)
    min_time = 0.05 if args.quick else 0.2
    import os

    import ember

    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    records = []
    threads = torch.get_num_threads() if torch is not None else "-"
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(
        f"load average {os.getloadavg()[0]:.2f}; torch threads {threads}, OPENBLAS_NUM_THREADS "
        f"{blas} (modes interleaved; {'CPU' if args.cpu_time else 'wall'} time)"
    )

    if args.mode is not None:  # (ember's compiled modes only; torch.compile keeps its default)
        import functools

        ember.compile = functools.partial(ember.compile, mode=args.mode)

    def bench(name, make):
        if args.only and args.only not in name:
            return
        steps = {"ember": make(ember, False)}
        clock = time.process_time if args.cpu_time else time.perf_counter
        t0 = clock()
        steps["compiled"] = make(ember, True)
        steps["compiled"]()
        first = clock() - t0
        torch_first = None
        if torch is not None:
            steps["torch"] = make(torch, False)
            if args.torch_compile:
                t0 = clock()
                steps["torch_compiled"] = make(torch, True)
                steps["torch_compiled"]()
                torch_first = clock() - t0
        got = measure_interleaved(
            steps, repeat=args.repeat, min_time=min_time, warmup=2, clock=clock
        )
        row = {k: v.median * 1e3 for k, v in got.items() if not isinstance(v, Exception)}
        line = f"{name:34s} ember {row['ember']:8.3f} ms  compiled {row['compiled']:8.3f} ms"
        line += f"  (first call {first:.2f} s)"
        if "torch" in row:
            line += f"  torch {row['torch']:8.3f} ms  ratio {row['compiled'] / row['torch']:.2f}x"
        if "torch_compiled" in row:
            tc = row["torch_compiled"]
            line += f"  torch.compile {tc:.3f} ms (first {torch_first:.1f} s)"
            line += f" ratio {row['compiled'] / tc:.2f}x"
        if args.memory:
            line += f"  memory growth {_growth(steps['compiled']) / 1024:.1f} KB/90 steps"
        print(line, flush=True)
        t = row.get("torch")
        records.append(bench_record("compile", f"{name} eager", row["ember"], t))
        records.append(bench_record("compile", f"{name} compiled", row["compiled"], t))
        records.append(
            bench_record("compile", f"{name} first compiled call", first, torch_first, unit="s")
        )
        if "torch_compiled" in row:
            records.append(
                bench_record("compile", f"{name} compiled vs torch.compile", row["compiled"], tc)
            )

    def chain(lib, compiled):
        f, x = _chain(lib)
        return _chain_step(lib.compile(f) if compiled else f, x)

    def train(builder, batch):
        def make(lib, compiled):
            model, x, y = builder(lib, batch)
            return _train_step(lib, lib.compile(model) if compiled else model, x, y)

        return make

    def infer(builder):
        def make(lib, compiled):
            model, x, _ = builder(lib, 1)
            return _infer(lib, lib.compile(model) if compiled else model, x)

        return make

    bench("200-op chain fwd+bwd", chain)
    bench("MLP 784-512-256-10 b128 train step", train(_mlp, 128))
    bench("MLP b1 inference", infer(_mlp))
    bench("LeNet b32 train step", train(_lenet, 32))
    bench("LeNet b1 inference", infer(_lenet))
    bench("Transformer block b16 AdamW step", _transformer)
    bench("LSTM h256 s35 b32 train step", _lstm)
    write_json(args.json, records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

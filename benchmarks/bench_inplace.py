#!/usr/bin/env python
"""Time a training step whose forward uses in-place ops, with SGD with momentum.

An MLP 784-512-256-10 (batch 64) written the way training code often is: each linear layer's
bias added in place (``h.add_(b)``), the activation scaled and shifted in place (``mul_``,
``sub_``, ``div_``), ``relu_``; then cross-entropy, ``backward()`` and ``optim.SGD(momentum=0.9)``.
The in-place ops are recorded by autograd: their backward runs once per step. The same
function runs with ``lib=torch`` and ``lib=ember``; results are checked against torch for the
first steps (same initial weights and data).

Run: ``python benchmarks/bench_inplace.py [--quick] [--cpu] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))

from _timing import bench_record, measure_interleaved, median_ms, write_json  # noqa: E402

SIZES = (784, 512, 256, 10)
BATCH = 64


def _arrays(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(SIZES, SIZES[1:]):
        w = rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)
        params.append(w.astype(np.float32))
        params.append(np.zeros(n_out, np.float32))
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    return params, x, y


def make_step(lib):
    """Return ``(step, params)`` for ``lib`` (torch or ember): one SGD-momentum training step."""
    arrays, xa, ya = _arrays()
    params = [lib.tensor(a, requires_grad=True) for a in arrays]
    x, y = lib.tensor(xa), lib.tensor(ya)
    opt = lib.optim.SGD(params, lr=0.01, momentum=0.9)
    F = lib.nn.functional

    def step():
        h = x
        for i in range(0, len(params), 2):
            w, b = params[i], params[i + 1]
            h = h @ w.t()
            h.add_(b)
            if i + 2 < len(params):
                h.mul_(1.5)
                h.sub_(0.01)
                h.div_(1.5)
                h.relu_()
        loss = F.cross_entropy(h, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step, params


def make_chain(lib, n: int = 10, shape=(256, 256)):
    """Return a function: 4 * ``n`` recorded in-place ops (``add_/mul_/sub_/div_``) on a
    (256, 256) float32 activation, then ``sum().backward()``."""
    rng = np.random.default_rng(1)
    x = lib.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    c = lib.tensor(rng.standard_normal(shape[-1]).astype(np.float32))

    def run():
        h = x * 1.0
        for _ in range(n):
            h.add_(c)
            h.mul_(1.01)
            h.sub_(c)
            h.div_(1.01)
        h.sum().backward()
        x.grad = None
        return h

    return run


def check(steps: int = 3) -> float:
    """Run ``steps`` steps in both libraries; return the largest parameter difference."""
    import torch

    import ember

    ts, tp = make_step(torch)
    es, ep = make_step(ember)
    for _ in range(steps):
        tl, el = ts(), es()
        assert abs(tl.item() - el.item()) < 1e-4, (tl.item(), el.item())
    return max(float(np.abs(a.detach().numpy() - b.detach().numpy()).max()) for a, b in zip(tp, ep))


def _cpu_best(fn, repeat: int, number: int = 5) -> float:
    """Return the smallest process CPU time of one call of ``fn`` in ms."""
    import time

    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - t) / number)
    return best * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-torch", action="store_true", help="time ember alone")
    ap.add_argument(
        "--cpu",
        action="store_true",
        help="also print the best process CPU time per call (steadier than wall time on a "
        "loaded machine; compare two checkouts by running this script from each)",
    )
    args = ap.parse_args(argv)

    import ember

    fns = {"ember": make_step(ember)[0]}
    chains = {"ember": make_chain(ember)}
    if not args.no_torch:
        try:
            import torch

            torch.set_num_threads(1)
            fns["torch"] = make_step(torch)[0]
            chains["torch"] = make_chain(torch)
            diff = check()
            print(f"check: largest parameter difference after 3 steps {diff:.2e}")
            if diff > 1e-4:
                print("ember's parameters differ from torch's", file=sys.stderr)
                return 1
        except ImportError:
            pass
    ember.set_num_threads(1)
    repeat, min_time = (3, 0.1) if args.quick else (7, 0.4)
    records = []
    for case, what, f in (
        ("mlp_inplace_sgd_momentum", "MLP in-place + SGD(momentum) step", fns),
        ("inplace_chain_40", "40 recorded in-place ops on 256x256 + backward", chains),
    ):
        res = measure_interleaved(f, repeat=repeat, min_time=min_time)
        e, t = median_ms(res["ember"]), median_ms(res.get("torch"))
        load = os.getloadavg()[0]
        print(f"{what}: ember {e:.3f} ms", end="")
        print(f", torch {t:.3f} ms (x{e / t:.2f})" if t else "", end="")
        print(f"  [load {load:.2f}]")
        records.append(bench_record("inplace", case, e, t, target=("torch", 3.0)))
        if args.cpu:
            cpu = {k: _cpu_best(fn, 3 if args.quick else 10) for k, fn in f.items()}
            print("  cpu best: " + ", ".join(f"{k} {v:.3f} ms" for k, v in cpu.items()))
    write_json(args.json, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())

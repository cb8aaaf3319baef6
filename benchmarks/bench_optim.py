"""Time one optimizer step over a 100-parameter model (50 Linear layers of 64x64: weight + bias).

Compares ember's fused path (parameters, gradients and state in flat buffers, ``foreach=None``),
ember's per-parameter path (``foreach=False``), torch's foreach step and the same Adam update
written by hand in NumPy over flat arrays (the lower bound). Two gradient regimes:

* ``keep`` — the same ``.grad`` tensors at every step, as after ``zero_grad(set_to_none=False)``:
  ember re-points them at its flat gradient buffer, so a step gathers nothing.
* ``fresh`` — new gradient tensors at every step, as after the default
  ``zero_grad(set_to_none=True)`` and a backward: ember gathers them with one ``np.concatenate``.
  Each timed call assigns the 100 ``.grad`` tensors (alternating two prepared sets) then steps,
  for every implementation alike.

Targets (issue 5): fused Adam at least 3x faster than the per-parameter path, and within 1.5x of
torch's foreach Adam. Before timing, 5 steps of each ember path are checked against torch's.
Run: ``python benchmarks/bench_optim.py [--quick] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _timing import bench_record, measure_interleaved, median_ms, write_json  # noqa: E402

import ember  # noqa: E402
import ember.optim  # noqa: E402

SHAPES = [(64, 64), (64,)] * 50
N = sum(int(np.prod(s)) for s in SHAPES)
SPEEDUP_TARGET, TORCH_TARGET = 3.0, 1.5
CONFIGS = {"Adam": {"lr": 1e-3}, "SGD": {"lr": 0.1, "momentum": 0.9}}


def _arrays(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


def _setup(lib, name, foreach, regime):
    """Return (params, step): ``step()`` does one timed optimizer step in ``regime``."""
    ps = [lib.tensor(w, requires_grad=True) for w in _arrays(0)]
    pools = [[lib.tensor(g) for g in _arrays(seed)] for seed in (1, 2)]
    opt = getattr(lib.optim, name)(ps, foreach=foreach, **CONFIGS[name])
    for p, g in zip(ps, pools[0]):
        p.grad = g
    if regime == "keep":
        return ps, opt.step
    k = [0]

    def step():
        k[0] ^= 1
        for p, g in zip(ps, pools[k[0]]):
            p.grad = g
        opt.step()

    return ps, step


def _numpy_adam():
    """Adam written by hand over flat arrays (params and grads already flat: the lower bound)."""
    p, g = np.concatenate(_arrays(0), axis=None), np.concatenate(_arrays(1), axis=None)
    m, v, tmp = np.zeros_like(p), np.zeros_like(p), np.empty_like(p)
    state = {"t": 0}
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8

    def step():
        state["t"] += 1
        t = state["t"]
        np.subtract(g, m, out=tmp)
        np.multiply(tmp, 1 - b1, out=tmp)
        np.add(m, tmp, out=m)
        np.multiply(v, b2, out=v)
        np.multiply(g, g, out=tmp)
        np.multiply(tmp, 1 - b2, out=tmp)
        np.add(v, tmp, out=v)
        np.sqrt(v, out=tmp)
        np.divide(tmp, (1 - b2**t) ** 0.5, out=tmp)
        np.add(tmp, eps, out=tmp)
        np.divide(m, tmp, out=tmp)
        np.multiply(tmp, -lr / (1 - b1**t), out=tmp)
        np.add(p, tmp, out=p)

    return step


def _check(torch, name, regime) -> str | None:
    """Run 5 steps of both ember paths and torch's; return why they differ (None if equal)."""
    if torch is None:
        return None
    runs = {}
    for label, lib, foreach in (("fused", ember, None), ("per-param", ember, False)):
        ps, step = _setup(lib, name, foreach, regime)
        for _ in range(5):
            step()
        runs[label] = [p.detach().numpy().copy() for p in ps]
    ps, step = _setup(torch, name, True, regime)
    for _ in range(5):
        step()
    ref = [p.detach().numpy() for p in ps]
    for label, got in runs.items():
        err = max(float(np.abs(a - b).max()) for a, b in zip(got, ref))
        if err > 1e-5:
            return f"{label} differs from torch by {err:.3g}"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CI smoke: few short repeats")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    ap.add_argument(
        "--torch-threads",
        type=int,
        default=2,
        help="torch.set_num_threads (2 by the contract; 1 is fairer on a loaded 2-core machine)",
    )
    args = ap.parse_args(argv)
    try:
        import torch

        torch.set_num_threads(args.torch_threads)
    except ImportError:
        torch = None
    repeat, min_time = (2, 0.05) if args.quick else (args.repeat, 0.3)
    print(f"{len(SHAPES)} parameters, {N} elements, float32; medians of {repeat} repeats")
    print(
        f"{'case':14} {'fused ms':>9} {'per-p ms':>9} {'torch ms':>9} {'numpy ms':>9} "
        f"{'per-p/fused':>12} {'fused/torch':>12}  check"
    )
    status, records = 0, []
    for name in CONFIGS:
        for regime in ("keep", "fresh"):
            case = f"{name.lower()}_{regime}"
            err = _check(torch, name, regime)
            status |= err is not None
            fns = {
                "fused": _setup(ember, name, None, regime)[1],
                "per-param": _setup(ember, name, False, regime)[1],
            }
            if torch is not None:
                fns["torch"] = _setup(torch, name, True, regime)[1]
            if name == "Adam" and regime == "keep":
                fns["numpy"] = _numpy_adam()
            res = measure_interleaved(fns, repeat=repeat, min_time=min_time)
            ms = {k: median_ms(v) for k, v in res.items()}
            for k, v in res.items():
                if isinstance(v, Exception):
                    print(f"  {case}/{k}: {type(v).__name__}: {v}")
                    status = 1
            fused, per, tms, nms = ms["fused"], ms["per-param"], ms.get("torch"), ms.get("numpy")
            speedup = per / fused if fused and per else None
            ratio = fused / tms if fused and tms else None

            def fmt(v, spec="9.3f"):
                return format(v, spec) if v is not None else f"{'-':>{spec.split('.')[0]}}"

            tag = ""
            if speedup is not None:
                tag += "PASS" if speedup >= SPEEDUP_TARGET else "MISS"
            if ratio is not None:
                tag += " PASS" if ratio <= TORCH_TARGET else " MISS"
            print(
                f"{case:14} {fmt(fused)} {fmt(per)} {fmt(tms)} {fmt(nms)} "
                f"{fmt(speedup, '12.2f')} {fmt(ratio, '12.2f')}  {err or 'ok'} {tag}"
            )
            ok = err is None
            records.append(
                bench_record(
                    "optim",
                    f"{case}_fused",
                    fused if ok else None,
                    tms,
                    nms,
                    target=("torch", TORCH_TARGET),
                )
            )
            records.append(
                bench_record(
                    "optim",
                    f"{case}_per_parameter",
                    per if ok else None,
                    target=f"per-parameter/fused >= {SPEEDUP_TARGET:g}",
                    status=None if speedup is None else ("PASS" if speedup >= 3 else "MISS"),
                )
            )
    print(f"targets: per-parameter/fused >= {SPEEDUP_TARGET:g}, fused/torch <= {TORCH_TARGET:g}")
    write_json(args.json, records)
    return status


if __name__ == "__main__":
    sys.exit(main())

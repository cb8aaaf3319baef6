#!/usr/bin/env python
"""Op-library workloads on large tensors: ember vs the same work in plain NumPy (and torch).

    python benchmarks/bench_ops.py                  # full run (about a minute on 2 cores)
    python benchmarks/bench_ops.py --quick          # CI smoke: fewer / shorter repeats
    python benchmarks/bench_ops.py --only chain,clamp
    python benchmarks/bench_ops.py --size 4000000 --dtype float64

Section "pointwise": chains of elementwise ops on 1M-element float32 tensors (``--size``,
``--dtype``), forward only without grad, plus one forward + backward chain. The ember column
runs the public API (``x.exp()``, ``x * 2.5``, ``x.clamp(...)``); the NumPy column is the same
sequence of ufunc calls written directly in NumPy (for forward + backward, the chain rule by
hand), so it is the floor a NumPy-based framework can reach. Where NumPy has no such function
(erf, lgamma) the NumPy column calls ember's own vectorised kernel on the array: that case
measures the op's dispatch and dtype handling only. The torch column is for reference.
Target: ember within 1.2x of NumPy (``PASS``/``MISS``; this never affects the exit status).

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

# ---------------------------------------------------------------------------------------------
# pointwise: the same workloads for ember and torch (``lib``), and their NumPy counterparts
# ---------------------------------------------------------------------------------------------


def arith(lib, x, y):
    return (x * 2.5 + 1.0) / (y * y + 1.5) - x


def np_arith(x, y):
    return (x * 2.5 + 1.0) / (y * y + 1.5) - x


def transcendental(lib, x, y):
    return x.sin().exp() * y.abs().sqrt() + (x * x).log1p()


def np_transcendental(x, y):
    return np.exp(np.sin(x)) * np.sqrt(np.abs(y)) + np.log1p(x * x)


def activations(lib, x, y):
    return x.sigmoid() * y.tanh() + lib.relu(x)


def np_activations(x, y):
    return 1.0 / (1.0 + np.exp(-x)) * np.tanh(y) + np.maximum(x, 0)


def clamp(lib, x, y):
    return x.clamp(-0.5, 0.5) + lib.clamp(y, min=x)


def np_clamp(x, y):
    return np.minimum(np.maximum(x, -0.5), 0.5) + np.maximum(y, x)


def select(lib, x, y):
    return lib.where(x > 0, x, x * 0.01) + lib.maximum(x, y) - lib.minimum(x, y)


def np_select(x, y):
    return np.where(x > 0, x, x * 0.01) + np.maximum(x, y) - np.minimum(x, y)


def binary_math(lib, x, y):
    return lib.atan2(x, y) + lib.hypot(x, y) + lib.logaddexp(x, y)


def np_binary_math(x, y):
    return np.arctan2(x, y) + np.hypot(x, y) + np.logaddexp(x, y)


def rounding(lib, x, y):
    return (x * 10).floor() + (y * 10).round() + lib.remainder(x, 0.3)


def np_rounding(x, y):
    return np.floor(x * 10) + np.rint(y * 10) + np.remainder(x, 0.3)


def compare(lib, x, y):
    return ((x > y) & (x.abs() < 1.0)) | lib.isclose(x, y, atol=1e-3)


def np_compare(x, y):
    # torch's isclose: |x - y| <= atol + rtol * |y|, with equality and finiteness
    close = (x == y) | (np.abs(x - y) <= 1e-3 + np.abs(1e-5 * y))
    return ((x > y) & (np.abs(x) < 1.0)) | close


def inplace(lib, x, y):
    z = x.clone()
    z.mul_(1.5).add_(y, alpha=0.5).clamp_(-1.0, 1.0).exp_()
    return z


def np_inplace(x, y):
    z = x.copy()
    np.multiply(z, 1.5, out=z)
    np.add(z, y * 0.5, out=z)
    np.minimum(np.maximum(z, -1.0, out=z), 1.0, out=z)
    np.exp(z, out=z)
    return z


def special(lib, x, y):
    return x.erf() + y.abs().lgamma()


def np_special(x, y):
    from ember._ops import special_math as S

    return (S.erf(x).astype(x.dtype) + S.lgamma(np.abs(y)).astype(x.dtype)).astype(x.dtype)


def fwd_bwd(lib, x, y):
    # y = sum(tanh(sin(x) * w + 0.5) ** 2), gradient with respect to x and w
    x.grad = None
    y.grad = None
    t = (x.sin() * y + 0.5).tanh()
    (t * t).sum().backward()
    return x.grad, y.grad


def np_fwd_bwd(x, y):
    s = np.sin(x)
    t = np.tanh(s * y + 0.5)
    g = 2 * t  # d (t^2) / dt
    g = g * (1 - t * t)  # tanh'
    return g * y * np.cos(x), g * s


CASES = {
    "arith": (arith, np_arith),
    "transcendental": (transcendental, np_transcendental),
    "activations": (activations, np_activations),
    "clamp": (clamp, np_clamp),
    "where/max/min": (select, np_select),
    "atan2/hypot/lae": (binary_math, np_binary_math),
    "rounding": (rounding, np_rounding),
    "compare/logical": (compare, np_compare),
    "in-place chain": (inplace, np_inplace),
    "erf+lgamma": (special, np_special),
    "fwd+bwd chain": (fwd_bwd, np_fwd_bwd),
}
NEEDS_GRAD = {"fwd+bwd chain"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CI smoke: 3 short repeats")
    ap.add_argument("--only", default="", help="comma-separated case names or prefixes")
    ap.add_argument("--size", type=int, default=1_000_000, help="elements per tensor")
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
    a = rng.standard_normal(args.size).astype(args.dtype)
    b = rng.standard_normal(args.size).astype(args.dtype)

    def tensors(lib, grad):
        x, y = lib.from_numpy(a.copy()), lib.from_numpy(b.copy())
        if grad:
            x.requires_grad_(True)
            y.requires_grad_(True)
        return x, y

    wanted = [w for w in args.only.split(",") if w]
    names = [n for n in CASES if not wanted or any(n.startswith(w) for w in wanted)]
    print(f"pointwise chains on {args.size:,} {args.dtype} elements; times in ms per call")
    threads = f"torch threads {torch.get_num_threads()}" if torch is not None else "no torch"
    print(f"numpy {np.__version__}, {threads}; target ember/numpy <= {TARGET}x\n")
    header = f"{'case':<17}{'ember':>9}{'numpy':>9}{'torch':>9}{'e/np':>7}{'e/torch':>9}"
    print(header)
    print("-" * len(header))
    status, notes, records = 0, [], []
    for name in names:
        efn, nfn = CASES[name]
        grad = name in NEEDS_GRAD
        ex, ey = tensors(ember, grad)
        fns = {
            "ember": lambda efn=efn, ex=ex, ey=ey: efn(ember, ex, ey),
            "numpy": lambda nfn=nfn: nfn(a, b),
        }
        if torch is not None:
            tx, ty = tensors(torch, grad)
            fns["torch"] = lambda efn=efn, tx=tx, ty=ty: efn(torch, tx, ty)
        try:
            problem = check_outputs(
                efn(ember, ex, ey), nfn(a, b), 1e-4 if args.dtype == "float32" else 1e-10
            )
        except Exception as e:  # noqa: BLE001 - reported, then the exit status is 1
            problem = f"{type(e).__name__}: {e}"
        res = measure_interleaved(fns, repeat=repeat, min_time=min_time, warmup=2)

        def ms(key, res=res):
            r = res.get(key)
            return r.best * 1e3 if r is not None and not isinstance(r, Exception) else None

        e, n, tt = ms("ember"), ms("numpy"), ms("torch")
        ratio = e / n if e and n else None
        cells = [f"{v:9.3f}" if v is not None else f"{'err':>9}" for v in (e, n, tt)]
        if torch is None:
            cells[2] = f"{'-':>9}"
        verdict = "" if ratio is None else ("PASS" if ratio <= TARGET else "MISS")
        line = f"{name:<17}{''.join(cells)}{'!' if problem else ''}"
        line += f"{ratio:7.2f}" if ratio else f"{'':>7}"
        line += f"{e / tt:9.2f}" if e and tt else f"{'':>9}"
        print(f"{line}  {verdict}")
        records.append(
            bench_record(
                "ops",
                name,
                None if problem else median_ms(res.get("ember")),
                median_ms(res.get("torch")),
                median_ms(res.get("numpy")),
                target=("numpy", TARGET),
            )
        )
        if problem:
            status = 1
            notes.append(f"{name}: {problem}")
        if verdict == "MISS":
            notes.append(f"{name}: ember/numpy {ratio:.2f}x")
    if notes:
        print("\nNotes:\n  " + "\n  ".join(notes))
    write_json(args.json, records)
    return status


if __name__ == "__main__":
    sys.exit(main())

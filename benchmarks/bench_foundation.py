#!/usr/bin/env python
"""Foundation micro-benchmarks: ember vs torch vs plain NumPy, side by side in one process.

    python benchmarks/bench_foundation.py              # full run (< 60 s on 2 cores)
    python benchmarks/bench_foundation.py --quick      # CI smoke: fewer / shorter repeats
    python benchmarks/bench_foundation.py --only a,c   # subset of workloads
    python benchmarks/bench_foundation.py --profile    # cProfile ember's (a) workload, top 25
    python benchmarks/bench_foundation.py --ember-module torch   # sanity-check the harness

Workloads
  (a)  200-op elementwise chain (x+c, x*c, tanh, sigmoid; x50) on a 16-element float32 tensor
       with requires_grad=True, then .sum().backward().  Reported per op: iteration time / 200.
  (b1) the same chain, forward only, input not requiring grad.              Per op.
  (b2) the same chain, forward only, input requiring grad, under no_grad(). Per op.
  (c)  1024x1024 float32 matmul forward + backward: c = a @ b; c.backward(g).  Per iteration.

The torch and ember columns run literally the same workload functions, called with ``lib=torch``
and ``lib=ember``.  The NumPy column is the same math written directly in NumPy -- for (a) with a
hand-written backward -- so it is the floor a NumPy-based framework can reach.

Exit status: 0 when every cell that ran produced correct results (PASS/MISS against the speed
targets does not affect it); 1 if ember could not be imported, a workload raised, or a result
check against the NumPy reference failed.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import importlib
import math
import os
import platform
import pstats
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# Benchmark the working copy of ember (repo root) and find _timing.py however we are launched.
for _p in (str(HERE), str(REPO)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _timing import Timing, bench_record, measure_interleaved, write_json

N_ELEM = 16
N_BLOCKS = 50
N_OPS = 4 * N_BLOCKS  # add, mul, tanh, sigmoid per block
MM = 1024
ENV_VARS = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
)


# ---------------------------------------------------------------------------------------------
# Workloads shared by torch and ember: the *same* functions, called with lib=torch / lib=ember.
# Only the public torch-shaped API is used.
# ---------------------------------------------------------------------------------------------


def chain(lib, x, c_add, c_mul):
    for _ in range(N_BLOCKS):
        x = x + c_add
        x = x * c_mul
        x = lib.tanh(x)
        x = lib.sigmoid(x)
    return x


def chain_fwd_bwd(lib, x, c_add, c_mul):
    x.grad = None  # like optimizer.zero_grad(set_to_none=True): no accumulation add
    chain(lib, x, c_add, c_mul).sum().backward()


def chain_fwd(lib, x, c_add, c_mul):
    return chain(lib, x, c_add, c_mul)


def chain_fwd_no_grad(lib, x, c_add, c_mul):
    with lib.no_grad():
        return chain(lib, x, c_add, c_mul)


def matmul_fwd_bwd(lib, a, b, g):
    a.grad = None
    b.grad = None
    c = a @ b
    c.backward(g)


def chain_constants(rng):
    # c_add ~ -0.5 and c_mul ~ 4 keep tanh near its linear range and the per-block gradient gain
    # c_mul * tanh' * sigmoid' close to (and below) 1: no saturation, no vanishing gradients,
    # and in particular no float32 subnormals (which would make every backend crawl).
    c_add = rng.uniform(-0.55, -0.45, N_ELEM).astype(np.float32)
    c_mul = rng.uniform(3.6, 4.0, N_ELEM).astype(np.float32)
    return c_add, c_mul


def setup_chain(lib, rng, requires_grad):
    x = lib.randn(N_ELEM, requires_grad=True) if requires_grad else lib.randn(N_ELEM)
    c_add, c_mul = chain_constants(rng)
    return x, lib.from_numpy(c_add), lib.from_numpy(c_mul)


def setup_matmul(lib, rng):
    a = lib.randn(MM, MM, requires_grad=True)
    b = lib.randn(MM, MM, requires_grad=True)
    g = lib.randn(MM, MM)
    return a, b, g


# ---------------------------------------------------------------------------------------------
# NumPy baselines: the same math written directly in NumPy.
# ---------------------------------------------------------------------------------------------


def np_sigmoid(t):
    return 1.0 / (1.0 + np.exp(-t))


def np_chain(x, c_add, c_mul):
    for _ in range(N_BLOCKS):
        x = x + c_add
        x = x * c_mul
        x = np.tanh(x)
        x = np_sigmoid(x)
    return x


def np_chain_fwd_bwd(x, c_add, c_mul):
    """Forward storing intermediates, then the chain rule in reverse. Returns (sum, d sum/dx)."""
    saved = []
    for _ in range(N_BLOCKS):
        x = x + c_add
        x = x * c_mul
        t = np.tanh(x)
        x = np_sigmoid(t)
        saved.append((t, x))
    total = x.sum()
    grad = np.ones_like(x)  # d sum / d x
    for t, s in reversed(saved):
        grad = grad * (s * (1.0 - s))  # sigmoid'(t) = s (1 - s)
        grad = grad * (1.0 - t * t)  # tanh'(y) = 1 - t^2
        grad = grad * c_mul  # d(x * c)/dx = c
        # d(x + c)/dx = 1: gradient passes through the add unchanged
    return total, grad


def np_matmul_fwd_bwd(a, b, g):
    c = a @ b
    grad_a = g @ b.T
    grad_b = a.T @ g
    return c, grad_a, grad_b


def np_setup_chain(rng):
    return (rng.standard_normal(N_ELEM, dtype=np.float32), *chain_constants(rng))


def np_setup_matmul(rng):
    return tuple(rng.standard_normal((MM, MM), dtype=np.float32) for _ in range(3))


# ---------------------------------------------------------------------------------------------
# Result checks against the NumPy reference (run once per library before timing).
# Each returns None if fine, else a short description of what is wrong.
# ---------------------------------------------------------------------------------------------


def to_numpy(t):
    if isinstance(t, np.ndarray):
        return t
    if t is None:
        raise ValueError("got None")
    errors = []
    for get in (lambda: t.detach().numpy(), lambda: t.numpy(), lambda: np.asarray(t)):
        try:
            return np.asarray(get())
        except (AttributeError, TypeError, ValueError, RuntimeError) as e:
            errors.append(f"{type(e).__name__}: {e}")
    raise TypeError(f"cannot convert {type(t).__name__} to a NumPy array ({'; '.join(errors)})")


def compare(name, got, ref, rtol, atol):
    if got is None:
        return f"{name} is None"
    got = to_numpy(got)
    if got.shape != ref.shape:
        return f"{name}: shape {got.shape}, expected {ref.shape}"
    if got.dtype != np.float32:
        return f"{name}: dtype {got.dtype}, expected float32"
    if not np.allclose(got, ref, rtol=rtol, atol=atol):
        err = float(np.max(np.abs(got.astype(np.float64) - ref)))
        return f"{name}: max abs error {err:.3g} vs NumPy reference"
    return None


def check_chain_grad(lib, args, result):
    x = args[0]
    _, ref = np_chain_fwd_bwd(*(to_numpy(v) for v in args))
    return compare("x.grad", x.grad, ref, rtol=1e-4, atol=1e-6)


def check_chain_out(lib, args, result):
    if getattr(result, "requires_grad", False):
        return "output requires_grad is True, expected False"
    ref = np_chain(*(to_numpy(v) for v in args))
    return compare("output", result, ref, rtol=1e-4, atol=1e-6)


def check_matmul(lib, args, result):
    a, b = args[:2]
    an, bn, gn = (to_numpy(v) for v in args)
    return compare("a.grad", a.grad, gn @ bn.T, rtol=1e-3, atol=1e-2) or compare(
        "b.grad", b.grad, an.T @ gn, rtol=1e-3, atol=1e-2
    )


# ---------------------------------------------------------------------------------------------
# Case table.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    key: str  # "a", "b1", "b2", "c"
    group: str  # "a", "b", "c"
    label: str  # row label
    lib_fn: Callable  # fn(lib, *args)
    lib_setup: Callable  # setup(lib, rng) -> args
    np_fn: Callable  # fn(*args)
    np_setup: Callable  # setup(rng) -> args
    check: Callable  # check(lib, args, result) -> str | None
    scale: float  # seconds per call -> displayed unit
    target: tuple[str, float]  # ember/<"torch"|"numpy"> must be <= this ratio
    threaded: bool = False  # uses BLAS / OpenMP threads: time torch apart from the others


PER_OP = 1e6 / N_OPS  # seconds per iteration -> us per op
PER_MS = 1e3

CASES = [
    Case(
        "a",
        "a",
        "fwd+bwd",
        chain_fwd_bwd,
        functools.partial(setup_chain, requires_grad=True),
        np_chain_fwd_bwd,
        np_setup_chain,
        check_chain_grad,
        PER_OP,
        ("torch", 3.0),
    ),
    Case(
        "b1",
        "b",
        "fwd, requires_grad=False",
        chain_fwd,
        functools.partial(setup_chain, requires_grad=False),
        np_chain,
        np_setup_chain,
        check_chain_out,
        PER_OP,
        ("torch", 3.0),
    ),
    Case(
        "b2",
        "b",
        "fwd, under no_grad()",
        chain_fwd_no_grad,
        functools.partial(setup_chain, requires_grad=True),
        np_chain,
        np_setup_chain,
        check_chain_out,
        PER_OP,
        ("torch", 3.0),
    ),
    Case(
        "c",
        "c",
        "matmul fwd+bwd",
        matmul_fwd_bwd,
        setup_matmul,
        np_matmul_fwd_bwd,
        np_setup_matmul,
        check_matmul,
        PER_MS,
        ("numpy", 1.3),
        threaded=True,
    ),
]

GROUP_TITLES = {
    "a": f"(a) {N_OPS}-op elementwise chain, x = sigmoid(tanh((x + c1) * c2)) x{N_BLOCKS}, on "
    f"{N_ELEM} float32,\n    requires_grad=True, then .sum().backward()   "
    f"[us per op = (forward + backward) / {N_OPS}]",
    "b": f"(b) the same {N_OPS}-op chain, forward only   [us per op]",
    "c": f"(c) {MM}x{MM} float32 matmul, c = a @ b; c.backward(g)   [ms per iteration]\n"
    "    (NumPy: a @ b, g @ b.T, a.T @ g)",
}


# ---------------------------------------------------------------------------------------------
# Environment report.
# ---------------------------------------------------------------------------------------------


def load_module(name):
    try:
        return importlib.import_module(name), None
    except Exception as e:  # noqa: BLE001 -- a half-written ember may raise anything on import
        return None, f"import {name} failed: {type(e).__name__}: {e}"


def describe_module(mod):
    where = getattr(mod, "__file__", None)
    if where is None:
        paths = list(getattr(mod, "__path__", []))
        where = f"namespace package {paths}" if paths else "?"
    return f"{mod.__name__} {getattr(mod, '__version__', '(no __version__)')} from {where}"


def numpy_blas_threads():
    try:
        import threadpoolctl
    except ImportError:
        return "? (threadpoolctl not installed)"
    info = [d for d in threadpoolctl.threadpool_info() if d.get("user_api") == "blas"]
    if not info:
        return "? (no BLAS found by threadpoolctl)"
    return ", ".join(f"{d.get('internal_api')}={d.get('num_threads')}" for d in info)


def numpy_blas_name():
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except (TypeError, KeyError, AttributeError):  # older NumPy, unusual build info
        return "?"


def print_header(ember, ember_name, ember_err, torch, opts):
    print("ember foundation benchmark")
    print(f"  python {platform.python_version()} | numpy {np.__version__} ({numpy_blas_name()})")
    print(f"  torch : {describe_module(torch) if torch is not None else '- (not importable)'}")
    if ember is not None:
        alias = "" if ember_name == "ember" else f"   [--ember-module {ember_name}]"
        print(f"  ember : {describe_module(ember)}{alias}")
    else:
        print(f"  ember : - ({ember_err})")
    t_threads = torch.get_num_threads() if torch is not None else "-"
    print(
        f"  threads: torch.get_num_threads()={t_threads} | numpy BLAS {numpy_blas_threads()} "
        f"(ember uses NumPy's) | os.cpu_count()={os.cpu_count()}"
    )
    env = [f"{k}={os.environ[k]}" for k in ENV_VARS if k in os.environ]
    print(f"  env: {' '.join(env) if env else 'none of ' + ', '.join(ENV_VARS) + ' set'}")
    print(
        f"  timing: best of {opts.repeat} repeats, interleaved across columns; calls per repeat "
        f"chosen so a repeat takes >= {opts.min_time:g} s; warm-up: {opts.warmup} calls; gc on"
    )


# ---------------------------------------------------------------------------------------------
# Running and printing.
# ---------------------------------------------------------------------------------------------


@dataclass
class Cell:
    timing: Timing | None = None
    error: str | None = None  # the workload raised
    bad: str | None = None  # ran, but the result check failed


def describe_error(e: BaseException, where: str = "") -> str:
    return f"{type(e).__name__}{where}: {e}"


def prepare(case: Case, name: str, lib, seed: int, opts) -> tuple[Cell, Callable | None]:
    """Set up one column's workload, run it once and check the result against NumPy."""
    cell = Cell()
    try:
        if name == "numpy":  # the hand-written NumPy baseline
            args = case.np_setup(np.random.default_rng(seed))
            return cell, functools.partial(case.np_fn, *args)
        args = case.lib_setup(lib, np.random.default_rng(seed))
        fn = functools.partial(case.lib_fn, lib, *args)
        result = fn()
        cell.bad = case.check(lib, args, result)
        return cell, fn
    except Exception as e:
        if opts.strict:
            raise
        cell.error = describe_error(e)
        return cell, None


def run_case(case: Case, libs: dict[str, object], seed: int, opts) -> dict[str, Cell | None]:
    cells: dict[str, Cell | None] = {name: None for name in ("ember", "torch", "numpy")}
    fns: dict[str, Callable] = {}
    for name, lib in libs.items():
        if lib is not None:
            cells[name], fn = prepare(case, name, lib, seed, opts)
            if fn is not None:
                fns[name] = fn
    # Repeats are interleaved so load changes on a shared machine hit all columns alike. The
    # torch column of a multi-threaded case is timed on its own though: after a big matmul the
    # OpenBLAS / OpenMP worker threads of one library spin for a while, and would steal the
    # cores from the other library's threads if the two alternated.
    groups = (
        [fns]
        if not case.threaded
        else [
            {k: f for k, f in fns.items() if k != "torch"},
            {k: f for k, f in fns.items() if k == "torch"},
        ]
    )
    for group in groups:
        if not group:
            continue
        timings = measure_interleaved(
            group,
            repeat=opts.repeat,
            min_time=opts.min_time,
            warmup=opts.warmup,
            catch=not opts.strict,
        )
        for name, t in timings.items():
            if isinstance(t, Timing):
                cells[name].timing = t
            else:
                cells[name].error = describe_error(t, " while timing")
    return cells


def value(cell: Cell | None, scale: float) -> float | None:
    if cell is None or cell.timing is None:
        return None
    return cell.timing.best * scale


def fmt_num(v: float | None, cell: Cell | None = None) -> str:
    if cell is not None and cell.timing is None and cell.error is not None:
        return "err"
    if v is None:
        return "-"
    s = f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"
    return s + ("!" if cell is not None and cell.bad else "")


def fmt_ratio(num: float | None, den: float | None) -> str:
    return "-" if num is None or den is None or den == 0 else f"{num / den:.2f}x"


ROW = "  {:<30}{:>9}{:>9}{:>9}  {:>12}{:>12}{:>12}   {:<21}{}"


def print_group_header(group: str):
    print()
    print(GROUP_TITLES[group])
    print(
        ROW.format(
            "",
            "ember",
            "torch",
            "numpy",
            "ember/torch",
            "ember/numpy",
            "torch/numpy",
            "target",
            "result",
        ).rstrip()
    )


def print_row(case: Case, cells: dict[str, Cell | None]):
    e, t, n = (value(cells[k], case.scale) for k in ("ember", "torch", "numpy"))
    ref_name, limit = case.target
    ref = t if ref_name == "torch" else n
    ok = e is not None and ref is not None and not cells["ember"].bad
    verdict = "-" if not ok else ("PASS" if e / ref <= limit else "MISS")
    print(
        ROW.format(
            f"{case.key:<3}{case.label}",
            fmt_num(e, cells["ember"]),
            fmt_num(t, cells["torch"]),
            fmt_num(n, cells["numpy"]),
            fmt_ratio(e, t),
            fmt_ratio(e, n),
            fmt_ratio(t, n),
            f"ember/{ref_name} <= {limit:g}x",
            verdict,
        ).rstrip()
    )


def json_record(case: Case, cells: dict[str, Cell | None]) -> dict:
    """Return the ``--json`` record of one case: medians over the repeats, in the table's unit."""

    def median(name):
        cell = cells[name]
        if cell is None or cell.timing is None or cell.bad:
            return None
        return cell.timing.median * case.scale

    return bench_record(
        "foundation",
        f"{case.key} {case.label}",
        median("ember"),
        median("torch"),
        median("numpy"),
        target=case.target,
        unit="us/op" if case.scale == PER_OP else "ms",
    )


def run_benchmarks(cases, ember, torch, opts, records=None) -> list[tuple[str, str, str]]:
    """Run and print all selected cases. Returns problems as (library, case key, message);
    appends one ``--json`` record per case to ``records`` when given."""
    problems = []
    group = None
    # Order matters only for the round-robin: NumPy, then ember, then torch.
    libs = {"numpy": np, "ember": ember, "torch": torch}
    for i, case in enumerate(cases):
        if case.group != group:
            group = case.group
            print_group_header(group)
        cells = run_case(case, libs, seed=1000 + i, opts=opts)
        print_row(case, cells)
        if records is not None:
            records.append(json_record(case, cells))
        for name, cell in cells.items():
            if cell is not None and (cell.error or cell.bad):
                problems.append((name, case.key, cell.error or f"wrong result: {cell.bad}"))
    return problems


def print_problems(problems):
    if not problems:
        return
    print()
    print(
        "Problems ('err' = raised, '!' after a figure = result differs from the NumPy reference):"
    )
    merged: dict[tuple[str, str], list[str]] = {}
    for lib_name, key, msg in problems:
        merged.setdefault((lib_name, msg), []).append(key)
    for (lib_name, msg), keys in merged.items():
        print(f"  {lib_name} [{','.join(keys)}]: {msg}")


def run_profile(case: Case, lib, lib_name: str, opts) -> None:
    args = case.lib_setup(lib, np.random.default_rng(0))
    fn = functools.partial(case.lib_fn, lib, *args)
    for _ in range(opts.warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    single = time.perf_counter() - t0
    n = max(1, math.ceil(opts.profile_time / max(single, 1e-9)))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        fn()
    prof.disable()
    unit = "us/op" if case.scale == PER_OP else "ms/iter"
    print()
    print(
        f"cProfile: {lib_name} workload ({case.key}) {case.label}, {n} iterations "
        f"(unprofiled ~{single * case.scale:.3g} {unit}); top 25 by tottime"
    )
    if opts.profile_out:
        prof.dump_stats(opts.profile_out)
        print(
            f"(full stats written to {opts.profile_out}; view with `python -m pstats` or snakeviz)"
        )
    pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(25)


def select_cases(only: str | None) -> list[Case]:
    if not only:
        return list(CASES)
    wanted = {w.strip() for w in only.split(",") if w.strip()}
    known = {c.key for c in CASES} | {c.group for c in CASES}
    unknown = wanted - known
    if unknown:
        raise SystemExit(
            f"--only: unknown workload(s) {sorted(unknown)}; choose from {sorted(known)}"
        )
    return [c for c in CASES if c.key in wanted or c.group in wanted]


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="ember vs torch vs NumPy foundation micro-benchmarks.",
        epilog="Figures followed by '!' failed the result check; 'err' means the workload raised.",
    )
    p.add_argument("--quick", action="store_true", help="fewer, shorter repeats (CI smoke)")
    p.add_argument("--only", metavar="LIST", help="comma-separated subset of a,b,c (or b1,b2)")
    p.add_argument(
        "--ember-module",
        default="ember",
        metavar="NAME",
        help="module benchmarked in the 'ember' column (e.g. torch, to sanity-check the harness)",
    )
    p.add_argument(
        "--profile",
        nargs="?",
        const="a",
        choices=[c.key for c in CASES],
        metavar="CASE",
        help="instead of the tables, run ember's workload CASE (default a) under cProfile and "
        "print the top 25 functions by tottime",
    )
    p.add_argument("--profile-time", type=float, default=2.0, help="unprofiled seconds to profile")
    p.add_argument("--profile-out", metavar="FILE", help="also dump the raw cProfile stats here")
    p.add_argument("--repeat", type=int, help="repeats per measurement (default 7, quick 3)")
    p.add_argument(
        "--min-time", type=float, help="min seconds per repeat (default 0.2, quick 0.05)"
    )
    p.add_argument("--strict", action="store_true", help="re-raise workload errors (tracebacks)")
    p.add_argument(
        "--json", metavar="PATH", help="also write one JSON record per case (median times) here"
    )
    opts = p.parse_args(argv)
    opts.repeat = opts.repeat or (3 if opts.quick else 7)
    opts.min_time = opts.min_time or (0.05 if opts.quick else 0.2)
    opts.warmup = 1 if opts.quick else 3
    return opts


def main(argv=None) -> int:
    opts = parse_args(argv)
    cases = select_cases(opts.only)

    torch, _ = load_module("torch")
    ember, ember_err = load_module(opts.ember_module)
    if ember is None and opts.strict:
        importlib.import_module(opts.ember_module)  # re-raise with the full traceback
    print_header(ember, opts.ember_module, ember_err, torch, opts)

    if opts.profile:
        if ember is None:
            print(f"\ncannot profile: {ember_err}")
            return 1
        case = next(c for c in CASES if c.key == opts.profile)
        run_profile(case, ember, opts.ember_module, opts)  # errors propagate with a traceback
        return 0

    t0 = time.perf_counter()
    records: list[dict] = []
    problems = run_benchmarks(cases, ember, torch, opts, records)
    write_json(opts.json, records)
    if ember is None:
        problems.insert(0, ("ember", "*", ember_err))
    print_problems(problems)
    print(f"\n(total {time.perf_counter() - t0:.1f} s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

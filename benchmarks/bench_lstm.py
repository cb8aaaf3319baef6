#!/usr/bin/env python
"""One LSTM training step: ember vs torch (2 threads) vs hand-written NumPy.

    python benchmarks/bench_lstm.py            # full run
    python benchmarks/bench_lstm.py --quick    # CI smoke: fewer / shorter repeats
    python benchmarks/bench_lstm.py --json out.json
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_lstm.py --threads 1 --cpu-time
                                               # CPU time, one thread each: steady when loaded

Case ``train_step``: ``nn.LSTM(128, 256)`` (one layer) over a (35, 32, 128) input, then a linear
head 256 -> 128 on every timestep and an MSE loss against a fixed target, backward, SGD step
(lr 0.01). The NumPy column is the same math written directly: the input projection as one
GEMM, a Python loop over time for the recurrence (``sigmoid = 1 / (1 + exp(-x))``), explicit
backpropagation through time, and the SGD update. Target: ember/torch <= 2.5. Before timing,
ember's loss and parameter gradients are checked against torch's and NumPy's on the same
weights.

Case ``unrolled_step``: the same model and step written by hand with basic ops (per step a
matmul, ``chunk`` into four gates, ``sigmoid``/``tanh``, ``torch.stack`` of the steps): the
per-op dispatch and autograd cost of what users write. Its loss is checked against NumPy's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for _p in (str(HERE), str(REPO)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _timing import (  # noqa: E402
    SETTLE,
    bench_record,
    measure_interleaved,
    median_ms,
    write_json,
)

import ember  # noqa: E402

T, B, IN, H, OUT = 35, 32, 128, 256, 128
LR = 0.01
TARGET = 2.5


def _data():
    rng = np.random.default_rng(0)
    k = 1 / np.sqrt(H)
    w = {
        "weight_ih_l0": rng.uniform(-k, k, (4 * H, IN)),
        "weight_hh_l0": rng.uniform(-k, k, (4 * H, H)),
        "bias_ih_l0": rng.uniform(-k, k, 4 * H),
        "bias_hh_l0": rng.uniform(-k, k, 4 * H),
        "head.weight": rng.uniform(-k, k, (OUT, H)),
        "head.bias": rng.uniform(-k, k, OUT),
    }
    w = {n: a.astype(np.float32) for n, a in w.items()}
    x = rng.standard_normal((T, B, IN)).astype(np.float32)
    y = rng.standard_normal((T, B, OUT)).astype(np.float32)
    return w, x, y


def lib_step(lib, weights, x, y):
    """Return ``step()`` (one SGD training step) and the model, for ``lib`` = torch or ember."""

    class Model(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lib.nn.LSTM(IN, H)
            self.head = lib.nn.Linear(H, OUT)

        def forward(self, x):
            return self.head(self.lstm(x)[0])

    model = Model()
    state = {
        ("lstm." + n if not n.startswith("head") else n): lib.from_numpy(a.copy())
        for n, a in weights.items()
    }
    model.load_state_dict(state)
    opt = lib.optim.SGD(model.parameters(), lr=LR)
    loss_fn = lib.nn.MSELoss()
    xt, yt = lib.from_numpy(x), lib.from_numpy(y)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()
        return loss

    return step, model


def unrolled_step(lib, weights, x, y):
    """Return ``step()``: the same model written by hand with basic ops (the pattern users write:
    one input projection, then per step a matmul, ``chunk`` into gates, ``sigmoid``/``tanh``,
    and ``stack`` of the steps), SGD applied under ``no_grad``."""
    w = {n: lib.from_numpy(a.copy()).requires_grad_() for n, a in weights.items()}
    xt, yt = lib.from_numpy(x), lib.from_numpy(y)

    def step():
        for p in w.values():
            p.grad = None
        h, c = lib.zeros(B, H), lib.zeros(B, H)
        xp = xt @ w["weight_ih_l0"].t() + w["bias_ih_l0"]
        outs = []
        for t in range(T):
            i, f, g, o = (xp[t] + h @ w["weight_hh_l0"].t() + w["bias_hh_l0"]).chunk(4, 1)
            c = lib.sigmoid(f) * c + lib.sigmoid(i) * lib.tanh(g)
            h = lib.sigmoid(o) * lib.tanh(c)
            outs.append(h)
        pred = lib.stack(outs) @ w["head.weight"].t() + w["head.bias"]
        loss = ((pred - yt) ** 2).mean()
        loss.backward()
        with lib.no_grad():
            for p in w.values():
                p -= LR * p.grad
        return loss

    return step


# ---------------------------------------------------------------------------------------------
# the NumPy floor


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_grads(w, x, y):
    """Return (loss, grads) of the LSTM + head + MSE in plain NumPy (forward + explicit BPTT)."""
    w_ih, w_hh, b_ih, b_hh = w["weight_ih_l0"], w["weight_hh_l0"], w["bias_ih_l0"], w["bias_hh_l0"]
    xp = (x.reshape(-1, IN) @ w_ih.T + (b_ih + b_hh)).reshape(T, B, 4 * H)
    h = np.zeros((B, H), np.float32)
    c = np.zeros((B, H), np.float32)
    hs, cs, gates = [h], [c], []
    for t in range(T):
        a = xp[t] + h @ w_hh.T
        i, f = _sigmoid(a[:, :H]), _sigmoid(a[:, H : 2 * H])
        g, o = np.tanh(a[:, 2 * H : 3 * H]), _sigmoid(a[:, 3 * H :])
        c = f * c + i * g
        h = o * np.tanh(c)
        gates.append((i, f, g, o))
        hs.append(h)
        cs.append(c)
    out = np.stack(hs[1:])
    pred = out.reshape(-1, H) @ w["head.weight"].T + w["head.bias"]
    diff = pred - y.reshape(-1, OUT)
    loss = np.mean(diff * diff)
    dpred = diff * (2 / diff.size)
    grads = {"head.weight": dpred.T @ out.reshape(-1, H), "head.bias": dpred.sum(0)}
    dout = (dpred @ w["head.weight"]).reshape(T, B, H)
    dh = np.zeros((B, H), np.float32)
    dc = np.zeros((B, H), np.float32)
    dA = np.empty((T, B, 4 * H), np.float32)
    for t in range(T - 1, -1, -1):
        i, f, g, o = gates[t]
        dh = dh + dout[t]
        tc = np.tanh(cs[t + 1])
        do = dh * tc
        dc = dc + dh * o * (1 - tc * tc)
        di, df, dg = dc * g, dc * cs[t], dc * i
        dc = dc * f
        dA[t] = np.concatenate(
            [di * i * (1 - i), df * f * (1 - f), dg * (1 - g * g), do * o * (1 - o)], axis=1
        )
        dh = dA[t] @ w_hh
    dA2 = dA.reshape(-1, 4 * H)
    grads["weight_ih_l0"] = dA2.T @ x.reshape(-1, IN)
    grads["weight_hh_l0"] = dA2.T @ np.stack(hs[:-1]).reshape(-1, H)
    grads["bias_ih_l0"] = grads["bias_hh_l0"] = dA2.sum(0)
    return loss, grads


def numpy_step(weights, x, y):
    w = {n: a.copy() for n, a in weights.items()}

    def step():
        loss, grads = numpy_grads(w, x, y)
        for n, g in grads.items():
            w[n] -= LR * g
        return loss

    return step


# ---------------------------------------------------------------------------------------------


def check(torch, weights, x, y) -> float:
    """Return the largest relative difference of ember's loss and gradients from torch's and
    NumPy's after one step on the same weights."""
    ref_loss, ref_grads = numpy_grads(weights, x, y)
    worst = 0.0
    models = [("ember", ember)] + ([("torch", torch)] if torch is not None else [])
    got = {}
    for name, lib in models:
        step, model = lib_step(lib, weights, x, y)
        loss = float(step().detach())
        grads = {
            n.removeprefix("lstm."): p.grad.numpy().copy() for n, p in model.named_parameters()
        }
        got[name] = (loss, grads)

    def rel(a, b):
        return float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-12))

    eloss, egrads = got["ember"]
    refs = [(ref_loss, ref_grads)] + ([got["torch"]] if "torch" in got else [])
    for loss, grads in refs:
        worst = max(worst, abs(eloss - loss) / abs(loss))
        for n, g in grads.items():
            worst = max(worst, rel(egrads[n], g))
    return worst


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter repeats (CI smoke)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    ap.add_argument(
        "--threads",
        type=int,
        default=2,
        help="torch.set_num_threads(N) (default 2; set OPENBLAS_NUM_THREADS=N for NumPy's BLAS)",
    )
    ap.add_argument(
        "--cpu-time",
        action="store_true",
        help="time CPU (process) time instead of wall time: steadier on a loaded machine; use "
        "with --threads 1 and OPENBLAS_NUM_THREADS=1",
    )
    args = ap.parse_args(argv)
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    print(
        f"load average {os.getloadavg()[0]:.2f}; torch threads {args.threads}, "
        f"OPENBLAS_NUM_THREADS {os.environ.get('OPENBLAS_NUM_THREADS', 'default')} "
        f"({'CPU' if args.cpu_time else 'wall'} time)"
    )
    repeat, min_time = (2, 0.05) if args.quick else (args.repeat, 0.3)
    weights, x, y = _data()
    err = check(torch, weights, x, y)
    ok = err < 1e-3
    ref_loss = numpy_grads(weights, x, y)[0]
    u_err = abs(float(unrolled_step(ember, weights, x, y)().detach()) - ref_loss) / ref_loss
    ok_u = u_err < 1e-4
    fns = {"ember": lib_step(ember, weights, x, y)[0], "numpy": numpy_step(weights, x, y)}
    fns["ember_unrolled"] = unrolled_step(ember, weights, x, y)
    if torch is not None:
        fns["torch"] = lib_step(torch, weights, x, y)[0]
        fns["torch_unrolled"] = unrolled_step(torch, weights, x, y)
    res = measure_interleaved(
        fns,
        repeat=repeat,
        min_time=min_time,
        warmup=1 if args.quick else 2,
        settle=0.0 if args.quick else SETTLE,
        clock=time.process_time if args.cpu_time else time.perf_counter,
    )
    status = 0 if ok else 1
    for k, v in res.items():
        if isinstance(v, Exception):
            print(f"  {k}: {type(v).__name__}: {v}")
            status = 1
    ms = {k: median_ms(v) for k, v in res.items()}
    t_ms = ms.get("torch")
    print(f"LSTM({IN}, {H}) + Linear({H}, {OUT}) + MSE, seq {T}, batch {B}: one SGD training step")
    print(
        f"{'case':11} {'torch ms':>9} {'ember ms':>9} {'numpy ms':>9} {'ember/t':>8} "
        f"{'numpy/t':>8} {'target':>7}  check"
    )
    fmt = lambda v: f"{v:9.2f}" if v is not None else f"{'-':>9}"  # noqa: E731
    ratio = lambda v: f"{v / t_ms:8.2f}" if v is not None and t_ms else f"{'-':>8}"  # noqa: E731
    rec = bench_record(
        "lstm",
        "train_step",
        ms["ember"] if ok else None,
        t_ms,
        ms["numpy"],
        target=("torch", TARGET),
    )
    print(
        f"{'train_step':11} {fmt(t_ms)} {fmt(ms['ember'])} {fmt(ms['numpy'])} "
        f"{ratio(ms['ember'])} {ratio(ms['numpy'])} {TARGET:6.1f}x {rec['status'] or '-'} "
        f"{'ok' if ok else f'! err={err:.2g}'}"
    )
    tu = ms.get("torch_unrolled")
    rec_u = bench_record(
        "lstm",
        "unrolled_step",
        ms["ember_unrolled"] if ok_u else None,
        tu,
        ms["numpy"],
        target=("torch", TARGET),
    )
    eu = ms["ember_unrolled"]
    ratio_u = lambda v: f"{v / tu:8.2f}" if v is not None and tu else f"{'-':>8}"  # noqa: E731
    print(
        f"{'unrolled':11} {fmt(tu)} {fmt(eu)} {fmt(ms['numpy'])} {ratio_u(eu)} "
        f"{ratio_u(ms['numpy'])} {TARGET:6.1f}x {rec_u['status'] or '-'} "
        f"{'ok' if ok_u else f'! err={u_err:.2g}'}"
    )
    if not ok_u:
        status = 1
    write_json(args.json, [rec, rec_u])
    return status


if __name__ == "__main__":
    sys.exit(main())

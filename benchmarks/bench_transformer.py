#!/usr/bin/env python
"""Transformer training step: ember vs torch (2 threads) vs hand-written NumPy.

    python benchmarks/bench_transformer.py            # full run
    python benchmarks/bench_transformer.py --quick    # CI smoke: fewer / shorter repeats

Case (issue 9, "Speed"): one AdamW training step of a pre-LN Transformer encoder block
(``nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True, norm_first=True)``)
on a batch of 16 sequences of 64 tokens, loss = MSE to a random target. The NumPy column is the
same math written by hand (forward, explicit backward, AdamW). Before timing, ember's output and
gradients are checked against torch's (or, without torch, against NumPy's) on the same weights.
Target: ember/torch <= 2.
"""

from __future__ import annotations

import argparse
import math
import sys
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

B, T, E, H, FF = 16, 64, 256, 4, 1024
LR, WD, BETAS, EPS = 1e-3, 1e-2, (0.9, 0.999), 1e-8
TARGET = 2.0


def _layer(lib):
    return lib.nn.TransformerEncoderLayer(E, H, FF, dropout=0.0, batch_first=True, norm_first=True)


# ---------------------------------------------------------------------------------------------
# hand-written NumPy: forward, explicit backward, AdamW


def _ln(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + eps)
    xh = xc * rstd
    return xh * g + b, xh, rstd


def _ln_back(gy, g, xh, rstd):
    gxh = gy * g
    return rstd * (gxh - gxh.mean(-1, keepdims=True) - xh * (gxh * xh).mean(-1, keepdims=True))


def numpy_grads(ps, x, tgt):
    """Return ``(loss, y, grads)`` of the block; ``ps`` in torch's parameter order."""
    wqkv, bqkv, wo, bo, w1, b1, w2, b2, g1, be1, g2, be2 = ps
    hd = E // H
    scale = 1.0 / math.sqrt(hd)  # a Python float keeps float32 arrays float32
    h1, xh1, r1 = _ln(x, g1, be1)
    h1f = h1.reshape(-1, E)
    qkv = (h1f @ wqkv.T + bqkv).reshape(B, T, 3, H, hd).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]  # (B, H, T, hd)
    s = (q * scale) @ k.swapaxes(-1, -2)
    s -= s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(B * T, E)
    x1 = x + (o @ wo.T + bo).reshape(B, T, E)
    h2, xh2, r2 = _ln(x1, g2, be2)
    h2f = h2.reshape(-1, E)
    f1 = h2f @ w1.T + b1
    r = np.maximum(f1, 0)
    y = x1 + (r @ w2.T + b2).reshape(B, T, E)
    d = y - tgt
    loss = (d * d).mean()
    # backward
    gy = d * (2.0 / d.size)
    gf = gy.reshape(-1, E)
    gw2, gb2 = gf.T @ r, gf.sum(0)
    gr = (gf @ w2) * (f1 > 0)
    gw1, gb1 = gr.T @ h2f, gr.sum(0)
    gh2 = (gr @ w1).reshape(B, T, E)
    gg2, gbe2 = (gh2 * xh2).sum((0, 1)), gh2.sum((0, 1))
    gx1 = gy + _ln_back(gh2, g2, xh2, r2)
    ga = gx1.reshape(-1, E)
    gwo, gbo = ga.T @ o, ga.sum(0)
    go = (ga @ wo).reshape(B, T, H, hd).transpose(0, 2, 1, 3)
    gp = go @ v.swapaxes(-1, -2)
    gv = p.swapaxes(-1, -2) @ go
    gs = p * (gp - (gp * p).sum(-1, keepdims=True))
    gq = (gs @ k) * scale
    gk = gs.swapaxes(-1, -2) @ (q * scale)
    gqkv = np.stack([gq, gk, gv]).transpose(1, 3, 0, 2, 4).reshape(B * T, 3 * E)
    gwqkv, gbqkv = gqkv.T @ h1f, gqkv.sum(0)
    gh1 = (gqkv @ wqkv).reshape(B, T, E)
    gg1, gbe1 = (gh1 * xh1).sum((0, 1)), gh1.sum((0, 1))
    grads = [gwqkv, gbqkv, gwo, gbo, gw1, gb1, gw2, gb2, gg1, gbe1, gg2, gbe2]
    return loss, y, grads


def numpy_step_fn(ps, x, tgt):
    ms = [np.zeros_like(p) for p in ps]
    vs = [np.zeros_like(p) for p in ps]
    state = {"step": 0}
    b1, b2 = BETAS

    def step():
        _, _, grads = numpy_grads(ps, x, tgt)
        state["step"] += 1
        t = state["step"]
        bc1, bc2 = 1 - b1**t, 1 - b2**t
        for p, g, m, v in zip(ps, grads, ms, vs):
            p *= 1 - LR * WD
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * (g * g)
            denom = np.sqrt(v) / math.sqrt(bc2) + EPS
            p -= (LR / bc1) * (m / denom)

    return step


# ---------------------------------------------------------------------------------------------
# the case


def _loss(lib, model, x, tgt):
    return lib.nn.functional.mse_loss(model(x), tgt)


def _step_fn(lib, model, x, tgt):
    opt = lib.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)

    def step():
        opt.zero_grad()
        _loss(lib, model, x, tgt).backward()
        opt.step()

    return step


def _max_diff(a, b) -> float:
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def transformer_case(torch):
    """Return ``(fns, err)``: step callables by library and the max deviation from the
    reference (torch's output and gradients, or NumPy's without torch)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, T, E)).astype(np.float32)
    tgt = rng.standard_normal((B, T, E)).astype(np.float32)
    ember.manual_seed(0)
    em = _layer(ember)
    if torch is not None:
        torch.manual_seed(0)
        tm = _layer(torch)
        em.load_state_dict({k: ember.from_numpy(v.numpy()) for k, v in tm.state_dict().items()})
    ps = [p.detach().numpy().copy() for p in em.parameters()]
    ex, et = ember.from_numpy(x), ember.from_numpy(tgt)
    # reference check on the initial weights: output and every parameter gradient
    loss_e = _loss(ember, em, ex, et)
    loss_e.backward()
    got = [em(ex).detach().numpy()] + [p.grad.numpy() for p in em.parameters()]
    em.zero_grad()
    loss_n, y_n, g_n = numpy_grads([p.astype(np.float64) for p in ps], x, tgt)
    want = [y_n] + g_n
    if torch is not None:
        tx, tt = torch.from_numpy(x), torch.from_numpy(tgt)
        _loss(torch, tm, tx, tt).backward()
        want = [tm(tx).detach().numpy()] + [p.grad.numpy() for p in tm.parameters()]
        tm.zero_grad()
        # the hand-written NumPy agrees with torch too
        err_n = max(_max_diff(a, b) for a, b in zip([y_n] + g_n, want))
        assert err_n < 1e-3, f"NumPy reference differs from torch by {err_n:.3g}"
    err = max(_max_diff(a, b) for a, b in zip(got, want))
    fns = {"ember": _step_fn(ember, em, ex, et), "numpy": numpy_step_fn(ps, x, tgt)}
    if torch is not None:
        fns["torch"] = _step_fn(torch, tm, torch.from_numpy(x), torch.from_numpy(tgt))
    return fns, err


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CI smoke: fewer, shorter repeats")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    ap.add_argument(
        "--threads", type=int, default=2, help="BLAS/torch threads for all three (default 2)"
    )
    args = ap.parse_args(argv)
    ember.set_num_threads(args.threads)
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    repeat, min_time = (2, 0.05) if args.quick else (args.repeat, 0.5)
    fns, err = transformer_case(torch)
    ok = err < 1e-3
    res = measure_interleaved(
        fns, repeat=repeat, min_time=min_time, settle=0.0 if args.quick else SETTLE
    )
    status = 0 if ok else 1
    for k, v in res.items():
        if isinstance(v, Exception):
            print(f"  {k}: {type(v).__name__}: {v}")
            status = 1
    ms = {k: median_ms(res.get(k)) for k in ("torch", "ember", "numpy")}
    rec = bench_record(
        "transformer",
        "encoder_block_step",
        ms["ember"] if ok else None,
        ms["torch"],
        ms["numpy"],
        target=("torch", TARGET),
    )

    def fmt(v):
        return f"{v:9.2f}" if v is not None else f"{'-':>9}"

    def ratio(v):
        return f"{v / ms['torch']:8.2f}" if v is not None and ms["torch"] else f"{'-':>8}"

    print(
        f"{'case':20} {'torch ms':>9} {'ember ms':>9} {'numpy ms':>9} {'ember/t':>8} "
        f"{'numpy/t':>8} {'target':>7}  check"
    )
    print(
        f"{'encoder_block_step':20} {fmt(ms['torch'])} {fmt(ms['ember'])} {fmt(ms['numpy'])} "
        f"{ratio(ms['ember'])} {ratio(ms['numpy'])} {TARGET:6.1f}x {rec['status'] or '-'} "
        f"{'ok' if ok else f'! err={err:.2g}'}"
    )
    write_json(args.json, [rec])
    return status


if __name__ == "__main__":
    sys.exit(main())

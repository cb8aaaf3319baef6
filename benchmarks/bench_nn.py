#!/usr/bin/env python
"""nn training/inference steps: ember vs torch (2 threads) vs hand-written NumPy.

    python benchmarks/bench_nn.py            # full run
    python benchmarks/bench_nn.py --quick    # CI smoke: fewer / shorter repeats
    python benchmarks/bench_nn.py --only lenet,resnet

Cases (issue 9, "Speed"):

- ``mlp``: one SGD+momentum training step of a 784-512-256-10 MLP, batch 128.
- ``lenet``: one SGD+momentum training step of LeNet (conv 1->16 5x5 pad 2, relu, maxpool 2,
  conv 16->32 5x5, relu, maxpool 2, 800->128->10), batch 64 of 28x28, cross-entropy.
- ``resnet``: inference (no grad) of 4 ResNet basic blocks (64 channels, batch 8, 32x32,
  eval-mode BatchNorm): the same module code on ember and torch, weights and BN statistics
  copied through ``state_dict``; NumPy applies eval BN as the per-channel affine it computes.

The NumPy column is a straightforward hand-written version of the same math (im2col through
``sliding_window_view`` + ``tensordot``, max-pool via a reshape, explicit backward). Ratios are
to torch; targets (issue 9): MLP <= 1.3x, LeNet <= 2x, ResNet blocks <= 2x. Before timing, the
ember output is checked against torch's with copied weights.
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
    SETTLE,
    bench_record,
    measure_interleaved,
    median_ms,
    write_json,
)

import ember  # noqa: E402
import ember.nn as enn  # noqa: E402

TARGETS = {"mlp": 1.3, "lenet": 2.0, "resnet": 2.0}
swv = np.lib.stride_tricks.sliding_window_view


def _copy(tmod, emod):
    for tp, ep in zip(tmod.parameters(), emod.parameters()):
        with ember.no_grad():
            ep.copy_(ember.from_numpy(tp.detach().numpy().copy()))


# ---------------------------------------------------------------------------------------------
# MLP


def mlp_case(torch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128)
    tm = torch.nn.Sequential(
        torch.nn.Linear(784, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 10),
    )
    em = enn.Sequential(
        enn.Linear(784, 512), enn.ReLU(), enn.Linear(512, 256), enn.ReLU(), enn.Linear(256, 10)
    )
    _copy(tm, em)
    topt = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)
    eopt = ember.optim.SGD(em.parameters(), lr=0.01, momentum=0.9)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    ex, ey = ember.from_numpy(x), ember.from_numpy(y)
    import ember.nn.functional as EF

    def t_step():
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tm(tx), ty)
        loss.backward()
        topt.step()

    def e_step():
        eopt.zero_grad()
        loss = EF.cross_entropy(em(ex), ey)
        loss.backward()
        eopt.step()

    ws = [p.detach().numpy().copy() for p in tm.parameters()]
    vs = [np.zeros_like(w) for w in ws]

    def n_step():
        w1, b1, w2, b2, w3, b3 = ws
        h1 = x @ w1.T + b1
        a1 = np.maximum(h1, 0)
        h2 = a1 @ w2.T + b2
        a2 = np.maximum(h2, 0)
        z = a2 @ w3.T + b3
        z = z - z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        p[np.arange(128), y] -= 1
        g = p / 128
        grads = [None] * 6
        grads[4], grads[5] = g.T @ a2, g.sum(0)
        g = (g @ w3) * (h2 > 0)
        grads[2], grads[3] = g.T @ a1, g.sum(0)
        g = (g @ w2) * (h1 > 0)
        grads[0], grads[1] = g.T @ x, g.sum(0)
        for w, v, gr in zip(ws, vs, grads):
            v *= 0.9
            v += gr
            w -= 0.01 * v

    check = np.abs(tm(tx).detach().numpy() - em(ex).detach().numpy()).max()
    return t_step, e_step, n_step, check


# ---------------------------------------------------------------------------------------------
# LeNet


def _np_conv(x, w, pad):
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = w.shape[-1]
    cols = swv(x, (k, k), axis=(2, 3))  # (N, C, H', W', k, k)
    return np.tensordot(cols, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2), cols


def _np_pool(x):
    n, c, h, w = x.shape
    r = x.reshape(n, c, h // 2, 2, w // 2, 2)
    out = r.max((3, 5))
    mask = r == out[:, :, :, None, :, None]
    return out, mask


def lenet_case(torch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 64)

    def build(nn):
        class LeNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
                self.conv2 = nn.Conv2d(16, 32, 5)
                self.fc1 = nn.Linear(800, 128)
                self.fc2 = nn.Linear(128, 10)
                self.pool = nn.MaxPool2d(2)
                self.relu = nn.ReLU()

            def forward(self, x):
                x = self.pool(self.relu(self.conv1(x)))
                x = self.pool(self.relu(self.conv2(x)))
                x = self.relu(self.fc1(x.flatten(1)))
                return self.fc2(x)

        return LeNet()

    tm = build(torch.nn)
    em = build(type("nn", (), {**vars(enn), "Conv2d": enn.Conv2d, "MaxPool2d": enn.MaxPool2d}))
    _copy(tm, em)
    topt = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)
    eopt = ember.optim.SGD(em.parameters(), lr=0.01, momentum=0.9)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    ex, ey = ember.from_numpy(x), ember.from_numpy(y)
    import ember.nn.functional as EF

    def t_step():
        topt.zero_grad()
        torch.nn.functional.cross_entropy(tm(tx), ty).backward()
        topt.step()

    def e_step():
        eopt.zero_grad()
        EF.cross_entropy(em(ex), ey).backward()
        eopt.step()

    ws = [p.detach().numpy().copy() for p in tm.parameters()]
    vs = [np.zeros_like(w) for w in ws]

    def n_step():
        cw1, cb1, cw2, cb2, fw1, fb1, fw2, fb2 = ws
        h1, cols1 = _np_conv(x, cw1, 2)
        h1 += cb1[:, None, None]
        a1 = np.maximum(h1, 0)
        p1, m1 = _np_pool(a1)
        h2, cols2 = _np_conv(p1, cw2, 0)
        h2 += cb2[:, None, None]
        a2 = np.maximum(h2, 0)
        p2, m2 = _np_pool(a2)
        f = p2.reshape(64, -1)
        h3 = f @ fw1.T + fb1
        a3 = np.maximum(h3, 0)
        z = a3 @ fw2.T + fb2
        z = z - z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        p[np.arange(64), y] -= 1
        g = p / 64
        gr = [None] * 8
        gr[6], gr[7] = g.T @ a3, g.sum(0)
        g = (g @ fw2) * (h3 > 0)
        gr[4], gr[5] = g.T @ f, g.sum(0)
        g = (g @ fw1).reshape(p2.shape)
        g = (m2 * g[:, :, :, None, :, None]).reshape(a2.shape) * (h2 > 0)
        gr[2] = np.tensordot(g, cols2, axes=([0, 2, 3], [0, 2, 3]))
        gr[3] = g.sum((0, 2, 3))
        # grad w.r.t. p1: full correlation with the flipped kernel
        gp = np.pad(g, ((0, 0), (0, 0), (4, 4), (4, 4)))
        g = _np_conv(gp, cw2[:, :, ::-1, ::-1].transpose(1, 0, 2, 3), 0)[0]
        g = (m1 * g[:, :, :, None, :, None]).reshape(a1.shape) * (h1 > 0)
        gr[0] = np.tensordot(g, cols1, axes=([0, 2, 3], [0, 2, 3]))
        gr[1] = g.sum((0, 2, 3))
        for w, v, gg in zip(ws, vs, gr):
            v *= 0.9
            v += gg
            w -= 0.01 * v

    check = np.abs(tm(tx).detach().numpy() - em(ex).detach().numpy()).max()
    return t_step, e_step, n_step, check


# ---------------------------------------------------------------------------------------------
# ResNet basic blocks, inference


def resnet_case(torch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 64, 32, 32)).astype(np.float32)

    def build(lib):
        nn = lib.nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(64, 64, 3, padding=1, bias=False)
                self.bn1 = nn.BatchNorm2d(64)
                self.conv2 = nn.Conv2d(64, 64, 3, padding=1, bias=False)
                self.bn2 = nn.BatchNorm2d(64)

            def forward(self, x):
                out = lib.relu(self.bn1(self.conv1(x)))
                return lib.relu(self.bn2(self.conv2(out)) + x)

        return nn.Sequential(*[Block() for _ in range(4)]).eval()

    tm = build(torch)
    params = []  # (w1, s1, b1, w2, s2, b2) per block, eval BN as an affine
    for blk in tm:
        for bn in (blk.bn1, blk.bn2):
            with torch.no_grad():
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.1, 0.1)
                bn.running_mean.uniform_(-0.1, 0.1)
                bn.running_var.uniform_(0.5, 1.5)
        row = []
        for conv, bn in ((blk.conv1, blk.bn1), (blk.conv2, blk.bn2)):
            s = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach().numpy()
            b = bn.bias - bn.running_mean * bn.weight / torch.sqrt(bn.running_var + bn.eps)
            row += [
                conv.weight.detach().numpy().copy(),
                s.reshape(64, 1, 1),
                b.detach().numpy().reshape(64, 1, 1),
            ]
        params.append(row)
    em = build(ember)
    em.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in tm.state_dict().items()})
    tx, ex = torch.from_numpy(x), ember.from_numpy(x)

    def t_run():
        with torch.no_grad():
            return tm(tx)

    def e_run():
        with ember.no_grad():
            return em(ex)

    def n_run():
        h = x
        for w1, s1, b1, w2, s2, b2 in params:
            out = np.maximum(_np_conv(h, w1, 1)[0] * s1 + b1, 0)
            h = np.maximum(_np_conv(out, w2, 1)[0] * s2 + b2 + h, 0)
        return h

    check = np.abs(t_run().numpy() - e_run().numpy()).max()
    return t_run, e_run, n_run, check


CASES = {"mlp": mlp_case, "lenet": lenet_case, "resnet": resnet_case}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    repeat, min_time = (2, 0.05) if args.quick else (args.repeat, 0.3)
    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    print(
        f"{'case':8} {'torch ms':>9} {'ember ms':>9} {'numpy ms':>9} {'ember/t':>8} "
        f"{'numpy/t':>8} {'target':>7}  check"
    )
    status, records = 0, []
    for name in names:
        t_fn, e_fn, n_fn, err = CASES[name](torch)
        ok = err < 1e-3
        status |= not ok
        res = measure_interleaved(
            {"torch": t_fn, "ember": e_fn, "numpy": n_fn},
            repeat=repeat,
            min_time=min_time,
            settle=0.0 if args.quick else SETTLE,
        )
        ms = {
            k: (v.best * 1e3 if not isinstance(v, Exception) else float("nan"))
            for k, v in res.items()
        }
        for k, v in res.items():
            if isinstance(v, Exception):
                print(f"  {name}/{k}: {type(v).__name__}: {v}")
                status = 1
        re, rn = ms["ember"] / ms["torch"], ms["numpy"] / ms["torch"]
        tag = "PASS" if re <= TARGETS[name] else "MISS"
        print(
            f"{name:8} {ms['torch']:9.2f} {ms['ember']:9.2f} {ms['numpy']:9.2f} {re:8.2f} "
            f"{rn:8.2f} {TARGETS[name]:6.1f}x {tag} {'ok' if ok else f'! err={err:.2g}'}"
        )
        records.append(
            bench_record(
                "nn",
                name,
                median_ms(res["ember"]) if ok else None,
                median_ms(res["torch"]),
                median_ms(res["numpy"]),
                target=("torch", TARGETS[name]),
            )
        )
    write_json(args.json, records)
    return status


if __name__ == "__main__":
    sys.exit(main())

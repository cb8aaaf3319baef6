#!/usr/bin/env python
"""8-bit optimizers (issue 25): state memory, convergence, peak RSS of a fine-tuning step, time.

    python benchmarks/bench_optim8bit.py                 # everything (a few minutes on 2 cores)
    python benchmarks/bench_optim8bit.py --part states   # one part: states|time|mnist|lstm|rss
    python benchmarks/bench_optim8bit.py --quick         # small sizes (CI smoke)

Parts:

  states  bytes of optimizer state (every array in ``opt.state``) after one step of a 21M-parameter
          MLP (five 2048x2048 Linear layers): ``Adam8bit`` / ``Adam``. Target <= 0.27.
  time    one ``opt.step()`` over the same model (gradients set), median of the repeats.
  mnist   examples/mnist.py's LeNet, 2 epochs on the 4,000 training digits, batch 64, lr 1e-3,
          ``Adam`` vs ``Adam8bit`` from the same seed: test accuracy (target: within 0.5 points).
  lstm    examples/char_lstm.py's model and loop (200 steps, clip 1.0, lr 3e-3): final smoothed
          loss (target: within 2%).
  rss     peak RSS (``ru_maxrss``) of a process that builds a GPT-2-small-sized decoder (12 layers,
          d=768, 12 heads, tied 50257-token embedding, 124M parameters) and runs fine-tuning steps
          (sequence 128, batch 4), each configuration in its own subprocess: fp32 ``Adam``;
          ``Adam8bit``; ``Adam8bit`` + per-layer activation checkpointing + bf16 autocast.
          Target: the last <= 50% of the first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import ember  # noqa: E402
import ember.contrib.bitsandbytes as bnb  # noqa: E402


def _mlp(width: int, depth: int):
    ember.manual_seed(0)
    return ember.nn.Sequential(*[ember.nn.Linear(width, width) for _ in range(depth)])


def _state_bytes(opt) -> int:
    return sum(
        v._data.nbytes for st in opt.state.values() for v in st.values() if hasattr(v, "_data")
    )


def part_states_time(quick: bool) -> dict:
    width, depth, reps = (512, 3, 3) if quick else (2048, 5, 5)
    model = _mlp(width, depth)
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    rng = np.random.default_rng(0)
    grads = [
        ember.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 1e-3) for p in params
    ]
    out = {"params": n}
    opts = {
        "adam32": ember.optim.Adam(params, lr=1e-4),
        "adam8": bnb.optim.Adam8bit(params, lr=1e-4),
    }
    times = {name: [] for name in opts}
    for _ in range(reps + 1):  # interleaved, CPU time: the ratio survives a busy machine
        for name, opt in opts.items():
            for p, g in zip(params, grads):
                p.grad = g
            t = time.process_time()
            opt.step()
            times[name].append(time.process_time() - t)
    for name, opt in opts.items():
        out[f"{name}_state_bytes"] = _state_bytes(opt)
        out[f"{name}_step_ms"] = float(np.median(times[name][1:]) * 1e3)
    from ember.optim import _quant8

    out["codec"] = "numba" if _quant8._jit() is not None else "numpy"
    out["state_ratio"] = out["adam8_state_bytes"] / out["adam32_state_bytes"]
    out["time_ratio"] = out["adam8_step_ms"] / out["adam32_step_ms"]
    return out


def part_mnist(quick: bool) -> dict:
    from mnist import LeNet, evaluate, load_digits

    from ember.utils.data import DataLoader, TensorDataset

    epochs = 1 if quick else 2
    res = {}
    for name, cls in (("adam32", ember.optim.Adam), ("adam8", bnb.optim.Adam8bit)):
        ember.manual_seed(0)
        tx, ty, vx, vy = load_digits(0, 512 if quick else None)
        model = LeNet()
        opt = cls(model.parameters(), lr=1e-3)
        loss_fn = ember.nn.CrossEntropyLoss()
        g = ember.Generator().manual_seed(0)
        loader = DataLoader(TensorDataset(tx, ty), batch_size=64, shuffle=True, generator=g)
        for _ in range(epochs):
            model.train()
            for x, y in loader:
                opt.zero_grad()
                loss_fn(model(x), y).backward()
                opt.step()
        loss, acc = evaluate(model, DataLoader(TensorDataset(vx, vy), batch_size=500), loss_fn)
        res[name] = {"test_loss": loss, "test_acc": acc}
    res["acc_gap_points"] = 100 * (res["adam32"]["test_acc"] - res["adam8"]["test_acc"])
    return res


def part_lstm(quick: bool) -> dict:
    from char_lstm import CharLSTM, batches, zen_of_python

    steps = 40 if quick else 200
    res = {}
    for name, cls in (("adam32", ember.optim.Adam), ("adam8", bnb.optim.Adam8bit)):
        ember.manual_seed(0)
        text = zen_of_python()
        chars = sorted(set(text))
        stoi = {c: i for i, c in enumerate(chars)}
        data = ember.tensor([stoi[c] for c in text])
        model = CharLSTM(len(chars))
        opt = cls(model.parameters(), lr=3e-3)
        loss_fn = ember.nn.CrossEntropyLoss()
        stream = batches(data, 4, 32)
        state, running = None, None
        for _ in range(steps):
            x, y = next(stream)
            if state is not None:
                state = tuple(s.detach() for s in state)
            logits, state = model(x, state)
            loss = loss_fn(logits.reshape(-1, len(chars)), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            running = loss.item() if running is None else 0.9 * running + 0.1 * loss.item()
        res[name] = {"final_loss": running}
    res["loss_gap_pct"] = 100 * (res["adam8"]["final_loss"] / res["adam32"]["final_loss"] - 1)
    return res


# -- the GPT-2-small-sized fine-tuning step, one configuration per process -----------------------
class _GPT(ember.nn.Module):
    def __init__(self, vocab, d, heads, layers, ctx, ckpt):
        super().__init__()
        nn = ember.nn
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
            )
            for _ in range(layers)
        )
        self.ln = nn.LayerNorm(d)
        self.ckpt = ckpt

    def forward(self, idx):
        from ember.utils.checkpoint import checkpoint

        t = idx.shape[1]
        h = self.wte(idx) + self.wpe(ember.arange(t))
        mask = ember.nn.Transformer.generate_square_subsequent_mask(t)
        for blk in self.blocks:
            if self.ckpt:  # autocast entered inside: ember's recomputation does not restore it
                h = checkpoint(_bf16_block, blk, h, mask, use_reentrant=False)
            else:
                h = blk(h, src_mask=mask, is_causal=True)
        return self.ln(h) @ self.wte.weight.t()  # tied head


def _bf16_block(blk, h, mask):
    with ember.autocast("cpu", dtype=ember.bfloat16):
        return blk(h, src_mask=mask, is_causal=True)


def rss_child(config: str, quick: bool, steps: int) -> dict:
    vocab, d, heads, layers, seq, batch = (
        (5000, 256, 4, 4, 64, 2) if quick else (50257, 768, 12, 12, 128, 4)
    )
    ember.manual_seed(0)
    model = _GPT(vocab, d, heads, layers, 1024, ckpt=config == "8bit+ckpt+bf16")
    n = sum(p.numel() for p in model.parameters())
    opt = (ember.optim.Adam if config == "fp32" else bnb.optim.Adam8bit)(
        model.parameters(), lr=1e-4
    )
    idx = ember.randint(0, vocab, (batch, seq + 1))
    x, y = idx[:, :-1], idx[:, 1:]
    loss_fn = ember.nn.CrossEntropyLoss()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times, losses = [], []
    for _ in range(steps):
        t = time.perf_counter()
        opt.zero_grad()
        if config == "8bit+ckpt+bf16":
            with ember.autocast("cpu", dtype=ember.bfloat16):
                logits = model(x)
            loss = loss_fn(logits.float().reshape(-1, vocab), y.reshape(-1))
        else:
            loss = loss_fn(model(x).reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t)
        losses.append(loss.item())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "config": config,
        "params": n,
        "peak_rss_mb": peak / 1024,
        "model_rss_mb": base / 1024,
        "step_s": min(times),
        "losses": losses,
    }


def part_rss(quick: bool, steps: int) -> dict:
    res = {}
    for config in ("fp32", "8bit", "8bit+ckpt+bf16"):
        cmd = [sys.executable, __file__, "--rss-child", config, "--steps", str(steps)]
        cmd += ["--quick"] if quick else []
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
        res[config] = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"  {config:16s} peak RSS {res[config]['peak_rss_mb']:8.0f} MB  "
            f"step {res[config]['step_s']:.1f} s",
            flush=True,
        )
    res["lean_over_fp32"] = res["8bit+ckpt+bf16"]["peak_rss_mb"] / res["fp32"]["peak_rss_mb"]
    res["8bit_over_fp32"] = res["8bit"]["peak_rss_mb"] / res["fp32"]["peak_rss_mb"]
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--part", default="all", choices=["all", "states", "time", "mnist", "lstm", "rss"]
    )
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=2, help="fine-tuning steps per rss config")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rss_child:
        print(json.dumps(rss_child(args.rss_child, args.quick, args.steps)))
        return 0
    res, ok = {}, True
    if args.part in ("all", "states", "time"):
        r = res["states_time"] = part_states_time(args.quick)
        print(
            f"states: {r['params'] / 1e6:.1f}M params, "
            f"32-bit {r['adam32_state_bytes'] / 2**20:.1f} MB, "
            f"8-bit {r['adam8_state_bytes'] / 2**20:.1f} MB, ratio {r['state_ratio']:.3f} (<= 0.27)"
        )
        print(
            f"time: Adam {r['adam32_step_ms']:.1f} ms, Adam8bit {r['adam8_step_ms']:.1f} ms, "
            f"ratio {r['time_ratio']:.2f} (<= ~2)"
        )
        ok &= r["state_ratio"] <= 0.27
    if args.part in ("all", "mnist"):
        r = res["mnist"] = part_mnist(args.quick)
        print(
            f"mnist: Adam acc {100 * r['adam32']['test_acc']:.2f}%, Adam8bit "
            f"{100 * r['adam8']['test_acc']:.2f}% (gap {r['acc_gap_points']:+.2f} points, <= 0.5)"
        )
        ok &= args.quick or r["acc_gap_points"] <= 0.5
    if args.part in ("all", "lstm"):
        r = res["lstm"] = part_lstm(args.quick)
        print(
            f"lstm: Adam loss {r['adam32']['final_loss']:.4f}, "
            f"Adam8bit {r['adam8']['final_loss']:.4f} "
            f"({r['loss_gap_pct']:+.2f}%, <= 2%)"
        )
        ok &= args.quick or r["loss_gap_pct"] <= 2.0
    if args.part in ("all", "rss"):
        print("rss (each configuration in a subprocess):", flush=True)
        r = res["rss"] = part_rss(args.quick, args.steps)
        print(
            f"rss: 8-bit / fp32 {r['8bit_over_fp32']:.2f}, 8-bit+ckpt+bf16 / fp32 "
            f"{r['lean_over_fp32']:.2f} (<= 0.50)"
        )
        ok &= args.quick or r["lean_over_fp32"] <= 0.5
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

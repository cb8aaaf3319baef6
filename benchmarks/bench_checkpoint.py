#!/usr/bin/env python
"""Activation checkpointing: memory held by the graph, peak memory and step time on a deep MLP.

    python benchmarks/bench_checkpoint.py            # depth 16, width 256, batch 256
    python benchmarks/bench_checkpoint.py --quick    # smaller model, fewer repeats (CI smoke)

The model is ``depth`` blocks ``z = h @ W_i + b_i; h = tanh(z) * sigmoid(z)`` in float32, loss
``(h ** 2).mean()``: each block keeps three activations for backward (its input, the tanh and the
sigmoid outputs), a checkpointed segment only its input.
Variants (the same functions run with ``lib=ember`` and ``lib=torch``):

  plain          no checkpointing
  per-layer      ``checkpoint(block, h, use_reentrant=False)`` around every block
  sequential     ``checkpoint_sequential(layers, segments=sqrt(depth), use_reentrant=False)``
  seq-reentrant  the same with ``use_reentrant=True``

Columns:

  held MB   bytes of NumPy arrays still alive after the forward, beyond the parameters and the
            input: what the graph holds for backward (saved activations), measured with
            ``tracemalloc`` (NumPy reports its buffers to it). ember only.
  peak MB   peak of NumPy allocations during forward + backward, above the memory in use
            before the step. ember only (torch's allocator is not traced).
  ember ms  time of one step (forward + backward), best of the repeats
  torch ms  the same workload on torch, for the cost of recomputation there
  grads     the gradients equal the plain run's (max relative difference)

Exit status 1 if a variant's gradients differ from the plain run's.
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import bench_record, measure_interleaved, median_ms, write_json  # noqa: E402

import ember  # noqa: E402
import ember.utils.checkpoint  # noqa: E402

try:
    import torch
    import torch.utils.checkpoint
except ImportError:  # torch is optional: its column shows "-"
    torch = None


def make_model(lib, depth: int, width: int, batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = []
    for _ in range(depth):
        w = rng.standard_normal((width, width)).astype(np.float32) / math.sqrt(width)
        b = rng.uniform(-0.1, 0.1, width).astype(np.float32)
        params.append((lib.from_numpy(w).requires_grad_(), lib.from_numpy(b).requires_grad_()))
    # the input requires grad: the reentrant variant builds no graph through a checkpoint whose
    # inputs do not (torch warns "None of the inputs have requires_grad=True")
    x = lib.from_numpy(rng.standard_normal((batch, width)).astype(np.float32)).requires_grad_()
    return params, x


def layers(params):
    def layer(w, b):
        def block(h):
            z = h @ w + b
            return z.tanh() * z.sigmoid()

        return block

    return [layer(w, b) for w, b in params]


def forward(lib, variant: str, params, x):
    fns = layers(params)
    cp = lib.utils.checkpoint
    if variant == "plain":
        h = x
        for f in fns:
            h = f(h)
    elif variant == "per-layer":
        h = x
        for f in fns:
            h = cp.checkpoint(f, h, use_reentrant=False)
    elif variant == "sequential":
        h = cp.checkpoint_sequential(fns, _segments(fns), x, use_reentrant=False)
    elif variant == "seq-reentrant":
        h = cp.checkpoint_sequential(fns, _segments(fns), x, use_reentrant=True)
    else:
        raise ValueError(variant)
    return (h**2).mean()


def _segments(fns) -> int:
    return max(1, round(math.sqrt(len(fns))))


def step(lib, variant, params, x):
    x.grad = None
    for w, b in params:
        w.grad = b.grad = None
    loss = forward(lib, variant, params, x)
    loss.backward()
    return loss


def grads_of(params):
    return [np.array(t.grad.detach().numpy(), copy=True) for pair in params for t in pair]


def ember_memory(variant, params, x):
    """Return (MB held by the graph after the forward, peak MB during forward + backward)."""
    x.grad = None
    for w, b in params:
        w.grad = b.grad = None
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        loss = forward(ember, variant, params, x)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
        loss.backward()
        del loss
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return held / 2**20, peak / 2**20


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small model, short timing (CI smoke)")
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per variant here")
    args = ap.parse_args(argv)
    if args.quick:
        args.depth, args.width, args.batch = 9, 64, 512
    repeat = args.repeat or (3 if args.quick else 5)
    min_time = 0.05 if args.quick else 0.2

    variants = ["plain", "per-layer", "sequential", "seq-reentrant"]
    e_params, e_x = make_model(ember, args.depth, args.width, args.batch)
    t_params, t_x = make_model(torch, args.depth, args.width, args.batch) if torch else (None, None)
    print(
        f"deep MLP: depth {args.depth}, width {args.width}, batch {args.batch}, float32; "
        f"one activation = {args.batch * args.width * 4 / 2**20:.2f} MB; "
        f"segments = {_segments(range(args.depth))}"
    )
    header = f"{'variant':<14} {'held MB':>8} {'peak MB':>8} {'ember ms':>9} {'torch ms':>9}"
    print(header + f" {'vs plain':>9}  grads")
    print("-" * (len(header) + 20))

    status, records = 0, []
    step(ember, "plain", e_params, e_x)
    reference = grads_of(e_params)
    plain_ms = None
    for variant in variants:
        held, peak = ember_memory(variant, e_params, e_x)
        step(ember, variant, e_params, e_x)
        diff = max(
            float(np.max(np.abs(a - r)) / (np.max(np.abs(r)) or 1.0))
            for a, r in zip(grads_of(e_params), reference)
        )
        ok = diff < 1e-5
        status |= not ok
        fns = {"ember": lambda v=variant: step(ember, v, e_params, e_x)}
        if torch is not None:
            fns["torch"] = lambda v=variant: step(torch, v, t_params, t_x)
        timings = measure_interleaved(fns, repeat=repeat, min_time=min_time, warmup=1)
        e_ms = timings["ember"].best * 1e3
        t_ms = timings["torch"].best * 1e3 if torch is not None else None
        plain_ms = plain_ms or e_ms
        t_txt = f"{t_ms:9.1f}" if t_ms is not None else f"{'-':>9}"
        print(
            f"{variant:<14} {held:8.2f} {peak:8.2f} {e_ms:9.1f} {t_txt} "
            f"{e_ms / plain_ms:8.2f}x  {'ok' if ok else 'DIFFER'} ({diff:.1e})"
        )
        records.append(
            bench_record(
                "checkpoint",
                f"{variant} (held {held:.1f} MB, peak {peak:.1f} MB)",
                median_ms(timings["ember"]) if ok else None,
                median_ms(timings.get("torch")),
            )
        )
    write_json(args.json, records)
    return status


if __name__ == "__main__":
    sys.exit(main())

"""Time one optimizer step over a 100-parameter model (50 Linear layers of 64x64: weight + bias).

Compares ember's flat (fused) path, ember's per-parameter path, torch's foreach and single-tensor
Adam/SGD, and the same Adam update written by hand in NumPy over one flat buffer.
Run: ``python benchmarks/bench_optim.py``.
"""

from __future__ import annotations

import timeit

import numpy as np

import ember
import ember.optim

SHAPES = [(64, 64), (64,)] * 50


def _best(fn, number=50, repeat=5) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def bench_ember(name, foreach, **kw) -> float:
    rng = np.random.default_rng(0)
    ps = [
        ember.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in SHAPES
    ]
    for p in ps:
        p.grad = ember.tensor(rng.standard_normal(p.shape).astype(np.float32))
    opt = getattr(ember.optim, name)(ps, foreach=foreach, **kw)
    return _best(opt.step)


def bench_torch(name, foreach, **kw) -> float:
    import torch

    torch.set_num_threads(1)
    ps = [torch.randn(*s, requires_grad=True) for s in SHAPES]
    for p in ps:
        p.grad = torch.randn(*p.shape)
    opt = getattr(torch.optim, name)(ps, foreach=foreach, **kw)
    return _best(opt.step)


def bench_numpy_adam() -> float:
    """Adam written by hand over flat arrays (params and grads already flat: the lower bound)."""
    n = sum(int(np.prod(s)) for s in SHAPES)
    rng = np.random.default_rng(0)
    p, g = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
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

    return _best(step)


def main() -> None:
    print(f"{len(SHAPES)} parameters, {sum(int(np.prod(s)) for s in SHAPES)} elements, float32")
    rows = []
    for name, kw in (("Adam", {}), ("SGD", {"lr": 0.1, "momentum": 0.9})):
        rows.append((f"ember {name} flat (foreach=None)", bench_ember(name, None, **kw)))
        rows.append((f"ember {name} per-parameter (foreach=False)", bench_ember(name, False, **kw)))
        try:
            rows.append((f"torch {name} foreach=True (1 thread)", bench_torch(name, True, **kw)))
            rows.append((f"torch {name} foreach=False (1 thread)", bench_torch(name, False, **kw)))
        except ImportError:
            pass
    rows.append(("numpy hand-written Adam on flat arrays", bench_numpy_adam()))
    for label, ms in rows:
        print(f"{label:45s} {ms:8.3f} ms/step")


if __name__ == "__main__":
    main()

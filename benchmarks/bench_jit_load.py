"""Load time and first-inference latency of a torch-written TorchScript archive (a traced
ResNet-18-style CNN with BatchNorm), ``ember.jit.load`` vs ``torch.jit.load``.

    PYTHONPATH=$PWD python benchmarks/bench_jit_load.py [--repeat 5] [--quick]

Needs torch (it writes the archive). Each repeat loads the archive from bytes and runs one
batch; the printed figures are the best of the repeats (load, first call, a second call).
"""

from __future__ import annotations

import argparse
import io
import os
import time
import warnings

import numpy as np


def _archive() -> bytes:
    import torch
    from torch import nn

    def block(c, o, stride):
        down = (
            nn.Sequential(nn.Conv2d(c, o, 1, stride, bias=False), nn.BatchNorm2d(o))
            if stride != 1 or c != o
            else nn.Identity()
        )
        return nn.ModuleDict(
            {
                "a": nn.Conv2d(c, o, 3, stride, 1, bias=False),
                "b": nn.BatchNorm2d(o),
                "c": nn.Conv2d(o, o, 3, 1, 1, bias=False),
                "d": nn.BatchNorm2d(o),
                "down": down,
            }
        )

    class ResNet18ish(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
                                      nn.ReLU())  # fmt: skip
            widths = [(16, 16, 1), (16, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2),
                      (64, 64, 1), (64, 128, 2), (128, 128, 1)]  # fmt: skip
            self.blocks = nn.ModuleList(block(*w) for w in widths)
            self.fc = nn.Linear(128, 10)

        def forward(self, x):
            x = self.stem(x)
            for b in self.blocks:
                h = torch.relu(b["b"](b["a"](x)))
                x = torch.relu(b["d"](b["c"](h)) + b["down"](x))
            return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))

    torch.manual_seed(0)
    m = ResNet18ish().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(m, torch.randn(2, 3, 32, 32))
    buf = io.BytesIO()
    torch.jit.save(traced, buf)
    return buf.getvalue()


def _measure(load, run, data: bytes, x, repeat: int) -> tuple[float, float, float, object]:
    best = [float("inf")] * 3
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        m = load(io.BytesIO(data))
        t1 = time.perf_counter()
        out = run(m, x)
        t2 = time.perf_counter()
        run(m, x)
        t3 = time.perf_counter()
        for i, v in enumerate((t1 - t0, t2 - t1, t3 - t2)):
            best[i] = min(best[i], v)
    return best[0], best[1], best[2], out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 repeats")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", metavar="PATH", help="also write one JSON record per phase here")
    a = p.parse_args(argv)
    repeat = 2 if a.quick else a.repeat
    warnings.simplefilter("ignore")
    import torch

    import ember

    data = _archive()
    x = np.random.RandomState(0).randn(2, 3, 32, 32).astype(np.float32)

    def run_torch(m, x):
        with torch.no_grad():
            return m(torch.from_numpy(x)).numpy()

    def run_ember(m, x):
        with ember.no_grad():
            return m(ember.tensor(x)).numpy()

    t = _measure(torch.jit.load, run_torch, data, x, repeat)
    e = _measure(ember.jit.load, run_ember, data, x, repeat)
    load = os.getloadavg()[0]
    print(f"ResNet-18-style archive, {len(data) / 1e6:.2f} MB, batch 2x3x32x32, "
          f"load average {load:.1f}")  # fmt: skip
    print(f"{'':8s} {'load':>10s} {'first call':>12s} {'next call':>11s}")
    for name, r in (("torch", t), ("ember", e)):
        print(f"{name:8s} {r[0] * 1e3:8.1f}ms {r[1] * 1e3:10.1f}ms {r[2] * 1e3:9.1f}ms")
    ok = np.allclose(t[3], e[3], rtol=1e-4, atol=1e-5)
    print("outputs match" if ok else "OUTPUTS DIFFER")
    from _timing import bench_record, write_json

    records = [
        bench_record("jit_load", phase, e[k] * 1e3 if ok else None, t[k] * 1e3)
        for k, phase in enumerate(("load", "first call", "next call"))
    ]
    write_json(a.json, records)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

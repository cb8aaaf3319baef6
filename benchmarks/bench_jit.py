"""Eager vs traced vs frozen inference of a ResNet-style CNN with BatchNorm and of an MLP.

    PYTHONPATH=$PWD python benchmarks/bench_jit.py [--repeat 5]

The traced module runs its recorded graph through the executor; the frozen one has its
parameters as constants and every BatchNorm folded into the convolution before it.
"""

from __future__ import annotations

import argparse
import time
import warnings

import ember as torch
import ember.nn as nn


class Block(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(h)) + x)


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        Block(32),
        Block(32),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    )


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))  # fmt: skip


def _time(fn, x, repeat: int) -> float:
    best = float("inf")
    with torch.no_grad():
        fn(x)
        for _ in range(repeat):
            t = time.perf_counter()
            fn(x)
            best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    warnings.simplefilter("ignore")
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    torch.manual_seed(0)
    for name, model, x in (
        ("cnn", cnn(), torch.randn(8, 3, 32, 32)),
        ("mlp", mlp(), torch.randn(64, 256)),
    ):
        model.eval()
        traced = torch.jit.trace(model, x)
        frozen = torch.jit.freeze(traced)
        with torch.no_grad():
            ref = model(x)
            assert torch.allclose(frozen(x), ref, rtol=1e-4, atol=1e-5)
        te = _time(model, x, args.repeat)
        tt = _time(traced, x, args.repeat)
        tf = _time(frozen, x, args.repeat)
        print(f"{name}: eager {te * 1e3:.1f} ms, traced {tt * 1e3:.1f} ms ({te / tt:.2f}x), "
              f"frozen {tf * 1e3:.1f} ms ({te / tf:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()

"""Eager vs traced vs frozen vs scripted (and scripted+frozen) inference of a ResNet-style CNN
with BatchNorm and of an MLP.

    PYTHONPATH=$PWD python benchmarks/bench_jit.py [--repeat 5] [--json PATH]
    PYTHONPATH=$PWD python benchmarks/bench_jit.py --quick    # 2 repeats (CI smoke)

The traced module runs its recorded graph through the executor; the frozen one has its
parameters as constants and every BatchNorm folded into the convolution before it.
The printed figures are the best of the repeats; the ``--json`` records (one per model and
mode) carry the medians. Exit status 1 if a frozen module's output differs from eager's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE), str(HERE.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _timing import bench_record, write_json  # noqa: E402

import ember as torch  # noqa: E402
import ember.nn as nn  # noqa: E402


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


def _time(fn, x, repeat: int) -> tuple[float, float]:
    """Return (best, median) seconds of ``fn(x)`` over ``repeat`` calls after one warm-up."""
    times = []
    with torch.no_grad():
        fn(x)
        for _ in range(repeat):
            t = time.perf_counter()
            fn(x)
            times.append(time.perf_counter() - t)
    return min(times), statistics.median(times)


def main(argv=None) -> int:
    warnings.simplefilter("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 repeats (CI smoke)")
    p.add_argument("--repeat", type=int, default=None, help="timed calls per mode (default 5)")
    p.add_argument("--json", metavar="PATH", help="also write one JSON record per case here")
    args = p.parse_args(argv)
    repeat = args.repeat or (2 if args.quick else 5)
    torch.manual_seed(0)
    status, records = 0, []
    for name, model, x in (
        ("cnn", cnn(), torch.randn(8, 3, 32, 32)),
        ("mlp", mlp(), torch.randn(64, 256)),
    ):
        model.eval()
        traced = torch.jit.trace(model, x)
        frozen = torch.jit.freeze(traced)
        with torch.no_grad():
            ref = model(x)
            ok = bool(torch.allclose(frozen(x), ref, rtol=1e-4, atol=1e-5))
        if not ok:
            print(f"{name}: frozen output DIFFERS from eager")
            status = 1
        scripted = torch.jit.script(model)
        sfrozen = torch.jit.freeze(scripted)
        with torch.no_grad():
            if not bool(torch.allclose(sfrozen(x), ref, rtol=1e-4, atol=1e-5)):
                print(f"{name}: frozen scripted output DIFFERS from eager")
                status = 1
        te, me = _time(model, x, repeat)
        tt, mt = _time(traced, x, repeat)
        tf, mf = _time(frozen, x, repeat)
        ts, ms = _time(scripted, x, repeat)
        tsf, msf = _time(sfrozen, x, repeat)
        print(f"{name}: eager {te * 1e3:.1f} ms, traced {tt * 1e3:.1f} ms ({te / tt:.2f}x), "
              f"frozen {tf * 1e3:.1f} ms ({te / tf:.2f}x), scripted {ts * 1e3:.1f} ms "
              f"({te / ts:.2f}x), scripted+frozen {tsf * 1e3:.1f} ms "
              f"({te / tsf:.2f}x)")  # fmt: skip
        records += [
            bench_record("jit", f"{name} eager", me * 1e3),
            bench_record("jit", f"{name} traced", mt * 1e3),
            bench_record("jit", f"{name} frozen", mf * 1e3 if ok else None),
            bench_record("jit", f"{name} scripted", ms * 1e3),
            bench_record("jit", f"{name} scripted frozen", msf * 1e3),
        ]
    write_json(args.json, records)
    return status


if __name__ == "__main__":
    raise SystemExit(main())

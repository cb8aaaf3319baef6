#!/usr/bin/env python
"""Checkpoint save/load speed: ember vs torch on the same state dict, in one process.

    python benchmarks/bench_serialization.py            # 200 MB state dict
    python benchmarks/bench_serialization.py --quick    # 20 MB, fewer repeats (CI smoke)
    python benchmarks/bench_serialization.py --mb 500   # another size

The state dict is a transformer-ish mix (large float32 matrices, small biases, an int64
counter), built once in torch and copied bit for bit into ember. Rows:

  save        torch.save(sd, path)  vs  ember.save(sd, path)      (ember's save to a path is
                                                                   atomic: temp file + fsync +
                                                                   rename; torch does not fsync)
  save (file) the same into an open file object: ember without the fsync, like for like
  load        torch.load(path)      vs  ember.load(path)          each reads its own file
  load torch file                       ember.load(torch's file)
  mmap load   torch.load(path, mmap=True) vs ember.load(path, mmap=True)

Targets: ember within 1.5x of torch for save and load; ember's mmap load under 50 ms. The files
sit in the page cache after the first write, for both libraries alike: this measures the
libraries, not the disk. Exit status 1 if a loaded checkpoint differs from what was saved.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
for _p in (str(HERE), str(HERE.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _timing import bench_record, measure_interleaved, median_ms, write_json  # noqa: E402

import ember  # noqa: E402

try:
    import torch
except ImportError:  # the ember column still runs
    torch = None


def make_state_dict(megabytes: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    sd: dict[str, np.ndarray] = {}
    total, i = 0, 0
    while total < megabytes * 2**20:
        d = 1024
        for name, shape in (
            (f"layers.{i}.attn.qkv.weight", (3 * d, d)),
            (f"layers.{i}.attn.qkv.bias", (3 * d,)),
            (f"layers.{i}.mlp.fc.weight", (d, d)),
            (f"layers.{i}.mlp.fc.bias", (d,)),
            (f"layers.{i}.norm.weight", (d,)),
        ):
            sd[name] = rng.standard_normal(shape, dtype=np.float32)
            total += sd[name].nbytes
        i += 1
    sd["step"] = np.array(1000, dtype=np.int64)
    return sd


def fmt(t) -> str:
    if isinstance(t, Exception):
        return "err"
    return f"{t.best * 1e3:9.1f} ms"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=200, help="state dict size in MiB")
    ap.add_argument("--quick", action="store_true", help="20 MiB, 3 repeats")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", metavar="PATH", help="also write one JSON record per row here")
    args = ap.parse_args(argv)
    if args.quick:
        args.mb, args.repeat = 20, 3

    arrays = make_state_dict(args.mb)
    size = sum(a.nbytes for a in arrays.values())
    sd_e = {k: ember.from_numpy(a) for k, a in arrays.items()}
    sd_t = {k: torch.from_numpy(a) for k, a in arrays.items()} if torch else None
    print(f"state dict: {len(arrays)} tensors, {size / 2**20:.0f} MiB")
    version = torch.__version__ if torch else "-"
    print(f"ember {ember.__version__}, torch {version}, numpy {np.__version__}")

    problems, records = [], []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMPDIR")) as tmp:
        pe, pt = os.path.join(tmp, "ember.pt"), os.path.join(tmp, "torch.pt")
        pf = os.path.join(tmp, "ember_file.pt")

        def save_file():
            with open(pf, "wb") as f:
                ember.save(sd_e, f)

        rows = [
            ("save", lambda: torch.save(sd_t, pt), lambda: ember.save(sd_e, pe)),
            ("save (file object)", lambda: torch.save(sd_t, pt), save_file),
            ("load", lambda: torch.load(pt), lambda: ember.load(pe)),
            ("load torch's file", lambda: torch.load(pt), lambda: ember.load(pt)),
            ("mmap load", lambda: torch.load(pt, mmap=True), lambda: ember.load(pe, mmap=True)),
        ]
        ember.save(sd_e, pe)
        if torch:
            torch.save(sd_t, pt)
        for path in (pe,) + ((pt,) if torch else ()):
            for mmap in (False, True):
                out = ember.load(path, mmap=mmap)
                if any(not np.array_equal(out[k].numpy(), a) for k, a in arrays.items()):
                    problems.append(f"ember.load({os.path.basename(path)}, mmap={mmap}) differs")
        if torch:
            out = torch.load(pe)
            if any(not np.array_equal(out[k].numpy(), a) for k, a in arrays.items()):
                problems.append("torch.load(ember's file) differs")

        print(f"\n{'case':<20} {'torch':>12} {'ember':>12} {'ember/torch':>12}  target")
        for name, fn_t, fn_e in rows:
            fns = {"ember": fn_e}
            if torch:
                fns["torch"] = fn_t
            res = measure_interleaved(fns, repeat=args.repeat, min_time=0.0, warmup=1)
            te, tt = res["ember"], res.get("torch")
            ratio = ""
            if tt is not None and not isinstance(tt, Exception) and not isinstance(te, Exception):
                ratio = f"{te.best / tt.best:11.2f}x"
            if name == "mmap load":
                ok = not isinstance(te, Exception) and te.best < 0.050
                target = f"ember < 50 ms  {'PASS' if ok else 'MISS'}"
            elif ratio:
                ok = te.best / tt.best <= 1.5
                target = f"<= 1.5x        {'PASS' if ok else 'MISS'}"
            else:
                target = ""
            print(f"{name:<20} {fmt(tt) if tt else '-':>12} {fmt(te):>12} {ratio:>12}  {target}")
            e_ms, t_ms = median_ms(te), median_ms(tt)
            if name == "mmap load":
                verdict = None if e_ms is None else ("PASS" if e_ms < 50 else "MISS")
                rec = bench_record(
                    "serialization", name, e_ms, t_ms, target="ember < 50 ms", status=verdict
                )
            else:
                rec = bench_record("serialization", name, e_ms, t_ms, target=("torch", 1.5))
            records.append(rec)
            for lib, t in res.items():
                if isinstance(t, Exception):
                    problems.append(f"{name} ({lib}): {type(t).__name__}: {t}")
    for p in problems:
        print("PROBLEM:", p)
    write_json(args.json, records)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

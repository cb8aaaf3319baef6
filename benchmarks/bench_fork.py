"""fork/wait on the inter-op pool: the bidirectional-LSTM ensemble of PyTorch's TorchScript
material, run sequentially, with forked directions ("forked layers") and with forked models.

    PYTHONPATH=$PWD python benchmarks/bench_fork.py [--repeat 3] [--json PATH]
    PYTHONPATH=$PWD python benchmarks/bench_fork.py --quick    # 2 repeats (CI smoke)

NumPy releases the GIL in its matmuls, so forked tasks overlap on the machine's cores.
The printed figures are the best of the repeats; the ``--json`` records (one per variant) carry
the medians. Exit status 1 if a forked variant's output differs from the sequential one's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

# one BLAS thread per op: the cores go to the inter-op pool (torch's inter-op vs intra-op split)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
for _p in (str(HERE), str(HERE.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _timing import bench_record, write_json  # noqa: E402

import ember as torch  # noqa: E402
import ember.nn as nn  # noqa: E402

SEQ, BATCH, FEATURES, HIDDEN, MODELS = 12, 64, 512, 512, 4


class BiLSTM(nn.Module):
    """A bidirectional LSTM as two one-directional ones (so each direction can be forked)."""

    def __init__(self, fork_directions: bool = False):
        super().__init__()
        self.fwd = nn.LSTM(FEATURES, HIDDEN)
        self.bwd = nn.LSTM(FEATURES, HIDDEN)
        self.fork_directions = fork_directions

    def forward(self, x):
        if self.fork_directions:
            fut = torch.jit.fork(self.bwd, torch.flip(x, [0]))
            f, _ = self.fwd(x)
            b, _ = torch.jit.wait(fut)
        else:
            f, _ = self.fwd(x)
            b, _ = self.bwd(torch.flip(x, [0]))
        return torch.cat([f, torch.flip(b, [0])], 2)


class LSTMEnsemble(nn.Module):
    def __init__(self, fork_models: bool = False, fork_directions: bool = False):
        super().__init__()
        self.models = nn.ModuleList(BiLSTM(fork_directions) for _ in range(MODELS))
        self.fork_models = fork_models

    def forward(self, x):
        if self.fork_models:
            futures = [torch.jit.fork(m, x) for m in self.models]
            outs = [torch.jit.wait(f) for f in futures]
        else:
            outs = [m(x) for m in self.models]
        return torch.stack(outs).sum(0)


def _time(model, x, repeat: int) -> tuple[float, float]:
    """Return (best, median) seconds of ``model(x)`` over ``repeat`` calls after a warm-up."""
    times = []
    with torch.no_grad():
        model(x)  # warm up (and start the pool)
        for _ in range(repeat):
            t = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - t)
    return min(times), statistics.median(times)


def main(argv=None) -> int:
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 repeats (CI smoke)")
    p.add_argument("--repeat", type=int, default=None, help="timed calls per variant (default 3)")
    p.add_argument("--interop", type=int, default=2, help="inter-op threads (torch: the cores)")
    p.add_argument("--json", metavar="PATH", help="also write one JSON record per variant here")
    args = p.parse_args(argv)
    repeat = args.repeat or (2 if args.quick else 3)
    torch.set_num_interop_threads(args.interop)
    torch.manual_seed(0)
    x = torch.randn(SEQ, BATCH, FEATURES)
    seq = LSTMEnsemble()
    state = seq.state_dict()
    layers = LSTMEnsemble(fork_directions=True)
    layers.load_state_dict(state)
    models = LSTMEnsemble(fork_models=True)
    models.load_state_dict(state)
    with torch.no_grad():
        ref = seq(x)
        ok_layers = bool(torch.equal(layers(x), ref))
        ok_models = bool(torch.equal(models(x), ref))
    t_seq, m_seq = _time(seq, x, repeat)
    t_layers, m_layers = _time(layers, x, repeat)
    t_models, m_models = _time(models, x, repeat)
    print(f"interop threads: {torch.get_num_interop_threads()}")
    print(f"sequential     {t_seq:.3f} s")
    print(f"forked layers  {t_layers:.3f} s  ({t_seq / t_layers:.2f}x)")
    print(f"forked models  {t_models:.3f} s  ({t_seq / t_models:.2f}x)")
    for name, ok in (("forked layers", ok_layers), ("forked models", ok_models)):
        if not ok:
            print(f"{name}: output DIFFERS from sequential")
    n = torch.get_num_interop_threads()
    records = [
        bench_record("fork", f"sequential ({n} interop)", m_seq * 1e3),
        bench_record("fork", f"forked layers ({n} interop)", m_layers * 1e3 if ok_layers else None),
        bench_record("fork", f"forked models ({n} interop)", m_models * 1e3 if ok_models else None),
    ]
    write_json(args.json, records)
    return 0 if ok_layers and ok_models else 1


if __name__ == "__main__":
    raise SystemExit(main())

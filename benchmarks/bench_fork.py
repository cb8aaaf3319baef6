"""fork/wait on the inter-op pool: the bidirectional-LSTM ensemble of PyTorch's TorchScript
material, run sequentially, with forked directions ("forked layers") and with forked models.

    PYTHONPATH=$PWD python benchmarks/bench_fork.py [--repeat 3]

NumPy releases the GIL in its matmuls, so forked tasks overlap on the machine's cores.
"""

from __future__ import annotations

import argparse
import os
import time

# one BLAS thread per op: the cores go to the inter-op pool (torch's inter-op vs intra-op split)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

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


def _time(model, x, repeat: int) -> float:
    best = float("inf")
    with torch.no_grad():
        model(x)  # warm up (and start the pool)
        for _ in range(repeat):
            t = time.perf_counter()
            model(x)
            best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--interop", type=int, default=2, help="inter-op threads (torch: the cores)")
    args = p.parse_args()
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
        assert torch.equal(layers(x), ref) and torch.equal(models(x), ref)
    t_seq = _time(seq, x, args.repeat)
    t_layers = _time(layers, x, args.repeat)
    t_models = _time(models, x, args.repeat)
    print(f"interop threads: {torch.get_num_interop_threads()}")
    print(f"sequential     {t_seq:.3f} s")
    print(f"forked layers  {t_layers:.3f} s  ({t_seq / t_layers:.2f}x)")
    print(f"forked models  {t_models:.3f} s  ({t_seq / t_models:.2f}x)")


if __name__ == "__main__":
    main()

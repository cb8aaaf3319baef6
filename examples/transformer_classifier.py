"""Train a tiny Transformer to name the most frequent token of a random sequence, with ember.

The data is generated (no download): sequences of 16 tokens drawn from a vocabulary of 6, the
label is the token that occurs most often (ties go to the smallest id), so chance is about 1/6.
The model is the usual recipe: token embedding + sinusoidal positional encoding, an
``nn.TransformerEncoder``, mean pooling and a linear head, trained with cross-entropy and AdamW.
Written exactly as a PyTorch user writes it: replace ``import ember as torch`` with
``import torch`` and it runs unchanged.

    python examples/transformer_classifier.py --epochs 5 --out classifier.pt
"""

from __future__ import annotations

import argparse
import math
import time

import ember as torch
import ember.nn as nn
from ember.utils.data import DataLoader, TensorDataset

VOCAB, SEQ_LEN = 6, 16


class PositionalEncoding(nn.Module):
    """Add the sinusoidal position signal of "Attention Is All You Need"."""

    def __init__(self, d_model: int, max_len: int = 512) -> None:
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class TransformerClassifier(nn.Module):
    """Embedding -> positional encoding -> TransformerEncoder -> mean pool -> Linear."""

    def __init__(self, vocab: int, num_classes: int, d_model: int = 32, nhead: int = 4,
                 num_layers: int = 2) -> None:  # fmt: skip
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=4 * d_model, dropout=0.1, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, tokens):
        x = self.pos(self.embed(tokens) * math.sqrt(self.d_model))
        x = self.encoder(x)
        return self.head(x.mean(dim=1))


def make_data(n: int, generator) -> TensorDataset:
    """Return ``n`` random sequences labelled with their most frequent token."""
    tokens = torch.randint(0, VOCAB, (n, SEQ_LEN), generator=generator)
    counts = nn.functional.one_hot(tokens, VOCAB).sum(dim=1)
    return TensorDataset(tokens, counts.argmax(dim=1))


def evaluate(model, loader) -> float:
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for tokens, labels in loader:
            correct += (model(tokens).argmax(dim=1) == labels).sum().item()
            total += labels.numel()
    return correct / total


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-size", type=int, default=4096)
    ap.add_argument("--test-size", type=int, default=1024)
    ap.add_argument("--out", help="save the trained model's state_dict here (torch.load reads it)")
    args = ap.parse_args(argv)

    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    train = DataLoader(make_data(args.train_size, g), batch_size=64, shuffle=True, generator=g)
    test = DataLoader(make_data(args.test_size, g), batch_size=256)

    model = TransformerClassifier(VOCAB, VOCAB)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    print(f"chance accuracy ~{1 / VOCAB:.2f}")
    start, acc = time.perf_counter(), 0.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        total_loss, n = 0.0, 0
        for tokens, labels in train:
            optimizer.zero_grad()
            loss = criterion(model(tokens), labels)
            loss.backward()
            optimizer.step()
            total_loss += loss.item() * labels.numel()
            n += labels.numel()
        acc = evaluate(model, test)
        print(
            f"epoch {epoch}: loss {total_loss / n:.4f}  test accuracy {acc:.3f}  "
            f"({time.perf_counter() - start:.1f} s)"
        )
    if args.out:
        torch.save(model.state_dict(), args.out)
        print(f"saved {args.out}")
    return {"accuracy": acc, "loss": total_loss / max(n, 1)}


if __name__ == "__main__":
    main()

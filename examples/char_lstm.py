"""Train a character-level LSTM language model on the Zen of Python, then sample from it.

The text ships with Python (the ``this`` module keeps it rot13-encoded), so nothing is
downloaded. Written exactly as a PyTorch user writes it: replace ``import ember as torch`` with
``import torch`` and it runs unchanged.

    python examples/char_lstm.py --steps 300 --out char_lstm.pt
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import time

import ember as torch
import ember.nn as nn
import ember.nn.functional as F


def zen_of_python() -> str:
    """Return the Zen of Python (``import this`` prints it; we only want the text)."""
    with contextlib.redirect_stdout(io.StringIO()):
        import this
    return codecs.decode(this.s, "rot13")


class CharLSTM(nn.Module):
    """Embedding -> LSTM -> Linear: next-character logits for every position."""

    def __init__(self, vocab: int, embed: int = 32, hidden: int = 128) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


def batches(data, batch_size: int, seq_len: int):
    """Yield (input, target) chunks of ``batch_size`` parallel streams, forever, in order, so
    the hidden state carried from one chunk to the next belongs to the same stream."""
    n = (len(data) - 1) // batch_size
    x = data[: n * batch_size].view(batch_size, n)
    y = data[1 : n * batch_size + 1].view(batch_size, n)
    while True:
        for i in range(0, n - seq_len + 1, seq_len):
            yield x[:, i : i + seq_len], y[:, i : i + seq_len]


@torch.no_grad()
def sample(model, stoi, itos, prompt: str, length: int, temperature: float) -> str:
    """Return ``prompt`` followed by ``length`` characters drawn from the model."""
    model.eval()
    x = torch.tensor([[stoi[c] for c in prompt]])
    logits, state = model(x)
    out = list(prompt)
    for _ in range(length):
        probs = F.softmax(logits[0, -1] / temperature, dim=-1)
        nxt = torch.multinomial(probs, 1)
        out.append(itos[int(nxt)])
        logits, state = model(nxt.view(1, 1), state)
    model.train()
    return "".join(out)


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seq-len", type=int, default=32, help="truncated BPTT length")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--out", help="save the trained state_dict here (torch.load reads it)")
    args = p.parse_args(argv)
    torch.manual_seed(args.seed)

    text = zen_of_python()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text])
    model = CharLSTM(len(chars))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    print(f"{len(text)} characters, vocabulary {len(chars)}")

    stream = batches(data, args.batch_size, args.seq_len)
    state, running, start = None, None, time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = next(stream)
        if state is not None:  # truncated BPTT: keep the state, cut its history
            state = tuple(s.detach() for s in state)
        logits, state = model(x, state)
        loss = loss_fn(logits.reshape(-1, len(chars)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running = loss.item() if running is None else 0.9 * running + 0.1 * loss.item()
        if step == 1 or step % max(1, args.steps // 10) == 0 or step == args.steps:
            print(f"step {step:4d}  loss {running:.3f}  ({time.perf_counter() - start:.1f}s)")

    print("sample:")
    print(sample(model, stoi, itos=chars, prompt="Beautiful", length=200, temperature=0.8))
    if args.out:
        torch.save(model.state_dict(), args.out)
        print(f"saved {args.out}")
    return running


if __name__ == "__main__":
    main()

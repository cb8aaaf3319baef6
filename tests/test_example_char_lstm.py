"""Smoke test for examples/char_lstm.py: the loss falls, a sample is printed, the model is saved."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import ember

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "char_lstm.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("ember_example_char_lstm", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_char_lstm_trains_and_samples(tmp_path, capsys):
    example = _load_example()
    out = tmp_path / "char_lstm.pt"
    example.main(["--steps", "60", "--seq-len", "16", "--seed", "1", "--out", str(out)])
    printed = capsys.readouterr().out
    losses = [float(v) for v in re.findall(r"loss (\d+\.\d+)", printed)]
    assert len(losses) >= 3
    assert losses[-1] < losses[0] - 0.5, losses
    sample = printed.split("sample:\n", 1)[1].splitlines()[0]
    assert sample.startswith("Beautiful") and len(sample) > len("Beautiful")
    state = ember.load(out)
    assert list(state) == [
        "embed.weight",
        "lstm.weight_ih_l0",
        "lstm.weight_hh_l0",
        "lstm.bias_ih_l0",
        "lstm.bias_hh_l0",
        "head.weight",
        "head.bias",
    ]


def test_char_lstm_help(capsys):
    with pytest.raises(SystemExit) as exc:
        _load_example().main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--steps", "--seed", "--seq-len", "--out"):
        assert flag in text


def test_saved_model_loads_in_torch(tmp_path):
    torch = pytest.importorskip("torch")
    example = _load_example()
    out = tmp_path / "m.pt"
    example.main(["--steps", "2", "--seq-len", "8", "--out", str(out)])
    state = torch.load(out)
    lstm = torch.nn.LSTM(32, 128, batch_first=True)
    lstm.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("lstm.")})

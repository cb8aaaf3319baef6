"""CI smoke of examples/serve_mnist: archive the LeNet, serve it, post digit images."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_serve_mnist_smoke():
    for mod in ("uvicorn", "starlette", "prometheus_client", "PIL"):
        pytest.importorskip(mod)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "serve_mnist" / "smoke.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "serve_mnist smoke: OK" in r.stdout and "predicted" in r.stdout

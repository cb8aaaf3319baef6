"""examples/autograd_walkthrough.py prints exactly what the same script prints under real torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.printed import assert_same_printed

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "autograd_walkthrough.py"
IMPORT = "import ember as torch\n"


def _run(path: Path) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def ember_stdout() -> str:
    return _run(SCRIPT)


def test_runs_on_ember(ember_stdout):
    assert SCRIPT.read_text().count(IMPORT) == 1
    for heading in ("== 1.", "== 4.", "== 6. a custom autograd.Function", "== 8."):
        assert heading in ember_stdout
    assert "gradcheck(Exp.apply): True" in ember_stdout
    assert "grad_fn=<ExpBackward>" in ember_stdout


def test_same_output_as_torch(ember_stdout, tmp_path):
    pytest.importorskip("torch")
    torch_script = tmp_path / "autograd_walkthrough_torch.py"
    torch_script.write_text(SCRIPT.read_text().replace(IMPORT, "import torch\n"))
    torch_stdout = _run(torch_script)
    assert_same_printed(ember_stdout, torch_stdout)

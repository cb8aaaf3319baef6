"""``python -m ember.distributed.run`` (the ``torchrun``-like launcher) and ``record``: a script
using the ``env://`` rendezvous runs on two ranks; a failing rank is reported."""

from __future__ import annotations

import socket
import subprocess
import sys


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


LAUNCHED = """
import os, sys
import ember as torch
import ember.distributed as dist
from ember.distributed.elastic.multiprocessing.errors import record

dist.init_process_group("gloo")  # env:// from the launcher
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
assert dist.is_torchelastic_launched()
line = (f"rank {dist.get_rank()} local {os.environ['LOCAL_RANK']} of {dist.get_world_size()} "
        f"sum {t.item()} args {sys.argv[1:]}\\n")
os.write(1, line.encode())  # one write: the two ranks' lines do not interleave
if sys.argv[1:] == ["fail"] and dist.get_rank() == 1:
    sys.exit(7)
if sys.argv[1:] == ["raise"] and dist.get_rank() == 0:
    record(lambda: 1 / 0)()
dist.destroy_process_group()
"""


def launch(tmp_path, *args):
    script = tmp_path / "train.py"
    script.write_text(LAUNCHED)
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node=2"]
    cmd += [f"--master-port={free_port()}", str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_launcher_sets_torchrun_environment_and_reports_a_failed_rank(tmp_path):
    done = launch(tmp_path, "fail")  # both ranks print, then rank 1 exits with code 7
    assert sorted(done.stdout.splitlines()) == [
        "rank 0 local 0 of 2 sum 3.0 args ['fail']",
        "rank 1 local 1 of 2 sum 3.0 args ['fail']",
    ]
    assert done.returncode == 7
    assert "process of rank 1 (local_rank 1" in done.stderr and "exit code 7" in done.stderr


def test_launcher_prints_the_recorded_traceback(tmp_path):
    done = launch(tmp_path, "raise")
    assert done.returncode == 1
    assert "process of rank 0 (local_rank 0" in done.stderr
    # once from Python's own report, once from the launcher's, read from the error file
    assert done.stderr.count("ZeroDivisionError: division by zero") == 2

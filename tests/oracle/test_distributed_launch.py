"""``python -m ember.distributed.run`` (the ``torchrun``-like launcher) and ``record``: a script
using the ``env://`` rendezvous runs on two ranks; a failing rank is reported."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest


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
        f"sum {t.item()} args {sys.argv[1:]} omp {os.environ.get('OMP_NUM_THREADS')}\\n")
os.write(1, line.encode())  # one write: the two ranks' lines do not interleave
if sys.argv[1:] == ["fail"] and dist.get_rank() == 1:
    sys.exit(7)
if sys.argv[1:] == ["fail"]:
    import time
    time.sleep(100)  # the launcher stops this rank once the other failed
if sys.argv[1:] == ["raise"] and dist.get_rank() == 0:
    record(lambda: 1 / 0)()
dist.destroy_process_group()
"""


KILLED = """
import os, signal, datetime
import ember as torch
import ember.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
t = torch.ones(1000)
for step in range(1000):
    if step == 3 and dist.get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(t)
"""


def launch(tmp_path, *args, mode=None, text=LAUNCHED):
    script = tmp_path / "train.py"
    script.write_text(text)
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node=2"]
    cmd += [f"--master-port={free_port()}", str(script), *args]
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)  # (torchrun sets 1 per process when it is not set)
    if mode is not None:
        env["EMBER_LAUNCH"] = mode
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("mode", [None, pytest.param("local", marks=pytest.mark.slow)])
def test_launcher_sets_torchrun_environment_and_reports_a_failed_rank(tmp_path, mode):
    start = time.monotonic()
    done = launch(tmp_path, "fail", mode=mode)  # both ranks print, then rank 1 exits with code 7
    assert time.monotonic() - start < 45  # rank 0 (asleep for 100 s) was stopped
    # (when rank 0 is still exiting as the launcher stops the job, mpiexec adds its "BAD
    # TERMINATION" banner to stdout: timing, more likely on a loaded machine)
    lines = [line for line in done.stdout.splitlines() if line.startswith("rank ")]
    assert sorted(lines) == [
        "rank 0 local 0 of 2 sum 3.0 args ['fail'] omp 1",
        "rank 1 local 1 of 2 sum 3.0 args ['fail'] omp 1",
    ]
    assert "Setting OMP_NUM_THREADS environment variable for each process to be 1" in done.stderr
    assert done.returncode == 7
    assert "process of rank 1 (local_rank 1" in done.stderr and "exit code 7" in done.stderr


def test_launcher_prints_the_recorded_traceback(tmp_path):
    done = launch(tmp_path, "raise")
    assert done.returncode == 1
    assert "process of rank 0 (local_rank 0" in done.stderr
    # the launcher's report, read from the error file @record wrote, always holds the traceback;
    # the rank's own report may be cut short when an MPI launch aborts the job (its output is
    # forwarded by mpiexec, which stops forwarding when it kills the job)
    report = done.stderr[done.stderr.index("process of rank 0") :]
    assert "ZeroDivisionError: division by zero" in report


@pytest.mark.slow
@pytest.mark.parametrize("mode", [None, "local"])
def test_a_killed_rank_stops_the_job(tmp_path, mode):
    """Rank 1 dies by SIGKILL mid-training: rank 0 raises (local transport: the connection
    closed; MPI: mpiexec ends the job) instead of hanging, and the launcher fails."""
    start = time.monotonic()
    done = launch(tmp_path, mode=mode, text=KILLED)
    took = time.monotonic() - start
    assert took < 20, took  # within the group's timeout (20 s), no hang
    assert done.returncode == 1
    # the launcher names the rank that died, with torchrun's code for a signal
    assert "process of rank 1 (local_rank 1" in done.stderr, done.stderr
    assert "failed with exit code -9" in done.stderr
    if mode == "local":  # the survivor's own error
        assert "Connection closed by peer" in done.stderr

"""``python -m ember.distributed.run``: start a training script in several processes with the
environment ``torchrun`` sets, so that ``init_process_group()`` with the default ``env://``
rendezvous finds its rank, world size and master.

Usage (one node)::

    python -m ember.distributed.run --nproc-per-node=2 train.py --epochs 3

Each process gets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``,
``GROUP_RANK``, ``ROLE_RANK``, ``ROLE_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` and
``TORCHELASTIC_RUN_ID`` and ``TORCHELASTIC_ERROR_FILE`` (where a main function decorated with
``ember.distributed.elastic.multiprocessing.errors.record`` writes its exception, printed here
when that rank fails). Several nodes work with a static rendezvous: run the launcher on every
node with the same ``--nnodes``, ``--master-addr`` and ``--master-port`` and each its own
``--node-rank``. When a process fails, the others are terminated and the launcher exits with
that process's exit code, after printing which rank failed. With more than one process per
node and no ``OMP_NUM_THREADS`` set, each process gets ``OMP_NUM_THREADS=1`` (torchrun's
default, with its banner), so the ranks' BLAS pools do not oversubscribe the cores.
Elastic restarts are not supported.

With MPI installed (``pip install mpi4py mpich``) one node's ranks start under the wheel's
``mpiexec`` (each through :mod:`._entry`, which reports its exit code) and
``init_process_group("gloo")`` runs on MPI; ``EMBER_LAUNCH=local`` (or no MPI) starts plain
processes on ember's local transport instead, with a fresh per-job secret in
``EMBER_DIST_SECRET``.

Across hosts the job is one MPI job, started once from one host (ember's own transport binds
loopback only)::

    mpiexec -hosts a,b -ppn 2 python -m ember.distributed.run train.py --epochs 3

Started by ``mpiexec`` the launcher spawns nothing: it runs the script in its own process with
torchrun's variables taken from MPI's (rank, size, local rank and size; the node rank assumes
the same number of processes per host). ``--nnodes`` above 1 with a master address that is not
this host's loopback raises an error giving that command.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

__all__ = ["get_args_parser", "main", "run"]


def get_args_parser() -> argparse.ArgumentParser:
    """Return the launcher's argument parser (torchrun's option names)."""
    p = argparse.ArgumentParser(description="ember distributed launcher (torchrun-like)")
    p.add_argument("--nnodes", type=str, default="1")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=str, default="1")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", type=str, default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0)
    p.add_argument("--rdzv-backend", "--rdzv_backend", type=str, default="static")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", type=str, default="")
    p.add_argument("--rdzv-id", "--rdzv_id", type=str, default="none")
    p.add_argument("-m", "--module", action="store_true")
    p.add_argument("--no-python", "--no_python", action="store_true")
    p.add_argument("training_script", type=str)
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _nproc(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    return int(value)


def run(args: argparse.Namespace) -> int:
    """Start the processes described by ``args``; return the launcher's exit code."""
    if ":" in args.nnodes:
        raise ValueError("elastic node ranges (--nnodes=MIN:MAX) are not supported by ember")
    if args.max_restarts:
        raise ValueError("--max-restarts is not supported by ember's launcher")
    nnodes, nproc = int(args.nnodes), _nproc(args.nproc_per_node)
    addr, port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, _, p = args.rdzv_endpoint.rpartition(":")
        addr, port = host or addr, int(p) if p else port
    if args.standalone:
        nnodes, addr, port = 1, "127.0.0.1", _free_port()
    world = nnodes * nproc
    if args.no_python:
        cmd = [args.training_script]
    elif args.module:
        cmd = [sys.executable, "-u", "-m", args.training_script]
    else:
        cmd = [sys.executable, "-u", args.training_script]
    cmd += args.training_script_args
    run_id = args.rdzv_id if args.rdzv_id != "none" else uuid.uuid4().hex
    from ember.distributed import _mpi

    if _mpi.launched() and "EMBER_MPI_LAUNCH" not in os.environ and not args.no_python:
        return _run_in_mpi_job(cmd[2:], addr, port, run_id)
    if nnodes > 1 and not _is_loopback(addr):
        _multi_host_error(nnodes, nproc, cmd, args)
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:  # torchrun's default and banner
        print(
            f"{'*' * 41}\nSetting OMP_NUM_THREADS environment variable for each process to be 1 "
            "in default, to avoid your system being overloaded, please further tune the "
            "variable for optimal performance in your application as needed. \n"
            f"{'*' * 41}",
            file=sys.stderr,
        )
        omp = {"OMP_NUM_THREADS": "1"}
    else:
        omp = {}
    error_dir = tempfile.mkdtemp(prefix="ember-run-")
    error_files = [os.path.join(error_dir, f"error_{i}.json") for i in range(nproc)]
    envs = []
    for local_rank in range(nproc):
        rank = args.node_rank * nproc + local_rank
        envs.append(
            dict(
                RANK=str(rank),
                LOCAL_RANK=str(local_rank),
                WORLD_SIZE=str(world),
                LOCAL_WORLD_SIZE=str(nproc),
                GROUP_RANK=str(args.node_rank),
                GROUP_WORLD_SIZE=str(nnodes),
                ROLE_RANK=str(rank),
                ROLE_WORLD_SIZE=str(world),
                ROLE_NAME="default",
                MASTER_ADDR=addr,
                MASTER_PORT=str(port),
                TORCHELASTIC_RUN_ID=run_id,
                TORCHELASTIC_RESTART_COUNT="0",
                TORCHELASTIC_MAX_RESTARTS="0",
                TORCHELASTIC_ERROR_FILE=error_files[local_rank],
                **omp,
            )
        )
    mpiexec = _mpiexec() if nnodes == 1 and not args.no_python else None
    try:
        if mpiexec is not None:
            failed, code, pid = _run_mpi(mpiexec, cmd, envs, error_dir)
        else:
            failed, code, pid = _run_local(cmd, envs)
        if failed is None:
            return 0
        rank = args.node_rank * nproc + failed
        print(
            f"ember.distributed.run: process of rank {rank} (local_rank {failed}, pid "
            f"{pid}) failed with exit code {code}",
            file=sys.stderr,
        )
        if os.path.exists(error_files[failed]):  # written by @record
            with open(error_files[failed]) as fh:
                info = json.load(fh)["message"]
            print(info["extraInfo"]["py_callstack"], file=sys.stderr)
        return code if code > 0 else 1
    finally:
        shutil.rmtree(error_dir, ignore_errors=True)


def _mpiexec() -> str | None:
    """Return the ``mpiexec`` to launch with (the mpich wheel's, beside this Python), or None
    when MPI is not installed or ``EMBER_LAUNCH=local`` asks for ember's own transport."""
    if os.environ.get("EMBER_LAUNCH", "").lower() == "local":
        return None
    from ember.distributed import _mpi

    if not _mpi.is_available():
        return None
    here = os.path.dirname(sys.executable)
    return shutil.which("mpiexec", path=here + os.pathsep + os.environ.get("PATH", ""))


def _stop(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _run_local(cmd, envs):
    """Start one process per rank (ember's local transport, with a fresh job secret); return
    ``(failed local rank or None, exit code, pid)`` once all ended or one failed."""
    from ember.distributed import _wire

    secret = _wire.new_secret().hex()
    procs = [
        subprocess.Popen(cmd, env=dict(os.environ, **env, **{_wire.SECRET_ENV: secret}))
        for env in envs
    ]
    try:
        failed = None
        while failed is None and any(p.poll() is None for p in procs):
            failed = next((i for i, p in enumerate(procs) if p.poll() not in (None, 0)), None)
            time.sleep(0.05)
        if failed is None:
            failed = next((i for i, p in enumerate(procs) if p.returncode != 0), None)
    except KeyboardInterrupt:
        for p in procs:
            p.send_signal(signal.SIGINT)
        raise
    finally:
        _stop(procs)
    if failed is None:
        return None, 0, None
    return failed, procs[failed].returncode, procs[failed].pid


def _is_loopback(addr: str) -> bool:
    try:
        return socket.gethostbyname(addr).startswith("127.")
    except OSError:
        return False


def _multi_host_error(nnodes: int, nproc: int, cmd: list, args) -> None:
    """Raise the error of a multi-host launch: one MPI job across the hosts does it."""
    from ember.distributed import _mpi

    script = " ".join(["-m"] * args.module + [args.training_script, *args.training_script_args])
    hosts = ",".join(f"HOST{i + 1}" for i in range(nnodes))
    how = (
        f"start one MPI job over the hosts, once, from one of them: mpiexec -hosts {hosts} "
        f"-ppn {nproc} -n {nnodes * nproc} {cmd[0]} -m ember.distributed.run {script}"
    )
    if not _mpi.is_available():
        how += " (after pip install mpi4py mpich on every host)"
    raise ValueError(
        f"--nnodes {nnodes} with --master-addr {args.master_addr}: ember's own transport "
        f"only connects processes of one host (it binds loopback addresses); {how}"
    )


def _run_in_mpi_job(script: list, addr: str, port: int, run_id: str) -> int:
    """Run the script in this process of an MPI job ``mpiexec`` started, with torchrun's
    variables from MPI's (MPICH's hydra, Open MPI); return 0 or raise as the script does."""
    from ember.distributed import _entry

    env = os.environ
    rank = int(env.get("PMI_RANK", env.get("OMPI_COMM_WORLD_RANK", "0")))
    world = int(env.get("PMI_SIZE", env.get("OMPI_COMM_WORLD_SIZE", "1")))
    local = int(env.get("MPI_LOCALRANKID", env.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")))
    nlocal = int(env.get("MPI_LOCALNRANKS", env.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1")))
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(local),
        WORLD_SIZE=str(world),
        LOCAL_WORLD_SIZE=str(nlocal),
        GROUP_RANK=str(rank // nlocal),
        GROUP_WORLD_SIZE=str(max(1, world // nlocal)),
        ROLE_RANK=str(rank),
        ROLE_WORLD_SIZE=str(world),
        ROLE_NAME="default",
        MASTER_ADDR=addr,
        MASTER_PORT=str(port),
        TORCHELASTIC_RUN_ID=env.get("TORCHELASTIC_RUN_ID", run_id),
        TORCHELASTIC_RESTART_COUNT="0",
        TORCHELASTIC_MAX_RESTARTS="0",
        EMBER_MPI_LAUNCH="1",
    )
    _entry.run_script(script)
    return 0


def _run_mpi(mpiexec, cmd, envs, status_dir):
    """Start every rank under one ``mpiexec`` (each with its own torchrun variables); stop the
    job as soon as a rank fails and return ``(failed local rank or None, exit code, pid)``."""
    status = [os.path.join(status_dir, f"status_{i}") for i in range(len(envs))]
    argv = [mpiexec]
    for i, env in enumerate(envs):
        if i:
            argv.append(":")
        argv += ["-n", "1", "-env", "EMBER_MPI_LAUNCH", "1"]
        for k, v in env.items():
            argv += ["-env", k, v]
        argv += [cmd[0], "-u", "-m", "ember.distributed._entry", status[i], *cmd[2:]]
    job = subprocess.Popen(argv, start_new_session=True)

    def codes():
        out = {}
        for i, path in enumerate(status):
            try:
                with open(path) as fh:
                    out[i] = int(fh.read() or 1)
            except (OSError, ValueError):
                pass
        return out

    def pid(i):
        try:
            with open(status[i] + ".pid") as fh:
                return int(fh.read())
        except (OSError, ValueError):
            return None

    # a rank killed by a signal writes no status, and mpiexec then kills the others at once:
    # a pidfd per rank (Linux; the ranks are mpiexec's grandchildren) wakes this loop as soon
    # as the first one ends, which names the rank that died
    fds: dict = {}
    vanished = None
    try:
        while job.poll() is None:
            bad = {i: c for i, c in codes().items() if c != 0}
            if bad:
                break
            for i in range(len(envs)):
                if i not in fds and hasattr(os, "pidfd_open") and pid(i) is not None:
                    try:
                        fds[i] = os.pidfd_open(pid(i))
                    except OSError:
                        fds[i] = None
            live = {fd: i for i, fd in fds.items() if fd is not None}
            if live:
                ended, _, _ = select.select(list(live), [], [], 0.05)
                gone = sorted(live[fd] for fd in ended)
                if gone and vanished is None:
                    vanished = gone[0]
                    time.sleep(0.05)  # (its status, if it exited rather than died)
                    if vanished not in codes():
                        break
                    vanished = None
                for fd in ended:
                    os.close(fd)
                    fds[live[fd]] = None
            else:
                time.sleep(0.05)
    except KeyboardInterrupt:
        os.killpg(job.pid, signal.SIGINT)
        raise
    finally:
        for fd in fds.values():
            if fd is not None:
                os.close(fd)
        if job.poll() is None:
            try:
                job.wait(0.5)  # the failed rank's exit lets mpiexec end the job itself
            except subprocess.TimeoutExpired:
                os.killpg(job.pid, signal.SIGTERM)
                try:
                    job.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(job.pid, signal.SIGKILL)
                    job.wait()
    bad = {i: c for i, c in codes().items() if c != 0}
    if bad:
        i = min(bad)
        return i, bad[i], job.pid
    if job.returncode != 0:  # a rank died without a status (a signal): mpiexec's code
        missing = [i for i in range(len(envs)) if i not in codes()]
        first = vanished if vanished is not None else (missing[0] if missing else 0)
        # (mpiexec exits with the signal's number; Popen's convention, as the local launch's
        # and torchrun's report: minus the signal)
        code = -job.returncode if 0 < job.returncode < 65 else job.returncode
        return first, code, pid(first) or job.pid
    return None, 0, None


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` (default: the command line) and run; exit with the launcher's code."""
    sys.exit(run(get_args_parser().parse_args(argv)))


if __name__ == "__main__":
    main()

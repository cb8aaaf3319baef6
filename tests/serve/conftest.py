"""Helpers of the serving tests: a model store with small models, a real server process."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MODEL_PY = """
import torch
import torch.nn as nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""

# a TorchServe-style handler: imports ts and torch as a TorchServe handler does
HANDLER_PY = """
import os
import time

import torch
from ts.context import Context
from ts.torch_handler.base_handler import BaseHandler


class Handler(BaseHandler):
    def preprocess(self, data):
        rows = []
        for row in data:
            value = row.get("data") or row.get("body")
            if value.get("fail"):
                raise ValueError("asked to fail")
            if value.get("crash"):
                os._exit(3)
            time.sleep(value.get("sleep", 0))
            rows.append(value["x"])
        return torch.tensor(rows, dtype=torch.float32)

    def postprocess(self, out):
        n = out.shape[0]
        return [
            {"y": row, "batch": n, "pid": os.getpid(), "torch": torch.__name__}
            for row in out.tolist()
        ]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_store(folder: Path) -> Path:
    """A model store holding tiny.mar (1.0), tiny_v2.mar (2.0), tiny_tensor.mar."""
    from ember.serve.archiver import archive

    src = folder / "src"
    src.mkdir(parents=True)
    (src / "model.py").write_text(MODEL_PY)
    (src / "handler.py").write_text(HANDLER_PY)
    code = (
        "import ember, sys; ember.install_as_torch(); sys.path.insert(0, sys.argv[1]);"
        "import torch, model; torch.manual_seed(0);"
        "torch.save(model.Tiny().state_dict(), sys.argv[1] + '/tiny.pt')"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code, str(src)], check=True, env=env)
    store = folder / "store"
    store.mkdir()
    common = dict(
        serialized_file=str(src / "tiny.pt"), model_file=str(src / "model.py"), export_path=store
    )
    archive("tiny", "1.0", str(src / "handler.py"), **common)
    p = archive("tiny2", "2.0", str(src / "handler.py"), **common)
    p.rename(store / "tiny_v2.mar")
    archive("tiny_tensor", "1.0", "tensor_handler", **common)
    return store


class Server:
    """An ember-serve process on free loopback ports."""

    def __init__(self, folder: Path, store: Path, models=("tiny=tiny.mar",), extra: str = ""):
        self.ports = {k: free_port() for k in ("inference", "management", "metrics")}
        self.folder = folder
        config = folder / "config.properties"
        config.write_text(
            "".join(f"{k}_address=http://127.0.0.1:{p}\n" for k, p in self.ports.items())
            + f"max_request_size=100000\nkey_file={folder / 'key_file.json'}\n"
            + textwrap.dedent(extra)
        )
        self.pid_file = folder / "serve.pid"
        cmd = [sys.executable, "-m", "ember.serve.server", "--start", "--foreground"]
        cmd += ["--model-store", str(store), "--ts-config", str(config)]
        cmd += ["--pid-file", str(self.pid_file)]
        if models:
            cmd += ["--models", *models]
        self.log = open(folder / "serve.log", "wb")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self._wait_ready()

    def url(self, kind: str, path: str) -> str:
        return f"http://127.0.0.1:{self.ports[kind]}{path}"

    def _wait_ready(self, timeout: float = 120) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited:\n" + self.logs())
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url("metrics", "/metrics"), timeout=2).status_code in (200, 400):
                    return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("server did not start:\n" + self.logs())

    def logs(self) -> str:
        self.log.flush()
        return (self.folder / "serve.log").read_text(errors="replace")

    def stop(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    pytest.importorskip("httpx")
    pytest.importorskip("uvicorn")
    pytest.importorskip("starlette")
    pytest.importorskip("prometheus_client")
    return make_store(tmp_path_factory.mktemp("serve"))

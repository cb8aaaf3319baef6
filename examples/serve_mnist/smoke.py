"""Smoke run of the example: archive, start ember-serve, post digits, check answers, stop.

    python examples/serve_mnist/smoke.py

Uses free loopback ports and a temporary folder; exits non-zero if anything fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    sys.path.insert(0, str(HERE))
    import prepare

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        store = prepare.main(["--out", str(tmp)])
        ports = [free_port() for _ in range(3)]
        config = tmp / "config.properties"
        config.write_text(
            "".join(
                f"{kind}_address=http://127.0.0.1:{port}\n"
                for kind, port in zip(("inference", "management", "metrics"), ports)
            )
        )
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        cmd = [sys.executable, "-m", "ember.serve.server", "--start", "--foreground"]
        cmd += ["--model-store", str(store), "--models", "mnist=mnist.mar"]
        cmd += ["--ts-config", str(config), "--pid-file", str(tmp / "pid")]
        server = subprocess.Popen(cmd, env=env)
        try:
            base = f"http://127.0.0.1:{ports[0]}"
            for _ in range(600):
                try:
                    urllib.request.urlopen(base + "/ping", timeout=2)
                    break
                except (urllib.error.URLError, ConnectionError):
                    if server.poll() is not None:
                        raise SystemExit("ember-serve exited") from None
                    time.sleep(0.2)
            for png in sorted(tmp.glob("digit*.png")):
                req = urllib.request.Request(
                    base + "/predictions/mnist",
                    data=png.read_bytes(),
                    headers={"Content-Type": "image/png"},
                )
                with urllib.request.urlopen(req, timeout=60) as r:
                    answer = json.loads(r.read())
                print(f"{png.name}: predicted {answer}")
                assert isinstance(answer, int) and 0 <= answer <= 9
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{ports[2]}/metrics").read()
            assert b"ts_inference_requests_total" in metrics
        finally:
            server.terminate()
            server.wait(60)
    print("serve_mnist smoke: OK")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``ember-serve``: TorchServe's ``torchserve --start/--stop`` on uvicorn + Starlette.

One process runs the three APIs (inference, management, metrics) as uvicorn servers on one
event loop, and the model workers as child processes. SIGTERM (``--stop``) stops accepting
connections, lets the requests in flight finish, then drains and stops the workers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main", "serve", "write_key_file"]

log = logging.getLogger("ember.serve")


def default_pid_file() -> str:
    return os.path.join(tempfile.gettempdir(), ".ember_serve.pid")


def write_key_file(path: str | os.PathLike) -> dict[str, str]:
    """Make the management, inference and API keys; write them to ``path`` with mode 0600."""
    keys = {k: secrets.token_urlsafe(24) for k in ("management", "inference", "API")}
    path = os.fspath(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # never write keys into a file someone else may already read
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({k: {"key": v} for k, v in keys.items()}, f, indent=2)
    os.chmod(path, 0o600)
    return keys


def _parse_models(specs: list[str], store: str | None) -> list[tuple[str | None, str]]:
    """``name=file.mar``, ``file.mar`` or ``all`` (every archive in the store)."""
    out: list[tuple[str | None, str]] = []
    for spec in specs:
        for item in spec.split(","):
            item = item.strip()
            if not item:
                continue
            if item == "all":
                if store:
                    for p in sorted(Path(store).iterdir()):
                        if p.suffix == ".mar" or p.name.endswith(".tar.gz") or p.is_dir():
                            out.append((None, p.name))
                continue
            name, sep, url = item.partition("=")
            out.append((name, url) if sep else (None, item))
    return out


class _Server:
    """A uvicorn server whose signals the ember-serve process handles, once for all three."""

    def __new__(cls, config):
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):
                yield

        return Server(config)


async def serve(cfg, models: list[tuple[str | None, str]], ready_file: str | None = None) -> None:
    """Run the APIs and workers until SIGTERM/SIGINT; then drain and stop."""
    import uvicorn

    from ember.serve.api import inference_app, management_app, metrics_app
    from ember.serve.metrics import Metrics
    from ember.serve.wlm import ModelManager, ServeError

    keys = {"inference": None, "management": None, "API": None}
    if cfg.token_auth_required():
        keys.update(write_key_file(cfg.key_file))
        log.warning("token authorization is on: keys written to %s", cfg.key_file)
    metrics = Metrics()
    manager = ModelManager(cfg, metrics)
    metrics.watch(manager)
    for name, url in models:
        try:
            await manager.register(url, model_name=name, startup=True)
        except ServeError as exc:
            log.error("could not load %s: %s", url, exc.message)
    addresses = cfg.addresses()
    apps = {
        "inference": inference_app(manager, keys["inference"]),
        "management": management_app(manager, keys["management"]),
        "metrics": metrics_app(metrics, keys["management"]),
    }
    servers = []
    for kind, app in apps.items():
        host, port = addresses[kind]
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            lifespan="off",
            access_log=False,
            log_level="warning",
            timeout_graceful_shutdown=60,
        )
        servers.append(_Server(config))

    loop = asyncio.get_running_loop()

    def stop() -> None:
        for s in servers:
            s.should_exit = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    tasks = [loop.create_task(s.serve()) for s in servers]
    while not all(s.started for s in servers):
        if any(t.done() for t in tasks):
            stop()
            break
        await asyncio.sleep(0.02)
    else:
        if ready_file:
            Path(ready_file).write_text(str(os.getpid()))
        print("ember-serve: started", {k: f"{h}:{p}" for k, (h, p) in addresses.items()})
        sys.stdout.flush()
    await asyncio.gather(*tasks, return_exceptions=True)
    await manager.shutdown()
    if any(not s.started for s in servers):
        raise SystemExit("ember-serve: could not listen on the configured addresses")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ember-serve", description="Serves TorchServe .mar models")
    p.add_argument("--start", action="store_true", help="start the server")
    p.add_argument("--stop", action="store_true", help="stop the running server")
    p.add_argument("--model-store", help="folder of the model archives that may be registered")
    p.add_argument("--models", nargs="+", default=[], help="name=file.mar ..., or all")
    p.add_argument("--ts-config", help="TorchServe config.properties")
    p.add_argument("--foreground", action="store_true", help="stay in the foreground")
    p.add_argument("--enable-token-auth", action="store_true", help="require API keys")
    p.add_argument("--pid-file", default=None, help="where the server's pid is kept")
    p.add_argument("--log-file", default=None, help="background server's log (logs/...)")
    p.add_argument("--ncs", action="store_true", help="accepted for TorchServe compatibility")
    return p


def _load_config(args):
    from ember.serve.config import ServeConfig

    cfg = ServeConfig.from_file(args.ts_config) if args.ts_config else ServeConfig()
    if os.environ.get("TS_CONFIG_FILE") and not args.ts_config:
        cfg = ServeConfig.from_file(os.environ["TS_CONFIG_FILE"])
    if args.model_store:
        cfg.model_store = args.model_store
    if args.enable_token_auth:
        cfg.enable_token_auth = True
    if cfg.model_store is None:
        raise SystemExit("ember-serve: --model-store (or model_store in the config) is required")
    if not Path(cfg.model_store).is_dir():
        raise SystemExit(f"ember-serve: model store {cfg.model_store} is not a folder")
    return cfg


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped by its parent) is not running
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _stop(pid_file: str) -> int:
    try:
        pid = int(Path(pid_file).read_text().strip())
    except (OSError, ValueError):
        print("ember-serve is not currently running.")
        return 1
    if not _alive(pid):
        Path(pid_file).unlink(missing_ok=True)
        print("ember-serve is not currently running.")
        return 1
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 120
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    print("ember-serve has stopped." if not _alive(pid) else "ember-serve did not stop in time.")
    return 0 if not _alive(pid) else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``ember-serve``."""
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    pid_file = args.pid_file or default_pid_file()
    if args.stop:
        return _stop(pid_file)
    if not args.start:
        _parser().print_usage()
        return 2
    cfg = _load_config(args)
    models = list(cfg.load_models and _parse_models(cfg.load_models, cfg.model_store))
    models += _parse_models(args.models, cfg.model_store)
    if args.foreground:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
        Path(pid_file).write_text(str(os.getpid()))
        try:
            asyncio.run(serve(cfg, models))
        finally:
            with contextlib.suppress(OSError, ValueError):
                if int(Path(pid_file).read_text()) == os.getpid():
                    Path(pid_file).unlink()
        return 0
    # background: the same command in the foreground, detached, logging to a file
    log_file = args.log_file or os.path.join("logs", "ember_serve.log")
    os.makedirs(os.path.dirname(os.path.abspath(log_file)), exist_ok=True)
    with open(log_file, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ember.serve.server", *argv, "--foreground"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    print(f"ember-serve started (pid {proc.pid}); logs in {log_file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

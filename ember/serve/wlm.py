"""Workload management: models and their versions, worker processes, the batching queue.

Each model version has one request queue and N worker processes. A worker's loop takes the
first waiting request, then gathers more for up to ``max_batch_delay`` ms or until
``batch_size`` are in hand (TorchServe's dynamic batching), sends the batch over its pipe and
answers each request with its own result. A worker that dies fails only the batch it held
(500, never a hang) and is restarted.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import json
import os
import sys
import time
from pathlib import Path

from ember.serve.protocol import encode, read_frame_async
from ember.serve.store import ArchiveError, ModelArchive, resolve_url

__all__ = ["ModelManager", "ModelVersion", "ServeError", "Worker"]

_worker_ids = itertools.count(9000)
_background: set[asyncio.Task] = set()  # tasks nobody awaits, kept alive until they finish


def run_in_background(coro) -> asyncio.Task:
    """Start ``coro`` as a task that is not garbage-collected before it finishes."""
    task = asyncio.get_running_loop().create_task(coro)
    _background.add(task)
    task.add_done_callback(_background.discard)
    return task


class ServeError(Exception):
    """An API error answered as ``{"code", "type", "message"}`` (TorchServe's shape)."""

    def __init__(self, code: int, type_: str, message: str):
        super().__init__(message)
        self.code, self.type, self.message = code, type_, message


def _not_found(name: str) -> ServeError:
    return ServeError(404, "ModelNotFoundException", f"Model not found: {name}")


class Job:
    """One prediction request waiting for its answer."""

    __slots__ = ("request_id", "data", "headers", "future", "enqueued")

    def __init__(self, request_id, data, headers, future):
        self.request_id, self.data, self.headers, self.future = request_id, data, headers, future
        self.enqueued = time.perf_counter()

    def answer(self, result) -> None:
        if not self.future.done():  # the client may have gone away
            self.future.set_result(result)


_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def worker_env(workers: int) -> dict[str, str]:
    """The environment of a worker process: ``torch`` is ember, and BLAS gets a share of cores.

    A BLAS pool per worker that each expects every core oversubscribes the machine as soon
    as two processes compute at once (the front end is one of them): OpenBLAS's threads then
    spin and wait on one another, and LeNet at batch 16 costs 5x the CPU per request (2.6 ms
    against 0.5 ms measured on 2 cores). So each worker gets ``(cores - 1) // workers``
    threads, at least one, leaving a core to the front end. Thread counts the user set in the
    server's environment are kept.
    """
    env = {**os.environ, "EMBER_AS_TORCH": "1"}
    if not any(var in os.environ for var in _THREAD_VARS):
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        threads = str(max(1, (cores - 1) // max(1, workers)))
        env.update(dict.fromkeys(_THREAD_VARS, threads))
    return env


class Worker:
    """A worker process of one model version and the loop that feeds it batches."""

    def __init__(self, model: ModelVersion):
        self.model = model
        self.id = str(next(_worker_ids))
        self.status = "STARTING"
        self.start_time = ""
        self.pid: int | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.task: asyncio.Task | None = None
        self.stopping = False
        self.waiting = False  # in the cancellable wait for a batch's first request
        self.restarts = 0

    async def spawn(self) -> None:
        """Start the process and wait until its handler is initialised."""
        self.status = "STARTING"
        spec = {
            "model_dir": str(self.model.archive.model_dir),
            "model_name": self.model.name,
            "batch_size": self.model.batch_size,
        }
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "ember.serve.worker",
            json.dumps(spec),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=worker_env(max(self.model.max_workers, len(self.model.workers) + 1)),
        )
        try:
            msg = await asyncio.wait_for(read_frame_async(self.proc.stdout), 300)
        except asyncio.TimeoutError:
            msg = ("failed", "timed out loading the model")
        if not msg or msg[0] != "ready":
            await self._kill()
            reason = msg[1] if msg else "the worker process exited"
            raise ServeError(
                500,
                "InternalServerException",
                f"Failed to start workers for model {self.model.name} version: "
                f"{self.model.version}: {reason}",
            )
        self.pid = msg[1]
        self.start_time = datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="milliseconds"
        )
        self.status = "READY"

    async def _kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            await self.proc.wait()

    async def _next_batch(self) -> list[Job] | None:
        q, model = self.model.queue, self.model
        self.waiting = True
        try:
            first = await q.get()
        except asyncio.CancelledError:
            return None
        finally:
            self.waiting = False
        batch = [first]
        deadline = time.perf_counter() + model.max_batch_delay / 1000.0
        while len(batch) < model.batch_size:
            while len(batch) < model.batch_size and not q.empty():
                batch.append(q.get_nowait())
            left = deadline - time.perf_counter()
            if len(batch) >= model.batch_size or left <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(q.get(), left))
            except asyncio.TimeoutError:
                break
        return batch

    async def run(self) -> None:
        """Feed batches to the process until stopped; restart it when it dies."""
        model = self.model
        while not self.stopping:
            batch = await self._next_batch()
            if batch is None:
                break
            started = time.perf_counter()
            model.metrics.observe_batch(
                model.name, model.version, len(batch), [started - j.enqueued for j in batch]
            )
            reply = await self._exchange(batch)
            if reply is None:  # the process died or hung: its batch fails, it restarts
                for job in batch:
                    job.answer(
                        (
                            500,
                            "InternalServerException",
                            f'Worker died while running model "{model.name}" version '
                            f"{model.version}; the request was not completed",
                        )
                    )
                await self._restart()
                continue
            if reply[0] == "ok":
                for job, result in zip(batch, reply[1]):
                    job.answer(result)
            else:
                _, code, message = reply
                kind = "BadRequestException" if 400 <= code < 500 else "InternalServerException"
                text = f'Prediction failed for model "{model.name}" version {model.version}: '
                for job in batch:
                    job.answer((code, kind, text + message))
        await self._shutdown_process()
        self.status = "STOPPED"

    async def _exchange(self, batch: list[Job]):
        proc = self.proc
        payload = [{"requestId": j.request_id, "data": j.data, "headers": j.headers} for j in batch]
        try:
            proc.stdin.write(encode(("predict", payload)))
            await proc.stdin.drain()
            return await asyncio.wait_for(
                read_frame_async(proc.stdout), self.model.response_timeout
            )
        except (ConnectionError, BrokenPipeError, asyncio.TimeoutError):
            return None

    async def _restart(self) -> None:
        model = self.model
        self.status = "STARTING"
        await self._kill()
        delay = 0.5
        while not self.stopping:
            self.restarts += 1
            model.metrics.restarts.labels(model.name, model.version).inc()
            try:
                await self.spawn()
                return
            except ServeError:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30)

    async def _shutdown_process(self) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        try:
            proc.stdin.write(encode(("stop",)))
            await proc.stdin.drain()
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), 10)
        except (ConnectionError, BrokenPipeError, asyncio.TimeoutError):
            await self._kill()

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.run())

    async def stop(self) -> None:
        """Finish the batch in hand (if any), then end the process."""
        self.stopping = True
        self.status = "UNLOADING"
        if self.task is None:
            await self._shutdown_process()
            return
        while not self.task.done():
            if self.waiting:  # idle: nothing in hand to finish
                self.task.cancel()
            await asyncio.wait([self.task], timeout=0.05)
        if self.task.cancelled():
            await self._shutdown_process()
        self.status = "STOPPED"

    def describe(self) -> dict:
        return {
            "id": self.id,
            "startTime": self.start_time,
            "status": self.status,
            "memoryUsage": _rss(self.pid),
            "pid": self.pid if self.pid is not None else -1,
            "gpu": False,
            "gpuUsage": "N/A",
        }


def _rss(pid) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, TypeError):
        return 0


class ModelVersion:
    """One registered version of a model: its archive, queue, workers and settings."""

    def __init__(self, archive, url, name, version, batch_size, max_batch_delay, cfg, metrics):
        self.archive = archive
        self.url = url
        self.name = name
        self.version = version
        self.batch_size = max(1, int(batch_size))
        self.max_batch_delay = max(0, int(max_batch_delay))
        self.response_timeout = cfg.default_response_timeout
        self.queue: asyncio.Queue = asyncio.Queue(maxsize=cfg.job_queue_size)
        self.workers: list[Worker] = []
        self.min_workers = 0
        self.max_workers = 0
        self.metrics = metrics
        self.closing = False
        self.loaded_at_startup = False
        self._scale_lock = asyncio.Lock()

    async def scale(self, n: int) -> None:
        """Start or stop workers until ``n`` are running."""
        async with self._scale_lock:
            while len(self.workers) < n:
                w = Worker(self)
                await w.spawn()
                self.workers.append(w)
                w.start()
            extra = self.workers[n:]
            self.workers = self.workers[:n]
            await asyncio.gather(*(w.stop() for w in extra))

    def submit(self, request_id, data, headers) -> asyncio.Future:
        """Queue a request; return the future of its ``(status, content_type, body)``."""
        if self.closing:
            raise ServeError(
                503, "ServiceUnavailableException", f'Model "{self.name}" is being unregistered'
            )
        if not self.workers:
            raise ServeError(
                503,
                "ServiceUnavailableException",
                f'Model "{self.name}" Version {self.version} has no worker to serve inference '
                "request. Please use scale workers API to add workers.",
            )
        future = asyncio.get_running_loop().create_future()
        try:
            self.queue.put_nowait(Job(request_id, data, headers, future))
        except asyncio.QueueFull:
            raise ServeError(
                503,
                "ServiceUnavailableException",
                f'Model "{self.name}" Version {self.version} has too many queued requests '
                "(job_queue_size)",
            ) from None
        return future

    async def close(self) -> None:
        """Answer what is queued, stop the workers, remove the extracted archive."""
        self.closing = True
        while not self.queue.empty() and any(w.status != "STOPPED" for w in self.workers):
            await asyncio.sleep(0.01)
        await asyncio.gather(*(w.stop() for w in self.workers))
        while not self.queue.empty():  # no worker left to answer these
            self.queue.get_nowait().answer(
                (503, "ServiceUnavailableException", f'Model "{self.name}" was unregistered')
            )
        self.archive.cleanup()

    def describe(self) -> dict:
        return {
            "modelName": self.name,
            "modelVersion": self.version,
            "modelUrl": self.url,
            "runtime": self.archive.manifest.get("runtime", "python"),
            "minWorkers": self.min_workers,
            "maxWorkers": self.max_workers,
            "batchSize": self.batch_size,
            "maxBatchDelay": self.max_batch_delay,
            "loadedAtStartup": self.loaded_at_startup,
            "workers": [w.describe() for w in self.workers],
        }


class ModelManager:
    """The registered models: name -> version -> ModelVersion, and each name's default."""

    def __init__(self, cfg, metrics):
        self.cfg = cfg
        self.metrics = metrics
        self.models: dict[str, dict[str, ModelVersion]] = {}
        self.defaults: dict[str, str] = {}
        self._lock = asyncio.Lock()

    def all_versions(self) -> list[ModelVersion]:
        return [mv for versions in list(self.models.values()) for mv in versions.values()]

    def get(self, name: str, version: str | None = None) -> ModelVersion:
        versions = self.models.get(name)
        if not versions:
            raise _not_found(name)
        if version is None:
            return versions[self.defaults[name]]
        if version not in versions:
            raise ServeError(
                404,
                "ModelVersionNotFoundException",
                f"Model version: {version} does not exist for model: {name}",
            )
        return versions[version]

    async def register(
        self,
        url: str,
        model_name: str | None = None,
        batch_size: int | None = None,
        max_batch_delay: int | None = None,
        initial_workers: int | None = None,
        response_timeout: int | None = None,
        synchronous: bool = True,
        startup: bool = False,
    ) -> ModelVersion:
        """Register an archive of the model store; start its initial workers."""
        if self.cfg.model_store is None:
            raise ServeError(400, "BadRequestException", "no model store is configured")
        try:
            path = await asyncio.to_thread(
                resolve_url, url, self.cfg.model_store, self.cfg.allowed_urls
            )
            archive = await asyncio.to_thread(ModelArchive, Path(path))
        except FileNotFoundError as exc:
            raise ServeError(404, "ModelNotFoundException", str(exc)) from None
        except ArchiveError as exc:
            raise ServeError(400, "BadRequestException", str(exc)) from None
        name = model_name or archive.model_name
        async with self._lock:
            if archive.version in self.models.get(name, {}):
                archive.cleanup()
                raise ServeError(
                    409,
                    "ConflictStatusException",
                    f"Model version {archive.version} is already registered for model {name}",
                )
            mv = ModelVersion(
                archive,
                url,
                name,
                archive.version,
                self.cfg.batch_size if batch_size is None else batch_size,
                self.cfg.max_batch_delay if max_batch_delay is None else max_batch_delay,
                self.cfg,
                self.metrics,
            )
            if response_timeout is not None:
                mv.response_timeout = response_timeout
            mv.loaded_at_startup = startup
            self.models.setdefault(name, {})[mv.version] = mv
            self.defaults.setdefault(name, mv.version)
        n = self.cfg.default_workers_per_model if initial_workers is None else initial_workers
        mv.min_workers = mv.max_workers = n
        scaling = mv.scale(n)
        if synchronous:
            try:
                await scaling
            except ServeError:
                await self.unregister(name, mv.version)
                raise
        else:
            run_in_background(scaling)
        return mv

    async def unregister(self, name: str, version: str | None = None) -> None:
        """Remove a version (or every version) of a model; its queued requests are answered."""
        async with self._lock:
            versions = self.models.get(name)
            if not versions:
                raise _not_found(name)
            if version is not None:
                self.get(name, version)
                if version == self.defaults[name] and len(versions) > 1:
                    raise ServeError(
                        400,
                        "BadRequestException",
                        f"Cannot remove default version {version} for model {name}",
                    )
                gone = [versions.pop(version)]
            else:
                gone = list(versions.values())
                versions.clear()
            if not versions:
                del self.models[name]
                del self.defaults[name]
        await asyncio.gather(*(mv.close() for mv in gone))

    def set_default(self, name: str, version: str) -> None:
        self.get(name, version)
        self.defaults[name] = version

    async def shutdown(self) -> None:
        """Drain and stop every model."""
        await asyncio.gather(*(self.unregister(n) for n in list(self.models)))

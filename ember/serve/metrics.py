"""The server's Prometheus metrics (``prometheus_client``), served at ``:8082/metrics``.

TorchServe's names (``ts_inference_requests_total``, ``ts_inference_latency_microseconds``,
``ts_queue_latency_microseconds``) beside histograms of ember-serve's own: request and queue
latency, batch size, and gauges of workers and queue depth read at scrape time.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

__all__ = ["Metrics"]

_MV = ("model_name", "model_version")
_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _LiveCollector:
    """Workers by status and queue depth, read from the model manager at scrape time."""

    def __init__(self, manager) -> None:
        self.manager = manager

    def collect(self):
        workers = GaugeMetricFamily(
            "ember_serve_workers", "Worker processes by status", labels=[*_MV, "status"]
        )
        depth = GaugeMetricFamily(
            "ember_serve_queue_depth", "Requests waiting for a worker", labels=list(_MV)
        )
        for mv in self.manager.all_versions():
            counts: dict[str, int] = {}
            for w in mv.workers:
                counts[w.status] = counts.get(w.status, 0) + 1
            for status, n in sorted(counts.items()):
                workers.add_metric([mv.name, mv.version, status], n)
            depth.add_metric([mv.name, mv.version], mv.queue.qsize())
        yield workers
        yield depth


class Metrics:
    """One registry per server, with the counters and histograms the server updates."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._children: dict[tuple, dict] = {}
        r = self.registry
        self.ts_requests = Counter(
            "ts_inference_requests_total", "Total number of inference requests.", _MV, registry=r
        )
        self.ts_latency = Counter(
            "ts_inference_latency_microseconds",
            "Cumulative inference duration in microseconds",
            _MV,
            registry=r,
        )
        self.ts_queue = Counter(
            "ts_queue_latency_microseconds",
            "Cumulative queue duration in microseconds",
            _MV,
            registry=r,
        )
        self.responses = Counter(
            "ember_serve_responses_total",
            "Prediction responses by HTTP status",
            [*_MV, "code"],
            registry=r,
        )
        self.latency = Histogram(
            "ember_serve_request_latency_seconds",
            "Time from a prediction request's arrival to its answer",
            _MV,
            buckets=_LATENCY,
            registry=r,
        )
        self.queue_latency = Histogram(
            "ember_serve_queue_latency_seconds",
            "Time a request waits before its batch goes to a worker",
            _MV,
            buckets=_LATENCY,
            registry=r,
        )
        self.batch_size = Histogram(
            "ember_serve_batch_size",
            "Requests per batch sent to a worker",
            _MV,
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
            registry=r,
        )
        self.restarts = Counter(
            "ember_serve_worker_restarts_total",
            "Worker processes restarted after they died",
            _MV,
            registry=r,
        )

    def watch(self, manager) -> None:
        """Report ``manager``'s workers and queues at each scrape."""
        self.registry.register(_LiveCollector(manager))

    def _series(self, name, version) -> dict:
        """The labelled children of one model version, looked up once.

        ``labels()`` validates and hashes its arguments on every call (seven calls a
        request); the children it returns are stable, so each version keeps its own.
        """
        key = (name, version)
        series = self._children.get(key)
        if series is None:
            series = self._children[key] = {
                metric: getattr(self, metric).labels(name, version)
                for metric in (
                    "ts_requests",
                    "ts_latency",
                    "ts_queue",
                    "latency",
                    "queue_latency",
                    "batch_size",
                )
            }
            series["responses"] = {}
        return series

    def observe_response(self, name, version, code, seconds) -> None:
        series = self._series(name, version)
        series["ts_requests"].inc()
        series["ts_latency"].inc(seconds * 1e6)
        series["latency"].observe(seconds)
        by_code = series["responses"]
        counter = by_code.get(code)
        if counter is None:
            counter = by_code[code] = self.responses.labels(name, version, str(code))
        counter.inc()

    def observe_batch(self, name, version, size, queue_seconds) -> None:
        series = self._series(name, version)
        series["batch_size"].observe(size)
        series["ts_queue"].inc(sum(queue_seconds) * 1e6)
        observe = series["queue_latency"].observe
        for s in queue_seconds:
            observe(s)

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)

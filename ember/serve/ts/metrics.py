"""``ts.metrics``: the per-batch metrics a handler records (``context.metrics``)."""

from __future__ import annotations

__all__ = ["MetricsStore"]


class MetricsStore:
    """Collects the metrics a handler adds during a batch: ``add_time``, ``add_counter``..."""

    def __init__(self, model_name: str = "") -> None:
        self.model_name = model_name
        self.request_ids = None
        self.store: list[tuple[str, float, str]] = []

    def _add(self, name, value, unit) -> None:
        self.store.append((name, float(value), unit))
        del self.store[:-1000]  # bounded: a long-lived worker keeps only the recent ones

    def add_time(self, name, value, idx=None, unit="ms", dimensions=None, metric_type=None):
        self._add(name, value, unit)

    def add_counter(self, name, value, idx=None, dimensions=None, metric_type=None):
        self._add(name, value, "count")

    def add_size(self, name, value, idx=None, unit="MB", dimensions=None, metric_type=None):
        self._add(name, value, unit)

    def add_percent(self, name, value, idx=None, dimensions=None, metric_type=None):
        self._add(name, value, "percent")

    def add_metric(self, name, value, unit="count", idx=None, dimensions=None, metric_type=None):
        self._add(name, value, unit)

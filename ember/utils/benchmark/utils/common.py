"""``TaskSpec`` and ``Measurement`` of ``ember.utils.benchmark``, with torch's statistics and repr.

torch computes a few of these statistics on float32 tensors (units, significant figures); they
are computed here in NumPy float32 the same way, so a table prints the same digits.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

__all__ = [
    "TaskSpec",
    "Measurement",
    "select_unit",
    "unit_to_english",
    "trim_sigfig",
    "ordered_unique",
    "set_torch_threads",
]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25

# (iqr / median at or above which a Measurement warns, what the warning says), worst first
_SPREAD_WARNINGS = (
    (_IQR_GROSS_WARN_THRESHOLD, "This suggests significant environmental influence."),
    (_IQR_WARN_THRESHOLD, "This could indicate system fluctuation."),
)

_f32 = np.float32


def _log10_f32(x: float) -> float:
    """Return log10 of ``x`` as a float32 tensor computes it (correctly rounded)."""
    return float(_f32(np.log10(np.float64(_f32(x)))))


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a Timer measures (all but its globals)."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """Return the label (or the one-line stmt) and sub_label of the measurement."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        """Return the setup as shown in a Measurement's repr ('' for none)."""
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Return the TaskSpec part of a Measurement's repr."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The times of one or more runs of a statement, with their statistics.

    ``raw_times`` are per run of ``number_per_run`` executions; ``times`` per execution.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # reserved for user payloads

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list[float]:
        """Return the time of one execution in each run."""
        per_run = self.number_per_run
        return [raw / per_run for raw in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """Return how many figures of the median the interquartile spread supports (1 to 4)."""
        self._lazy_init()
        # the middle half of the sorted times (bounds as torch computes them, in float32)
        count = len(self._sorted_times)
        middle = self._sorted_times[count // 4 : int(np.ceil(_f32(0.75 * count)))]
        spread = float(_f32(np.asarray(middle, dtype=np.float32).astype(np.float64).std()))
        # a 90% normal confidence half-width of the median, never below 25 ns
        half_width = 1.645 * spread / float(np.sqrt(_f32(len(middle))))
        half_width = max(half_width, _MIN_CONFIDENCE_INTERVAL)
        figures = int(np.floor(_log10_f32(self._median / half_width)))
        return int(np.clip(figures, 1, _MAX_SIGNIFICANT_FIGURES))

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        # computed once, on first use (raw_times may be filled after construction)
        if self._sorted_times or not self.raw_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        values = np.asarray(self._sorted_times, dtype=np.float64)
        self._p25, self._median, self._p75 = map(float, np.quantile(values, (0.25, 0.5, 0.75)))
        self._mean = float(values.mean())
        for threshold, explanation in _SPREAD_WARNINGS:  # the worst band that applies
            if not self.meets_confidence(threshold):
                relative = self.iqr / self.median * 100
                self._warnings = (
                    f"  WARNING: Interquartile range is {relative:.1f}% "
                    f"of the median measurement.\n           {explanation}",
                )
                break

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Return whether iqr / median is below ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        for name in (self.sub_label, self.stmt):
            if name:
                return name
        return "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize()]
        lines.append(f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}")
        if n >= 4:
            lines.append(
                f"  IQR:    {self.iqr / scale:.2f} {unit} "
                f"({self._p25 / scale:.2f} to {self._p75 / scale:.2f})"
            )
        runs = "per measurement," if n > 1 else ","
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines.append(
            f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs {runs} {threads}"
        )
        lines.append("\n".join(self._warnings))
        return "\n".join("\n".join(lines).strip().splitlines())

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Return one Measurement per TaskSpec, replicates pooled at ``number_per_run=1``."""
        groups: dict[TaskSpec, list[float]] = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].extend(m.times)
        return [
            Measurement(number_per_run=1, raw_times=t, task_spec=s, metadata=None)
            for s, t in groups.items()
        ]


def select_unit(t: float) -> tuple[str, float]:
    """Return the unit (ns, us, ms, s) and its scale that show ``t`` seconds as O(1)."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_log10_f32(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    """Return the English name of a time unit."""
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """Return ``x`` rounded to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(np.ceil(_log10_f32(abs(x))))
    scale = 10 ** (magnitude - n)
    return float(np.round(_f32(x / scale)) * _f32(scale))


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """Return the distinct elements in first-seen order."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the block with ember's intra-op thread count set to ``n``, then restore it."""
    import ember

    prior = ember.get_num_threads()
    try:
        ember.set_num_threads(n)
        yield
    finally:
        ember.set_num_threads(prior)

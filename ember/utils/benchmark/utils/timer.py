"""``Timer``: ``timeit.Timer`` with torch's warm-up, thread setting and adaptive replicates."""

from __future__ import annotations

import enum
import textwrap
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.utils.benchmark.utils import common

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """Return the current time in seconds (ember runs on the CPU: nothing to synchronize)."""
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


# the spellings torch accepts for each language
_LANGUAGES = {
    Language.PYTHON: Language.PYTHON,
    "py": Language.PYTHON,
    "python": Language.PYTHON,
    Language.CPP: Language.CPP,
    "cpp": Language.CPP,
    "c++": Language.CPP,
}

# the block size never exceeds what a C int holds (torch's limit)
_MAX_BLOCK = 2**31 - 1


class Timer:
    """Measure the execution time of ``stmt`` (after ``setup``), as ``torch.utils.benchmark.Timer``.

    ``globals`` gives the names ``stmt`` uses; ``torch`` and ``ember`` are predefined as ember,
    so statements written for torch run unchanged. The run uses ``num_threads`` intra-op threads
    (default 1), restored afterwards. ``label``, ``sub_label``, ``description`` and ``env`` tag
    the Measurement for its repr and for ``Compare``.
    """

    _timer_cls = timeit.Timer

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = timer,
        globals: dict[str, Any] | None = None,
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        import ember

        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        self._globals = dict(globals or {})
        kind = _LANGUAGES.get(language) if isinstance(language, (str, Language)) else None
        if kind is None:
            raise ValueError(f"Invalid language `{language}`.")
        if kind is Language.CPP:
            raise NotImplementedError("ember has no C++ frontend: Timer measures Python only")
        self._language = kind
        if global_setup:
            raise ValueError(
                f"global_setup is C++ only, got `{global_setup}`. Most "
                "likely this code can simply be moved to `setup`."
            )
        # statements written for torch run unchanged: both names mean ember
        for name in ("torch", "ember"):
            self._globals.setdefault(name, ember)
        stmt = _clean(stmt)
        setup = _clean(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(
            stmt=stmt,
            setup=setup,
            global_setup=global_setup,
            label=label,
            sub_label=sub_label,
            description=description,
            env=env,
            num_threads=num_threads,
        )

    def _timeit(self, number: int) -> float:
        # never 0, so ratios of times stay finite
        return max(self._timer.timeit(number), 1e-9)

    def _threads(self):
        # every measurement runs with the TaskSpec's thread count, restored afterwards
        return common.set_torch_threads(self._task_spec.num_threads)

    def _measurement(self, number: int, times: list[float]) -> common.Measurement:
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Return the time of ``number`` executions of ``stmt`` (after a warm-up of number/100)."""
        with self._threads():
            self._timeit(max(2, int(number // 100)))  # warm-up, not recorded
            return self._measurement(number, [self._timeit(number)])

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _threaded_measurement_loop(
        self, number, time_hook, stop_hook, min_run_time, max_run_time=None, callback=None
    ) -> list[float]:
        """Time blocks until at least ``min_run_time`` has passed and ``stop_hook(times)``
        agrees, or ``max_run_time`` (if set) is exceeded."""
        times: list[float] = []
        elapsed = 0.0
        with self._threads():
            while True:
                spent = time_hook()
                times.append(spent)
                elapsed += spent
                if callback:
                    callback(number, spent)
                satisfied = stop_hook(times)
                if max_run_time and elapsed > max_run_time:
                    break
                if elapsed >= min_run_time and satisfied:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """Return the smallest power of ten of executions whose time dwarfs the timer's."""
        with self._threads():
            # the timer's own cost: the median of five empty runs, in float32 as torch keeps it
            empty_runs = sorted(self._timeit(0) for _ in range(5))
            overhead = float(np.float32(empty_runs[2]))
            block = 1
            while True:
                spent = self._timeit(block)
                negligible = overhead / spent <= 1e-4 and spent >= min_run_time / 1000
                if negligible or spent > min_run_time or block * 10 > _MAX_BLOCK:
                    return block
                block *= 10

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> common.Measurement:
        """Return blocks of executions timed until ``min_run_time`` seconds have passed; the
        block size makes the timer's own overhead negligible."""
        block = self._estimate_block_size(min_run_time)
        times = self._threaded_measurement_loop(
            block,
            lambda: self._timeit(block),
            lambda _times: True,
            min_run_time=min_run_time,
            callback=callback,
        )
        return self._measurement(block, times)

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback=None,
    ) -> common.Measurement:
        """Like ``blocked_autorange``, but continue until iqr / median < ``threshold`` (after at
        least 4 blocks and ``min_run_time``) or ``max_run_time`` is spent."""
        block = self._estimate_block_size(0.05)

        def confident(times: list[float]) -> bool:
            # judged from the fourth block on
            return len(times) >= 4 and self._measurement(block, times).meets_confidence(threshold)

        times = self._threaded_measurement_loop(
            block,
            lambda: self._timeit(block),
            confident,
            min_run_time,
            max_run_time,
            callback=callback,
        )
        return self._measurement(block, times)

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("ember's Timer does not run statements under Callgrind")


def _clean(code: str) -> str:
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()

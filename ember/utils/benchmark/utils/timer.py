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
        if language in (Language.PYTHON, "py", "python"):
            self._globals.setdefault("torch", ember)
            self._globals.setdefault("ember", ember)
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(
                    f"global_setup is C++ only, got `{global_setup}`. Most "
                    "likely this code can simply be moved to `setup`."
                )
        elif language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("ember has no C++ frontend: Timer measures Python only")
        else:
            raise ValueError(f"Invalid language `{language}`.")
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

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Return the time of ``number`` executions of ``stmt`` (after a warm-up of number/100)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return common.Measurement(
                number_per_run=number,
                raw_times=[self._timeit(number=number)],
                task_spec=self._task_spec,
            )

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _threaded_measurement_loop(
        self, number, time_hook, stop_hook, min_run_time, max_run_time=None, callback=None
    ) -> list[float]:
        total_time = 0.0
        can_stop = False
        times: list[float] = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while total_time < min_run_time or not can_stop:
                time_spent = time_hook()
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """Return the smallest power of ten of executions whose time dwarfs the timer's."""
        with common.set_torch_threads(self._task_spec.num_threads):
            # torch takes the median of five empty runs as a float32 tensor
            overhead = float(np.float32(sorted(self._timeit(0) for _ in range(5))[2]))
            number = 1
            while True:
                time_taken = self._timeit(number)
                if overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> common.Measurement:
        """Return blocks of executions timed until ``min_run_time`` seconds have passed; the
        block size makes the timer's own overhead negligible."""
        number = self._estimate_block_size(min_run_time)
        times = self._threaded_measurement_loop(
            number,
            lambda: self._timeit(number),
            lambda times: True,
            min_run_time=min_run_time,
            callback=callback,
        )
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

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
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times: list[float]) -> bool:
            if len(times) > 3:
                m = common.Measurement(
                    number_per_run=number, raw_times=times, task_spec=self._task_spec
                )
                return m.meets_confidence(threshold=threshold)
            return False

        times = self._threaded_measurement_loop(
            number,
            lambda: self._timeit(number),
            stop_hook,
            min_run_time,
            max_run_time,
            callback=callback,
        )
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("ember's Timer does not run statements under Callgrind")


def _clean(code: str) -> str:
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()

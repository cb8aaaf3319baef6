"""``torch.profiler``'s profiler: ``profile`` (a context manager with an optional ``schedule`` of
wait / warmup / active steps advanced by ``prof.step()``, handing each finished cycle to
``on_trace_ready``), ``schedule``, ``ProfilerAction``, ``tensorboard_trace_handler``."""

from __future__ import annotations

import enum
import os
import time
import warnings
from functools import partial

from ember.profiler import _profile

PROFILER_STEP_NAME = "ProfilerStep"


class ProfilerActivity(enum.IntEnum):
    """The kinds of activity a profiler can trace (ember traces the CPU only)."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5

    def __str__(self) -> str:
        return f"ProfilerActivity.{self.name}"


def supported_activities() -> set:
    """Return the activities this machine can trace: ``{ProfilerActivity.CPU}``."""
    return {ProfilerActivity.CPU}


def kineto_available() -> bool:
    """Return True: the profiler writes Kineto-style traces."""
    return True


def _parse_activities(activities) -> tuple[set, dict]:
    parsed: set = set()
    filters: dict = {}
    for item in activities:
        if isinstance(item, ProfilerActivity):
            if item in parsed:
                raise ValueError(f"Activity {item} specified more than once")
            parsed.add(item)
        elif isinstance(item, dict):
            for key, val in item.items():
                if key in parsed:
                    raise ValueError(f"Activity {key} specified more than once")
                parsed.add(key)
                filters[key] = set(val)
        else:
            raise TypeError(f"Expected ProfilerActivity or dict, got {type(item)}")
    return parsed, filters


# The recording options both profilers take (keyword-only): each is kept as the attribute of
# its name. ``_FLAGS`` are the ones a window passes on to its autograd-level profile and, when
# set, writes to the trace's metadata as "1" (in this order).
_FLAGS = ("profile_memory", "with_stack", "record_shapes", "with_modules", "with_flops")
_OPTIONS = _FLAGS + (
    "experimental_config",
    "execution_trace_observer",
    "acc_events",
    "custom_trace_id_callback",
    "post_processing_timeout_s",
)


class _KinetoProfile:
    """The profiler without a schedule: ``start()`` / ``stop()`` one window, then read it."""

    def __init__(
        self,
        *,
        activities=None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config=None,
        execution_trace_observer=None,
        acc_events: bool = False,
        custom_trace_id_callback=None,
        post_processing_timeout_s: float | None = None,
    ) -> None:
        options = locals()
        for name in _OPTIONS:
            setattr(self, name, options[name])
        self.activities, self.activity_filters = (
            (supported_activities(), {}) if activities is None else _parse_activities(activities)
        )
        self.profiler: _profile.profile | None = None
        self.use_device = None
        for act, dev in (
            (ProfilerActivity.CUDA, "cuda"),
            (ProfilerActivity.XPU, "xpu"),
            (ProfilerActivity.MTIA, "mtia"),
            (ProfilerActivity.HPU, "hpu"),
            (ProfilerActivity.PrivateUse1, "privateuseone"),
        ):
            if act in self.activities:
                self.use_device = dev
                break
        self.preset_metadata: dict = {}
        self._trace_metadata: dict = {}

    def _window(self, doing: str):
        """The autograd-level profile of the current window (torch's ``self.profiler``)."""
        if self.profiler is None:
            raise AssertionError(f"Profiler must be initialized before {doing}")
        return self.profiler

    def start(self) -> None:
        self.prepare_trace()
        self.start_trace()

    def stop(self) -> None:
        self.stop_trace()

    def prepare_trace(self) -> None:
        if self.profiler is not None and not self.acc_events:
            _warn_once(
                "Warning: Profiler clears events at the end of each cycle. "
                "Only events from the current cycle will be reported. "
                "To keep events across cycles, set acc_events=True."
            )
        if self.profiler is None or not self.acc_events:
            self.profiler = _profile.profile(
                use_cpu=ProfilerActivity.CPU in self.activities,
                use_device=self.use_device,
                use_kineto=True,
                acc_events=self.acc_events,
                **{flag: getattr(self, flag) for flag in _FLAGS},
            )
        self.profiler._prepare_trace()

    def start_trace(self) -> None:
        self._window("starting trace")._start_trace()
        for flag in _FLAGS:
            if getattr(self, flag):
                self.add_metadata_json(flag, "1")
        for k, v in self.preset_metadata.items():
            self.add_metadata_json(k, v)

    def stop_trace(self) -> None:
        self._window("stopping trace").__exit__(None, None, None)

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        """Write the last window as Chrome trace JSON (``.gz``: compressed)."""
        self._window("exporting chrome trace").export_chrome_trace(path, self._trace_metadata)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the events' stacks (needs ``with_stack=True``) for flame graphs."""
        return self._window("exporting stacks").export_stacks(path, metric)

    def key_averages(
        self,
        group_by_input_shape: bool = False,
        group_by_stack_n: int = 0,
        group_by_overload_name: bool = False,
    ):
        """Return the events averaged per name (and input shapes / stack if asked)."""
        return self._window("getting key averages").key_averages(
            group_by_input_shape, group_by_stack_n, group_by_overload_name
        )

    def events(self):
        """Return the unaggregated ``FunctionEvent``s of the last window."""
        return self._window("accessing events").function_events

    def add_metadata(self, key: str, value: str) -> None:
        """Add a string ``key: value`` to the trace file."""
        self._trace_metadata[key] = '"' + value.replace('"', '\\"') + '"'

    def add_metadata_json(self, key: str, value: str) -> None:
        """Add ``key`` with a JSON ``value`` to the trace file."""
        self._trace_metadata[key] = value

    def preset_metadata_json(self, key: str, value: str) -> None:
        """Set metadata added to the trace when the profiler starts."""
        self.preset_metadata[key] = value

    def toggle_collection_dynamic(self, enable: bool, activities) -> None:
        """Accepted for torch compatibility: CPU collection cannot be toggled in ember."""


_WARNED: set = set()


def _warn_once(msg: str) -> None:
    if msg not in _WARNED:
        _WARNED.add(msg)
        warnings.warn(msg, stacklevel=3)


class ProfilerAction(enum.Enum):
    """What the profiler does during a step of a ``schedule``."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def schedule(
    *,
    wait: int,
    warmup: int,
    active: int,
    repeat: int = 0,
    skip_first: int = 0,
    skip_first_wait: int = 0,
):
    """Return a ``step -> ProfilerAction`` function for ``profile(schedule=...)``: skip
    ``skip_first`` steps, then cycle through ``wait`` idle steps, ``warmup`` steps and ``active``
    recorded steps (the last one saves the trace), ``repeat`` times (0: forever).
    ``skip_first_wait`` skips the first cycle's wait."""

    period = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        # position inside the cycles; skip_first_wait starts the first cycle at its warmup
        position = step - skip_first + (wait if skip_first_wait else 0)
        cycle, offset = divmod(position, period)
        if repeat and cycle >= repeat:
            return ProfilerAction.NONE
        if offset < wait:
            return ProfilerAction.NONE
        if offset < wait + warmup:
            return ProfilerAction.WARMUP
        last = offset == period - 1  # the cycle's last active step hands the trace over
        return ProfilerAction.RECORD_AND_SAVE if last else ProfilerAction.RECORD

    if min(wait, warmup, repeat, skip_first) < 0 or active < 1:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )
    return schedule_fn


def _record_always(step: int) -> ProfilerAction:
    # without a schedule the whole context is one recording window
    return ProfilerAction.RECORD


def tensorboard_trace_handler(
    dir_name: str, worker_name: str | None = None, use_gzip: bool = False, use_python_export=False
):
    """Return an ``on_trace_ready`` handler writing each trace to
    ``dir_name/<worker_name>.<time ns>.pt.trace.json`` (``worker_name`` defaults to
    ``<hostname>_<pid>``), the layout TensorBoard's profiler plugin reads."""

    import socket

    def handler_fn(prof) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        # the default worker name is fixed by the first trace written
        worker_name = worker_name or "_".join((socket.gethostname(), str(os.getpid())))
        ext = "pt.trace.json.gz" if use_gzip else "pt.trace.json"
        prof.export_chrome_trace(
            os.path.join(dir_name, ".".join((worker_name, str(time.time_ns()), ext)))
        )

    return handler_fn


def _schedule_warning(prev: ProfilerAction, current: ProfilerAction):
    return partial(warnings.warn, f"Incorrect schedule: {prev.name} followed by {current.name}")


class profile(_KinetoProfile):
    """Profiler context manager (``torch.profiler.profile``).

    With a ``schedule``, call ``prof.step()`` at the end of each step: the profiler idles,
    warms up and records as the schedule says, labels each step ``ProfilerStep#<n>`` and calls
    ``on_trace_ready(prof)`` when a recording cycle ends. Without one it records everything
    between ``start()`` / ``__enter__`` and ``stop()`` / ``__exit__``.
    """

    def __init__(
        self,
        *,
        activities=None,
        schedule=None,
        on_trace_ready=None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config=None,
        execution_trace_observer=None,
        acc_events: bool = False,
        use_cuda: bool | None = None,
        custom_trace_id_callback=None,
        post_processing_timeout_s: float | None = None,
    ) -> None:
        # the activities asked for: members, or dicts keyed by members (with filters)
        chosen: set = set() if activities is not None else set(supported_activities())
        for item in activities if activities is not None else ():
            if isinstance(item, dict):
                chosen |= set(item)
            elif isinstance(item, ProfilerActivity):
                chosen.add(item)
        if use_cuda is not None:
            warnings.warn(
                "`use_cuda` is deprecated, use `activities` argument instead",
                FutureWarning,
                stacklevel=2,
            )
            if use_cuda:
                chosen.add(ProfilerActivity.CUDA)
            else:
                chosen.discard(ProfilerActivity.CUDA)
        if not chosen:
            raise AssertionError("No valid profiler activities found")
        options = locals()
        super().__init__(activities=activities, **{name: options[name] for name in _OPTIONS})
        if schedule:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _record_always
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn: _profile.record_function | None = None
        action = self._scheduled(self.step_num)
        self.current_action = action
        self._prev_schedule_action = action
        every = [*ProfilerAction, None]
        self.action_map = {(p, c): self._plan(p, c) for p in ProfilerAction for c in every}

    def _plan(self, prev, current) -> list:
        """The calls that move the profiler from the action ``prev`` to ``current``.

        ``current`` None is the end of profiling. A window closes when its recording ends
        (handing the trace to ``on_trace_ready`` after a save step or at the end) and opens as
        its phase requires: warmup prepares, recording prepares and starts.
        """
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        calls: list = []
        if prev is A.RECORD_AND_SAVE or (prev is A.RECORD and current is None):
            calls += [self.stop_trace, self._trace_ready]
            prev = A.NONE
        elif prev is A.RECORD and current in (A.NONE, A.WARMUP):
            # an interrupted recording is dropped: nothing reopens before the next phase
            return [_schedule_warning(prev, current), self.stop_trace]
        elif prev is A.WARMUP and current in (A.NONE, None):
            # a warmed-up window is still started and stopped, so the profiler is reset
            if current is A.NONE:
                calls.append(_schedule_warning(prev, current))
            calls += [self.start_trace, self.stop_trace]
            prev = A.NONE
        if prev is A.NONE and current in (A.WARMUP, *recording):
            calls.append(self.prepare_trace)
            prev = A.WARMUP
        if prev is A.WARMUP and current in recording:
            calls.append(self.start_trace)
        return calls

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def _scheduled(self, step: int) -> ProfilerAction:
        action = self.schedule(step)
        if action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError(
                "ProfilerAction.DEVICE_STOPPED is set internally by the "
                "profiler and must not be returned by a user-provided schedule"
            )
        return action

    def _open_step_range(self) -> None:
        # with a schedule every step is a ``ProfilerStep#<n>`` range
        if self.record_steps:
            self.step_rec_fn = _profile.record_function(f"{PROFILER_STEP_NAME}#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _close_step_range(self) -> None:
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None

    def _move(self, prev, current) -> None:
        for call in self.action_map.get((prev, current), ()):
            call()

    def start(self) -> None:
        self._move(ProfilerAction.NONE, self.current_action)
        self._open_step_range()

    def stop(self) -> None:
        self._close_step_range()
        self._move(self.current_action, None)
        self.current_action = self._prev_schedule_action

    def step(self) -> None:
        """Signal that the next profiling step has started."""
        self._close_step_range()
        before = self.current_action
        action = self._scheduled(self.step_num + 1)
        self.step_num += 1
        self.current_action = self._prev_schedule_action = action
        self._move(before, action)
        self._open_step_range()

    def set_custom_trace_id_callback(self, callback) -> None:
        """Set the function that makes each cycle's trace id."""
        self.custom_trace_id_callback = callback

    def get_trace_id(self):
        """Return the current trace id (None before the first cycle)."""
        if self.profiler is None:
            return None
        return self.profiler.trace_id

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

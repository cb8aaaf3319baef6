"""``torch.autograd.profiler.profile`` and ``record_function``: the profiler's context managers
over one ``Recorder`` window (``torch.profiler.profile`` builds on them)."""

from __future__ import annotations

import functools
import warnings

from ember.profiler import _recorder
from ember.profiler._events import EventList

_VALID_DEVICES = ("cuda", "xpu", "mtia", "hpu")


def is_profiler_enabled() -> bool:
    """Return True while a profiler records."""
    return bool(_recorder.ACTIVE)


# the options a profile keeps as given, each as the attribute of its name
_KEPT = (
    "with_flops",
    "profile_memory",
    "with_stack",
    "with_modules",
    "use_cpu",
    "acc_events",
    "experimental_config",
    "custom_trace_id_callback",
    "post_processing_timeout_s",
)


class profile:
    """Context manager that records the ops, backward nodes and ``record_function`` ranges run
    inside it; read them with ``key_averages()``, ``table()``, ``function_events``,
    ``export_chrome_trace(path)``.

    ``use_device="cuda"`` (or ``use_cuda=True``) warns and profiles the CPU only, as torch does
    on a machine without CUDA.
    """

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        use_device: str | None = None,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config=None,
        acc_events: bool = False,
        custom_trace_id_callback=None,
        post_processing_timeout_s: float | None = None,
        activity_filters=None,
    ):
        self.enabled = enabled
        if not enabled:
            return
        self.use_cuda = use_cuda
        if use_cuda:
            warnings.warn(
                "The attribute `use_cuda` will be deprecated soon, "
                "please use ``use_device = 'cuda'`` instead.",
                FutureWarning,
                stacklevel=2,
            )
            use_device = "cuda"
        self.use_device = use_device
        if use_device is not None:
            if use_device not in _VALID_DEVICES:
                warnings.warn(f"The {use_device} is not a valid device option.", stacklevel=2)
            else:
                name = use_device.upper()
                warnings.warn(f"{name} is not available, disabling {name} profiling", stacklevel=2)
            self.use_cuda = False
            self.use_device = None
        # the events of the last window, built on first read; with acc_events the events of
        # earlier windows wait in ``_carried`` and join the next window's list
        self._function_events: EventList | None = None
        self._carried: EventList | None = None
        self._needs_processing = False
        self.entered = False
        self.record_shapes = record_shapes or with_flops  # FLOPs are counted from shapes
        given = locals()
        for option in _KEPT:
            setattr(self, option, given[option])
        self.trace_id = ""
        self._recorder = None
        if not use_cpu and not use_kineto:
            raise AssertionError("Device-only events supported only with Kineto (use_kineto=True)")
        if not use_cpu and self.use_device is None:
            raise AssertionError("No activities specified for the profiler")
        if post_processing_timeout_s is not None and post_processing_timeout_s < 0:
            raise ValueError("post_processing_timeout_s must be non-negative")

    # -- the window ----------------------------------------------------------------------
    def __enter__(self):
        if not self.enabled:
            return
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._prepare_trace()
        self._start_trace()
        return self

    def _prepare_trace(self) -> None:
        self.entered = True
        self._recorder = _recorder.Recorder(
            record_shapes=self.record_shapes,
            profile_memory=self.profile_memory,
            with_stack=self.with_stack,
            use_device=self.use_device,
            with_flops=self.with_flops,
        )

    def _start_trace(self) -> None:
        self.entered = True
        self._recorder.start()

    def __exit__(self, *exc_info):
        if not self.enabled:
            return
        previous, self._function_events = self._function_events, None
        if self.acc_events and previous:
            self._carried = previous
        self._needs_processing = True
        self._recorder.stop()
        if self.acc_events:
            self._ensure_function_events()
        return False

    def _render(self, show) -> str:
        if self._needs_processing:
            self._ensure_function_events()
        if self._function_events is None:
            return "<unfinished torch.autograd.profile>"
        return show(self._function_events)

    def __repr__(self) -> str:
        return self._render(repr)

    def __str__(self) -> str:
        return self._render(str)

    # -- results -------------------------------------------------------------------------
    def _ensure_function_events(self) -> None:
        if self._function_events is not None:
            return
        self._needs_processing = False
        if self._recorder is not None and not self._recorder.active:
            events = self._recorder.events()
        else:  # not run yet, or still running: torch has no results either
            events = EventList([], use_device=self.use_device, profile_memory=self.profile_memory)
            events._build_tree()
        self._function_events = events
        carried, self._carried = self._carried, None
        if carried and self.acc_events:
            events.extend(carried)

    def _results(self) -> EventList:
        self._ensure_function_events()
        return self._function_events

    @property
    def function_events(self) -> EventList:
        return self._results()

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_src_column_width=75,
        max_name_column_width=55,
        max_shapes_column_width=80,
        header=None,
        top_level_events_only=False,
    ) -> str:
        """Return the events as a table (see ``EventList.table``)."""
        return self._results().table(
            sort_by=sort_by,
            row_limit=row_limit,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            header=header,
            top_level_events_only=top_level_events_only,
        )

    def export_chrome_trace(self, path: str, metadata=None, use_python_export=False) -> None:
        """Write the trace as Chrome trace JSON (torch's Kineto layout: ``traceEvents``)."""
        from ember.profiler._trace import write_trace

        write_trace(self._recorder, path, metadata or {})

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the stacks of the events (needs ``with_stack=True``) for flame graphs."""
        events = self._results()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return events.export_stacks(path, metric)

    def key_averages(
        self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False
    ) -> EventList:
        """Return the events averaged per name (see ``EventList.key_averages``)."""
        # (EventList spells the first one group_by_input_shapes, as torch's)
        grouping = (group_by_input_shape, group_by_stack_n, group_by_overload_name)
        return self._results().key_averages(*grouping)

    def total_average(self):
        """Return the sum of all events as one ``FunctionEventAvg`` keyed ``"Total"``."""
        return self._results().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """Return the total CPU time: the sum of every event's self time."""
        return self._results().self_cpu_time_total


class record_function:
    """Context manager / decorator that records the block (or each call of the function) as a
    range named ``name`` in the active profilers; a no-op when none records."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self._handles = None

    def __enter__(self):
        self._handles = _recorder.begin_range(self.name) if _recorder.ACTIVE else []
        return self

    def __exit__(self, *exc_info):
        if not self.run_callbacks_on_exit:
            return
        if self._handles is None:
            raise AssertionError("Expected record to be set")
        _recorder.end_range(self._handles)
        self._handles = None

    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with self.__class__(self.name, self.args):
                return func(*args, **kwargs)

        return wrapped


class _Annotator:
    """An annotation context manager for an external profiler ember was not built with."""

    _tool = ""

    def __init__(self, enabled: bool = True, record_shapes: bool = False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return
        if self.entered:
            raise RuntimeError(f"{self._tool} annotation context manager is not reentrant")
        self._start()
        self.entered = True
        return self

    def __exit__(self, *exc_info):
        if self.enabled:
            self.entered = False
        return False


class emit_itt(_Annotator):
    """Context manager that annotates ops for Intel VTune (ITT); ember has no ITT build, so the
    ranges go nowhere, as with torch built without ITT."""

    _tool = "ITT"

    def _start(self) -> None:
        pass


class emit_nvtx(_Annotator):
    """Context manager that annotates ops for NVIDIA's nvprof / Nsight: needs CUDA, which ember
    does not have (entering raises, as torch without CUDA does)."""

    _tool = "NVTX"

    def _start(self) -> None:
        raise AssertionError("Torch not compiled with CUDA enabled")

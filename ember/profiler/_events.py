"""The profiler's results, as ``torch.autograd.profiler_util``: ``FunctionEvent`` (one recorded
range), ``FunctionEventAvg`` (events averaged over a key) and ``EventList`` (a list of either,
with ``table``, ``key_averages``, ``total_average``, ``export_chrome_trace``, ``export_stacks``).

Times are in microseconds from the start of the profile. One event is the child of another when
its interval lies inside the other's on the same thread; self time is an event's own time minus
its children's.
"""

from __future__ import annotations

import enum
import itertools
import json
from collections import defaultdict
from operator import attrgetter


class DeviceType(enum.IntEnum):
    """The device an event ran on (``torch.autograd.DeviceType``'s values)."""

    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20

    def __str__(self) -> str:
        return f"DeviceType.{self.name}"


def _format_time(time_us: float) -> str:
    """Return a time in us as torch prints it: ``1.234s``, ``1.234ms`` or ``1.234us``."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_time_us: float) -> str:
    """Return ``time_us`` as a percentage of ``total_time_us`` (``NaN`` for a zero total)."""
    if total_time_us == 0:
        return "NaN"
    return f"{time_us / total_time_us:.2%}"


def _format_memory(nbytes: int) -> str:
    """Return a byte count as torch prints it: ``12 B``, ``1.50 KB``, ``2.00 MB``, ``1.00 GB``."""
    kb, mb, gb = 1024, 1024 * 1024, 1024 * 1024 * 1024
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return str(nbytes) + " B"


def _formatted(attr: str) -> property:
    return property(lambda self: _format_time(getattr(self, attr)), doc=f"``{attr}``, printed")


class FormattedTimesMixin:
    """The ``*_str`` formatted times and the per-call averages of an event or an average.

    Every time attribute ``t`` in ``_FORMATTED`` gets a read-only ``t_str``: the value as the
    tables print it (``12.000us``, ``1.500ms``, ``2.000s``).
    """

    _FORMATTED = (
        "cpu_time",
        "device_time",
        "cpu_time_total",
        "device_time_total",
        "self_cpu_time_total",
        "self_device_time_total",
    )

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self) -> float:
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count

    @property
    def cuda_time(self) -> float:
        return self.device_time


for _attr in FormattedTimesMixin._FORMATTED:
    setattr(FormattedTimesMixin, _attr + "_str", _formatted(_attr))
del _attr


class Interval:
    """A ``[start, end]`` time range in microseconds."""

    def __init__(self, start: float, end: float):
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """Return the length of the interval."""
        return self.end - self.start


# the constructor arguments a FunctionEvent keeps as given, each as the attribute of its name
_GIVEN_FIELDS = (
    "id",
    "node_id",
    "name",
    "overload_name",
    "trace_name",
    "thread",
    "fwd_thread",
    "input_shapes",
    "concrete_inputs",
    "kwinputs",
    "stack",
    "scope",
    "use_device",
    "cpu_memory_usage",
    "device_memory_usage",
    "is_async",
    "is_remote",
    "sequence_nr",
    "device_type",
    "device_index",
    "is_legacy",
    "flops",
    "is_user_annotation",
    "input_dtypes",
    "structured_input_shapes",
    "structured_input_strides",
)


class FunctionEvent(FormattedTimesMixin):
    """Profiling information about a single function call (an op, a backward node, a range)."""

    def __init__(
        self,
        id,
        name,
        thread,
        start_us,
        end_us,
        overload_name=None,
        fwd_thread=None,
        input_shapes=None,
        stack=None,
        scope=0,
        use_device=None,
        cpu_memory_usage=0,
        device_memory_usage=0,
        is_async=False,
        is_remote=False,
        sequence_nr=-1,
        node_id=-1,
        device_type=DeviceType.CPU,
        device_index=0,
        device_resource_id=None,
        is_legacy=False,
        flops=None,
        trace_name=None,
        concrete_inputs=None,
        kwinputs=None,
        is_user_annotation=False,
        input_dtypes=None,
        structured_input_shapes=None,
        structured_input_strides=None,
        **_ignored,
    ):
        given = locals()
        for field in _GIVEN_FIELDS:
            setattr(self, field, given[field])
        self.time_range = Interval(start_us, end_us)
        self.kernels: list = []
        self.count: int = 1
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.device_resource_id = thread if device_resource_id is None else device_resource_id
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1
        self.total_device_percent = -1

    def append_cpu_child(self, child: FunctionEvent) -> None:
        """Append a direct CPU child (its interval lies inside this event's)."""
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent: FunctionEvent) -> None:
        """Set the immediate CPU parent (the innermost event whose interval holds this one)."""
        self.cpu_parent = parent

    def _exclusive(self, attr: str):
        # "self" figures: this event's total minus its children's; only synchronous CPU events
        # have children to subtract, every other kind reports zero
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return getattr(self, attr) - sum(getattr(c, attr) for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self._exclusive("cpu_memory_usage")

    @property
    def self_device_memory_usage(self) -> int:
        return 0

    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us() if self.device_type == DeviceType.CPU else 0

    @property
    def self_cpu_time_total(self) -> float:
        return self._exclusive("cpu_time_total")

    @property
    def device_time_total(self) -> float:
        return 0

    @property
    def self_device_time_total(self) -> float:
        return 0

    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total

    @property
    def key(self) -> str:
        return self.name

    def __repr__(self) -> str:
        d = self.use_device
        return (
            f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
            f"device_type={self.device_type} node_id={self.node_id} cpu_time={self.cpu_time_str} "
            f"start_us={self.time_range.start} end_us={self.time_range.end} "
            f"cpu_children={str([child.id for child in self.cpu_children])} "
            f"{d}_time={self.device_time_str} name={self.name} thread={self.thread} "
            f"input_shapes={str(self.input_shapes)} cpu_memory_usage={self.cpu_memory_usage} "
            f"{d}_memory_usage={self.device_memory_usage} is_async={self.is_async} "
            f"is_remote={self.is_remote} seq_nr={self.sequence_nr} is_legacy={self.is_legacy}>"
        )


class FunctionEventAvg(FormattedTimesMixin):
    """Statistics of the events sharing one key (name, and input shapes or stack if asked)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count: int = 0
        self.node_id: int = 0
        self.is_async: bool = False
        self.is_remote: bool = False
        self.use_device = None
        self.cpu_time_total: float = 0
        self.device_time_total: float = 0
        self.self_cpu_time_total: float = 0
        self.self_device_time_total: float = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage: int = 0
        self.device_memory_usage: int = 0
        self.self_cpu_memory_usage: int = 0
        self.self_device_memory_usage: int = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy: bool = False
        self.flops: int = 0

    # taken from the first event added (the key's representative)
    _FROM_FIRST = (
        "key",
        "node_id",
        "is_async",
        "is_remote",
        "cpu_parent",
        "cpu_children",
        "overload_name",
        "input_shapes",
        "stack",
        "scope",
        "device_type",
        "is_legacy",
        "use_device",
        "is_user_annotation",
    )
    # summed over the events added
    _SUMMED = (
        "cpu_time_total",
        "device_time_total",
        "self_cpu_time_total",
        "self_device_time_total",
        "cpu_memory_usage",
        "device_memory_usage",
        "self_cpu_memory_usage",
        "self_device_memory_usage",
        "count",
    )

    def add(self, other) -> FunctionEventAvg:
        """Add an event's (or another average's) statistics to this one."""
        if self.key is None:
            for attr in self._FROM_FIRST:
                setattr(self, attr, getattr(other, attr))
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        for attr in self._SUMMED:
            setattr(self, attr, getattr(self, attr) + getattr(other, attr))
        # flops: None (not counted) is absorbing only while nothing was counted
        if self.flops is None:
            self.flops = other.flops
        elif other.flops is not None:
            self.flops += other.flops
        return self

    def __iadd__(self, other) -> FunctionEventAvg:
        return self.add(other)

    def __repr__(self) -> str:
        d = "cuda" if not self.use_device else self.use_device
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
            f"cpu_time={self.cpu_time_str}  self_{d}_time={self.self_device_time_total_str} "
            f"{d}_time={self.device_time_str} input_shapes={str(self.input_shapes)} "
            f"cpu_memory_usage={self.cpu_memory_usage} "
            f"{d}_memory_usage={self.device_memory_usage}>"
        )


def _self_and_ancestors(evt):
    while evt is not None:
        yield evt
        evt = evt.cpu_parent


def _holds(outer: FunctionEvent, inner: FunctionEvent) -> bool:
    # ``inner`` starts before ``outer`` ends and does not outlast it
    end = outer.time_range.end
    return inner.time_range.start < end and inner.time_range.end <= end


class EventList(list):
    """A list of profiling events (``FunctionEvent`` or ``FunctionEventAvg``) with helpers to
    aggregate, print and export them."""

    def __init__(
        self,
        *args,
        use_device: str | None = None,
        profile_memory: bool = False,
        with_flops: bool = False,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._tree_built = False
        self._with_flops = with_flops

    def _build_tree(self) -> None:
        self._populate_cpu_children()
        self._remove_dup_nodes()
        self._set_backward_stacktraces()
        self._tree_built = True

    def __str__(self) -> str:
        return self.table()

    def _remove_dup_nodes(self) -> None:
        # an event whose only child has its name (a re-entered range) is merged with the child
        while True:
            to_delete = set()
            for idx, evt in enumerate(self):
                parent = evt.cpu_parent
                if parent is not None and parent.name == evt.name and len(parent.cpu_children) == 1:
                    parent.cpu_children = evt.cpu_children
                    parent.kernels = evt.kernels
                    for ch in evt.cpu_children:
                        ch.cpu_parent = parent
                    to_delete.add(idx)
            if not to_delete:
                break
            kept = [ev for i, ev in enumerate(self) if i not in to_delete]
            self.clear()
            self.extend(kept)

    def _populate_cpu_children(self) -> None:
        """Link every event to the innermost event of its thread whose interval holds it."""
        events = sorted(
            (e for e in self if not e.is_async and e.device_type == DeviceType.CPU),
            key=attrgetter("thread"),
        )
        for _, thread_events in itertools.groupby(events, key=lambda e: (e.thread, e.node_id)):
            ordered = sorted(thread_events, key=lambda e: [e.time_range.start, -e.time_range.end])
            # ``open_ranges``: the chain of events whose intervals hold the current time;
            # events come sorted by start (longest first), so the innermost open range that
            # still holds an event is its parent
            open_ranges: list[FunctionEvent] = []
            for event in ordered:
                while open_ranges and not _holds(open_ranges[-1], event):
                    open_ranges.pop()
                if open_ranges:
                    open_ranges[-1].append_cpu_child(event)
                    event.set_cpu_parent(open_ranges[-1])
                open_ranges.append(event)

    def _set_backward_stacktraces(self) -> None:
        # events inside a backward node take the stack of the forward op that made the node
        # (scope 1 is a backward-function record)
        def backward_ancestor(evt):
            for ancestor in _self_and_ancestors(evt):
                if ancestor.scope == 1:
                    return ancestor
            return None

        backward_of = {evt: backward_ancestor(evt) for evt in self}
        forward_stack = {}  # (sequence number, thread) of a forward op -> its stack
        for evt, node in backward_of.items():
            if node is None and evt.stack is not None:
                forward_stack.setdefault((evt.sequence_nr, evt.thread), evt.stack)
        for evt, node in backward_of.items():
            if node is not None:
                evt.stack = forward_stack.get((node.sequence_nr, node.fwd_thread), [])

    @property
    def self_cpu_time_total(self) -> float:
        return sum(event.self_cpu_time_total for event in self)

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_src_column_width=75,
        max_name_column_width=55,
        max_shapes_column_width=80,
        header=None,
        top_level_events_only=False,
        time_unit=None,
    ) -> str:
        """Return the events as a table, sorted (descending) by the ``sort_by`` attribute:
        ``cpu_time``, ``cpu_time_total``, ``self_cpu_time_total``, ``cpu_memory_usage``,
        ``self_cpu_memory_usage``, ``count`` (and the ``cuda``/``device`` ones)."""
        from ember.profiler._table import _build_table

        return _build_table(
            self,
            sort_by=sort_by,
            row_limit=row_limit,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            header=header,
            profile_memory=self._profile_memory,
            with_flops=self._with_flops,
            top_level_events_only=top_level_events_only,
            time_unit=time_unit,
        )

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (a JSON list of ``"ph": "X"`` events; open it in
        ``chrome://tracing`` or Perfetto)."""
        out = [
            {
                "name": evt.trace_name,
                "ph": "X",
                "ts": evt.time_range.start,
                "dur": evt.time_range.elapsed_us(),
                "tid": evt.thread,
                "pid": "CPU functions",
                "args": {},
            }
            for evt in self
            if evt.trace_name is not None
        ]
        with open(path, "w") as f:
            json.dump(out, f)

    def supported_export_stacks_metrics(self) -> list[str]:
        return [
            "self_cpu_time_total",
            "self_cuda_time_total",
            "self_xpu_time_total",
            "self_privateuse1_time_total",
        ]

    def export_stacks(self, path: str, metric: str) -> None:
        """Write one ``frame;frame;... value`` line per event with a stack (flame graph input)."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError(
                "metric should be one of: " + str(self.supported_export_stacks_metrics())
            )
        translate = str.maketrans(" ;\t\n", "____")
        attr = metric.replace("cuda", "device").replace("xpu", "device")
        attr = attr.replace("privateuse1", "device")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack:
                    value = getattr(evt, attr)
                    if int(value) > 0:
                        frames = ";".join(e.translate(translate) for e in reversed(evt.stack))
                        f.write(f"{frames} {int(value)}\n")

    def key_averages(
        self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False
    ) -> EventList:
        """Return an ``EventList`` of ``FunctionEventAvg``: the events averaged per name (and
        per input shapes / top ``group_by_stack_n`` stack frames / overload if asked)."""
        if not self._tree_built:
            raise AssertionError("Expected tree to be built before calling key_averages")
        stats: dict = defaultdict(FunctionEventAvg)
        for evt in self:
            key = [
                str(evt.key),
                str(evt.node_id),
                str(evt.device_type),
                str(evt.is_legacy),
                str(evt.is_user_annotation),
            ]
            if group_by_overload_name:
                key.append(evt.overload_name)
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            stats[tuple(key)].add(evt)
        avg_list = EventList(
            stats.values(),
            use_device=self._use_device,
            profile_memory=self._profile_memory,
            with_flops=self._with_flops,
        )
        for evt in avg_list:
            evt.stack = evt.stack[:group_by_stack_n] if evt.stack is not None else []
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return avg_list

    def total_average(self) -> FunctionEventAvg:
        """Return one ``FunctionEventAvg`` keyed ``"Total"`` summing every event."""
        total = FunctionEventAvg()
        for evt in self:
            total += evt
            total.key = None
        total.key = "Total"
        return total

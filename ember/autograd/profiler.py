"""``torch.autograd.profiler``: the legacy profiler API (``profile``, ``record_function``) and
its result types; ``ember.profiler`` builds on the same recorder."""

from ember.autograd.profiler_util import (
    DeviceType,
    EventList,
    FormattedTimesMixin,
    FunctionEvent,
    FunctionEventAvg,
    Interval,
)
from ember.profiler._profile import emit_itt, emit_nvtx, profile, record_function
from ember.profiler.profiler import ProfilerActivity, kineto_available

MEMORY_EVENT_NAME = "[memory]"
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"

__all__ = [
    "profile",
    "record_function",
    "emit_itt",
    "emit_nvtx",
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "FormattedTimesMixin",
    "Interval",
    "DeviceType",
    "ProfilerActivity",
    "kineto_available",
]

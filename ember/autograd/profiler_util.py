"""``torch.autograd.profiler_util``: the profiler's result types and formatting helpers."""

from ember.profiler._events import (
    DeviceType,
    EventList,
    FormattedTimesMixin,
    FunctionEvent,
    FunctionEventAvg,
    Interval,
    _format_memory,
    _format_time,
    _format_time_share,
)
from ember.profiler._table import _build_table

__all__ = [
    "EventList",
    "FormattedTimesMixin",
    "Interval",
    "FunctionEvent",
    "FunctionEventAvg",
    "DeviceType",
    "_build_table",
    "_format_memory",
    "_format_time",
    "_format_time_share",
]

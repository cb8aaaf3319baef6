"""``ember.profiler``: torch's profiler for ember programs.

``profile`` records every op dispatched through the op table (as ``aten::<name>``), every
backward node the engine runs (``autograd::engine::evaluate_function: XBackward0`` holding
``XBackward0``) and every ``record_function`` range; ``key_averages().table()`` prints torch's
summary table, ``export_chrome_trace`` writes a Chrome/Perfetto/TensorBoard trace, and
``schedule`` + ``on_trace_ready`` + ``prof.step()`` profile chosen steps of a training loop.
"""

from ember.profiler._events import DeviceType
from ember.profiler._profile import record_function
from ember.profiler.profiler import (
    ProfilerAction,
    ProfilerActivity,
    kineto_available,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)
from ember.profiler.profiler import (
    _KinetoProfile as _KinetoProfile,
)

__all__ = [
    "profile",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
    "ProfilerAction",
    "ProfilerActivity",
    "kineto_available",
    "DeviceType",
    "record_function",
]

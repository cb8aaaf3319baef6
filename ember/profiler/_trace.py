"""Chrome trace export in the layout torch's Kineto writes (``prof.export_chrome_trace``): a JSON
object with ``schemaVersion``, ``deviceProperties``, ``traceEvents`` (metadata ``"M"`` events,
one complete ``"X"`` event per range with ``ts``/``dur`` in microseconds, ``"i"`` instant events
for memory) and ``traceName``. Chrome's ``chrome://tracing``, Perfetto and TensorBoard read it.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import uuid


def trace_dict(recorder, path: str, metadata: dict) -> dict:
    """Return the trace of one recorder's window as torch's Kineto JSON object."""
    pid = os.getpid()
    base_us = recorder.wall_ns / 1000
    events = []
    for _, native in recorder.threads.values():
        meta = {"ph": "M", "ts": base_us, "pid": pid, "tid": native}
        events.append(
            {**meta, "name": "thread_name", "args": {"name": f"thread {native} (python)"}}
        )
        events.append({**meta, "name": "thread_sort_index", "args": {"sort_index": native}})
    head = {"ph": "M", "ts": base_us, "pid": pid, "tid": 0}
    events[:0] = [
        {**head, "name": "process_name", "args": {"name": "python"}},
        {**head, "name": "process_labels", "args": {"labels": "CPU"}},
        {**head, "name": "process_sort_index", "args": {"sort_index": pid}},
    ]
    natives = {small: native for small, native in recorder.threads.values()}
    idx = 0
    xs = []  # (event, pid, tid) of the complete events, for the flow arrows
    for evt in recorder.events():
        if evt.trace_name is None:
            continue
        args = {"External id": evt.id, "Record function id": 0}
        if evt.sequence_nr >= 0:
            args["Sequence number"] = evt.sequence_nr
            args["Fwd thread id"] = 1 if evt.fwd_thread else 0
        if evt.input_shapes:
            args["Input type"] = evt.input_dtypes
            args["Input Strides"] = evt.structured_input_strides
            args["Input Dims"] = evt.input_shapes
        args["Ev Idx"] = idx
        idx += 1
        xs.append((evt, pid, natives.get(evt.thread, evt.thread)))
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation" if evt.is_user_annotation else "cpu_op",
                "name": evt.trace_name,
                "pid": pid,
                "tid": natives.get(evt.thread, evt.thread),
                "ts": round(base_us + evt.time_range.start, 3),
                "dur": round(evt.time_range.elapsed_us(), 3),
                "args": args,
            }
        )
    events += _flows(xs, base_us)
    total = 0
    for ts, nbytes, ident in sorted(recorder.memory):
        total += nbytes
        events.append(
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "s": "t",
                "name": "[memory]",
                "pid": pid,
                "tid": recorder.threads[ident][1] if ident in recorder.threads else 0,
                "ts": round(base_us + (ts - recorder.start_ns) / 1000, 3),
                "args": {
                    "Total Reserved": 0,
                    "Total Allocated": total,
                    "Bytes": nbytes,
                    "Device Id": -1,
                    "Device Type": 0,
                    "Ev Idx": idx,
                },
            }
        )
        idx += 1
    end_us = base_us + (recorder.end_ns - recorder.start_ns) / 1000
    events.append(
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": round(base_us, 3),
            "dur": round(end_us - base_us, 3),
            "args": {"Op count": 0},
        }
    )
    out = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "trace_id": uuid.uuid4().hex.upper(),
        "host_name": socket.gethostname(),
    }
    for k, v in metadata.items():
        try:
            out[k] = json.loads(v)
        except (TypeError, ValueError):
            out[k] = v
    out["displayTimeUnit"] = "ms"
    out["baseTimeNanoseconds"] = 0  # the ts are wall-clock microseconds already
    out["traceEvents"] = events
    out["traceName"] = path
    return out


def _flows(xs, base_us: float) -> list:
    """Return torch's forward -> backward flow arrows ("fwdbwd"): from the forward op that
    made a node (same sequence number) to the node's backward event."""
    forward, out = {}, []
    for evt, pid, tid in xs:
        if evt.sequence_nr < 0 or evt.name.startswith("autograd::engine::"):
            continue
        at = {"pid": pid, "tid": tid, "ts": round(base_us + evt.time_range.start, 3)}
        if evt.scope != 1:
            forward[evt.sequence_nr] = at
            continue
        start = forward.pop(evt.sequence_nr, None)
        if start is not None:
            flow = {"id": evt.sequence_nr, "cat": "fwdbwd", "name": "fwdbwd"}
            out.append({"ph": "s", **start, **flow})
            out.append({"ph": "f", **at, **flow, "bp": "e"})
    return out


def write_trace(recorder, path: str, metadata: dict) -> None:
    """Write the trace JSON to ``path`` (gzip-compressed when it ends with ``.gz``)."""
    if recorder is None:
        raise AssertionError("Profiler must be initialized before exporting chrome trace")
    text = json.dumps(trace_dict(recorder, path, metadata))
    if path.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)

"""``EventList.table``: the profiler's summary table, laid out as torch's (same columns, widths,
dashed separators and ``Self CPU time total`` footer)."""

from __future__ import annotations

import itertools

from ember.profiler._events import (
    EventList,
    _format_memory,
    _format_time,
    _format_time_share,
)

_COLUMN_WIDTH = 12
_SPACING = 2


def _sort_attr(sort_by: str) -> str:
    return (
        sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
    )


def _with_unit(time_us: float, default: str, time_unit) -> str:
    if time_unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if time_unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if time_unit == "us":
        return f"{time_us:.3f}us"
    return default


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width :]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _build_table(
    events,
    sort_by=None,
    header=None,
    row_limit=100,
    max_src_column_width=75,
    max_name_column_width=55,
    max_shapes_column_width=80,
    with_flops=False,
    profile_memory=False,
    top_level_events_only=False,
    time_unit=None,
) -> str:
    """Return a summary of events (``FunctionEvent`` or ``FunctionEventAvg``) as a table."""
    if len(events) == 0:
        return ""
    has_input_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    has_overload_names = any(
        e.overload_name is not None and len(e.overload_name) > 0 for e in events
    )
    if sort_by is not None:
        attr = _sort_attr(sort_by)
        events = EventList(
            sorted(events, key=lambda evt: getattr(evt, attr), reverse=True),
            profile_memory=profile_memory,
            with_flops=with_flops,
        )

    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack is not None and len(e.stack) > 0]
    has_stack = len(stacks) > 0
    src_width = None
    if has_stack:
        src_width = max(max(len(entry) for entry in stack) for stack in stacks) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    headers = ["Name"]
    if has_overload_names:
        headers.append("Overload Name")
    headers += ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    append_node_id = any(e.node_id != -1 for e in events)
    if append_node_id:
        headers.append("Node ID")

    row_format, header_sep, line_length = "", "", -_SPACING

    def add_column(padding, text_dir=">"):
        nonlocal row_format, header_sep, line_length
        row_format += "{: " + text_dir + str(padding) + "}" + " " * _SPACING
        header_sep += "-" * padding + " " * _SPACING
        line_length += padding + _SPACING

    add_column(name_width)
    if has_overload_names:
        add_column(name_width)
    for _ in headers[1 + has_overload_names :]:
        add_column(_COLUMN_WIDTH)
    if has_input_shapes:
        headers.append("Input Shapes")
        add_column(shapes_width)
    if has_stack:
        headers.append("Source Location")
        add_column(src_width, text_dir="<")
    flops_scale = 1.0
    if with_flops:
        raw = [e.flops for e in events if e.flops is not None and e.flops > 0]
        if raw:
            flops_scale, flops_header = _flops_scale(min(raw))
            headers.append(f"Total {flops_header}")
            add_column(_COLUMN_WIDTH)
        else:
            with_flops = False

    lines: list[str] = []
    self_total = sum(e.self_cpu_time_total for e in events)
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [header_sep, row_format.format(*headers), header_sep]

    # the first row_limit events shown (all of them for a negative limit)
    listed = (e for e in events if not (top_level_events_only and e.cpu_parent is not None))
    for evt in itertools.islice(listed, row_limit if row_limit >= 0 else None):
        name = _clip(evt.key, max_name_column_width)
        evt.self_cpu_percent = _format_time_share(evt.self_cpu_time_total, self_total)
        evt.total_cpu_percent = (
            _format_time_share(evt.cpu_time_total, self_total) if not evt.is_async else 0
        )
        row = [name]
        if has_overload_names:
            row.append(_clip(evt.overload_name, max_name_column_width))
        row += [
            evt.self_cpu_percent,
            _with_unit(evt.self_cpu_time_total, evt.self_cpu_time_total_str, time_unit),
            evt.total_cpu_percent,
            _with_unit(evt.cpu_time_total, evt.cpu_time_total_str, time_unit),
            _with_unit(evt.cpu_time, evt.cpu_time_str, time_unit),
        ]
        if profile_memory:
            row += [_format_memory(evt.cpu_memory_usage), _format_memory(evt.self_cpu_memory_usage)]
        row.append(evt.count)
        if append_node_id:
            row.append(evt.node_id)
        if has_input_shapes:
            row.append(str(evt.input_shapes)[:shapes_width])
        if with_flops:
            row.append(
                "--" if not evt.flops or evt.flops <= 0 else f"{evt.flops * flops_scale:8.3f}"
            )
        if has_stack:
            row.append(_trim_path(evt.stack[0], src_width) if len(evt.stack) > 0 else "")
        lines.append(row_format.format(*row))
        if has_stack:
            empty = [""] * (len(headers) - 1)
            for entry in evt.stack[1:]:
                lines.append(row_format.format(*(empty + [_trim_path(entry, src_width)])))
            lines.append(row_format.format(*(empty + [""])))

    lines.append(header_sep)
    lines.append(
        "Self CPU time total: " + _with_unit(self_total, _format_time(self_total), time_unit)
    )
    return "".join(line + "\n" for line in lines)


def _clip(text: str, width: int | None) -> str:
    # a name too wide for its column (within 3 of the width) is cut to width - 3 and ends "..."
    if width is None or len(text) < width - 3:
        return text
    return text[: width - 3] + "..."


def _flops_scale(flops: float) -> tuple[float, str]:
    import math

    names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    log_flops = max(0, min(math.log10(flops) / 3, float(len(names) - 1)))
    return pow(10, math.floor(log_flops) * -3.0), names[int(log_flops)]

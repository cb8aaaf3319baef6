"""``torch._dynamo.explain``: one capture, recorded past each graph break, cut into graphs.

The program runs once (its side effects once, as torch's explain runs it) under the recorder
in its explaining mode: a break does not end the recording but becomes an *event* that cuts
the calls recorded so far. A break inside a user function the captured one called also cuts at
that call and at its return (torch compiles the caller up to the call, then the callee as its
own frame). The cuts give the graphs (the runs of recorded calls between them; an empty run
compiles no graph), and a graph that a break ended carries that break's reason (a break with
no graph before it reports none, as torch's). For a plain function, each break is also placed
in the function's statements as ``resume.split`` places it: a break that cannot be resumed
(inside a loop, a ``with`` or ``try`` block) runs the rest of its frame eagerly, so the graphs
from that frame's start on are dropped (torch skips such a frame).
"""

from __future__ import annotations

import types

from ember._dynamo import capture as C
from ember._dynamo import resume


def _piece_holder(fn, piece):
    # a plan's compiled pieces are never run here: keep only their statements
    return types.SimpleNamespace(piece=piece)


def _frame_skipped_at(fn, events) -> int | None:
    """The position in the calls from which ``fn``'s frame runs eagerly (a break it cannot
    resume after), or None. Walks the breaks through the plans ``resume.split`` makes."""
    piece = resume.piece_of(fn) if callable(fn) else None
    if piece is None:  # (not a plain function with source: each break just cuts)
        return None
    span, branches, start = None, None, 0
    for positions, _reason, _stack, line in events:
        if line is None or (span is not None and span[0] <= line <= span[1]):
            continue  # (a break inside the statement already running eagerly)
        if branches is not None:
            piece = next((b.piece for b in branches if _holds(b.piece, line)), None)
            branches = None
        if piece is None:
            continue
        try:
            plan = resume.split(piece, line, _piece_holder)
        except Exception:
            plan = None
        if plan is None:
            return start
        span, start = plan.span, positions[0]
        if plan.kind == "if":
            piece, branches = None, plan.branches
        else:
            piece = plan.rest.piece if plan.rest is not None else None
    return None


def _holds(piece, line) -> bool:
    return any(s.lineno <= line <= s.end_lineno for s in piece.body)


def cut(fn, rec, result):
    """``(graphs, break reasons, ops per graph)`` of an explaining capture ``rec`` of ``fn``;
    ``graphs`` are ``fx.GraphModule`` s of each graph's op calls."""
    from ember._dynamo import GraphCompileReason

    calls = rec.calls
    if rec.failure is not None:  # found at the end (random draws, grad mode): all eager
        return [], [GraphCompileReason(rec.failure)], []
    stop = _frame_skipped_at(fn, rec.events)
    end = len(calls) if stop is None else stop
    bounds = sorted({0, end, *(c for c in rec.cuts if c < end)})
    reason_at: dict = {}  # a cut position -> the first break ending a graph there
    for positions, reason, stack, _line in rec.events:
        if stop is not None and positions[0] >= stop:
            break
        for p in positions:
            reason_at.setdefault(p, (reason, stack))
    leaves = _result_values(rec, result)
    graphs, reasons, ops = [], [], []
    for a, b in zip(bounds, bounds[1:]):
        seg = [c for c in calls[a:b] if type(c) is C.Call]
        if not seg:
            continue
        ops.append([c.label for c in seg])
        graphs.append(_graph(calls, a, b, seg, leaves))
        got = reason_at.get(b)
        if got is not None:
            reason, stack = got
            r = GraphCompileReason(reason, stack[-1] if stack else None)
            if len(stack) > 1:
                import traceback

                r.user_stack = [traceback.FrameSummary(*w) for w in stack]
            reasons.append(r)
    return graphs, reasons, ops


def _result_values(rec, result) -> set:
    from ember._dynamo.eval_frame import _flatten

    ts: list = []
    _flatten(result, ts, [])
    return {id(rec.by_tensor.get(id(t))) for t in ts if rec.by_tensor.get(id(t)) is not None}


def _graph(calls, a, b, seg, leaves):
    """The ``fx.GraphModule`` of one graph: values it reads from before it are placeholders,
    values later code (or the result) reads are its outputs."""
    from ember._inductor import to_ir

    made = {id(o) for c in seg if c.op is not None for o in c.outs}
    ins, seen = [], set()
    for c in seg:
        for v in C.call_values(c):
            if v.kind != "ref" and id(v) not in made and id(v) not in seen:
                seen.add(id(v))
                ins.append(v)
    later = {id(v) for c in calls[b:] if type(c) is C.Call for v in C.call_values(c)}
    later |= {id(c.value) for c in calls[b:] if type(c) is C.Read}
    outs = [o for c in seg for o in c.outs if id(o) in made and (id(o) in later or id(o) in leaves)]
    try:
        return to_ir.to_fx(ins, seg, outs)
    except Exception:  # (a call the fx frontend cannot spell: the labels stand for it)
        return None


def guards(module, rec, tensors) -> list:
    """What a compiled entry of this run would check, one condition a line: the inputs'
    shapes, dtypes, strides and flags, grad mode, the default dtype, the modules' training
    flags, the parameters' identity, and each value read from a tensor (a data guard)."""
    from ember._dynamo.eval_frame import _make_check

    refs = [v for v in rec.values if v.kind == "ref"]
    src = _make_check(types.SimpleNamespace(module=module), rec, tensors, refs).source
    body = src.split("return (", 1)[1].rsplit(")", 1)[0]
    out = [c.strip() for c in body.split("\n        and ") if c.strip()]
    for c in rec.calls:
        if type(c) is C.Read:
            out.append(f"{c.kind}({c.value.name}) == {c.result!r}")
    return out

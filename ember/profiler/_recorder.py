"""The profiler's recording core.

A ``Recorder`` collects raw ranges while it is active: every dispatched op (through the op
table's observer hook, ``ember._ops.registry.add_observer``), every backward node the engine
runs (``ember.autograd.engine.NODE_PROFILER``: an ``autograd::engine::evaluate_function: X``
range holding an ``X`` range, as torch records them) and every ``record_function`` range. With
``profile_memory`` it also notes each op's freshly allocated result buffers and, through weak
references, when they are freed. ``events()`` turns the ranges into ``FunctionEvent``s.

Nothing here costs anything while no profiler records: the op table and the engine each test
one module-level list.
"""

from __future__ import annotations

import bisect
import os
import sys
import threading
import weakref
from time import perf_counter_ns, time_ns

from ember._core import profiling as _profiling
from ember._core.node import AccumulateGrad
from ember._core.tensor import Tensor
from ember._ops import registry
from ember.autograd import engine
from ember.profiler._events import EventList, FunctionEvent

# the recorders collecting now (a record_function range or a backward node goes to each): the
# core's slot, which code below the profiler tests (ember/_core/profiling.py)
ACTIVE: list = _profiling.ACTIVE

# ember op-table names whose aten name differs (the rest are aten's own names)
_ATEN_NAMES = {
    "entr": "special_entr",
    "erfcx": "special_erfcx",
    "i0e": "special_i0e",
    "i1e": "special_i1e",
    "log_ndtr": "special_log_ndtr",
    "ndtr": "special_ndtr",
    "ndtri": "special_ndtri",
    "xlog1py": "special_xlog1py",
    "unique": "_unique2",
    "pack_padded_sequence": "_pack_padded_sequence",
    "adaptive_avg_pool2d_backward": "_adaptive_avg_pool2d_backward",
    "upsample_bilinear2d_aa": "_upsample_bilinear2d_aa",
    "upsample_bilinear2d_aa_backward": "_upsample_bilinear2d_aa_backward",
    "upsample_bicubic2d_aa": "_upsample_bicubic2d_aa",
    "upsample_bicubic2d_aa_backward": "_upsample_bicubic2d_aa_backward",
}


# ember's own helper ops, with no aten op of that name: shown as ``ember::<name>``
_EMBER_ONLY = frozenset(
    {
        "as_strided_backward",
        "convolution_weight",
        "index_backward",
        "normal_cdf",
        "prod_others",
        "rnn_layer",
        "rnn_layer_backward",
    }
)


def aten_name(op_name: str) -> str:
    """Return torch's profiler name (``aten::<name>``) for an op of ember's table
    (``ember::<name>`` for ember's own helper ops)."""
    if op_name in _EMBER_ONLY:
        return "ember::" + op_name
    name = _ATEN_NAMES.get(op_name)
    if name is None:
        # ember's interpolate ops are "upsample_upsample<mode><n>d": torch's "upsample_<mode><n>d"
        name = op_name
        if name.startswith("upsample_upsample"):
            mode = name[len("upsample_upsample") :]
            for m in ("nearestexact", "nearest", "bilinear", "bicubic", "trilinear", "linear"):
                if mode.startswith(m):
                    name = "_upsample_nearest_exact" if m == "nearestexact" else "upsample_" + m
                    name += mode[len(m) :]
                    break
    return "aten::" + name


_NAMES: dict = {}  # op -> aten name, filled as ops are seen

# fields of a raw record (a list, so that exit can fill it in place)
_NAME, _START, _END, _THREAD, _SHAPES, _SEQ, _SCOPE = range(7)
_STACK, _USER, _FWD, _CAT, _ROOTS, _OUT, _NODE, _TYPES, _STRIDES = range(7, 16)
USER_SCOPE = 7
BACKWARD_SCOPE = 1


def _root(a):
    while a.base is not None:
        a = a.base
    return a


# torch's C++ names of the dtypes, as the profiler reports them ("Input type")
_CPP_TYPES = {
    "torch.float32": "float",
    "torch.float64": "double",
    "torch.float16": "c10::Half",
    "torch.bfloat16": "c10::BFloat16",
    "torch.complex64": "c10::complex<float>",
    "torch.complex128": "c10::complex<double>",
    "torch.int64": "long int",
    "torch.int32": "int",
    "torch.int16": "short int",
    "torch.int8": "signed char",
    "torch.uint8": "unsigned char",
    "torch.bool": "bool",
}


def _describe(inputs, params) -> tuple[list, list, list]:
    """Return the shapes, C++ type names and strides of an op's arguments, as torch records
    them with ``record_shapes`` (a number is a 0-d tensor; a parameter a Scalar, list, ...)."""
    shapes, types, strides = [], [], []
    for x in inputs:
        if isinstance(x, Tensor):
            a = x._data
            shapes.append(list(a.shape))
            types.append(_CPP_TYPES.get(str(x.dtype), str(x.dtype)))
            strides.append([s // a.itemsize for s in a.strides] if a.itemsize else [])
        else:
            shapes.append([])
            strides.append([])
            if isinstance(x, bool):
                types.append("bool")
            elif isinstance(x, int):
                types.append("long int")
            elif isinstance(x, float):
                types.append("double")
            elif isinstance(x, (list, tuple)):
                types.append("TensorList" if x and isinstance(x[0], Tensor) else "ScalarList")
            else:
                types.append("")
    for v in params.values():
        shapes.append([])
        strides.append([])
        if v is None or isinstance(v, str):
            types.append("")
        elif isinstance(v, (list, tuple)):
            types.append("ScalarList")
        else:
            types.append("Scalar")
    return shapes, types, strides


# ember's own op machinery stands for torch's C++: its frames are not shown in stacks
_EMBER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_HIDDEN = tuple(
    os.path.join(_EMBER, p)
    for p in ("_ops", "_core", "profiler", "autograd" + os.sep + "engine", "overrides.py")
)


def _short_path(path: str) -> str:
    best = path
    for p in sys.path:
        if p and path.startswith(p + os.sep) and len(path) - len(p) - 1 < len(best):
            best = path[len(p) + 1 :]
    return best


def _stack() -> list[str]:
    """Return the Python stack, innermost first, as ``file(line): function`` entries."""
    out = []
    f = sys._getframe(2)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(_HIDDEN):
            out.append(f"{_short_path(path)}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


class Recorder:
    """Collects the ranges of one profiling window (``start`` ... ``stop``)."""

    def __init__(
        self,
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
        use_device=None,
        with_flops=False,
    ):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.use_device = use_device
        self.records: list = []
        self.memory: list = []  # (time ns, bytes, thread ident)
        self._finalizers: list = []
        self.threads: dict = {}  # thread ident -> (profiler thread id, native id)
        self.start_ns = self.end_ns = self.wall_ns = 0
        self.active = False

    # -- the window ----------------------------------------------------------------------
    def start(self) -> None:
        self.wall_ns = time_ns()
        self.start_ns = perf_counter_ns()
        self.active = True
        ACTIVE.append(self)
        registry.add_observer(self)
        registry.watch_composites(self)
        self._composites: list = []  # the open composite ranges, innermost last
        if not engine.NODE_PROFILER:
            engine.NODE_PROFILER.append(_profiled_node)

    def stop(self) -> None:
        if not self.active:
            return
        self.active = False
        self.end_ns = perf_counter_ns()
        try:
            registry.remove_observer(self)
        finally:
            ACTIVE.remove(self)
            if not ACTIVE:
                engine.NODE_PROFILER.clear()
            for f in self._finalizers:
                f.detach()
            self._finalizers = []

    # -- raw ranges ----------------------------------------------------------------------
    def _thread(self) -> int:
        ident = threading.get_ident()
        if ident not in self.threads:
            self.threads[ident] = (len(self.threads) + 1, threading.get_native_id())
        return ident

    def begin(self, name, scope=0, shapes=None, seq=-1, user=False, fwd=0, cat="cpu_op") -> list:
        """Open a range named ``name``; ``end(rec)`` closes it."""
        stack = _stack() if self.with_stack else None
        rec = [name, 0, 0, self._thread(), shapes, seq, scope, stack, user, fwd, cat]
        rec += (None, 0, None, None, None)
        self.records.append(rec)
        rec[_START] = perf_counter_ns()
        return rec

    @staticmethod
    def end(rec) -> None:
        rec[_END] = perf_counter_ns()

    # -- the op table's observer ---------------------------------------------------------
    def enter(self, op, inputs, params, self_):
        name = _NAMES.get(op)
        if name is None:
            name = _NAMES[op] = aten_name(op.name)
        if self._composites:
            top = self._composites[-1]
            if top[_NAME] == name and top[_CAT] == "composite":
                top[_CAT] = "dropped"  # the composite is this one op (aten::relu): once
        shapes = types = strides = None
        if self.record_shapes:
            shapes, types, strides = _describe(inputs, params)
        rec = self.begin(name, shapes=shapes)
        rec[_TYPES] = types
        rec[_STRIDES] = strides
        rec[_NODE] = op.node_cls
        if self.profile_memory:
            # the buffers the op is handed: a result sharing one is no allocation
            roots = {id(_root(x._data)) for x in inputs if isinstance(x, Tensor)}
            if self_ is not None:
                roots.add(id(_root(self_._data)))
            rec[_ROOTS] = roots
        return rec

    def exit(self, rec, result) -> None:
        if result is not None:
            first = result[0] if type(result) is tuple else result
            if isinstance(first, Tensor):
                node = first._grad_fn
                if node is not None and type(node) is rec[_NODE]:  # the node this op made
                    rec[_SEQ] = node._seq
            if self.profile_memory:
                self._note_allocations(rec, result)
            if self.with_flops and isinstance(first, Tensor):
                rec[_OUT] = first._data.size
        rec[_END] = perf_counter_ns()

    # -- composites (F.linear, F.conv2d...): torch's aten::linear ranges around their ops ------
    def enter_composite(self, kind, fn, args, kwargs):
        if kind in registry.UNPROFILED:
            return None
        name = "aten::" + fn.__name__
        shapes = types = strides = None
        if self.record_shapes:
            shapes, types, strides = _describe(_schema_args(fn, args, kwargs), {})
        rec = self.begin(name, shapes=shapes, cat="composite")
        rec[_TYPES] = types
        rec[_STRIDES] = strides
        self._composites.append(rec)
        return rec

    def exit_composite(self, rec, result) -> None:
        if rec is None:
            return
        rec[_END] = perf_counter_ns()
        if self._composites and self._composites[-1] is rec:
            self._composites.pop()
        if rec[_CAT] == "composite":
            rec[_CAT] = "cpu_op"

    def _note_allocations(self, rec, result) -> None:
        outs = result if type(result) is tuple else (result,)
        known = rec[_ROOTS]
        for t in outs:
            if not isinstance(t, Tensor) or t._base is not None:
                continue
            root = _root(t._data)
            if id(root) in known or root.nbytes == 0:
                continue
            known.add(id(root))
            ident = rec[_THREAD]
            self.memory.append((perf_counter_ns(), root.nbytes, ident))
            self._finalizers.append(weakref.finalize(root, self._freed, root.nbytes, ident))

    def _freed(self, nbytes, ident) -> None:
        if self.active:
            self.memory.append((perf_counter_ns(), -nbytes, ident))

    # -- results -------------------------------------------------------------------------
    def events(self) -> EventList:
        """Return the recorded ranges as ``FunctionEvent``s, linked into a tree."""
        t0 = self.start_ns
        threads = self.threads
        mem = sorted(self.memory)
        mem_ts = [m[0] for m in mem]
        used = [False] * len(mem)
        out = []
        for i, r in enumerate(self.records):
            if r[_CAT] == "dropped":
                continue
            end = r[_END] or self.end_ns
            tid = threads[r[_THREAD]][0]
            cpu_mem = 0
            if mem:
                lo = bisect.bisect_left(mem_ts, r[_START])
                hi = bisect.bisect_right(mem_ts, end)
                for j in range(lo, hi):
                    if mem[j][2] == r[_THREAD]:
                        cpu_mem += mem[j][1]
                        used[j] = True
            name = r[_NAME]
            shown = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
            out.append(
                FunctionEvent(
                    id=i + 1,
                    name=shown,
                    overload_name="",
                    trace_name=name,
                    thread=tid,
                    start_us=(r[_START] - t0) / 1000,
                    end_us=(end - t0) / 1000,
                    fwd_thread=tid if r[_SCOPE] == BACKWARD_SCOPE or r[_FWD] else 0,
                    input_shapes=r[_SHAPES] if r[_SHAPES] is not None else [],
                    input_dtypes=r[_TYPES] if r[_TYPES] is not None else [],
                    structured_input_strides=r[_STRIDES] if r[_STRIDES] is not None else [],
                    stack=r[_STACK] if r[_STACK] is not None else [],
                    scope=r[_SCOPE],
                    use_device=self.use_device,
                    cpu_memory_usage=cpu_mem,
                    sequence_nr=r[_SEQ],
                    flops=_flops(name, r[_SHAPES], r[_OUT]) if self.with_flops else 0,
                    is_user_annotation=r[_USER],
                )
            )
        for j, (ts, nbytes, ident) in enumerate(mem):
            if not used[j]:
                tid = threads.get(ident, (0,))[0]
                start = (ts - t0) / 1000
                out.append(
                    FunctionEvent(
                        id=len(self.records),
                        name="[memory]",
                        overload_name="",
                        trace_name=None,
                        thread=tid,
                        start_us=start,
                        end_us=start,
                        fwd_thread=tid,
                        input_shapes=[],
                        stack=[],
                        use_device=self.use_device,
                        cpu_memory_usage=nbytes,
                    )
                )
        events = EventList(
            out,
            use_device=self.use_device,
            profile_memory=self.profile_memory,
            with_flops=self.with_flops,
        )
        events._build_tree()
        return events


# torch's argument order of the composite aten ops whose Python function orders them
# otherwise (None: an argument Python has not, recorded as a scalar)
_SCHEMAS = {
    "batch_norm": (
        "input", "weight", "bias", "running_mean", "running_var", "training", "momentum", "eps",
        None,
    ),
    "layer_norm": ("input", "normalized_shape", "weight", "bias", "eps", None),
    "group_norm": ("input", "num_groups", "weight", "bias", "eps", None),
    # the random factories (their tensor-less arguments all show as [])
    "randn": ("size", "dtype", "layout", "device", "pin_memory"),
    "rand": ("size", "dtype", "layout", "device", "pin_memory"),
    "randperm": ("n", "dtype", "layout", "device", "pin_memory"),
    "randint": ("low", "high", "size", "dtype", "layout", "device", "pin_memory"),
    "randn_like": ("input", "dtype", "layout", "device", "pin_memory", "memory_format"),
    "rand_like": ("input", "dtype", "layout", "device", "pin_memory", "memory_format"),
    "normal": ("mean", "std", "size", "generator", "dtype", "layout", "device", "pin_memory"),
}  # fmt: skip


def _schema_args(fn, args, kwargs) -> list:
    """Return a composite call's arguments in the order of torch's schema, defaults filled."""
    import inspect

    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return list(args)
    bound.apply_defaults()
    a = bound.arguments
    order = _SCHEMAS.get(fn.__name__)
    if order is None:
        return [v for k, v in a.items() if k != "out"]
    return [a.get(k) if k is not None else False for k in order]


def _flops(name: str, shapes, out_numel: int) -> int:
    """Return torch's FLOP estimate for a matrix product, a 2-d convolution, add or mul."""
    if not shapes or not out_numel:
        return 0
    if name in ("aten::mm", "aten::matmul", "aten::bmm"):
        a = shapes[0]
        return 2 * out_numel * a[-1] if a else 0
    if name in ("aten::addmm", "aten::baddbmm", "aten::addbmm"):
        a = shapes[1] if len(shapes) > 1 else []
        batch = a[0] if name == "aten::addbmm" and a else 1
        return 2 * out_numel * a[-1] * batch if a else 0
    if name == "aten::convolution":
        w = shapes[1] if len(shapes) > 1 else []
        if len(w) == 4:  # torch counts 2-d convolutions only
            return 2 * out_numel * w[1] * w[2] * w[3]
        return 0
    if name in ("aten::add", "aten::mul"):
        return out_numel
    return 0


def _profiled_node(node, grads, anomaly):
    """Run a backward node (as the engine does) inside torch's two ranges for it."""
    name = node.name()
    recorders = [r for r in ACTIVE if r.active]
    seq = -1 if type(node) is AccumulateGrad else node._seq
    described = _describe(grads, {}) if any(r.record_shapes for r in recorders) else None
    outer = [
        r.begin("autograd::engine::evaluate_function: " + name, seq=seq, fwd=1) for r in recorders
    ]
    inner = []
    for r in recorders:
        rec = r.begin(name, scope=BACKWARD_SCOPE, seq=seq)
        if r.record_shapes:
            rec[_SHAPES], rec[_TYPES], rec[_STRIDES] = described
        inner.append(rec)
    outputs = None
    try:
        if anomaly:
            outputs = engine._call_function_anomaly(node, grads)
        else:
            outputs = engine._call_function(node, grads)
        return outputs
    finally:
        for r, rec in zip(recorders, inner):
            if r.profile_memory and outputs is not None:
                rec[_ROOTS] = {id(_root(g._data)) for g in grads if g is not None}
                r._note_allocations(rec, tuple(outputs))
        for rec in inner + outer:
            Recorder.end(rec)


def begin_range(name: str) -> list:
    """Open a user range (``record_function``) in every active recorder."""
    return [(r, r.begin(name, scope=USER_SCOPE, user=True, cat="user_annotation")) for r in ACTIVE]


def end_range(handles: list) -> None:
    """Close the ranges ``begin_range`` opened."""
    for _, rec in handles:
        Recorder.end(rec)


_profiling.begin_range, _profiling.end_range = begin_range, end_range

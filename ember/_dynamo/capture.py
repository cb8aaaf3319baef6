"""Capture: run a program once, eagerly, and record every op call it makes.

The recorder is an op-table observer (``ember._ops.registry.add_observer``): each top-level op
call becomes a :class:`Call` on SSA :class:`Value` s (an in-place call defines a new value for
the tensor it writes). Tensors the program did not receive and no recorded op made (parameters,
globals, constants it built) are lifted as *references*, read afresh on every run.

While a capture runs, every Python value read from a tensor (``bool(t)``, ``t.item()``,
``int(t)``, ``float(t)``) is recorded as a data guard; reads that hand the data itself to
Python (``t.tolist()``, ``t.numpy()``, printing) and Python side effects (``print``, stores
into globals, closures and attributes) make the program uncapturable: a *graph break*, whose
reason ``explain`` reports.
"""

from __future__ import annotations

import dis
import functools
import os
import sys

import numpy as np

from ember._core import dtype as D
from ember._core.grad_mode import STATE
from ember._core.tensor import Tensor, _wrap
from ember._ops import registry as R
from ember._ops.array_kernels import ABOVE as _KERNELS_ABOVE
from ember._ops.array_kernels import ACTIVE, array_kernel, rng_kernel  # noqa: F401

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Unsupported(RuntimeError):
    """Raised inside a capture for what it cannot record (torch._dynamo.exc.Unsupported)."""


class Value:
    """One SSA value: an array of known shape and dtype; ``root`` is the value whose storage
    it views (itself for a fresh array)."""

    __slots__ = ("id", "kind", "shape", "dtype", "strides", "root", "tensor", "name", "arr")

    def __init__(self, vid, kind, arr, root, tensor=None):
        self.id = vid
        self.kind = kind  # "input" | "ref" | "op" | "seed"
        self.shape = arr.shape
        self.dtype = arr.dtype
        self.strides = arr.strides
        self.root = vid if root is None else root
        self.tensor = tensor  # for refs: the Tensor read on every run
        self.name = f"v{vid}"
        self.arr = arr  # the array at capture (dropped once compiled)


class Call:
    """One kernel call: ``outs = fn(*args, **params)``; ``args`` holds Values and constants.

    ``op`` is the op-table entry (None for a helper kernel); ``target`` the Value an in-place
    call writes into; ``casts`` the dtype each Value argument is promoted to (or None)."""

    __slots__ = (
        "op", "fn", "args", "params", "outs", "target", "casts", "multi", "node", "label", "slots",
    )  # fmt: skip

    def __init__(self, op, fn, args, params, outs, target=None, casts=None, multi=False):
        self.op = op
        self.fn = fn
        self.args = args
        self.params = params
        self.outs = outs
        self.target = target
        self.casts = casts
        self.multi = multi
        self.node = None  # the autograd node the eager call made (for the backward)
        self.label = op.name if op is not None else getattr(fn, "__name__", "kernel")


class Read:
    """A Python value read from a tensor: re-read and compared on every run."""

    __slots__ = ("value", "kind", "result", "pos")

    def __init__(self, value, kind, result, pos):
        self.value = value
        self.kind = kind
        self.result = result
        self.pos = pos  # number of calls recorded before the read


OUT_TARGET = type("OutTarget", (), {"__repr__": lambda self: "<the written tensor>"})()


def _holds_array(x) -> bool:
    if isinstance(x, (np.ndarray, Tensor)):
        return True
    if type(x) in (tuple, list):
        return any(_holds_array(e) for e in x)
    return False


class Recorder:
    """The observer that records one run; ``values``/``calls``/``reads`` are the trace."""

    def __init__(self):
        self.values: list[Value] = []
        self.calls: list = []  # Call or Read, in program order
        self.by_tensor: dict = {}  # id(Tensor) -> Value
        self.by_array: dict = {}  # id(ndarray) -> Value (tensors sharing an array alias it)
        self.keep: list = []  # keeps recorded tensors alive so their ids stay theirs
        self.depth = 0
        self._failure: str | None = None
        self.code = None  # the captured function's code: a break is located in it
        self.break_line: int | None = None  # the line of ``code`` running when it broke
        self.mutated_roots: set = set()  # roots of input/ref storage written in place
        self.first_mutation: int | None = None  # call index of the first such write
        self.node_call: dict = {}  # id(autograd node) -> Call
        self.rng_expected = None  # the generator's state after the last recorded draw
        self.rng_before = None  # ember.get_rng_state() before the run
        self.effects = False  # a recorded kernel wrote into data (running statistics)
        self.shape_read = False  # the user's code read a size (the program may depend on it)
        # ``explain``: record past each break instead of stopping at the first; each break is
        # an event (its cuts, reason, user stack, line in ``code``) and cuts the calls
        self.explaining = False
        self.events: list = []  # ([cut positions], reason, user stack, line in code)
        self.cuts: list = []  # positions in calls where a graph ends (breaks, frame returns)
        self.watch = None  # the _Watch running (its user frames and where they began)

    @property
    def failure(self) -> str | None:
        """Why the run cannot be compiled (a graph break's reason), or None."""
        return self._failure

    @failure.setter
    def failure(self, reason: str | None) -> None:
        if reason is not None and self.explaining:
            self._break_event(reason, sys._getframe(1))
            return
        if reason is not None and self._failure is None and self.code is not None:
            f = sys._getframe(1)  # the captured function's frame: where to resume
            while f is not None and f.f_code is not self.code:
                f = f.f_back
            self.break_line = None if f is None else f.f_lineno
        self._failure = reason

    def _break_event(self, reason: str, f) -> None:
        # a break while explaining: the graph so far ends here, and so does the graph of every
        # user frame between the captured function's and the breaking one (torch compiles a
        # frame whose callee broke up to the call, then the callee as its own frame), whose
        # return ends a graph again
        starts = self.watch.starts if self.watch is not None else {}
        chain, line = [], None
        while f is not None:
            if f.f_code is self.code:
                line = f.f_lineno
                break
            if id(f) in starts:
                chain.append(f)
            f = f.f_back
        stack = [] if line is None else [(self.code.co_filename, line, self.code.co_name)]
        stack += [(g.f_code.co_filename, g.f_lineno, g.f_code.co_name) for g in reversed(chain)]
        positions = []
        for g in reversed(chain):
            st = starts[id(g)]
            if not st[1]:  # (its start cuts once; its return cuts too)
                st[1] = True
                positions.append(st[0])
        positions.append(len(self.calls))
        self.cuts += positions
        self.events.append((positions, reason, stack, line))

    # -- values ----------------------------------------------------------------------------

    def new_value(self, kind, t: Tensor, root=None) -> Value:
        v = Value(len(self.values), kind, t._data, root, t if kind == "ref" else None)
        self.values.append(v)
        self.bind(t, v)
        return v

    def bind(self, t: Tensor, v: Value) -> None:
        self.by_tensor[id(t)] = v
        self.by_array[id(t._data)] = v
        self.keep.append(t)

    def value_of(self, t: Tensor) -> Value:
        v = self.by_tensor.get(id(t))
        if v is not None:
            return v
        v = self.by_array.get(id(t._data))
        if v is not None:  # another Tensor around a recorded array (detach, .data, alias)
            self.by_tensor[id(t)] = v
            self.keep.append(t)
            return v
        return self.new_value("ref", t)

    # -- the observer protocol ---------------------------------------------------------------

    def enter(self, op, inputs, params, self_t):
        self.depth += 1
        if self.depth > 1 or self.failure is not None:
            return None
        args = []
        for x in inputs:
            if isinstance(x, Tensor):
                args.append(self.value_of(x))
            elif isinstance(x, (list, tuple, dict, np.ndarray)):
                self.failure = f"op {op.name} got a {type(x).__name__} argument"
                return None
            else:
                args.append(x)
        if self_t is not None and params.get("out") is self_t._data:
            # an in-place op writing straight into its target: the generated code passes the
            # target's buffer
            params = {**params, "out": OUT_TARGET}
        for k, x in params.items():
            if x is not OUT_TARGET and _holds_array(x):
                v = self.by_array.get(id(x)) if type(x) is np.ndarray else None
                if v is not None and v.kind == "op":
                    # an array a recorded kernel made (batch_norm's statistics): the call
                    # reads that value
                    params = {**params, k: v}
                    continue
                # an array computed outside the op table: data the trace would freeze
                self.failure = f"op {op.name} got an array in its parameter {k!r}"
                return None
        casts = None
        if op.promote is not None and any(isinstance(x, Tensor) for x in inputs):
            try:
                _, arrays = R._promoted_arrays(inputs, op.promote)
            except Exception:  # the call itself will raise the same error
                return None
            casts = []
            for i, x in enumerate(inputs):
                if isinstance(x, Tensor):
                    a = arrays[i]
                    casts.append(a.dtype if a.dtype != x._data.dtype else None)
                else:
                    casts.append(None)
                    args[i] = arrays[i]  # the scalar as the kernel sees it
        target = self.value_of(self_t) if self_t is not None else None
        return (op, args, params, target, casts, self_t)

    def exit(self, token, result):
        self.depth -= 1
        if token is None:
            return
        op, args, params, target, casts, self_t = token
        if result is None:
            self.failure = f"op {op.name} raised"
            return
        if self_t is not None:
            # an in-place write: a new value for the written tensor, on the same storage
            root = self.values[target.root]
            if root.kind in ("input", "ref"):
                self.mutated_roots.add(root.id)
                if self.first_mutation is None:
                    self.first_mutation = len(self.calls)
            self._bind_snapshot(self_t._grad_fn, self_t, target)
            out = Value(len(self.values), "op", self_t._data, target.root)
            self.values.append(out)
            self.by_tensor[id(self_t)] = out
            self.by_array[id(self_t._data)] = out
            call = Call(op, op.forward, args, params, [out], target, casts)
            call.node = self_t._grad_fn
        else:
            multi = type(result) is tuple
            outs = []
            for r in result if multi else (result,):
                root = None
                if op.view and args and isinstance(args[0], Value):
                    root = args[0].root
                outs.append(self.new_value("op", r, root))
            call = Call(op, op.forward, args, params, outs, None, casts, multi)
            first = result[0] if multi else result
            call.node = first._grad_fn if first._requires_grad else None
        if call.node is not None:
            self.node_call[id(call.node)] = call
        self.calls.append(call)

    def _bind_snapshot(self, node, self_t, target) -> None:
        # an in-place op whose backward reads its target's old value (``y.mul_(b)``) saved a
        # copy made outside the op table: record the copy, so the trace reads this run's data
        op = getattr(node, "op", None)
        saved = getattr(node, "_saved", None)
        if op is None or not saved or 0 not in op.save_inputs:
            return
        s = saved[op.save_inputs.index(0)]
        if getattr(s, "is_output", True) or getattr(s, "tensor", None) is None:
            return
        snap = s.tensor
        if not isinstance(snap, Tensor) or snap is self_t or snap._data is self_t._data:
            return
        v = self.new_value("op", snap)
        call = Call(None, np.copy, [target], {}, [v])
        call.label = "snapshot"
        self.calls.append(call)

    def record_kernel(self, fn, args, params, result: Tensor, label: str) -> Value:
        """Record a helper kernel (``fn`` on arrays) the caller has just run eagerly."""
        out = self.new_value("op", result)
        call = Call(None, fn, args, params, [out])
        call.label = label
        self.calls.append(call)
        return out

    def record_read(self, t: Tensor, kind: str, result) -> None:
        if self.depth or self.failure is not None:
            return
        if self.first_mutation is not None:
            self.failure = "a value read from a tensor after an input was written in place"
            return
        self.calls.append(Read(self.value_of(t), kind, result, len(self.calls)))


# ---------------------------------------------------------------------------------------------
# random draws: a function that draws arrays from the default generator declares itself, so a
# capture records the draw as one kernel (the generated code draws at the same point, from the
# same stream: the numbers equal eager's for the same seed)


def _record_rng(fn, kernel, input, consts):
    # array_kernels.rng_kernel's call while a capture runs
    rec = ACTIVE[-1]
    if rec.depth or rec.failure is not None:
        return fn(input, *consts)
    before = _rng_state()
    if before != rec.rng_expected:
        rec.failure = "random numbers drawn outside the op table"
    arrays = fn(input, *consts)
    rec.rng_expected = _rng_state()
    outs = [rec.new_value("op", _wrap(a)) for a in arrays]
    call = Call(None, kernel, [rec.value_of(input), *consts], {}, outs, multi=True)
    call.label = fn.__name__
    rec.calls.append(call)
    return arrays


def _record_arrays(fn, args):
    # array_kernels.array_kernel's call while a capture runs
    rec = ACTIVE[-1]
    arrays = [a._data if isinstance(a, Tensor) else a for a in args]
    if rec.depth or rec.failure is not None:
        return fn(*arrays)
    ins = [rec.value_of(a) if isinstance(a, Tensor) else a for a in args]
    out = fn(*arrays)
    multi = type(out) is tuple
    outs = [rec.new_value("op", _wrap(a)) for a in (out if multi else (out,))]
    call = Call(None, fn, ins, {}, outs, multi=multi)
    call.label = fn.__name__.lstrip("_")
    rec.calls.append(call)
    if fn.effects:
        rec.effects = True
    return out


_KERNELS_ABOVE.record_rng, _KERNELS_ABOVE.record_arrays = _record_rng, _record_arrays


def call_values(c: Call):
    """The Values a call reads: its arguments, then the values in its params."""
    vals = [a for a in c.args if type(a) is Value]
    if c.params:
        vals += [x for x in c.params.values() if type(x) is Value]
    return vals


# ---------------------------------------------------------------------------------------------
# tensor reads during a capture


_READS = ("__bool__", "item", "__int__", "__float__", "__index__")
_UNSUPPORTED_READS = ("tolist", "numpy", "__array__", "__repr__", "__str__", "__format__")
_ORIGINAL: dict = {}


def _reading(name):
    orig = _ORIGINAL[name]

    def read(self, *args, **kwargs):
        rec = ACTIVE[-1] if ACTIVE else None
        if rec is not None and name == "item" and not rec.depth and rec.failure is None:
            from ember._dynamo import config

            if not config.capture_scalar_outputs and _caller_is_user():
                # torch's default: the scalar leaves the graph (the program resumes after it)
                rec.failure = "Unsupported Tensor.item() call with capture_scalar_outputs=False"
        result = orig(self, *args, **kwargs)
        if rec is not None and not args and not kwargs:
            rec.record_read(self, name, result)
        return result

    read.__name__ = name
    return read


def _refusing(name):
    orig = _ORIGINAL[name]

    def read(self, *args, **kwargs):
        rec = ACTIVE[-1] if ACTIVE else None
        if rec is not None and not rec.depth and rec.failure is None and _caller_is_user():
            reason = f"Tensor.{name}() hands a tensor's data to Python"
            if name == "tolist" and self.dtype.is_floating_point:  # torch's headline
                reason = "Tensor.tolist() with non-integer tensor\n  " + reason
            rec.failure = reason
        return orig(self, *args, **kwargs)

    read.__name__ = name
    return read


def _caller_is_user() -> bool:
    f = sys._getframe(2)
    return not f.f_code.co_filename.startswith(_EMBER_DIR)


def read_value(kind: str, arr: np.ndarray):
    """Re-read a value as the capture did: ``kind`` is the Tensor method (``__bool__``...)."""
    from ember._core.tensor import _wrap

    return _ORIGINAL[kind](_wrap(arr))


_SIZE_READS = ("size", "numel", "__len__")


def _sizing(name):
    orig = _ORIGINAL[name]

    def read(self, *args, **kwargs):
        if ACTIVE and not ACTIVE[-1].shape_read and _caller_is_user():
            ACTIVE[-1].shape_read = True
        return orig(self, *args, **kwargs)

    read.__name__ = name
    return read


def _shape(self):
    if ACTIVE and not ACTIVE[-1].shape_read and _caller_is_user():
        ACTIVE[-1].shape_read = True
    return _ORIGINAL["shape"].fget(self)


def _install_reads() -> None:
    if not _ORIGINAL:
        for name in _READS + _UNSUPPORTED_READS + _SIZE_READS:
            _ORIGINAL[name] = getattr(Tensor, name)
        _ORIGINAL["shape"] = Tensor.__dict__["shape"]
    for name in _READS:
        setattr(Tensor, name, _reading(name))
    for name in _UNSUPPORTED_READS:
        setattr(Tensor, name, _refusing(name))
    for name in _SIZE_READS:
        setattr(Tensor, name, _sizing(name))
    Tensor.shape = property(_shape)


def _remove_reads() -> None:
    for name, fn in _ORIGINAL.items():
        setattr(Tensor, name, fn)


# ---------------------------------------------------------------------------------------------
# Python side effects: seen by tracing the user's own frames (never ember's)

_STORES = {
    dis.opmap[n]
    for n in ("STORE_ATTR", "STORE_GLOBAL", "STORE_DEREF", "DELETE_ATTR", "DELETE_GLOBAL")
    if n in dis.opmap
}
_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]
# code whose stores are not the program's: ember's, the standard library's (a venv's and the
# interpreter's own), installed packages', frozen modules (importlib)
_NOT_USER = (
    _EMBER_DIR,
    *sorted({f"{pre}/lib/python" for pre in (sys.prefix, sys.base_prefix, sys.exec_prefix)}),
    "<frozen ",
)
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "setdefault"}
_IMPURE = {print, input, open}


class _Watch:
    """``sys.settrace``/``setprofile`` hooks that flag side effects in user frames."""

    def __init__(self, rec: Recorder, roots: tuple):
        self.rec = rec
        self.roots = roots  # objects whose mutation is a side effect (self, globals...)
        self.pending = None  # (frame, call count) after a STORE_SUBSCR
        # State born during the capture is not a side effect: objects whose __init__ ran in it
        # (held, so their ids stay theirs) and the frames that began in it (owners of cells).
        self.fresh: list = []
        self.frames: list = []
        self.eager_codes = _eager_codes()
        self.starts: dict = {}  # explaining: id(user frame) -> [calls before it, cuts on return]
        self.suspended = None  # explaining: the frame of the eager library call running
        rec.watch = self

    def _user(self, frame) -> bool:
        fn = frame.f_code.co_filename
        return not fn.startswith(_NOT_USER)

    def trace(self, frame, event, arg):
        if self.rec.explaining and (self.suspended or frame.f_code in self.eager_codes):
            # (its op calls are eager, in no graph, until it returns)
            if not self.suspended:
                self.rec.failure = self.eager_codes[frame.f_code]
                self.suspended = frame
                self.rec.depth += 1
                return self.eager_return
            return None
        if self.rec.failure is None and frame.f_code in self.eager_codes:
            self.rec.failure = self.eager_codes[frame.f_code]
        if event == "call" and self._user(frame) and frame.f_code.co_name != "<genexpr>":
            code = frame.f_code
            self.frames.append(frame)
            if self.rec.explaining:
                self.starts[id(frame)] = [len(self.rec.calls), False]
            if code.co_name in ("__init__", "__post_init__") and code.co_argcount:
                self.fresh.append(frame.f_locals.get(code.co_varnames[0]))
            frame.f_trace_opcodes = True
            return self.local
        return None

    def _local_store(self, frame, op: int) -> bool:
        """Whether the store at ``frame.f_lasti`` writes state born during the capture."""
        prev, name = _store_target(frame.f_code, frame.f_lasti)
        if dis.opname[op] == "STORE_DEREF":
            if name in frame.f_code.co_cellvars:
                return True  # a cell this call made
            f = frame.f_back  # a free variable: local if the frame that owns its cell is new
            while f is not None:
                if name in f.f_code.co_cellvars:
                    return any(f is g for g in self.frames)
                f = f.f_back
            return False
        if dis.opname[op] == "STORE_ATTR" and prev is not None:
            owner = frame.f_locals.get(prev, _MISSING)
            return any(owner is o for o in self.fresh)
        return False

    def _preexisting(self, obj, frame) -> bool:
        return any(obj is r for r in self.roots) or _in_globals(obj, frame)

    def eager_return(self, frame, event, arg):
        if event == "return" and frame is self.suspended:
            self.suspended = None
            self.rec.depth -= 1
        return self.eager_return

    def local(self, frame, event, arg):
        rec = self.rec
        if event == "return" and rec.explaining:
            st = self.starts.pop(id(frame), None)
            if st is not None and st[1]:
                rec.cuts.append(len(rec.calls))
        if event != "opcode" or rec.failure is not None:
            return self.local
        if self.pending is not None:
            pf, n = self.pending
            self.pending = None
            if pf is frame and len(rec.calls) == n:
                where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
                rec.failure = f"a store into a Python container (a side effect) at {where}"
        code = frame.f_code.co_code[frame.f_lasti]
        if code in _STORES and not self._local_store(frame, code):
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            rec.failure = f"{dis.opname[code]} (a side effect on a Python object) at {where}"
        elif code == _STORE_SUBSCR:
            owner = _subscript_owner(frame)
            if owner is _MISSING:  # not resolved: a store no op call followed is a side effect
                self.pending = (frame, len(self.rec.calls))
            elif isinstance(owner, (list, dict)) and self._preexisting(owner, frame):
                where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
                rec.failure = f"a store into a Python container (a side effect) at {where}"
        return self.local

    def profile(self, frame, event, arg):
        if event != "c_call" or self.rec.failure is not None or not self._user(frame):
            return
        if self.suspended is not None:
            return
        if arg in _IMPURE:
            self.rec.failure = (
                "Failed to trace builtin operator\n  Explanation: a call to builtin "
                f"`{arg.__name__}` (a side effect) runs eagerly, between compiled graphs"
            )
            return
        owner = getattr(arg, "__self__", None)
        mod = getattr(arg, "__module__", None) or type(owner).__module__
        if mod in ("random", "_random") or (mod or "").startswith("numpy.random"):
            self.rec.failure = f"call to {arg.__qualname__}() (Python's random state)"
        elif arg.__name__ in _MUTATORS and isinstance(owner, (list, dict, set)):
            if any(owner is r for r in self.roots) or _in_globals(owner, frame):
                self.rec.failure = f"{type(owner).__name__}.{arg.__name__}() on a Python object"


_MISSING = object()


def _eager_codes() -> dict:
    """Library calls that run eagerly, between graphs (code object -> the break's reason):
    what updates parameters or gradients outside the op table (optimizer steps on flat NumPy
    buffers, ``zero_grad``'s stores into ``.grad``) and the autograd engine itself."""
    from ember._core.tensor import Tensor
    from ember.autograd import engine
    from ember.nn.modules.module import Module

    out = {
        Tensor.backward.__code__: "Tensor.backward() runs the autograd engine (eagerly)",
        engine.backward.__code__: "autograd.backward() runs the autograd engine (eagerly)",
        engine.grad.__code__: "autograd.grad() runs the autograd engine (eagerly)",
        Module.zero_grad.__code__: "Module.zero_grad() stores into .grad (a side effect)",
    }
    optimizer = sys.modules.get("ember.optim.optimizer")
    if optimizer is not None:
        out[optimizer._run_hooked.__code__] = (
            "optimizer.step() updates parameters outside the op table (it runs eagerly)"
        )
        out[optimizer.Optimizer.zero_grad.__code__] = (
            "optimizer.zero_grad() stores into .grad (a side effect)"
        )
    return out


_LOCAL_LOADS = ("LOAD_FAST", "LOAD_DEREF")  # ...FAST_CHECK, FAST_LOAD_FAST (3.12+)


def _loaded_name(ins):
    """The local a LOAD_FAST/LOAD_DEREF-family instruction pushes last, else None."""
    if not ins.opname.startswith(_LOCAL_LOADS):
        return None
    return ins.argval[-1] if isinstance(ins.argval, tuple) else ins.argval


@functools.lru_cache(maxsize=4096)
def _instructions(code) -> tuple:
    """(instructions without CACHE entries, offset -> index)."""
    ins = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    return ins, {i.offset: k for k, i in enumerate(ins)}


def _store_target(code, offset: int):
    """For the store at ``offset``: (the local naming its owner object, the stored name)."""
    ins, at = _instructions(code)
    k = at.get(offset)
    if k is None:
        return None, None
    return (_loaded_name(ins[k - 1]) if k else None), ins[k].argval


def _pops_pushes(ins):
    """(items popped, items pushed) of the simple expression instructions, else None."""
    name, arg = ins.opname, ins.arg or 0
    if name.startswith(("LOAD_FAST", "LOAD_DEREF", "LOAD_CONST", "LOAD_CLOSURE", "LOAD_NAME")):
        return 0, 2 if name == "LOAD_FAST_LOAD_FAST" else 1
    if name == "LOAD_GLOBAL":
        return 0, 1 + (arg & 1)
    if name == "LOAD_ATTR":
        return 1, 1 + (arg & 1 if sys.version_info >= (3, 12) else 0)
    if name in ("BINARY_OP", "BINARY_SUBSCR", "COMPARE_OP"):
        return 2, 1
    if name.startswith("UNARY_"):
        return 1, 1
    if name in ("BUILD_TUPLE", "BUILD_LIST"):
        return arg, 1
    return None


def _subscript_owner(frame):
    """The object a STORE_SUBSCR at ``frame.f_lasti`` stores into, when a local names it."""
    ins, at = _instructions(frame.f_code)
    k = at.get(frame.f_lasti)
    depth = 1  # the container lies under the key at the top of the stack
    while k:
        k -= 1
        effect = _pops_pushes(ins[k])
        if effect is None:
            return _MISSING
        pops, pushes = effect
        if depth < pushes:
            if depth != pushes - 1:
                return _MISSING
            if ins[k].opname == "LOAD_GLOBAL":
                return frame.f_globals.get(ins[k].argval, _MISSING)
            name = _loaded_name(ins[k])
            return _MISSING if name is None else frame.f_locals.get(name, _MISSING)
        depth += pops - pushes
    return _MISSING


def _in_globals(obj, frame) -> bool:
    return any(v is obj for v in frame.f_globals.values())


def _roots_of(fn, args, kwargs=None) -> tuple:
    """The containers that exist before the call and are reachable from it: the arguments
    themselves, what they hold (a few levels deep), their attributes, the closure's cells;
    for a bound method (a module's __call__/forward) also its owner and its submodules."""
    roots: list = []
    seen: set = set()

    def walk(obj, depth):
        if depth > 3 or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, (list, dict, set)):
            roots.append(obj)
            inner = obj.values() if isinstance(obj, dict) else obj
            for v in inner:
                if isinstance(v, (list, dict, set, tuple)):
                    walk(v, depth + 1)
        elif isinstance(obj, tuple):
            for v in obj:
                walk(v, depth + 1)
        elif depth == 0:
            d = getattr(obj, "__dict__", None)
            if isinstance(d, dict):
                for v in d.values():
                    walk(v, 1)

    objs = [*args, *(kwargs or {}).values()]
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        objs.append(owner)
        modules = getattr(owner, "modules", None)
        if callable(modules) and hasattr(owner, "_modules"):
            objs.extend(modules())
    for a in objs:
        walk(a, 0)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            walk(cell.cell_contents, 1)
        except ValueError:
            continue
    return tuple(roots)


# ---------------------------------------------------------------------------------------------


def _rng_state():
    import ember

    g = ember.random.default_generator
    s = g._bitgen.state["state"]
    return (s["pos"], s["key"].tobytes(), g._normal_cache, g._float_normal_cache)


def capture(fn, args, kwargs, input_tensors, watch: bool = True, explaining: bool = False):
    """Run ``fn(*args, **kwargs)`` eagerly, recording it; return ``(result, recorder)``.

    ``input_tensors`` become the trace's inputs, in order. ``recorder.failure`` says why the
    run cannot be compiled (None if it can). ``explaining``: each break is recorded as an
    event and the recording goes on past it (``recorder.events``, ``recorder.cuts``)."""
    rec = Recorder()
    rec.code = getattr(fn, "__code__", None)
    rec.explaining = explaining
    for t in input_tensors:
        if id(t) in rec.by_tensor:  # one tensor passed twice: one value
            continue
        rec.new_value("input", t)
    grad_before = STATE.grad_enabled
    rec.rng_expected = _rng_state()
    import ember

    rec.rng_before = ember.get_rng_state()  # (the first compiled run replays the draws)
    w = _Watch(rec, _roots_of(fn, args, kwargs)) if watch else None
    old_trace, old_profile = sys.gettrace(), sys.getprofile()
    ACTIVE.append(rec)
    if len(ACTIVE) == 1:
        _install_reads()
    R.add_observer(rec)
    try:
        if w is not None:
            sys.settrace(w.trace)
            sys.setprofile(w.profile)
        try:
            result = fn(*args, **kwargs)
        finally:
            if w is not None:
                sys.settrace(old_trace)
                sys.setprofile(old_profile)
    finally:
        R.remove_observer(rec)
        ACTIVE.pop()
        if not ACTIVE:
            _remove_reads()
    rec.explaining = False  # (a failure found at the end concerns the whole run)
    if rec.failure is None and _rng_state() != rec.rng_expected:
        rec.failure = "random numbers drawn outside the op table (randn...): kept eager"
    if rec.failure is None and STATE.grad_enabled != grad_before:
        rec.failure = "grad mode changed and not restored"
    rec.watch = None
    return result, rec


def dtype_of(v: Value) -> D.dtype:
    return D.FROM_NP[v.dtype]

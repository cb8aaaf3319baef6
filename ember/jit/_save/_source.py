"""TorchScript source from a graph: ``def forward(self, x: Tensor) -> Tensor:`` and its body.

One statement per node, except that a pure op's unnamed value read once, later in the same
block, is written into its reader while the line stays short (torch's printer does the same:
``bool(torch.gt(torch.sum(y), 0))``); a deferred value is written out before any node that
may write memory. ``prim::If`` prints as ``if``/``else`` whose branches assign the node's
outputs, ``prim::Loop`` as ``for i in range(n)`` or ``while``, loop-carried values living in
one variable each and updated by one tuple assignment. Constants print in place: numbers,
strings, ``None``, tensors as ``CONSTANTS.cN`` (the archive's ``constants.pkl``). Names
come from the values' debug names (``x.3`` -> ``x``, then ``x0``), made unique and kept clear
of the words TorchScript gives a meaning.
"""

from __future__ import annotations

import keyword
import math
import re

from ember._standin import is_ember_module
from ember.jit import ir as IR
from ember.jit._save import _lower
from ember.jit._save._classes import is_identifier
from ember.jit._save._functional import _UNSET, functional_call
from ember.jit._save._spell import (
    DEFAULT_NONE_TAIL,
    DEFAULT_TAIL,
    INFIX,
    KEYWORD_ONLY,
    node_keywords,
    payload_vars,
)

__all__ = ["FunctionPrinter", "SaveError"]


class SaveError(RuntimeError):
    """A graph holds something TorchScript source cannot say."""


_RESERVED = frozenset(
    {
        "self", "torch", "ops", "CONSTANTS", "annotate", "uninitialized", "unchecked_cast",
        "range", "len", "int", "float", "bool", "str", "list", "tuple", "dict", "print",
        "Tensor", "List", "Tuple", "Optional", "Dict", "Any", "NoneType", "Future", "Module",
        "Final", "math", "fork", "wait", "isinstance", "getattr", "hasattr", "min", "max",
        "abs", "sum", "all", "any", "zip", "enumerate", "super", "number", "Device", "setattr",
        "device", "dtype", "inf", "nan", "rpc_async", "sorted", "divmod", "chr", "ord",
        "round", "hash", "id", "hex", "oct", "bin", "__torch__", "Union", "Callable",
        "Await", "RRef", "Storage", "Stream", "Event", "Layout", "ScalarType", "Generator",
    }
)  # fmt: skip

# ops whose result is not a function of their operands (random draws): kept in order
_IMPURE = frozenset(
    {"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout", "aten::bernoulli",
     "aten::normal", "aten::uniform", "aten::multinomial", "aten::rand", "aten::randn",
     "aten::randint", "aten::rand_like", "aten::randn_like", "aten::randint_like",
     "aten::randperm", "aten::warn", "aten::wait", "aten::numpy_T"}
)  # fmt: skip

_READS_ONLY = frozenset({"prim::GetAttr", "prim::TupleUnpack", "prim::ListUnpack"})

_MUTATES_LIST = frozenset(
    {"aten::append", "aten::insert", "aten::extend", "aten::_set_item", "aten::pop",
     "aten::clear", "aten::remove", "aten::reverse", "aten::sort", "aten::__setitem__"}
)  # fmt: skip

INT_MAX = 9223372036854775807


class Names:
    """Unique TorchScript identifiers."""

    def __init__(self):
        self.used: set[str] = set()
        self.count = 0

    def _numbered(self) -> str:
        while f"_{self.count}" in self.used:
            self.count += 1
        name = f"_{self.count}"
        self.used.add(name)
        return name

    def fresh(self, hint: str | None) -> str:
        """A new name from a value's debug name (``x.3`` -> ``x``, then ``x0``, ``x1``...),
        or ``_0``, ``_1``... for values without one, as torch's printer names them."""
        if hint is not None:
            hint = re.sub(r"\.\d+$", "", hint)
        if not hint or not hint.strip("_"):
            return self._numbered()
        base = re.sub(r"\W", "_", hint)
        if base[0].isdigit():
            base = "_" + base
        if keyword.iskeyword(base) or base in _RESERVED or base.startswith("__"):
            base = base.strip("_") + "_"
        name, k = base, 0
        while name in self.used:
            name = f"{base}{k}"
            k += 1
        self.used.add(name)
        return name


def format_number(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else 'float("-inf")'
    s = repr(v)
    if repr(float(f"{v:.17g}")) == s and len(f"{v:.17g}") > len(s):
        s = f"{v:.17g}"  # torch's printer writes 17 significant digits: 0.10000000000000001
    return s if ("." in s or "e" in s) else s + "."


def quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def literal(v) -> str:
    """A Python constant as TorchScript source."""
    if v is None:
        return "None"
    if isinstance(v, (bool, int, float)):
        return format_number(v)
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, (list, tuple)):
        inner = ", ".join(literal(e) for e in v)
        if isinstance(v, tuple):
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        return f"[{inner}]"
    if type(v).__name__ == "device":
        return f"torch.device({quote(str(v))})"
    raise SaveError(f"ember.jit.save: cannot write the constant {v!r} as TorchScript")


def annotation(t) -> str | None:
    """A type as a TorchScript annotation, or None when it has none (Any)."""
    if t is None or isinstance(t, IR.AnyType):
        return None
    if isinstance(t, IR.ClassType):
        return t.qualified_name()
    s = t.annotation_str()
    return None if "Any" in s else s


class FunctionPrinter:
    """Print one graph as a TorchScript function; tensor constants go to ``constants``."""

    def __init__(self, constants: list, root=None):
        self.constants = constants  # the archive's constant tensors, shared by its code
        self.root = root  # the module behind ``self``
        self.objects: dict = {}  # module-typed Values -> the (eager) modules they hold
        self.called: dict[int, object] = {}  # modules whose forward the code calls
        self.static: dict = {}  # Values read from plain module attributes -> their values
        self.pending: dict = {}  # deferred pure values of the current block, not yet read
        self.names = Names()
        self.env: dict = {}
        self.lines: list[str] = []

    # ------------------------------------------------------------------ values
    def ref(self, v) -> str:
        if v in self.env:
            self.pending.pop(v, None)  # a deferred expression, now written where it is read
            return self.env[v]
        n = v.node()
        if n.kind() == "prim::Constant":
            return self.constant(n)
        raise SaveError(f"ember.jit.save: value %{v.debugName()} is used before it is set")

    def constant(self, n) -> str:
        if "value" not in n._attrs:
            return "None"
        kind, val = n._attrs["value"]
        if kind == "t":
            return self.tensor_constant(val)
        t = n.output().type()
        if isinstance(t, IR.DeviceObjType):
            return f"torch.device({quote(str(val))})"
        if kind == "i" and isinstance(t, IR.BoolType):
            return "True" if val else "False"
        if kind == "is":
            return literal([int(e) for e in val])
        if kind == "fs":
            return literal([float(e) for e in val])
        if kind == "ss":
            return literal(list(val))
        return literal(val)

    def tensor_constant(self, t) -> str:
        """``CONSTANTS.cN`` for tensor ``t`` (one entry per tensor in the archive)."""
        for i, c in enumerate(self.constants):
            if c is t:
                return f"CONSTANTS.c{i}"
        self.constants.append(t)
        return f"CONSTANTS.c{len(self.constants) - 1}"

    def bind(self, v, hint: str | None = None) -> str:
        name = self.names.fresh(hint if hint is not None else _hint(v))
        self.env[v] = name
        return name

    # ------------------------------------------------------------------ functions
    def function(self, graph, name: str, self_type: str | None, method_self: bool) -> tuple:
        """Return ``(header_lines, body_lines)``; with ``self_type``, the first parameter is
        ``self`` annotated with it (a method in an archive's class). ``method_self`` says the
        graph's first input is that ``self``."""
        self.names.used.add("self")
        inputs = list(graph.inputs())
        params = []
        if method_self:
            me = inputs.pop(0)
            self.env[me] = "self"
            if self.root is not None:
                self.objects[me] = unwrap(self.root)
        if self_type is not None or method_self:
            params.append(f"self: {self_type}" if self_type else "self")
        for i, v in enumerate(inputs):
            # an input the trace left unnamed is ``argument_<position>``, as torch prints it
            p = self.bind(v, None if v.hasDebugName() else f"argument_{i + 1}")
            ann = annotation(v.type())
            params.append(f"{p}: {ann}" if ann else p)
        outer = self.emit_block(graph.block(), 1)
        outs = [self.ref(v) for v in graph.outputs()]
        self.flush(1)
        self.pending = outer
        ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
        self.lines.append(f"  return {ret}")
        rtype = annotation(graph.outputs()[0].type()) if len(outs) == 1 else None
        head = f"def {name}(" + ",\n    ".join(params) + ")"
        head += f" -> {rtype}:" if rtype else ":"
        return head.split("\n"), self.lines

    # ------------------------------------------------------------------ statements
    def emit(self, pad: int, text: str) -> None:
        self.lines.append("  " * pad + text)

    def emit_block(self, block, pad: int) -> dict:
        """Emit a block's nodes; return the enclosing block's pending values (the caller
        reads the block's outputs, flushes, then restores them)."""
        outer, self.pending = self.pending, {}
        for n in block.nodes():
            self.emit_node(n, pad)
        return outer

    def flush(self, pad: int) -> None:
        """Write the deferred values nothing has read yet as statements, in program order
        (before a node that writes memory or branches, so they see what they saw)."""
        for v, expr in list(self.pending.items()):
            del self.pending[v]
            self.emit(pad, f"{self.bind(v)} = {expr}")

    def deferrable(self, n) -> bool:
        """A pure op read once, later in the same block: written into its reader, as torch's
        printer writes it."""
        k = n.kind()
        inplace = k.endswith("_") and not k.endswith("__")
        if k == "prim::CallMethod" and n.outputsSize() == 1:
            return _read_once_here(n.output(), n)  # ``(child).forward(x, )`` in its reader
        if not k.startswith("aten::") or inplace or k in _IMPURE or k in _MUTATES_LIST:
            return False
        if n.outputsSize() != 1 or payload_vars(n).get("op") is not None:
            return False
        return _read_once_here(n.output(), n)

    def emit_node(self, n, pad: int) -> None:
        k = n.kind()
        outs = n.outputs()
        if k == "prim::Constant":
            return
        if k in ("prim::ListConstruct", "prim::TupleConstruct"):
            expr = self.construct(n)
            if _inlinable(outs[0]):
                self.env[outs[0]] = expr
            else:
                self.emit(pad, f"{self.bind(outs[0])} = {expr}")
            return
        if k == "prim::GetAttr" and n.inputs()[0] in self.objects:
            if self.read_attribute(n, pad):
                return
        if _lower.is_lowered(n):
            self.flush(pad)
        if k == "prim::CallMethod" and n.inputs()[0] in self.objects:
            target = self.objects[n.inputs()[0]]
            self.called[id(target)] = target
        if k == "prim::If":
            return self.emit_if(n, pad)
        if k == "prim::Loop":
            return self.emit_loop(n, pad)
        if self.deferrable(n):
            expr = self.call(n, [self.ref(v) for v in n.inputs()])
            # as torch's printer: a value the program named, or one whose expression makes a
            # long line, gets a statement of its own
            # (a value only the function returns is written into the return, named or not)
            named = n.output().hasDebugName() and n.output().uses()[0].user.kind() != "prim::Return"
            if named or len(expr) + 2 * pad >= 40:
                self.flush(pad)
                self.emit(pad, f"{self.bind(n.output())} = {expr}")
            else:
                self.env[n.output()] = self.pending[n.output()] = expr
            return
        if _lower.lower(self, n, pad):
            return
        args = [self.ref(v) for v in n.inputs()]
        if k not in _READS_ONLY:  # a node that may write memory: deferred reads go first
            self.flush(pad)
        src = n.inputs()[0].node() if n.inputs() else None
        if (
            k == "prim::TupleUnpack"
            and src.kind() == "prim::TupleConstruct"
            and (len(n.inputs()[0].uses()) == 1)
        ):
            self.unpack_construct(n, src, pad)
            return
        if k in ("prim::TupleUnpack", "prim::ListUnpack"):
            targets = [self.bind(o) for o in outs]
            # torch's printer ends the targets with a comma: ``_1, _2, = _0``
            self.emit(pad, "".join(t + ", " for t in targets)[:-1] + f" = {args[0]}")
            return
        if k == "prim::SetAttr":
            name = n.s("name")
            if is_identifier(name):
                self.emit(pad, f"{args[0]}.{name} = {args[1]}")
            else:
                self.emit(pad, f"setattr({args[0]}, {quote(name)}, {args[1]})")
            return
        expr = self.call(n, args)
        if not outs:
            self.emit(pad, expr)
        elif len(outs) == 1:
            self.emit(pad, f"{self.bind(outs[0])} = {expr}")
        else:
            targets = [self.bind(o) for o in outs]
            self.emit(pad, ", ".join(targets) + f" = {expr}")

    def read_attribute(self, n, pad: int) -> bool:
        """``base.name`` on a known module: a submodule is remembered (its calls need a
        forward), a plain Python value (a flag, a size) is written as a constant, as torch
        writes a module's ``Final`` attributes; True when nothing is left to emit."""
        obj = self.objects[n.inputs()[0]]
        name = n.s("name")
        value = getattr(obj, name, _MISSING)
        if _is_module(value):
            self.objects[n.output()] = unwrap(value)
            return False
        if name == "training" or value is _MISSING or hasattr(value, "_data"):
            return False
        if not _plain(value):
            return False
        self.env[n.output()] = literal(
            list(value)
            if isinstance(value, tuple) and isinstance(n.output().type(), IR.ListType)
            else value
        )
        self.static[n.output()] = value
        return True

    def static_value(self, v):
        """The Python value ``v`` is known to hold (a constant, a module's flag), or _UNSET."""
        if v in self.static:
            return self.static[v]
        if v.node().kind() == "prim::Constant":
            return v.toIValue()
        return _UNSET

    def unpack_construct(self, n, src, pad: int) -> None:
        """``a, b = (x, y)``: the outputs are the tuple's elements (torch's frontend never
        builds the tuple); an element read once stays deferred."""
        for o, v in zip(n.outputs(), src.inputs()):
            e = self.ref(v)
            if e.isidentifier() or v.node().kind() == "prim::Constant":
                self.env[o] = e
            elif _read_once_here(o, n):
                self.env[o] = self.pending[o] = e
            else:
                self.emit(pad, f"{self.bind(o)} = {e}")

    def construct(self, n) -> str:
        args = [self.ref(v) for v in n.inputs()]
        if n.kind() == "prim::TupleConstruct":
            return "(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")"
        if not args:
            ann = annotation(n.output().type()) or "List[Tensor]"
            return f"annotate({ann}, [])"
        return "[" + ", ".join(args) + "]"

    def call(self, n, args: list[str]) -> str:
        k = n.kind()
        ins = n.inputs()
        if k == "prim::GetAttr":
            name = n.s("name")
            return (
                f"{args[0]}.{name}" if is_identifier(name) else f"getattr({args[0]}, {quote(name)})"
            )
        if k == "prim::CallMethod":
            return f"({args[0]}).{n.s('name')}(" + "".join(a + ", " for a in args[1:]) + ")"
        if k in ("prim::CallFunction", "prim::PythonOp", "prim::fork", "aten::wait"):
            raise SaveError(
                f"ember.jit.save: the graph calls Python code ({k}) TorchScript cannot hold; "
                "script or trace the function it calls"
            )
        if k == "prim::Print":
            return "print(" + ", ".join(args) + ")"
        if k == "prim::Uninitialized":
            return f"uninitialized({annotation(n.output().type()) or 'Tensor'})"
        if k in ("prim::min", "prim::max"):
            return f"{k[6:]}(" + ", ".join(args) + ")"
        if k == "prim::ndim":
            return f"torch.dim({args[0]})"
        if k in ("aten::Bool", "aten::Int", "aten::Float"):
            return f"{k[6:].lower()}({args[0]})"
        if k == "aten::__getitem__":
            return f"{args[0]}[{args[1]}]"
        if k == "aten::len":
            return f"len({args[0]})"
        if k == "aten::__not__":
            return f"not {args[0]}"
        if k in INFIX and len(args) == 2 and not any(_is_tensor(v) for v in ins):
            if k in _ARITHMETIC:  # torch writes numbers' arithmetic as calls too
                return f"torch.{k[6:]}({args[0]}, {args[1]})"
            return f"({args[0]} {INFIX[k]} {args[1]})"
        if k in _CONVERSIONS and len(args) == 1:  # x.float(): torch.to(x, dtype)
            from ember.jit.ir import DTYPE_CODES

            return f"torch.to({args[0]}, {DTYPE_CODES[_CONVERSIONS[k]]})"
        if k == "aten::numpy_T":
            attr = _lower.payload_attr(n)
            return f"torch.{'mT' if attr == 'mT' else 'numpy_T'}({args[0]})"
        found = payload_vars(n)
        fn = found.get("fn")
        if fn is not None and isinstance(found.get("npos"), int):
            npos, names = found["npos"], list(found.get("names") or [])
            spelled = functional_call(fn, n, args, npos, names, self.static_value)
            if spelled is not None:
                return spelled
            if is_ember_module(getattr(fn, "__module__", None), ".nn"):
                k = f"aten::{fn.__name__}"  # torch.<name>: the functional's namesake op
        ns, _, op = k.partition("::")
        head = "torch" if ns == "aten" else f"ops.{ns}"
        return f"{head}.{op}(" + ", ".join(self.arguments(n, args)) + ")"

    def arguments(self, n, args: list[str]) -> list[str]:
        written = node_keywords(n, len(args))
        if written is not None:
            npos, names = written
            return args[:npos] + [f"{nm}={a}" for nm, a in zip(names, args[npos:])]
        if n.kind() in DEFAULT_NONE_TAIL:
            while len(args) > DEFAULT_NONE_TAIL[n.kind()] and args[-1] == "None":
                args = args[:-1]  # trailing arguments at their default, left out as torch does
        if n.kind() in DEFAULT_TAIL:
            required, defaults = DEFAULT_TAIL[n.kind()]
            while len(args) > required and args[-1] == defaults[len(args) - 1 - required]:
                args = args[:-1]
        tail = KEYWORD_ONLY.get(n.kind())
        if not tail:
            return args
        ins = n.inputs()
        # the schema's keyword-only tail is present only when the node has all its inputs
        first = len(args) - len(tail)
        if first < 1 or (n.kind() in ("aten::sum", "aten::mean", "aten::prod") and first == 2):
            return args
        out = args[:first]
        for (name, default), v, text in zip(tail, ins[first:], args[first:]):
            c = v.toIValue() if v.node().kind() == "prim::Constant" else _MISSING
            if c is not _MISSING and (c == default or (c is None and default is None)):
                continue
            if v.node().kind() == "prim::Constant" and "value" not in v.node()._attrs:
                continue  # None where the default is None
            out.append(f"{name}={text}")
        return out

    # ------------------------------------------------------------------ control flow
    def emit_if(self, n, pad: int) -> None:
        outs = n.outputs()
        cond = self.ref(n.inputs()[0])
        self.flush(pad)
        # an output nothing reads is not assigned (torch's graphs have none such)
        names = [self.bind(o) if o.hasUses() else None for o in outs]
        self.emit(pad, f"if {cond}:")
        for i, b in enumerate(n.blocks()):
            if i == 1:
                self.emit(pad, "else:")
            start = len(self.lines)
            outer = self.emit_block(b, pad + 1)
            exprs = [self.ref(r) if name else None for name, r in zip(names, b.outputs())]
            self.flush(pad + 1)
            self.pending = outer
            for name, e in zip(names, exprs):
                if name is not None:
                    self.emit(pad + 1, f"{name} = {e}")
            if len(self.lines) == start:
                self.emit(pad + 1, "pass")

    def emit_loop(self, n, pad: int) -> None:
        ins = n.inputs()
        trip, cond, init = ins[0], ins[1], ins[2:]
        body = n.blocks()[0]
        counter, carried_in = body.inputs()[0], body.inputs()[1:]
        next_cond, carried_out = body.outputs()[0], body.outputs()[1:]
        trip_c = trip.toIValue() if trip.node().kind() == "prim::Constant" else None
        always = _is_true(cond) and _is_true(next_cond)
        starts = [self.ref(a) for a in init]
        first = None if always else self.ref(cond)
        steps = None if trip_c == INT_MAX else self.ref(trip)
        self.flush(pad)
        names = []
        for o, e, bi in zip(n.outputs(), starts, carried_in):
            name = self.names.fresh(_hint(o) if o.hasDebugName() else _hint(bi))
            self.emit(pad, f"{name} = {e}")
            self.env[o] = self.env[bi] = name
            names.append(name)
        if always and steps is not None:
            i = self.bind(counter)
            self.emit(pad, f"for {i} in range({steps}):")
            start = len(self.lines)
            outer = self.emit_block(body, pad + 1)
            self._carry(names, carried_out, pad + 1, start)
            self.pending = outer
            return
        # while form: the condition lives in a variable, the counter (if read) beside it
        c = self.names.fresh(None)
        self.emit(pad, f"{c} = {first if first is not None else 'True'}")
        uses_counter = counter.hasUses() or steps is not None
        i = self.bind(counter) if uses_counter else None
        if i is not None:
            self.emit(pad, f"{i} = 0")
        test = c if steps is None else f"{c} and ({i} < {steps})"
        self.emit(pad, f"while {test}:")
        start = len(self.lines)
        outer = self.emit_block(body, pad + 1)
        self._carry([c] + names, [next_cond] + carried_out, pad + 1, start)
        self.pending = outer
        if i is not None:
            self.emit(pad + 1, f"{i} = torch.add({i}, 1)")

    def _carry(self, names, outs, pad: int, start: int) -> None:
        """End a loop body: the carried variables take the body's outputs, all at once (one
        tuple assignment: every output is read before any variable changes)."""
        exprs = [self.ref(r) for r in outs]
        self.flush(pad)
        pairs = [(nm, e) for nm, e in zip(names, exprs) if nm != e]
        if len(pairs) == 1:
            self.emit(pad, f"{pairs[0][0]} = {pairs[0][1]}")
        elif pairs:
            lhs = ", ".join(nm for nm, _ in pairs)
            self.emit(pad, f"{lhs} = " + ", ".join(e for _, e in pairs))
        if len(self.lines) == start:
            self.emit(pad, "pass")


_MISSING = object()
_CONVERSIONS = {
    "aten::float": "torch.float32", "aten::double": "torch.float64", "aten::half": "torch.float16",
    "aten::bfloat16": "torch.bfloat16", "aten::int": "torch.int32", "aten::long": "torch.int64",
    "aten::short": "torch.int16", "aten::char": "torch.int8", "aten::byte": "torch.uint8",
    "aten::bool": "torch.bool",
}  # fmt: skip
_ARITHMETIC = frozenset(
    {"aten::add", "aten::sub", "aten::mul", "aten::div", "aten::floordiv", "aten::remainder",
     "aten::pow", "aten::lt", "aten::gt", "aten::le", "aten::ge", "aten::eq", "aten::ne"}
)  # fmt: skip


def unwrap(m):
    """The eager module a script or traced module runs (the one holding the attributes)."""
    original = getattr(m, "__dict__", {}).get("_original")
    return original if original is not None else m


def _is_module(x) -> bool:
    return hasattr(x, "_modules") and hasattr(x, "_parameters")


def _plain(x) -> bool:
    if x is None or isinstance(x, (bool, int, float, str)):
        return True
    return isinstance(x, (tuple, list)) and all(
        e is None or isinstance(e, (bool, int, float, str)) for e in x
    )


def _is_true(v) -> bool:
    return v.node().kind() == "prim::Constant" and v.toIValue() is True


def _is_tensor(v) -> bool:
    return isinstance(v.type(), IR.TensorType)


def _hint(v) -> str | None:
    return v.debugName() if v.hasDebugName() else None


def _feeds_branch_output(v) -> bool:
    """``v`` is an output of a branch or loop body (it is assigned to the variable the
    block's output lives in, so it keeps its name there)."""
    user = v.uses()[0].user
    return user.kind() == "prim::Return" and user.owningBlock().owningNode() is not None


def _read_once_here(v, n) -> bool:
    """``v`` (defined by ``n``) is read once, by a later node of ``n``'s block that is not a
    loop's start value (those are assigned to the loop's variables, as torch writes them)."""
    uses = v.uses()
    if len(uses) != 1:
        return False
    user = uses[0].user
    if user.kind() == "prim::Loop" and uses[0].offset != 1:  # the condition is written in
        return False
    return user.owningBlock() is n.owningBlock()


def _inlinable(v) -> bool:
    """A list or tuple read once, by a node that does not change it, can be written where it
    is read (its elements are SSA values: reading them later reads the same values)."""
    uses = v.uses()
    return len(uses) == 1 and uses[0].user.kind() not in _MUTATES_LIST

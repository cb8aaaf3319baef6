"""Compile an archive's serialized TorchScript (checked ASTs from ``source``) to ember's graph
IR, one graph per method and function, for ``ember.jit.executor`` to run.

Every call resolves at compile time: ``torch.X`` / ``ops.aten.X`` / ``ops.prim.X`` to an op of
``ops.OPS`` (its arguments bound by the op's schema), ``(m).method(...)`` to the compiled
method of ``m``'s declared class, ``__torch__.a.f`` to a function the archive defines. Nothing
else can be called; an op ember lacks fails here, at load time, naming the line.
"""

from __future__ import annotations

import ast

from ember.jit._load import ops as O
from ember.jit._load.reader import UnsafeArchiveError
from ember.jit._load.source import ClassDecl, FunctionDecl, SourceUnit, where
from ember.jit.executor import _NUMBER_OPS
from ember.jit.ir import Graph
from ember.jit.ir import types as T

__all__ = ["CompilationUnit", "parse_type"]

_INT_MAX = 9223372036854775807
_NUMBER_KINDS = frozenset(_NUMBER_OPS)

_SIMPLE_TYPES = {
    "Tensor": T.TensorType,
    "int": T.IntType,
    "float": T.FloatType,
    "bool": T.BoolType,
    "str": T.StringType,
    "NoneType": T.NoneType,
    "Device": T.DeviceObjType,
    "number": T.NumberType,
    "Scalar": T.NumberType,
    "Any": T.AnyType,
}

_BINOPS = {
    ast.Add: "aten::add",
    ast.Sub: "aten::sub",
    ast.Mult: "aten::mul",
    ast.Div: "aten::div",
    ast.FloorDiv: "aten::floordiv",
    ast.Mod: "aten::remainder",
    ast.Pow: "aten::pow",
}
_CMPOPS = {
    ast.Eq: "aten::eq",
    ast.NotEq: "aten::ne",
    ast.Lt: "aten::lt",
    ast.LtE: "aten::le",
    ast.Gt: "aten::gt",
    ast.GtE: "aten::ge",
    ast.Is: "aten::__is__",
    ast.IsNot: "aten::__isnot__",
    ast.In: "aten::__contains__",
}


def _qualname(node) -> str | None:
    """``__torch__.a.b.C`` for an attribute chain rooted at the name ``__torch__``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def parse_type(node) -> T.Type:
    """The IR type of a TorchScript type annotation (an AST expression)."""
    if node is None:
        return T.AnyType()
    if isinstance(node, ast.Constant) and node.value is None:
        return T.NoneType()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return parse_type(ast.parse(node.value, mode="eval").body)
    if isinstance(node, ast.Name):
        cls = _SIMPLE_TYPES.get(node.id)
        return cls() if cls is not None else T.AnyType()
    if isinstance(node, ast.Attribute):
        q = _qualname(node)
        if q and q.startswith("__torch__."):
            return T.ClassType(q)
        return T.AnyType()
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        head = node.value.id
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        inner = [parse_type(a) for a in args]
        if head == "Optional":
            return T.OptionalType(inner[0])
        if head == "List":
            return T.ListType(inner[0])
        if head == "Tuple":
            return T.TupleType(inner)
        if head == "Dict":
            return T.DictType(inner[0], inner[1])
        if head == "Final":
            return inner[0]
        if head == "Future":
            return T.FutureType(inner[0])
    return T.AnyType()


def type_of_string(s: str) -> T.Type:
    return parse_type(ast.parse(s, mode="eval").body)


class _FunctionRef:
    """A name bound to an archive function (``_0 = __torch__.torch.nn.functional.relu``)."""

    __slots__ = ("decl",)

    def __init__(self, decl: FunctionDecl):
        self.decl = decl


class CompilationUnit:
    """Compiles (lazily, once each) the methods and functions of a ``SourceUnit``."""

    def __init__(self, unit: SourceUnit, constants: tuple):
        self.unit = unit
        self.constants = constants
        self.graphs: dict[str, Graph] = {}
        self._compiling: set[str] = set()

    def graph_of(self, decl: FunctionDecl) -> Graph:
        g = self.graphs.get(decl.qualname)
        if g is None:
            if decl.qualname in self._compiling:
                raise RuntimeError(
                    f"ember.jit.load: {decl.qualname} calls itself; TorchScript has no recursion"
                )
            self._compiling.add(decl.qualname)
            try:
                g = _FunctionCompiler(self, decl).compile()
            finally:
                self._compiling.discard(decl.qualname)
            self.graphs[decl.qualname] = g
        return g

    def compile_all(self) -> None:
        """Compile every method and function (so a missing op fails now, not at run time)."""
        for c in self.unit.classes.values():
            for m in c.methods.values():
                self.graph_of(m)
        for f in self.unit.functions.values():
            self.graph_of(f)


class _FunctionCompiler:
    def __init__(self, cu: CompilationUnit, decl: FunctionDecl):
        self.cu = cu
        self.decl = decl
        self.graph = Graph()
        self.returned = False

    # ------------------------------------------------------------------ errors
    def fail(self, node, what: str, unsafe: bool = False):
        cls = UnsafeArchiveError if unsafe else RuntimeError
        raise cls(
            f"ember.jit.load: {what} ({where(self.decl.file, self.decl.lines, node)}); the "
            "archive was not loaded"
        )

    # ------------------------------------------------------------------ top level
    def compile(self) -> Graph:
        fn = self.decl.node
        g = self.graph
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            self.fail(fn, "varargs and keyword-only parameters are not TorchScript")
        env: dict = {}
        for i, arg in enumerate(a.args):
            if i == 0 and self.decl.owner is not None:
                t = T.ClassType(self.decl.owner.qualname)
            else:
                t = parse_type(arg.annotation)
            env[arg.arg] = g.addInput(arg.arg, t)
        g.setInsertPoint(g.block())
        self.ret_type = parse_type(fn.returns) if fn.returns is not None else T.AnyType()
        body = fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # a docstring
        self.block(body, env, top=True)
        if not self.returned:
            g.registerOutput(g.insertConstant(None))
        return g

    def block(self, stmts, env: dict, top: bool = False) -> None:
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Return):
                if not (top and i == len(stmts) - 1):
                    self.fail(s, "a return before the end of a function")
                v = self.graph.insertConstant(None) if s.value is None else self.expr(s.value, env)
                self.graph.registerOutput(self.value(v, s))
                self.returned = True
            else:
                self.stmt(s, env)

    # ------------------------------------------------------------------ statements
    def stmt(self, s, env: dict) -> None:
        if isinstance(s, ast.Pass):
            return
        if isinstance(s, ast.Expr):
            self.expr(s.value, env, discard=True)
            return
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                self.fail(s, "chained assignment")
            self.assign(s.targets[0], s.value, env, s)
            return
        if isinstance(s, ast.AnnAssign):
            if s.value is None:
                self.fail(s, "a declaration without a value in a function")
            self.assign(s.target, s.value, env, s)
            return
        if isinstance(s, ast.AugAssign):
            op = _BINOPS.get(type(s.op))
            if op is None or not isinstance(s.target, ast.Name):
                self.fail(s, "this augmented assignment")
            cur = self.lookup(s.target, env)
            env[s.target.id] = self.op(op, [cur, self.expr(s.value, env)], {}, s)
            return
        if isinstance(s, ast.If):
            cond = self.cond(s.test, env)
            self.if_(cond, s.body, s.orelse, env, s)
            return
        if isinstance(s, ast.For):
            self.for_(s, env)
            return
        if isinstance(s, ast.While):
            self.while_(s, env)
            return
        if isinstance(s, ast.Assert):
            cond = self.cond(s.test, env)
            msg = "AssertionError: " + (
                s.msg.value if isinstance(s.msg, ast.Constant) and isinstance(s.msg.value, str)
                else ""
            )  # fmt: skip
            self.if_(cond, [], [_raise_stmt(msg, s)], env, s)
            return
        self.fail(s, f"the statement {type(s).__name__} is not supported")

    def assign(self, target, value_node, env, s) -> None:
        if isinstance(target, ast.Name):
            v = self.expr(value_node, env)
            env[target.id] = v
            if not isinstance(v, _FunctionRef) and not v.hasDebugName():
                if v.node().kind() != "prim::Param":
                    v.setDebugName(target.id)
            return
        if isinstance(target, ast.Tuple):
            v = self.value(self.expr(value_node, env), s)
            n = self.graph.insert(
                "prim::TupleUnpack" if isinstance(v.type(), T.TupleType) else "prim::ListUnpack",
                [v],
                len(target.elts),
            )
            types = v.type().elements() if isinstance(v.type(), T.TupleType) else None
            for i, (t, o) in enumerate(zip(target.elts, n.outputs())):
                if not isinstance(t, ast.Name):
                    self.fail(s, "a nested unpacking target")
                if types is not None and i < len(types):
                    o.setType(types[i])
                elif isinstance(v.type(), T.ListType):
                    o.setType(v.type().getElementType())
                o.setDebugName(t.id)
                env[t.id] = o
            return
        if isinstance(target, ast.Attribute):
            obj = self.value(self.expr(target.value, env), s)
            self.check_attr(obj, target.attr, s)
            v = self.value(self.expr(value_node, env), s)
            n = self.graph.insert("prim::SetAttr", [obj, v], 0)
            n._set("s", "name", target.attr)
            return
        if isinstance(target, ast.Subscript):
            obj = self.value(self.expr(target.value, env), s)
            idx = self.expr(target.slice, env)
            self.op("aten::_set_item", [obj, idx, self.expr(value_node, env)], {}, s)
            return
        self.fail(s, f"assignment to {type(target).__name__}")

    def if_(self, cond, body, orelse, env, s):
        g = self.graph
        node = g.insertNode(g.create("prim::If", [cond], 0))
        results = []
        for stmts in (body, orelse):
            b = node.addBlock()
            benv = dict(env)
            with g.insert_point_guard(b):
                self.block(stmts, benv)
            results.append((b, benv, _raises(stmts)))
        names = []
        for _, benv, _ in results:
            for k, v in benv.items():
                if env.get(k) is not v and k not in names:
                    names.append(k)
        for k in names:
            vals = [benv.get(k) for _, benv, _ in results]
            if any(isinstance(v, _FunctionRef) for v in vals):
                if vals[0] is not vals[1]:
                    self.fail(s, f"'{k}' names different functions in the two branches")
                env[k] = vals[0]
                continue
            if any(v is None for v in vals):
                missing_raises = [r for (_, _, r), v in zip(results, vals) if v is None]
                if not all(missing_raises):
                    env.pop(k, None)  # defined on one path only: not visible after the if
                    continue
            known = next(v for v in vals if v is not None)
            outs = []
            for (b, _, _), v in zip(results, vals):
                if v is None:
                    with g.insert_point_guard(b):
                        v = g.insert("prim::Uninitialized", [], 1).output()
                        v.setType(known.type())
                b.registerOutput(v)
                outs.append(v)
            out = node.addOutput(_join(outs[0].type(), outs[1].type()))
            out.setDebugName(k) if not k.startswith("_") else None
            env[k] = out
        return node

    def _carried(self, body, env) -> list[str]:
        assigned = []
        for n in ast.walk(ast.Module(body=list(body), type_ignores=[])):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in assigned:
                assigned.append(n.id)
        return [k for k in assigned if k in env and not isinstance(env[k], _FunctionRef)]

    def _loop(self, trip, cond, body_fn, carried, env, s):
        g = self.graph
        init = [env[k] for k in carried]
        node = g.insertNode(g.create("prim::Loop", [trip, cond, *init], 0))
        b = node.addBlock()
        i = b.addInput(None, T.IntType())
        benv = dict(env)
        for k, v in zip(carried, init):
            benv[k] = b.addInput(None, v.type())
        with g.insert_point_guard(b):
            next_cond = body_fn(benv, i)
            b.registerOutput(next_cond)
            for k in carried:
                b.registerOutput(self.value(benv[k], s))
        for k, v in zip(carried, init):
            out = node.addOutput(v.type())
            env[k] = out
        return node

    def for_(self, s: ast.For, env):
        if s.orelse:
            self.fail(s, "for ... else")
        if not isinstance(s.target, ast.Name):
            self.fail(s, "a for loop target that is not a name")
        it = s.iter
        carried = self._carried(s.body, env)
        g = self.graph
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            if len(it.args) != 1 or it.keywords:
                self.fail(s, "range() with other than one argument")
            trip = self.value(self.expr(it.args[0], env), s)

            def body(benv, i):
                benv[s.target.id] = i
                self.block(s.body, benv)
                return g.insertConstant(True)

        else:
            seq = self.value(self.expr(it, env), s)
            trip = self.op("aten::len", [seq], {}, s)

            def body(benv, i):
                item = self.op("aten::__getitem__", [seq, i], {}, s)
                if isinstance(seq.type(), T.ListType):
                    item.setType(seq.type().getElementType())
                benv[s.target.id] = item
                self.block(s.body, benv)
                return g.insertConstant(True)

        self._loop(trip, g.insertConstant(True), body, carried, env, s)

    def while_(self, s: ast.While, env):
        if s.orelse:
            self.fail(s, "while ... else")
        carried = self._carried(s.body, env)
        g = self.graph
        first = self.cond(s.test, env)

        def body(benv, i):
            self.block(s.body, benv)
            return self.cond(s.test, benv)

        self._loop(g.insertConstant(_INT_MAX), first, body, carried, env, s)

    # ------------------------------------------------------------------ expressions
    def value(self, v, node):
        if isinstance(v, _FunctionRef):
            self.fail(node, f"the function {v.decl.qualname} used as a value")
        return v

    def cond(self, node, env):
        v = self.value(self.expr(node, env), node)
        if not isinstance(v.type(), T.BoolType):
            v = self.op("aten::Bool", [v], {}, node)
        return v

    def lookup(self, node: ast.Name, env):
        v = env.get(node.id)
        if v is None:
            if node.id == "None":
                return self.graph.insertConstant(None)
            if node.id in ("inf", "nan"):
                return self.graph.insertConstant(float(node.id))
            self.fail(node, f"the name '{node.id}' is not defined here", unsafe=True)
        return v

    def expr(self, node, env, discard: bool = False):
        g = self.graph
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, str, bool, type(None))):
                self.fail(node, f"a {type(node.value).__name__} constant")
            return g.insertConstant(node.value)
        if isinstance(node, ast.Name):
            return self.lookup(node, env)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, env)
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, (ast.List, ast.Tuple)):
            vals = [self.value(self.expr(e, env), node) for e in node.elts]
            if isinstance(node, ast.Tuple):
                n = g.insert("prim::TupleConstruct", vals)
                n.output().setType(T.TupleType([v.type() for v in vals]))
            else:
                n = g.insert("prim::ListConstruct", vals)
                elem = vals[0].type() if vals else T.TensorType()
                n.output().setType(T.ListType(elem))
            return n.output()
        if isinstance(node, ast.Dict):
            vals = []
            for k, v in zip(node.keys, node.values):
                if k is None:
                    self.fail(node, "a ** in a dict display")
                vals += [self.value(self.expr(k, env), node), self.value(self.expr(v, env), node)]
            return self.op("prim::DictConstruct", vals, {}, node)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.operand, ast.Constant) and isinstance(node.op, (ast.USub, ast.UAdd)):
                val = node.operand.value
                if isinstance(val, (int, float)) and not isinstance(val, bool):
                    return g.insertConstant(-val if isinstance(node.op, ast.USub) else val)
            x = self.value(self.expr(node.operand, env), node)
            if isinstance(node.op, ast.Not):
                return self.op("aten::__not__", [x], {}, node)
            if isinstance(node.op, ast.USub):
                return self.op("aten::neg", [x], {}, node)
            return x
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                self.fail(node, f"the operator {type(node.op).__name__}")
            return self.op(op, [self.expr(node.left, env), self.expr(node.right, env)], {}, node)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                self.fail(node, "a chained comparison")
            kind = _CMPOPS.get(type(node.ops[0]))
            left = self.expr(node.left, env)
            right = self.expr(node.comparators[0], env)
            if kind is None:  # not in
                return self.op(
                    "aten::__not__", [self.op("aten::__contains__", [right, left], {}, node)],
                    {}, node,
                )  # fmt: skip
            if kind == "aten::__contains__":
                return self.op(kind, [right, left], {}, node)
            return self.op(kind, [left, right], {}, node)
        if isinstance(node, ast.BoolOp):
            return self.boolop(node, env)
        if isinstance(node, ast.IfExp):
            cond = self.cond(node.test, env)
            tmp = "$ifexp"
            body = [ast.Assign(targets=[ast.Name(tmp, ast.Store())], value=node.body)]
            orelse = [ast.Assign(targets=[ast.Name(tmp, ast.Store())], value=node.orelse)]
            for st in body + orelse:
                ast.copy_location(st, node)
                ast.copy_location(st.targets[0], node)
            local = dict(env)
            self.if_(cond, body, orelse, local, node)
            return local[tmp]
        if isinstance(node, ast.Subscript):
            obj = self.value(self.expr(node.value, env), node)
            if isinstance(node.slice, ast.Slice):
                sl = node.slice
                parts = [
                    g.insertConstant(None) if p is None else self.expr(p, env)
                    for p in (sl.lower, sl.upper)
                ]
                step = g.insertConstant(1) if sl.step is None else self.expr(sl.step, env)
                out = self.op("aten::slice", [obj, g.insertConstant(0), *parts, step], {}, node)
                out.setType(obj.type())
                return out
            idx = self.value(self.expr(node.slice, env), node)
            out = self.op("aten::__getitem__", [obj, idx], {}, node)
            t = obj.type()
            if isinstance(t, T.ListType):
                out.setType(t.getElementType())
            elif isinstance(t, T.DictType):
                out.setType(t.getValueType())
            elif isinstance(t, T.TupleType) and isinstance(node.slice, ast.Constant):
                k = node.slice.value
                if isinstance(k, int) and -len(t.elements()) <= k < len(t.elements()):
                    out.setType(t.elements()[k])
            return out
        self.fail(node, f"the expression {type(node).__name__}")

    def boolop(self, node: ast.BoolOp, env):
        # a and b -> if a: b else False ; a or b -> if a: True else b
        left = self.cond(node.values[0], env)
        for rhs in node.values[1:]:
            tmp = "$bool"
            const = ast.Constant(value=isinstance(node.op, ast.Or))
            rest = ast.Call(func=ast.Name("bool", ast.Load()), args=[rhs], keywords=[])
            take = [ast.Assign(targets=[ast.Name(tmp, ast.Store())], value=rest)]
            keep = [ast.Assign(targets=[ast.Name(tmp, ast.Store())], value=const)]
            for st in take + keep:
                for sub in ast.walk(st):
                    ast.copy_location(sub, node)
            local = dict(env)
            if isinstance(node.op, ast.And):
                self.if_(left, take, keep, local, node)
            else:
                self.if_(left, keep, take, local, node)
            left = local[tmp]
        return left

    def attribute(self, node: ast.Attribute, env):
        g = self.graph
        if isinstance(node.value, ast.Name) and node.value.id == "CONSTANTS":
            name = node.attr
            if not (name.startswith("c") and name[1:].isdigit()):
                self.fail(node, f"CONSTANTS.{name} is not a constant name", unsafe=True)
            k = int(name[1:])
            if k >= len(self.cu.constants):
                self.fail(node, f"CONSTANTS.{name} is not in constants.pkl")
            return g.insertConstant(self.cu.constants[k])
        q = _qualname(node)
        if q is not None and q.startswith("__torch__."):
            f = self.cu.unit.functions.get(q)
            if f is None:
                self.fail(node, f"{q} is not defined by the archive's code", unsafe=True)
            return _FunctionRef(f)
        obj = self.value(self.expr(node.value, env), node)
        return self.getattr(obj, node.attr, node)

    def class_of(self, v) -> ClassDecl | None:
        t = v.type()
        if isinstance(t, T.OptionalType):
            t = t.getElementType()
        if isinstance(t, T.ClassType):
            return self.cu.unit.classes.get(t.qualified_name())
        return None

    def check_attr(self, obj, name: str, node) -> ClassDecl:
        c = self.class_of(obj)
        if c is None:
            self.fail(node, f"the attribute '{name}' of a {obj.type()} value", unsafe=True)
        if name.startswith("__"):
            self.fail(node, f"the dunder attribute '{name}'", unsafe=True)
        if (
            name not in c.attributes
            and name not in c.parameters + c.buffers
            and name not in ("training",)
        ):
            self.fail(node, f"'{name}' is not an attribute {c.qualname} declares", unsafe=True)
        return c

    def getattr(self, obj, name: str, node):
        c = self.check_attr(obj, name, node)
        if c.is_namedtuple:
            k = list(c.attributes).index(name)
            n = self.graph.insert("prim::TupleIndex", [obj, self.graph.insertConstant(k)])
            n.output().setType(parse_type(c.attributes[name]))
            return n.output()
        if name in c.constants:
            return self.graph.insertConstant(_constant(c.constants[name]))
        n = self.graph.insert("prim::GetAttr", [obj])
        n._set("s", "name", name)
        ann = c.attributes.get(name)
        if name == "training":
            t = T.BoolType()
        else:
            t = parse_type(ann) if ann is not None else T.TensorType()
        n.output().setType(t)
        n.output().setDebugName(name if name.isidentifier() else f"_{name}")
        return n.output()

    # ------------------------------------------------------------------ calls
    def call(self, node: ast.Call, env):
        g = self.graph
        f = node.func
        if any(k.arg is None for k in node.keywords):
            self.fail(node, "a ** argument")
        if any(isinstance(a, ast.Starred) for a in node.args):
            self.fail(node, "a * argument")
        # builtins TorchScript prints
        if isinstance(f, ast.Name) and f.id not in env:
            return self.builtin(f.id, node, env)
        # ops: torch.X, ops.aten.X, ops.prim.X
        if isinstance(f, ast.Attribute):
            q = _qualname(f)
            kind = None
            if q is not None and q.count(".") == 1 and q.startswith("torch."):
                kind = "aten::" + f.attr
            elif q is not None and q.count(".") == 2 and q.startswith(("ops.aten.", "ops.prim.")):
                kind = q[4:].replace(".", "::")
            if kind is not None and "torch" not in env and "ops" not in env:
                args = [self.expr(a, env) for a in node.args]
                kwargs = {k.arg: self.expr(k.value, env) for k in node.keywords}
                return self.op(kind, args, kwargs, node)
            if q is not None and q.startswith("__torch__.") and f.attr == "__new__":
                return self.create_object(q[: -len(".__new__")], node)
            if q is not None and q.startswith("__torch__."):
                fn = self.cu.unit.functions.get(q)
                c = self.cu.unit.classes.get(q)
                if fn is None and c is not None and c.is_namedtuple:
                    return self.namedtuple(c, node, env)
                if fn is None:
                    self.fail(node, f"{q} is not a function of the archive's code", unsafe=True)
                return self.call_function(fn, node, env)
            # (obj).method(...)
            obj = self.value(self.expr(f.value, env), node)
            c = self.class_of(obj)
            if c is None:
                # a builtin's method (xs.append(x), t.size(0)): the op with the value first
                if O.lookup("aten::" + f.attr) is None:
                    self.fail(node, f"the method '{f.attr}' of a {obj.type()} value")
                args = [obj, *(self.expr(a, env) for a in node.args)]
                kwargs = {k.arg: self.expr(k.value, env) for k in node.keywords}
                return self.op("aten::" + f.attr, args, kwargs, node)
            m = c.methods.get(f.attr)
            if m is None:
                self.fail(node, f"{c.qualname} has no method '{f.attr}'", unsafe=True)
            callee = self.cu.graph_of(m)
            args = self.bind_decl(m, node, env, skip_self=True)
            n = g.insert("prim::CallMethod", [obj, *args])
            n._set("s", "name", f.attr)
            n._callee = callee
            n.output().setType(callee.outputs()[0].type())
            self._src(n, node)
            return n.output()
        if isinstance(f, ast.Name):
            ref = env[f.id]
            if isinstance(ref, _FunctionRef):
                return self.call_function(ref.decl, node, env)
        self.fail(node, "a call of something that is not an op, method or function")

    def create_object(self, q: str, node: ast.Call):
        """``__torch__.C.__new__(__torch__.C)``: a new, empty object of archive class C (its
        ``__init__`` is then called as a method)."""
        c = self.cu.unit.classes.get(q)
        if c is None or c.is_module or c.is_namedtuple:
            self.fail(node, f"{q} is not a class of the archive's code", unsafe=True)
        if len(node.args) != 1 or node.keywords or _qualname(node.args[0]) != q:
            self.fail(node, f"{q}.__new__ must be called on {q}", unsafe=True)
        n = self.graph.insert("prim::CreateObject", [])
        cu = self.cu

        def create():
            from ember.jit._load.module import LoadedScriptObject

            return LoadedScriptObject(c, cu)

        n._payload = create
        n.output().setType(T.ClassType(q))
        return n.output()

    def namedtuple(self, c: ClassDecl, node: ast.Call, env):
        fields = list(c.attributes)
        vals: list = [None] * len(fields)
        for i, a in enumerate(node.args):
            vals[i] = self.value(self.expr(a, env), node)
        for k in node.keywords:
            if k.arg not in fields:
                self.fail(node, f"{c.qualname} has no field '{k.arg}'")
            vals[fields.index(k.arg)] = self.value(self.expr(k.value, env), node)
        if any(v is None for v in vals) or len(node.args) > len(fields):
            self.fail(node, f"{c.qualname} takes the fields {', '.join(fields)}")
        n = self.graph.insert("prim::TupleConstruct", vals)
        n.output().setType(T.ClassType(c.qualname))
        return n.output()

    def call_function(self, decl: FunctionDecl, node, env):
        g = self.graph
        callee = self.cu.graph_of(decl)
        args = self.bind_decl(decl, node, env)
        fconst = g.insertNode(g.create("prim::Constant", [], 1))
        fconst._set("s", "name", decl.name)
        fconst.output().setType(T.AnyType())
        n = g.insert("prim::CallFunction", [fconst.output(), *args])
        n._callee = callee
        n.output().setType(callee.outputs()[0].type())
        self._src(n, node)
        return n.output()

    def bind_decl(self, decl: FunctionDecl, node: ast.Call, env, skip_self=False) -> list:
        params = decl.node.args.args[1:] if skip_self else decl.node.args.args
        defaults = decl.node.args.defaults
        first_default = len(decl.node.args.args) - len(defaults)
        offset = 1 if skip_self else 0
        out: list = [None] * len(params)
        if len(node.args) > len(params):
            self.fail(node, f"{decl.qualname} takes {len(params)} arguments")
        for i, a in enumerate(node.args):
            out[i] = self.value(self.expr(a, env), node)
        names = [p.arg for p in params]
        for k in node.keywords:
            if k.arg not in names:
                self.fail(node, f"{decl.qualname} has no parameter '{k.arg}'")
            out[names.index(k.arg)] = self.value(self.expr(k.value, env), node)
        for i, v in enumerate(out):
            if v is None:
                j = i + offset - first_default
                if j < 0:
                    self.fail(node, f"{decl.qualname} is missing argument '{names[i]}'")
                lit = _literal(defaults[j])
                if lit is _NOT_LITERAL:
                    self.fail(node, "a parameter default that is not a literal")
                out[i] = self.graph.insertConstant(_constant(lit))
        return out

    def builtin(self, name: str, node: ast.Call, env):
        g = self.graph
        args = node.args
        if name in ("annotate", "unchecked_cast"):
            if len(args) != 2:
                self.fail(node, f"{name}() takes a type and a value")
            t = parse_type(args[0])
            v = self.value(self.expr(args[1], env), node)
            if name == "unchecked_cast":
                n = g.insert("prim::unchecked_cast", [v])
                n.output().setType(t)
                return n.output()
            v.setType(t) if v.node().kind() in ("prim::ListConstruct", "prim::Constant",
                                               "prim::DictConstruct") else None  # fmt: skip
            return v
        if name == "uninitialized":
            n = g.insert("prim::Uninitialized", [], 1)
            n.output().setType(parse_type(args[0]) if args else T.AnyType())
            return n.output()
        if name == "getattr":
            if len(args) != 2 or not (
                isinstance(args[1], ast.Constant) and isinstance(args[1].value, str)
            ):
                self.fail(node, "getattr() with a name that is not a string literal", unsafe=True)
            obj = self.value(self.expr(args[0], env), node)
            return self.getattr(obj, args[1].value, node)
        if name in ("int", "float", "bool", "str", "len") and len(args) == 1:
            if name == "float" and isinstance(args[0], ast.Constant):
                if isinstance(args[0].value, str) and args[0].value in ("inf", "-inf", "nan"):
                    return g.insertConstant(float(args[0].value))
            kind = {"int": "aten::Int", "float": "aten::Float", "bool": "aten::Bool",
                    "str": "aten::str", "len": "aten::len"}[name]  # fmt: skip
            return self.op(kind, [self.expr(args[0], env)], {}, node)
        if name in ("min", "max"):
            return self.op(f"prim::{name}", [self.expr(a, env) for a in args], {}, node)
        if name == "print":
            vals = [self.value(self.expr(a, env), node) for a in args]
            n = g.insert("prim::Print", vals, 0)
            n._payload = _print
            return g.insertConstant(None)
        if name == "isinstance":
            self.fail(node, "isinstance() checks are not supported by ember's loader")
        self.fail(node, f"the function '{name}' is not a TorchScript builtin", unsafe=True)

    def op(self, kind: str, args: list, kwargs: dict, node):
        if kind == "aten::format":
            self.check_format(args, node)
        if O.lookup(kind) is None and kind not in O.OVERLOADS:
            self.fail(
                node,
                f"the archive calls {kind.replace('aten::', 'torch.')} ({kind}), which ember "
                "does not implement",
            )
        try:
            schema, full = O.bind(kind, args, kwargs)
            if kind in _NUMBER_KINDS and not kwargs:
                # the executor runs these on Python numbers with exactly the given operands
                # (no alpha, no rounding mode); the runners default the rest
                full = full[: len(args)]
        except TypeError as e:
            self.fail(node, str(e))
        g = self.graph
        vals = []
        for v in full:
            if isinstance(v, _FunctionRef):
                self.fail(node, f"the function {v.decl.qualname} passed to {kind}")
            vals.append(v if not _is_py(v) else g.insertConstant(_constant(v)))
        n = g.insert(kind, vals)
        n._payload = schema.run
        n.output().setType(type_of_string(schema.out))
        self._src(n, node)
        return n.output()

    def check_format(self, args, node) -> None:
        """A format string must be a literal with positional fields only: ``{0.__class__}``
        would reach into the objects it formats."""
        fmt = args[0] if args else None
        if fmt is None or _is_py(fmt):
            self.fail(node, "torch.format without a format string")
        if fmt.node().kind() != "prim::Constant" or not fmt.node().hasAttribute("value"):
            # computed (a parameter's default message): checked when it runs
            n = self.graph.insert("ember::check_format", [fmt], 0)
            n._payload = O.check_format
            return
        try:
            O.check_format(fmt.node().s("value"))
        except RuntimeError as e:
            self.fail(node, str(e), unsafe=True)

    def _src(self, n, node) -> None:
        n.setSourceRange(f"{self.decl.file}:{getattr(node, 'lineno', 0)}")


def _is_py(v) -> bool:
    from ember.jit.ir import Value

    return not isinstance(v, Value)


def _print(*args):
    print(*args)


def _constant(v):
    # tuples in class constants print as tuples; the IR holds lists for them
    if isinstance(v, tuple):
        return list(v)
    return v


_NOT_LITERAL = object()


def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return _NOT_LITERAL


def _raise_stmt(msg: str, like):
    call = ast.Call(
        func=ast.Attribute(
            value=ast.Attribute(value=ast.Name("ops", ast.Load()), attr="prim", ctx=ast.Load()),
            attr="RaiseException",
            ctx=ast.Load(),
        ),
        args=[ast.Constant(msg)],
        keywords=[],
    )
    st = ast.Expr(call)
    for sub in ast.walk(st):
        ast.copy_location(sub, like)
    return st


def _raises(stmts) -> bool:
    for s in stmts:
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            q = _qualname(s.value.func)
            if q == "ops.prim.RaiseException":
                return True
    return False


def _join(a: T.Type, b: T.Type) -> T.Type:
    if a == b:
        return a
    if isinstance(a, T.NoneType):
        return b if isinstance(b, T.OptionalType) else T.OptionalType(b)
    if isinstance(b, T.NoneType):
        return a if isinstance(a, T.OptionalType) else T.OptionalType(a)
    return a

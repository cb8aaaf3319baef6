"""``jit.script``'s compiler: Python source (a function, a module's ``forward``) to the IR.

The subset: typed arguments (``Tensor`` by default, ``int``, ``float``, ``bool``, ``List``,
``Optional``, ``Tuple``), assignments (tuple unpacking too), augmented assignments,
arithmetic and comparisons, ``if``/``else``, ``for`` over ``range`` and over a
``ModuleList``/``Sequential``, ``while``, ``return`` (early ones too), calls to ember's
functions and tensor methods, to submodules and to other compilable functions. A call node runs the
function it names (its ``_payload``), the same one eager code calls.

What TorchScript rejects (``with``, ``lambda``, Python builtins it lacks, a variable typed
differently on two branches) raises torch's error quoting the line. What ember's compiler
does not cover yet raises ``Unsupported``; ``jit.script`` then keeps the eager module.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types
import typing

import ember
from ember._standin import is_ember_module
from ember.jit import _method_schemas
from ember.jit import ir as IR
from ember.jit.frontend import NotSupportedError, UnsupportedNodeError, highlight
from ember.jit.passes.inline import set_callee

__all__ = ["compile_function", "compile_module", "Unsupported"]


class Unsupported(Exception):
    """A construct TorchScript has but this compiler does not compile yet."""


_INT_MAX = 9223372036854775807
_T, _I, _F, _B = IR.TensorType(), IR.IntType(), IR.FloatType(), IR.BoolType()


def _ann_type(ann, glb) -> IR.Type:
    if ann is None:
        return _T
    if isinstance(ann, str):
        names = {"List": typing.List, "Optional": typing.Optional, "Dict": typing.Dict,  # noqa: UP006
                 "Tuple": typing.Tuple}  # noqa: UP006  # fmt: skip
        ann = eval(ann, dict(glb), names)  # noqa: S307
    if ann in (ember.Tensor,) or getattr(ann, "__name__", "") == "Tensor":
        return _T
    if _script_class(ann):
        return _class_type(ann)
    simple = {int: _I, float: _F, bool: _B, str: IR.StringType(), type(None): IR.NoneType()}
    if ann in simple:
        return simple[ann]
    if ann is list:
        return IR.ListType(_T)
    if ann is tuple:
        return IR.TupleType([])
    if ann is dict:
        return IR.DictType(IR.StringType(), _T)
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is list:
        return IR.ListType(_ann_type(args[0], glb))
    if origin is tuple:
        return IR.TupleType([_ann_type(a, glb) for a in args])
    if origin is dict:
        return IR.DictType(_ann_type(args[0], glb), _ann_type(args[1], glb))
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        other = args[0] if args[1] is type(None) else args[1]
        return IR.OptionalType(_ann_type(other, glb))
    raise Unsupported(f"annotation {ann!r}")


def _module_type(m) -> IR.Type:
    from ember.jit._tracer import module_type

    return module_type(m)


_FOREIGN_HOMES = ("typing", "numpy", "collections")  # library classes, never compiled


def _script_class(cls) -> bool:
    """Whether ``cls`` is a user's plain class TorchScript compiles as a class type (its
    attributes typed from ``__init__``)."""
    if not inspect.isclass(cls) or issubclass(cls, (BaseException, ember.nn.Module)):
        return False
    home = getattr(cls, "__module__", "") or ""
    if home == "builtins" or is_ember_module(home) or home.split(".")[0] in _FOREIGN_HOMES:
        return False
    return inspect.isfunction(cls.__dict__.get("__init__"))


_CLASSES: dict = {}  # qualified name -> the Python class
_CLASS_ATTRS: dict = {}  # class -> its attributes' types


def _class_type(cls) -> IR.ClassType:
    name = f"__torch__.{cls.__module__}.{cls.__qualname__}"
    _CLASSES[name] = cls
    return IR.ClassType(name)


def _class_attrs(cls) -> dict:
    """``{attribute: IR type}`` of a TorchScript class, from its ``__init__``: ``self.a: T``
    annotations, else the annotation of the argument assigned to it."""
    cached = _CLASS_ATTRS.get(cls)
    if cached is not None:
        return cached
    init = cls.__dict__["__init__"]
    glb = dict(init.__globals__)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError) as err:
        raise Unsupported(f"no source for {cls.__qualname__}: {err}") from None
    hints = typing.get_type_hints(init)
    attrs: dict = {}
    for node in ast.walk(tree):
        target, ann = None, None
        if isinstance(node, ast.AnnAssign):
            target, ann = node.target, node.annotation
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            continue
        if ann is not None:
            attrs[target.attr] = _ann_type(ast.unparse(ann), glb)
        elif isinstance(node.value, ast.Name) and node.value.id in hints:
            attrs.setdefault(target.attr, _ann_type(hints[node.value.id], glb))
        elif target.attr not in attrs:
            raise Unsupported(f"untyped attribute {cls.__qualname__}.{target.attr}")
    _CLASS_ATTRS[cls] = attrs
    return attrs


def _layer_function(obj, name: str) -> bool:
    """Whether ``obj.<name>`` is a layer's ``nn.functional`` function named by a class attribute
    ``_fn = _functional("max_pool2d")``: calling it compiles as calling that function."""
    from ember.nn.modules.utils import _functional

    return isinstance(obj, ember.nn.Module) and isinstance(
        inspect.getattr_static(type(obj), name, None), _functional
    )


def _py_type(x) -> IR.Type:
    if hasattr(x, "_data"):
        return _T
    if _script_class(type(x)):
        return _class_type(type(x))
    if isinstance(x, dict):
        if not x:
            return IR.DictType(IR.StringType(), _T)
        k, v = next(iter(x.items()))
        return IR.DictType(_py_type(k), _py_type(v))
    if isinstance(x, tuple):
        return IR.TupleType([_py_type(e) for e in x])
    if isinstance(x, list) and x and not all(isinstance(e, (int, float, bool, str)) for e in x):
        return IR.ListType(_py_type(x[0]))
    try:
        return IR.constant_type(x)
    except RuntimeError as err:  # a Python object TorchScript has no type for
        raise Unsupported(f"value of type {type(x).__name__}") from err


class _Compiler:
    def __init__(self, fn, graph: IR.Graph, glb: dict, module=None):
        self.fn, self.g, self.glb, self.module = fn, graph, glb, module
        src = inspect.getsource(fn)
        self.lines = textwrap.dedent(src).splitlines()
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        self.first = fn.__code__.co_firstlineno
        self.tree = ast.parse(textwrap.dedent(src))
        self.indent = len(src.splitlines()[0]) - len(src.splitlines()[0].lstrip())
        self.inferred: set = set()  # inputs typed Tensor for want of an annotation
        # torch's emitter numbers a value per read of a local (a ``prim::Load`` that names
        # itself after the variable, renaming the holder: ``x`` -> ``x.1``) and makes one
        # constant per int/float literal, put first in the graph; ``_number`` replays that
        self._loads: list = []
        self._literals: dict = {}
        self._late_names: list = []  # (value, name): an if's outputs, named once compiled
        self._late_values: list = []  # values torch's SSA pass makes (numbered at the end)

    # --- errors
    def _where(self, node, width: int | None = None) -> str:
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        if width is not None:
            end = (lineno, col + width)
        else:
            end = (getattr(node, "end_lineno", lineno), getattr(node, "end_col_offset", col + 1))
        return highlight(self.file, self.first, self.lines, (lineno, col), end)

    def error(self, node, msg: str, cls=RuntimeError, width: int | None = None):
        if cls is RuntimeError:
            return RuntimeError(f"\n{msg}:\n{self._where(node, width)}")
        return cls(self._where(node, width), msg)

    def _src(self, node) -> str:
        node = _leftmost(node)
        return f"{self.file}:{self.first + node.lineno - 1}:{node.col_offset + self.indent}"

    # --- torch's value numbering (see ``__init__``)
    def load(self, name: str, v):
        """Read local ``name`` (holding ``v``): a numbered stand-in for torch's
        ``prim::Load``, named ``name`` until the function is compiled."""
        ph = self.g.create("prim::Load", [], 1).output()
        ph.setDebugName(name)
        self._loads.append(ph)
        return v

    def literal(self, value, node):
        """An int or float literal: one constant per value, first in the graph."""
        key = (type(value), value)
        v = self._literals.get(key)
        if v is None:
            n = self.g.createConstant(value)
            n.setSourceRange(self._src(node))
            top = self.g.block()
            first = next(iter(top.nodes()), None)
            if first is None:
                self.g.insertNode(n)
            else:
                n.insertBefore(first)
            v = self._literals[key] = n.output()
        return v

    def _late_value(self, v) -> None:
        self.g._unique -= 1  # (its number is given in ``_finish_numbering``)
        self._late_values.append(v)

    def _finish_numbering(self) -> None:
        for ph in self._loads:
            ph.setDebugName(None)
        self._loads.clear()
        for v in self._late_values:
            v._unique = self.g._new_unique()
        for v, name in self._late_names:
            if callable(v):
                v(*name)
            else:
                v.setDebugName(name)
        self._late_names.clear()
        _lower_simple_tuples(self.g.block())
        _sweep_dead(self.g.block())
        pool_constants(self.g)

    # --- emitting
    def emit(self, kind, inputs, out_type=None, node=None, payload=None, n_out=1):
        n = self.g.insertNode(self.g.create(kind, inputs, n_out))
        if node is not None:
            n.setSourceRange(self._src(node))
        if payload is not None:
            n._payload = payload
        if n_out == 1 and out_type is not None:
            n.output().setType(out_type)
        return n

    def const(self, value, node=None):
        try:
            v = self.g.insertConstant(value)
        except RuntimeError as e:  # a Python object TorchScript has no constant for
            raise Unsupported(f"constant of type {type(value).__name__}") from e
        if node is not None and value is not None:
            v.node().setSourceRange(self._src(node))
        return v

    # --- functions
    def compile(self, skip_self: bool):
        fdef = self.tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            raise Unsupported("not a function definition")
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs:
            bad = a.vararg or a.kwarg or a.kwonlyargs[0]
            raise self.error(
                bad,
                "Compiled functions can't take variable number of arguments or use "
                "keyword-only arguments with defaults",
                NotSupportedError,
            )
        env = {}
        hints = typing.get_type_hints(self.fn) if not isinstance(self.fn, type) else {}
        for i, arg in enumerate(a.args):
            if i == 0 and skip_self:
                v = self.g.addInput("self", _module_type(self.module))
                env[arg.arg] = v
                env["__modules__"] = {v: self.module}
                continue
            t = _ann_type(hints.get(arg.arg), self.glb)
            env[arg.arg] = self.g.addInput(arg.arg, t)
            if arg.arg not in hints:
                self.inferred.add(env[arg.arg])
        body = list(fdef.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        self.ret_type = _ann_type(hints["return"], self.glb) if "return" in hints else _T
        ret = self.block(_fold_returns(_lower_exits(body, [0])), env, top=True)
        if ret is None:
            ret = self.const(None)
        self.g.registerOutput(ret)
        self._finish_numbering()
        return self.g

    # --- statements
    def block(self, stmts, env, top=False):
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Return):
                if i != len(stmts) - 1:
                    raise Unsupported("code after return")
                v = self.expr(s.value, env) if s.value is not None else self.const(None)
                if top:
                    return v
                env[_RET] = v  # a branch's return: an output of its prim::If
                return None
            if isinstance(s, ast.Raise):
                self.raise_stmt(s, env)
                # nothing after a raise runs: the function "returns" an uninitialized value
                if top:
                    return self.emit("prim::Uninitialized", [], self.ret_type, s).output()
                env[_RAISED] = True  # the enclosing if takes the other branch's values
                return None
            self.stmt(s, env)
        return env.get(_RET) if top else None

    def raise_stmt(self, s, env):
        """``raise ValueError(msg)``: ``prim::RaiseException(msg, "builtins.ValueError")``."""
        exc = s.exc
        if exc is None or s.cause is not None:
            raise Unsupported("bare raise / raise from")
        call = exc if isinstance(exc, ast.Call) else None
        cls = self._resolve(call.func if call is not None else exc, env)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            raise Unsupported("raise of this value")
        if call is not None and call.args:
            msg = self.expr(call.args[0], env)
        else:
            msg = self.const("", s)
        qual = f"{cls.__module__}.{cls.__qualname__}"
        self.emit("prim::RaiseException", [msg, self.const(qual, s)], node=s, n_out=0)

    def stmt(self, s, env):
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise Unsupported("chained assignment")
            target = s.targets[0]
            if (
                isinstance(target, ast.Name)
                and isinstance(s.value, (ast.Name, ast.Attribute))
                and not (isinstance(s.value, ast.Name) and s.value.id in env)
                and inspect.isclass(self._resolve(s.value, env))
            ):  # ``backend = SomeClass``: a name for the class, not a value
                env.setdefault("__aliases__", {})[target.id] = self._resolve(s.value, env)
                return
            self.assign(target, self.expr(s.value, env), env, s)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            want = _ann_type(ast.unparse(s.annotation), self.glb)
            v = self.expr(s.value, env)
            if v.type() != want and v.node().kind() not in ("prim::Param", "prim::GetAttr"):
                if _assignable(v.type(), want):
                    v.setType(want)  # ``xs: List[int] = []``, ``y: Optional[int] = None``
            self.assign(s.target, v, env, s)
        elif isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name):
                raise Unsupported("augmented assignment to a non-name")
            cur = self.expr(s.target, env)
            if isinstance(cur.type(), IR.TensorType) and type(s.op) in _INPLACE:
                # ``x += y`` on a tensor is in place, in Python as in TorchScript (aten::add_)
                name, dunder = _INPLACE[type(s.op)]
                rhs = self.expr(s.value, env)
                ins = [cur, rhs] + ([self.const(1)] if name in ("add_", "sub_") else [])

                def payload(x, y, *alpha, dunder=dunder):
                    return getattr(x, dunder)(y)

                v = self.emit(f"aten::{name}", ins, _T, s, payload=payload).output()
            else:
                v = self.binop(s.op, cur, self.expr(s.value, env), s)
            self.assign(s.target, v, env, s)
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Call):
                s.value._statement = True
            self.expr(s.value, env)
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, _Bind):
            s.bind(env)
        elif isinstance(s, ast.Assert):
            self.assert_stmt(s, env)
        elif isinstance(s, ast.If):
            self.if_stmt(s, env)
        elif isinstance(s, ast.For):
            self.for_stmt(s, env)
        elif isinstance(s, ast.While):
            self.while_stmt(s, env)
        elif isinstance(s, ast.With):
            item = s.items[0].context_expr
            target = item.func if isinstance(item, ast.Call) else item
            obj = self._resolve(target, env)
            if obj is open:
                msg = "Python builtin <built-in function open> is currently not supported in "
                raise self.error(target, msg + "Torchscript")
            raise Unsupported("with")
        elif isinstance(s, ast.Raise):
            self.raise_stmt(s, env)
        elif isinstance(s, (ast.Try, ast.Global, ast.Nonlocal, ast.ClassDef)):
            # torch's names for these and the keyword it underlines
            what, word = {
                ast.Try: ("try blocks", "try"),
                ast.Global: ("global variables", "global"),
                ast.Nonlocal: ("nonlocal variables", "nonlocal"),
                ast.ClassDef: ("class definitions", "class"),
            }[type(s)]
            raise self.error(s, f"{what} aren't supported", UnsupportedNodeError, width=len(word))
        elif isinstance(s, ast.Delete):
            self.delete_stmt(s, env)
        else:
            raise Unsupported(type(s).__name__)

    def assign(self, target, v, env, s):
        if isinstance(target, ast.Name):
            # torch names an unnamed value after the local it is stored in when it was made in
            # the block being compiled (a literal in a branch is a constant of the graph: not)
            here = v.node().owningBlock() is self.g.insertPoint().owningBlock()
            if not v.hasDebugName() and target.id != "_" and here:  # (``_`` stays unnamed)
                v.setDebugName(target.id)
            env[target.id] = v
        elif (
            isinstance(target, ast.Tuple)
            and not isinstance(getattr(s, "value", None), ast.Name)
            and v.node().kind() == "prim::TupleConstruct"
            and len(v.node().inputs()) == len(target.elts)
        ):  # ``v, i = x.max(0)``: the call's values are the targets (no unpack)
            for o, e in zip(v.node().inputs(), target.elts):
                self.assign(e, o, env, s)
        elif isinstance(target, ast.Tuple):
            t = v.type()
            n = len(target.elts)
            kind = "prim::TupleUnpack" if isinstance(t, IR.TupleType) else "prim::ListUnpack"
            node = self.emit(kind, [v], n_out=n)  # (torch's unpack has no source range)
            if isinstance(t, IR.TupleType):
                elems = t.elements()
            else:
                elems = [t.getElementType() if isinstance(t, IR.ListType) else _T] * n
            for o, et, e in zip(node.outputs(), elems, target.elts):
                o.setType(et)
                self.assign(e, o, env, s)
        elif isinstance(target, ast.Subscript) and not isinstance(target.slice, ast.Slice):
            base = self.expr(target.value, env)
            if not isinstance(base.type(), (IR.ListType, IR.DictType)):
                raise Unsupported("item assignment to this value")
            key = self.expr(target.slice, env)
            self.emit("aten::_set_item", [base, key, v], node=s, n_out=0, payload=_set_item)
        else:
            raise Unsupported("assignment target")

    def delete_stmt(self, s, env):
        """``del x`` forgets a local; ``del xs[i]`` / ``del d[k]`` is ``aten::Delete``."""
        for t in s.targets:
            if isinstance(t, ast.Name) and t.id in env:
                del env[t.id]
            elif isinstance(t, ast.Subscript):
                base, key = self.expr(t.value, env), self.expr(t.slice, env)
                self.emit("aten::Delete", [base, key], node=s, n_out=0, payload=_delete)
            else:
                raise Unsupported("del target")

    def assert_stmt(self, s, env):
        """``assert c, msg``: ``prim::If(c)`` raising ``AssertionError`` in its false branch;
        ``assert x is not None`` refines ``x`` after it."""
        ref = self._refinement(s.test, env)
        if ref is not None and ref[0] is True:
            return
        cond = self._val(self._bool(self.expr(s.test, env), s.test))
        msg = ast.unparse(s.msg) if s.msg is not None else ""
        if isinstance(s.msg, ast.Constant):
            msg = str(s.msg.value)
        n = self.emit("prim::If", [cond], node=s, n_out=0)
        n.addBlock()
        b = n.addBlock()
        with self.g.insert_point_guard(b):
            text = self.const("AssertionError: " + msg if msg else "AssertionError: ", s)
            self.emit("prim::RaiseException", [text], node=s, n_out=0, payload=_raise_assert)
        if ref is not None and ref[0] is None and ref[3] is True:
            self._refine_in(env, ref[1], ref[2], s.test)

    def _assigned(self, stmts) -> list:
        names = []
        for s in stmts:
            for n in ast.walk(s):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in names:
                    names.append(n.id)
        return names

    def _bool(self, v, node):
        if isinstance(v.type(), IR.TensorType):
            return self.emit("aten::Bool", [v], _B, node)
        return v

    # --- refinement: ``x is None``, ``x is not None``, ``isinstance(x, T)``
    def _refinement(self, test, env):
        """Return ``(static, name, refined_type, when)``: ``static`` is the test's value when
        the types decide it (only the live branch is compiled, as torch's), else None with
        ``name`` refined to ``refined_type`` in the branch where the test is ``when``."""
        negate = False
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            negate, test = not negate, test.operand
        res = None
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.left, ast.Attribute)
            and isinstance(self._resolve(test.left.value, env), ember.nn.Module)
            and _is_none(test.comparators[0])
        ):  # ``self.layer is None``: a module attribute's type decides it
            owner = self._resolve(test.left.value, env)
            if hasattr(owner, test.left.attr):
                is_none = getattr(owner, test.left.attr) is None
                res = (is_none == isinstance(test.ops[0], ast.Is), None, None, None)
        elif (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.left, ast.Name)
            and test.left.id in env
            and _is_none(test.comparators[0])
        ):
            t = env[test.left.id].type()
            is_test = isinstance(test.ops[0], ast.Is)
            if isinstance(t, IR.NoneType):
                res = (is_test, None, None, None)
            elif isinstance(t, IR.OptionalType):
                res = (None, test.left.id, t.getElementType(), not is_test)
            elif not isinstance(t, IR.AnyType):
                res = (not is_test, None, None, None)
        elif (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance"
            and len(test.args) == 2
            and isinstance(test.args[0], ast.Name)
            and test.args[0].id in env
        ):
            t = env[test.args[0].id].type()
            want = self._resolve(test.args[1], env)
            wants = want if isinstance(want, tuple) else (want,)
            try:
                targets = [_ann_type(w, self.glb) for w in wants]
            except Unsupported:
                targets = None
            if targets is not None:
                hit = any(_type_matches(t, w) for w in targets)
                opt = isinstance(t, IR.OptionalType)
                if opt and any(_type_matches(t.getElementType(), w) for w in targets):
                    res = (None, test.args[0].id, t.getElementType(), True)
                else:
                    res = (hit, None, None, None)
        if res is None:
            return None
        static, name, rtype, when = res
        if negate:
            static = None if static is None else not static
            when = None if when is None else not when
        return static, name, rtype, when

    def _refine_in(self, env, name, rtype, node):
        """Refine local ``name`` to ``rtype`` in a branch: torch's emitter reads it and stores
        a ``prim::unchecked_cast`` (no source range) under its name."""
        v = self.load(name, env[name])
        cast = self.emit("prim::unchecked_cast", [v], rtype).output()
        cast.setDebugName(name)
        env[name] = cast

    def if_stmt(self, s, env):
        ref = self._refinement(s.test, env)
        if ref is not None and ref[0] is not None:
            self.block(s.body if ref[0] else s.orelse, env)  # the dead branch is not compiled
            return
        test = self.expr(s.test, env)
        self.g._new_unique()  # torch's emitter spends a number on the test
        cond = self._bool(test, s.test)
        if not isinstance(cond, IR.Value):
            cond = cond.output()
        n = self.emit("prim::If", [cond], node=s, n_out=0)
        envs = []
        for k, body in enumerate((s.body, s.orelse)):
            b = n.addBlock()
            e = dict(env)
            with self.g.insert_point_guard(b):
                if ref is not None and ref[3] == (k == 0):
                    self._refine_in(e, ref[1], ref[2], s.test)
                self.block(body, e)
            envs.append((b, e))
        raised = [_RAISED in e for _, e in envs]
        if all(raised):
            env[_RAISED] = True
            return
        if any(raised):  # a raising branch yields uninitialized values of the other's types
            k_raise = raised.index(True)
            b_r, e_r = envs[k_raise]
            _, e_ok = envs[1 - k_raise]
            e_r.pop(_RAISED)
            merged = [k for k in self._assigned(s.body + s.orelse) if k in e_ok]
            if _RET in e_ok and e_ok[_RET] is not env.get(_RET):
                merged.append(_RET)
            with self.g.insert_point_guard(b_r):
                for k in merged:
                    e_r[k] = self.emit("prim::Uninitialized", [], e_ok[k].type(), s).output()
        assigned = self._assigned(s.body + s.orelse)
        if ref is not None and ref[1] not in assigned:
            assigned.append(ref[1])  # a refined local is set in its branch (torch merges it)
        names = [k for k in assigned if k in envs[0][1] and k in envs[1][1]]
        if _RET in envs[0][1] and _RET in envs[1][1]:
            names.append(_RET)
        elif _RET in envs[0][1] or _RET in envs[1][1]:
            raise Unsupported("a return on some paths only")
        # torch's emitter spends numbers merging each variable of the branches: two in a
        # branch that assigns it, three in one that keeps the value from before the if
        # (one of them is the output ``addOutput`` numbers below)
        spend = -len(names)
        for k in names:
            if not k.startswith("$"):
                spend += sum(2 if e.get(k) is not env.get(k) else 3 for _, e in envs)
                if ref is not None and k == ref[1] and k not in self._assigned(s.body + s.orelse):
                    spend -= 1  # (a branch's refinement is one number less than an assignment)
        for _ in range(max(spend, 0)):
            self.g._new_unique()
        for k in names:
            (b0, e0), (b1, e1) = envs
            t0, t1 = e0[k].type(), e1[k].type()
            if t0 != t1:
                if "prim::Uninitialized" in (e0[k].node().kind(), e1[k].node().kind()):
                    t0 = t1 if e0[k].node().kind() == "prim::Uninitialized" else t0
                elif isinstance(t0, IR.TensorType) and isinstance(t1, IR.TensorType):
                    pass
                elif k != _RET and _unify(t0, t1) is not None:
                    t0 = _unify(t0, t1)
                elif k.startswith("$") and k != _RET:  # the compiler's flags and return values
                    t0 = t1 if e0[k].node().kind() == "prim::Uninitialized" else t0
                elif k == _RET and "prim::Uninitialized" in (
                    e0[k].node().kind(),
                    e1[k].node().kind(),
                ):
                    t0 = t1 if e0[k].node().kind() == "prim::Uninitialized" else t0
                elif k == _RET:
                    later = [x for x in ast.walk(ast.Module(list(s.orelse), [])) if
                             isinstance(x, ast.Return)]  # fmt: skip
                    n0 = t0.annotation_str() + (" (inferred)" if e0[k] in self.inferred else "")
                    raise self.error(
                        later[-1] if later else s,
                        f"Previous return statement returned a value of type {n0} but this "
                        f"return statement returns a value of type {t1.annotation_str()}",
                    )
                else:
                    bad = s  # torch quotes the whole if statement
                    n0 = t0.annotation_str() + (" (inferred)" if e0[k] in self.inferred else "")
                    n1 = t1.annotation_str() + (" (inferred)" if e1[k] in self.inferred else "")
                    msg = (
                        f"Type mismatch: {k} is set to type {n0} in the true branch and type "
                        f"{n1} in the false branch"
                    )
                    text = f"\n\n{msg}:\n{self._where(bad)}"
                    use = self._first_use_after(k, bad)
                    if use is not None:
                        text += f"and was used here:\n{self._where(use)}"
                    raise RuntimeError(text)
            b0.registerOutput(e0[k])
            b1.registerOutput(e1[k])
            o = n.addOutput(t0)
            if k != _RET:
                self._late_names.append((o, k))  # named as torch's SSA pass names it
            env[k] = o

    def _first_use_after(self, name, node):
        """The first read of ``name`` after ``node`` in the function (for torch's "and was
        used here")."""
        end = (node.end_lineno, node.end_col_offset)
        uses = [
            x for x in ast.walk(self.tree)
            if isinstance(x, ast.Name) and x.id == name and isinstance(x.ctx, ast.Load)
            and hasattr(x, "lineno") and (x.lineno, x.col_offset) >= end
        ]  # fmt: skip
        return min(uses, key=lambda x: (x.lineno, x.col_offset)) if uses else None

    @staticmethod
    def _assignment_of(name, stmts):
        for x in ast.walk(ast.Module(body=list(stmts), type_ignores=[])):
            if isinstance(x, ast.Assign):
                if any(isinstance(t, ast.Name) and t.id == name for t in x.targets):
                    return x
        return None

    def _loop(self, s, env, trip, cond, body_fn):
        carried = [k for k in self._assigned(s.body) if k in env]
        n = self.emit("prim::Loop", [trip, cond] + [env[k] for k in carried], node=s, n_out=0)
        b = n.addBlock()
        i = b.addInput(None, _I)
        e = dict(env)
        inputs = {}
        for k in carried:
            e[k] = inputs[k] = b.addInput(None, env[k].type())
            self._late_value(e[k])  # torch makes the carried values after compiling
        with self.g.insert_point_guard(b):
            next_cond = body_fn(i, e)
        if _RET in e and e.get(_RET) is not env.get(_RET):
            raise Unsupported("return inside a loop")
        b.registerOutput(next_cond)
        for k in carried:
            b.registerOutput(e[k])
            o = n.addOutput(env[k].type())
            self._late_value(o)
            self._late_names.append((_loop_names, (inputs[k], o, k)))
            env[k] = o
            self.g._new_unique()  # torch's emitter spends a number per carried variable

    def _counted(self, s, env, trip, bind):
        """A ``prim::Loop`` of ``trip`` iterations; ``bind(i, e)`` sets the targets; the
        condition is True (``not <break flag>`` for a loop that breaks)."""
        true = self.const(True, s)

        def body(i, e):
            bind(i, e)
            self.block(s.body, e)
            flag = getattr(s, "_exit_flag", None)
            if flag is None:
                return true
            return self.emit("aten::__not__", [e[flag]], _B, s).output()

        self._loop(s, env, trip, true, body)

    def _unrolled(self, s, env, items) -> None:
        """Unroll a loop over a tuple or a module list (as torch does): ``items`` are
        callables binding the target for each iteration."""
        flag = getattr(s, "_exit_flag", None)
        for bind in items:
            if flag is None:
                bind(env)
                self.block(s.body, env)
                continue
            guard = ast.If(
                test=ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=flag, ctx=ast.Load())),
                body=[_Bind(bind)] + list(s.body),
                orelse=[],
            )
            self.if_stmt(ast.fix_missing_locations(ast.copy_location(guard, s)), env)

    def for_stmt(self, s, env):
        it = s.iter
        fname = it.func.id if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) else None
        if fname in ("range", "enumerate", "zip") and fname not in env and fname not in self.glb:
            return getattr(self, f"_for_{fname}")(s, env, it)
        obj = self._resolve(it, env)
        if isinstance(obj, (ember.nn.ModuleList, ember.nn.Sequential)):
            holder = self.expr(it, env)
            items = []
            for name, _ in obj.named_children():

                def bind(e, name=name):
                    sub = self.emit("prim::GetAttr", [holder], None, it)
                    sub.s_("name", name)
                    child = getattr(obj, name) if not name.isdigit() else obj[int(name)]
                    sub.output().setType(_module_type(child))
                    self.assign(s.target, sub.output(), e, s)
                    e.setdefault("__modules__", {})[sub.output()] = child

                items.append(bind)
            self._unrolled(s, env, items)
            return
        seq = self.expr(it, env)
        t = seq.type()
        if isinstance(t, IR.TupleType):
            items = []
            for k, et in enumerate(t.elements()):

                def bind(e, k=k, et=et):
                    n = self.emit("prim::TupleIndex", [seq, self.const(k, it)], et, it)
                    self.assign(s.target, n.output(), e, s)

                items.append(bind)
            self._unrolled(s, env, items)
            return
        if isinstance(t, (IR.ListType, IR.TensorType)):
            trip = self._len(seq, it)

            def bind(i, e):
                self.assign(s.target, self._item(seq, i, it), e, s)

            self._counted(s, env, trip, bind)
            return
        raise Unsupported("for over this iterable")

    def _len(self, seq, node):
        return self.emit("aten::len", [seq], _I, node, payload=len).output()

    def _item(self, seq, i, node):
        t = seq.type()
        if isinstance(t, IR.TensorType):
            return self.emit("aten::select", [seq, self.const(0, node), i], _T, node).output()
        et = t.getElementType() if isinstance(t, IR.ListType) else _T
        return self.emit("aten::__getitem__", [seq, i], et, node, payload=_getitem).output()

    def _for_range(self, s, env, it):
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise Unsupported("range arguments")
        args = [self.expr(a, env) for a in it.args]
        if len(args) == 1:
            trip, start, step = args[0], None, None
            self.g._new_unique()  # torch's range start and step constants (then dead)
            self.g._new_unique()
        else:
            start = args[0]
            step = args[2] if len(args) == 3 else None
            ins = [args[0], args[1], step if step is not None else self.const(1, it)]
            trip = self.emit(
                "aten::__range_length", ins, _I, it, payload=lambda a, b, c: len(range(a, b, c))
            ).output()

        def bind(i, e):
            if start is not None:
                st = step if step is not None else self.const(1, it)
                i = self.emit(
                    "aten::__derive_index", [i, start, st], _I, it,
                    payload=lambda k, a, c: a + k * c,
                ).output()  # fmt: skip
            self.assign(s.target, i, e, s)

        self._counted(s, env, trip, bind)

    def _for_enumerate(self, s, env, it):
        if len(it.args) != 1 or it.keywords or not isinstance(s.target, ast.Tuple):
            raise Unsupported("enumerate form")
        seq = self.expr(it.args[0], env)
        idx_t, val_t = s.target.elts

        def bind(i, e):
            self.assign(idx_t, i, e, s)
            self.assign(val_t, self._item(seq, i, it), e, s)

        self._counted(s, env, self._len(seq, it), bind)

    def _for_zip(self, s, env, it):
        if it.keywords or not isinstance(s.target, ast.Tuple):
            raise Unsupported("zip form")
        if len(s.target.elts) != len(it.args):
            raise Unsupported("zip unpacking")
        seqs = [self.expr(a, env) for a in it.args]
        trip = self._len(seqs[0], it)
        for q in seqs[1:]:
            trip = self.emit("prim::min", [trip, self._len(q, it)], _I, it, payload=min).output()

        def bind(i, e):
            for target, q in zip(s.target.elts, seqs):
                self.assign(target, self._item(q, i, it), e, s)

        self._counted(s, env, trip, bind)

    def while_stmt(self, s, env):
        cond = self._bool(self.expr(s.test, env), s.test)
        cond = cond if isinstance(cond, IR.Value) else cond.output()
        trip = self.const(_INT_MAX, s)

        def body(i, e):
            self.block(s.body, e)
            c = self._bool(self.expr(s.test, e), s.test)
            c = c if isinstance(c, IR.Value) else c.output()
            flag = getattr(s, "_exit_flag", None)
            if flag is not None:
                go = self.emit("aten::__not__", [e[flag]], _B, s).output()
                c = self.emit("aten::__and__", [go, c], _B, s).output()
            return c

        self._loop(s, env, trip, cond, body)

    # --- expressions
    def _resolve(self, node, env):
        """The Python object an expression names (globals, builtins, module attributes)."""
        if isinstance(node, ast.Name):
            if node.id in env.get("__aliases__", {}):
                return env["__aliases__"][node.id]
            if node.id in env:
                v = env[node.id]
                return env.get("__modules__", {}).get(v)
            if node.id in self.glb:
                return self.glb[node.id]
            return getattr(builtins, node.id, None)
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value, env)
            return getattr(base, node.attr, None) if base is not None else None
        return None

    def expr(self, e, env):
        if isinstance(e, ast.Constant):
            if type(e.value) in (int, float):
                return self.literal(e.value, e)
            v = self.const(e.value, e)
            if e.value is None:
                v.node().setSourceRange(self._src(e))  # a literal None has one (a default not)
            return v
        if isinstance(e, ast.Name):
            if e.id in env:
                v = env[e.id]
                if isinstance(v.type(), IR.ClassType):
                    return v  # ``self`` and modules are not read through a prim::Load
                return self.load(e.id, v)
            obj = self._resolve(e, env)
            if isinstance(obj, (int, float, bool)):
                return self.const(obj, e)
            raise self.error(e, f"undefined value {e.id}")
        if isinstance(e, ast.BinOp):
            return self.binop(e.op, self.expr(e.left, env), self.expr(e.right, env), e)
        if isinstance(e, ast.UnaryOp):
            if (
                isinstance(e.op, ast.USub)
                and isinstance(e.operand, ast.Constant)
                and type(e.operand.value) in (int, float)
            ):
                # ``-1``: torch reads the literal, negates it and folds the negation into
                # a new constant (the literal and the negation spend their numbers)
                self.literal(e.operand.value, e.operand)
                self.g._new_unique()
                return self.const(-e.operand.value, e)
            v = self.expr(e.operand, env)
            if isinstance(e.op, ast.USub):
                return self.emit("aten::neg", [v], v.type(), e).output()
            if isinstance(e.op, ast.Not):
                return self.emit("aten::__not__", [self._val(self._bool(v, e))], _B, e).output()
            raise Unsupported("unary op")
        if isinstance(e, ast.Compare):
            if len(e.ops) != 1:
                raise Unsupported("chained comparison")
            a, b = self.expr(e.left, env), self.expr(e.comparators[0], env)
            op = e.ops[0]
            if isinstance(op, (ast.Is, ast.IsNot)):
                kind = "aten::__is__" if isinstance(op, ast.Is) else "aten::__isnot__"
                return self.emit(kind, [a, b], _B, e).output()
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(b.type(), (IR.ListType, IR.DictType, IR.StringType)):
                    raise Unsupported("in on this value")
                out = self.emit("aten::__contains__", [b, a], _B, e, payload=_contains).output()
                if isinstance(op, ast.NotIn):
                    out = self.emit("aten::__not__", [out], _B, e).output()
                return out
            names = {
                ast.Lt: "lt",
                ast.Gt: "gt",
                ast.LtE: "le",
                ast.GtE: "ge",
                ast.Eq: "eq",
                ast.NotEq: "ne",
            }
            kind = "aten::" + names[type(op)]
            tensor = any(isinstance(x.type(), IR.TensorType) for x in (a, b))
            if tensor:
                return self.emit(kind, [a, b], _T, e).output()
            return self.emit(kind, [a, b], _B, e, payload=_COMPARE[type(op)]).output()
        if isinstance(e, ast.BoolOp):
            vals = [self._val(self._bool(self.expr(x, env), x)) for x in e.values]
            kind = "aten::__and__" if isinstance(e.op, ast.And) else "aten::__or__"
            out = vals[0]
            for v in vals[1:]:
                out = self.emit(kind, [out, v], _B, e).output()
            return out
        if isinstance(e, (ast.List, ast.Tuple)):
            vals = [self.expr(x, env) for x in e.elts]
            if isinstance(e, ast.Tuple):
                return self.emit(
                    "prim::TupleConstruct", vals, IR.TupleType([v.type() for v in vals]), e
                ).output()
            et = vals[0].type() if vals else _T
            # (torch's list literals carry no source range)
            return self.emit("prim::ListConstruct", vals, IR.ListType(et)).output()
        if isinstance(e, ast.Attribute):
            return self.attribute(e, env)
        if isinstance(e, ast.Subscript):
            return self.subscript(e, env)
        if isinstance(e, ast.Dict):
            if any(k is None for k in e.keys):
                raise Unsupported("dict unpacking")
            keys = [self.expr(k, env) for k in e.keys]
            vals = [self.expr(v, env) for v in e.values]
            args = [x for kv in zip(keys, vals) for x in kv]
            kt = keys[0].type() if keys else IR.StringType()
            vt = vals[0].type() if vals else _T
            return self.emit(
                "prim::DictConstruct", args, IR.DictType(kt, vt), e,
                payload=lambda *a: dict(zip(a[::2], a[1::2])),
            ).output()  # fmt: skip
        if isinstance(e, ast.JoinedStr):
            return self.fstring(e, env)
        if isinstance(e, (ast.ListComp, ast.DictComp)):
            return self.comprehension(e, env)
        if isinstance(e, ast.IfExp):
            return self.if_expr(e, env)
        if isinstance(e, ast.Call):
            return self.call(e, env)
        if isinstance(e, ast.Lambda):
            raise self.error(e, "Lambda aren't supported", UnsupportedNodeError, width=1)
        raise Unsupported(type(e).__name__)

    # --- indexing: x[0], x[1:3], x[:, None, ..., -1], xs[i], d["k"], x[mask]
    def subscript(self, e, env):
        base = self.expr(e.value, env)
        t = base.type()
        if not isinstance(t, IR.TensorType):
            if isinstance(e.slice, ast.Slice):
                if not isinstance(t, IR.ListType):
                    raise Unsupported("slicing this value")
                lo, hi, st = self._slice_parts(e.slice, env, e)
                return self.emit(
                    "aten::slice", [base, lo, hi, st], t, e,
                    payload=lambda xs, a, b, c: xs[slice(a, b, c)],
                ).output()  # fmt: skip
            idx = self.expr(e.slice, env)
            if isinstance(t, IR.TupleType):
                k = idx.toIValue()
                et = t.elements()[k] if isinstance(k, int) else _T
                return self.emit("prim::TupleIndex", [base, idx], et, e).output()
            if isinstance(t, IR.DictType):
                et = t.getValueType()
            else:
                et = t.getElementType() if isinstance(t, IR.ListType) else _T
            return self.emit("aten::__getitem__", [base, idx], et, e, payload=_getitem).output()
        items = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        consumers = [x for x in items if not (_is_none(x) or _is_ellipsis(x))]
        dim, after_dots, x = 0, None, base
        for k, item in enumerate(items):
            if _is_ellipsis(item):
                after_dots = sum(1 for y in items[k + 1 :] if y in consumers)
                continue
            d = dim if after_dots is None else -after_dots
            if _is_none(item):
                x = self.emit("aten::unsqueeze", [x, self.const(d, e)], _T, e).output()
                dim += 1
                continue
            if isinstance(item, ast.Slice):
                lo, hi, st = self._slice_parts(item, env, e)
                x = self.emit("aten::slice", [x, self.const(d, e), lo, hi, st], _T, e).output()
                dim += 1
                if after_dots is not None:
                    after_dots -= 1
                continue
            v = self.expr(item, env)
            if isinstance(v.type(), IR.TensorType):
                lst = self.emit("prim::ListConstruct", [v], IR.ListType(IR.OptionalType(_T)), e)
                x = self.emit(
                    "aten::index", [x, lst.output()], _T, e,
                    payload=lambda a, idx: a[idx[0]],
                ).output()  # fmt: skip
                dim += 1
            else:
                x = self.emit("aten::select", [x, self.const(d, e), v], _T, e).output()
            if after_dots is not None:
                after_dots -= 1
        return x

    def _slice_parts(self, sl, env, e):
        lo = self.expr(sl.lower, env) if sl.lower is not None else self.const(None, e)
        hi = self.expr(sl.upper, env) if sl.upper is not None else self.const(None, e)
        st = self.expr(sl.step, env) if sl.step is not None else self.const(1, e)
        return lo, hi, st

    def fstring(self, e, env):
        """``f"{a} and {b}"`` -> ``aten::format("{} and {}", a, b)`` (torch's)."""
        parts, args = [], []
        for v in e.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value).replace("{", "{{").replace("}", "}}"))
                continue
            if v.format_spec is not None or v.conversion not in (-1, None):
                raise Unsupported("f-string format spec")
            parts.append("{}")
            args.append(self.expr(v.value, env))
        fmt = self.const("".join(parts), e)
        return self.emit("aten::format", [fmt, *args], IR.StringType(), e).output()

    def if_expr(self, e, env):
        """``a if c else b``: a ``prim::If`` with one output."""
        cond = self._val(self._bool(self.expr(e.test, env), e.test))
        n = self.emit("prim::If", [cond], node=e, n_out=0)
        outs = []
        for branch in (e.body, e.orelse):
            b = n.addBlock()
            with self.g.insert_point_guard(b):
                v = self.expr(branch, dict(env))
            b.registerOutput(v)
            outs.append(v)
        t = _unify(outs[0].type(), outs[1].type())
        return n.addOutput(t if t is not None else outs[0].type())

    def comprehension(self, e, env):
        """``[f(x) for x in xs if c]`` (and dict comprehensions): an empty list or dict,
        then a ``prim::Loop`` appending to it, as torch compiles them."""
        if len(e.generators) != 1 or e.generators[0].is_async:
            raise Unsupported("nested comprehension")
        gen = e.generators[0]
        if gen.ifs:
            raise self.error(
                e, "Comprehension ifs are not supported yet", NotSupportedError, width=0
            )
        is_dict = isinstance(e, ast.DictComp)
        kind = "prim::DictConstruct" if is_dict else "prim::ListConstruct"
        out = self.emit(kind, [], IR.DictType(IR.StringType(), _T) if is_dict else IR.ListType(_T),
                        None, payload=(lambda: {}) if is_dict else (lambda: []))  # fmt: skip
        acc = out.output()
        body_stmt = ast.Expr(value=ast.Constant(value=None))
        it = gen.iter
        if isinstance(it, ast.Name):  # torch gives the loop's len/__getitem__ the
            it = ast.copy_location(ast.Name(id=it.id, ctx=it.ctx), e)  # comprehension's place
        loop = ast.For(target=gen.target, iter=it, body=[body_stmt], orelse=[])
        ast.copy_location(loop, e)
        ast.fix_missing_locations(loop)
        inner = dict(env)

        def element(e2):
            def add():
                if is_dict:
                    k, v = self.expr(e.key, e2), self.expr(e.value, e2)
                    acc.setType(IR.DictType(k.type(), v.type()))
                    self.emit("aten::_set_item", [acc, k, v], node=e, n_out=0,
                              payload=_set_item)  # fmt: skip
                else:
                    v = self.expr(e.elt, e2)
                    acc.setType(IR.ListType(v.type()))
                    self.emit("aten::append", [acc, v], acc.type(), e, payload=_append)

            if not gen.ifs:
                return add()
            cond = gen.ifs[0]
            for more in gen.ifs[1:]:
                cond = ast.BoolOp(op=ast.And(), values=[cond, more])
            c = self._val(self._bool(self.expr(cond, e2), cond))
            n = self.emit("prim::If", [c], node=e, n_out=0)
            b = n.addBlock()
            with self.g.insert_point_guard(b):
                add()
            n.addBlock()

        loop.body = [_Bind(element)]
        self.for_stmt(loop, inner)
        return acc

    @staticmethod
    def _val(x):
        return x if isinstance(x, IR.Value) else x.output()

    def binop(self, op, a, b, e):
        names = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
                 ast.FloorDiv: "floordiv", ast.Mod: "remainder", ast.Pow: "pow",
                 ast.MatMult: "matmul"}  # fmt: skip
        name = names.get(type(op))
        if name is None:
            raise Unsupported("operator")
        tensor = any(isinstance(x.type(), IR.TensorType) for x in (a, b))
        if tensor:
            fn = {"add": ember.add, "sub": ember.sub, "mul": ember.mul, "div": ember.div,
                  "floordiv": ember.floor_divide, "remainder": ember.remainder,
                  "pow": ember.pow, "matmul": ember.matmul}[name]  # fmt: skip
            pyop = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "div": "__truediv__",
                    "floordiv": "__floordiv__", "remainder": "__mod__", "pow": "__pow__",
                    "matmul": "__matmul__"}[name]  # fmt: skip

            def payload(x, y, pyop=pyop, fn=fn):
                if hasattr(x, "_data"):
                    return getattr(x, pyop)(y)
                return getattr(y, "__r" + pyop[2:])(x)

            ins = [a, b]
            if name in ("add", "sub"):
                ins.append(self.const(1))
                payload2 = payload

                def payload(x, y, alpha, p=payload2):
                    return p(x, y)

            return self.emit(f"aten::{name}", ins, _T, e, payload=payload).output()
        ta, tb = a.type(), b.type()
        if isinstance(ta, IR.ListType) or isinstance(tb, IR.ListType):
            if name == "add" and ta == tb:  # list concatenation
                return self.emit("aten::add", [a, b], ta, e, payload=_concat).output()
            if name == "mul":  # [x] * n
                lst, n = (a, b) if isinstance(ta, IR.ListType) else (b, a)
                return self.emit("aten::mul", [lst, n], lst.type(), e, payload=_repeat).output()
            raise Unsupported("operator on lists")
        if isinstance(ta, IR.StringType) and name == "add":
            return self.emit("aten::add", [a, b], ta, e, payload=_concat).output()
        t = _F if name == "div" or _F in (ta, tb) else _I
        return self.emit(f"aten::{name}", [a, b], t, e).output()

    def attribute(self, e, env):
        if isinstance(e.value, ast.Name) and e.value.id in env:
            base = env[e.value.id]
            obj = self._resolve(e.value, env)
            if obj is not None and isinstance(base.type(), IR.ClassType):
                attr = getattr(obj, e.attr)
                if _is_constant_attr(obj, e.attr) and _constant_value(attr):
                    return self.const(attr, e)  # __constants__ / Final: a prim::Constant
                n = self.emit("prim::GetAttr", [base], None)
                n.s_("name", e.attr)
                if isinstance(attr, ember.nn.Module):
                    n.output().setType(_module_type(attr))
                    env.setdefault("__modules__", {})[n.output()] = attr
                else:
                    n.output().setType(_py_type(attr) if attr is not None else IR.NoneType())
                if not n.output().hasDebugName():
                    n.output().setDebugName(e.attr)
                return n.output()
            cls = _CLASSES.get(str(base.type()))
            if cls is not None:  # a TorchScript class's attribute
                attrs = _class_attrs(cls)
                if e.attr not in attrs:
                    raise self.error(e, f"Tried to access nonexistent attribute {e.attr}")
                n = self.emit("prim::GetAttr", [base], attrs[e.attr], e)
                n.s_("name", e.attr)
                return n.output()
            if isinstance(base.type(), IR.TensorType):
                if e.attr == "shape":
                    return self.emit("aten::size", [base], IR.ListType(_I), e).output()
                if e.attr in ("T", "mT"):
                    return self.emit(
                        "aten::numpy_T", [base], _T, e, payload=lambda x, a=e.attr: getattr(x, a)
                    ).output()
                if e.attr == "ndim":
                    return self.emit("aten::dim", [base], _I, e, payload=_dim).output()
                if e.attr in ("dtype", "device", "requires_grad", "is_cuda"):
                    kind = "prim::" + e.attr
                    return self.emit(
                        kind, [base], IR.AnyType(), e, payload=lambda x, a=e.attr: getattr(x, a)
                    ).output()
        obj = self._resolve(e, env)
        if isinstance(obj, (int, float, bool)) or obj is None:
            return self.const(obj, e)
        raise Unsupported("attribute")

    def call(self, e, env):
        f = e.func
        if isinstance(f, ast.Name) and f.id == "$uninitialized":
            return self.emit("prim::Uninitialized", [], self.ret_type, e).output()
        kw = {k.arg: k.value for k in e.keywords}
        if None in kw:
            raise Unsupported("**kwargs call")
        # method call on a value: x.relu(), self.layer(x), self.helper(x), (y - 1).relu()
        if isinstance(f, ast.Attribute) and isinstance(
            f.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.BinOp, ast.UnaryOp,
                      ast.IfExp, ast.Constant)
        ):  # fmt: skip
            target = self._resolve(f.value, env)
            if _layer_function(target, f.attr):
                pass  # self._fn(...): a call of the nn.functional function it names (below)
            elif not (
                isinstance(f.value, ast.Name) and f.value.id not in env and target is not None
            ):
                if isinstance(target, (ember.nn.Module,)) or (
                    isinstance(f.value, ast.Name)
                    and f.value.id in env
                    and isinstance(env[f.value.id].type(), IR.ClassType)
                ):
                    return self.call_module_attr(e, f, env)
                base = self.expr(f.value, env)
                if isinstance(base.type(), IR.TensorType):
                    return self.tensor_method(base, f.attr, e, kw, env)
                if isinstance(base.type(), (IR.ListType, IR.DictType, IR.StringType)):
                    return self.container_method(base, f.attr, e, kw, env)
        obj = self._resolve(f, env)
        if isinstance(f, ast.Name) and f.id in env and isinstance(env[f.id].type(), IR.ClassType):
            obj = env.get("__modules__", {}).get(env[f.id])
            if isinstance(obj, ember.nn.Module):
                return self.call_submodule(env[f.id], obj, e, env)
        if obj is None:
            raise self.error(f, "undefined value " + ast.unparse(f))
        if obj is isinstance:
            return self.isinstance_call(e, env)
        if obj is list and len(e.args) == 1 and not kw:
            inner = e.args[0]
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Name)
                and self._resolve(inner.func, env) is range
            ):  # list(range(...)): a comprehension, as TorchScript builds it
                var = f"$i{id(inner)}"
                comp = ast.ListComp(
                    elt=_name(var),
                    generators=[ast.comprehension(_name(var, True), inner, [], 0)],
                )
                return self.comprehension(
                    ast.fix_missing_locations(ast.copy_location(comp, e)), env
                )
        args = [self.expr(a, env) for a in e.args]
        kwvals = [self.expr(v, env) for v in kw.values()]
        names = list(kw)
        if obj in (len, int, float, bool, str):
            kind = {len: "aten::len", int: "aten::Int", float: "aten::Float", bool: "aten::Bool",
                    str: "aten::str"}[obj]  # fmt: skip
            t = {len: _I, int: _I, float: _F, bool: _B, str: IR.StringType()}[obj]
            if obj is len and isinstance(args[0].type(), IR.TensorType):
                return self.emit(kind, args, t, e, payload=len).output()
            if obj is bool and isinstance(args[0].type(), IR.TensorType):
                self.g._new_unique()  # torch's emitter spends a number before the Bool
            return self.emit(kind, args, t, e, payload=obj).output()
        if obj in (list, sorted) and len(args) == 1 and not kw:
            t = args[0].type()
            if isinstance(t, IR.DictType):  # list(d): its keys
                t = IR.ListType(t.getKeyType())
                args = [self.emit("aten::keys", args, t, e, payload=_keys).output()]
            if not isinstance(t, IR.ListType):
                raise Unsupported(f"{obj.__name__} of this value")
            kind = "aten::list" if obj is list else "aten::sorted"
            return self.emit(kind, args, t, e, payload=obj).output()
        if obj is print:
            n = self.emit("prim::Print", args, node=e, n_out=0, payload=lambda *a: print(*a))
            if getattr(e, "_statement", False):
                return None  # ``print(x)`` as a statement: no value (torch makes none)
            return self.const(None)
        if obj in (min, max) and all(not isinstance(a.type(), IR.TensorType) for a in args):
            return self.emit(f"prim::{obj.__name__}", args, args[0].type(), e, payload=obj).output()
        if isinstance(obj, type(print)) and getattr(obj, "__module__", None) == "builtins":
            raise self.error(f, f"Python builtin {obj!r} is currently not supported in Torchscript")
        home = str(getattr(obj, "__module__", None))
        if is_ember_module(home) and callable(obj):
            name = (
                getattr(obj, "__composite__", None) or f"aten::{getattr(obj, '__name__', 'call')}"
            )
            if (
                name in _SIZE_FACTORIES
                and len(args) > 1
                and all(isinstance(a.type(), IR.IntType) for a in args)
            ):  # torch.zeros(3, 4): TorchScript's schema takes one int[] size
                args = [self.emit("prim::ListConstruct", args, IR.ListType(_I), e).output()]
            npos = len(args)

            def payload(*a, fn=obj, npos=npos, names=names):
                return fn(*a[:npos], **dict(zip(names, a[npos:])))

            return self.emit(name, args + kwvals, _T, e, payload=payload).output()
        from ember.jit._script import ScriptFunction

        if isinstance(obj, ScriptFunction) or inspect.isfunction(obj):
            sf = obj if isinstance(obj, ScriptFunction) else None
            callee = sf.graph if sf is not None and sf._graph is not None else None
            if callee is None:
                callee = compile_function(obj if sf is None else sf._fn)
            args = self._bind_args(obj if sf is None else sf._fn, args, dict(zip(names, kwvals)), e)
            args = [self._coerce(a, v.type(), e) for a, v in zip(args, callee.inputs())]
            fv = self.g.insertNode(self.g.create("prim::Constant", []))
            fv.s_("name", obj.__name__ if sf is None else sf.name)
            fv.output().setType(IR.ClassType("Function"))
            fv._object = obj
            n = self.emit("prim::CallFunction", [fv.output()] + args, callee.outputs()[0].type(), e)
            set_callee(n, callee)
            return n.output()
        raise Unsupported(f"call to {obj!r}")

    def _bind_args(self, fn, args: list, kwargs: dict, e) -> list:
        """Positional values for a call of ``fn``: keywords placed, defaults as constants."""
        if not kwargs and len(args) == fn.__code__.co_argcount:
            return args
        params = list(inspect.signature(fn).parameters.values())
        out = list(args)
        for p in params[len(args) :]:
            if p.name in kwargs:
                out.append(kwargs.pop(p.name))
            elif p.default is not inspect.Parameter.empty:
                out.append(self.const(p.default, e))
            else:
                raise self.error(e, f"{fn.__name__}() is missing value for argument '{p.name}'")
        if kwargs:
            bad = next(iter(kwargs))
            raise self.error(e, f"Unknown keyword argument '{bad}' for {fn.__name__}()")
        return out

    def _coerce(self, v, want, e):
        """A value passed where ``want`` is expected: a tuple becomes a list (torch's
        ``prim::TupleUnpack`` + ``prim::ListConstruct``)."""
        t = v.type()
        if isinstance(want, IR.ListType) and isinstance(t, IR.TupleType):
            items = []
            if t.elements():  # an empty tuple: an empty list, nothing to unpack
                n = self.emit("prim::TupleUnpack", [v], node=e, n_out=len(t.elements()))
                for o, et in zip(n.outputs(), t.elements()):
                    o.setType(et)
                items = list(n.outputs())
            return self.emit("prim::ListConstruct", items, want, e).output()
        return v

    def isinstance_call(self, e, env):
        """``isinstance(x, T)`` where the types decide it: a constant, as torch's."""
        if len(e.args) != 2 or e.keywords:
            raise Unsupported("isinstance form")
        t = self.expr(e.args[0], env).type()
        want = self._resolve(e.args[1], env)
        wants = want if isinstance(want, tuple) else (want,)
        targets = [_ann_type(w, self.glb) for w in wants]
        if isinstance(t, IR.OptionalType):
            raise Unsupported("isinstance of an Optional outside an if test")
        return self.const(any(_type_matches(t, w) for w in targets), e)

    def container_method(self, base, name, e, kw, env):
        """Methods of lists, dicts and strings (``xs.append(v)``, ``d.items()``,
        ``s.split(",")``): ``aten::<name>`` nodes, as TorchScript's builtins."""
        if kw:
            raise Unsupported(f"keywords to {name}")
        args = [self.expr(a, env) for a in e.args]
        t = base.type()
        if isinstance(t, IR.ListType):
            et = t.getElementType()
            table = {"append": t, "extend": None, "insert": None, "pop": et,
                     "remove": None, "clear": None, "index": _I, "count": _I, "copy": t,
                     "reverse": None}  # fmt: skip
        elif isinstance(t, IR.DictType):
            kt, vt = t.getKeyType(), t.getValueType()
            table = {"keys": IR.ListType(kt), "values": IR.ListType(vt),
                     "items": IR.ListType(IR.TupleType([kt, vt])), "get": IR.OptionalType(vt),
                     "pop": vt, "setdefault": vt, "update": None, "clear": None,
                     "copy": t, "popitem": IR.TupleType([kt, vt])}  # fmt: skip
            if name == "get" and len(args) == 2:
                table["get"] = vt
        else:
            S = IR.StringType()
            table = {m: S for m in ("lower", "upper", "strip", "lstrip", "rstrip", "replace",
                                    "capitalize", "title", "swapcase", "join", "format",
                                    "zfill", "center", "ljust", "rjust", "expandtabs")}  # fmt: skip
            table.update({m: _B for m in ("startswith", "endswith", "isdigit", "isalpha",
                                          "isalnum", "isspace", "islower", "isupper",
                                          "istitle", "isdecimal", "isnumeric")})  # fmt: skip
            table.update({m: _I for m in ("find", "rfind", "index", "rindex", "count")})
            table.update({m: IR.ListType(S) for m in ("split", "rsplit", "splitlines")})
        if name not in table:
            raise Unsupported(f"{t} method {name}")
        if isinstance(t, IR.ListType) and name in ("append", "insert") and args:
            v = args[-1]
            if et != v.type() and not (isinstance(et, IR.TensorType) and isinstance(
                v.type(), IR.TensorType)):  # fmt: skip
                if base.node().kind() == "prim::ListConstruct" and not base.node().inputs():
                    base.setType(IR.ListType(v.type()))  # [] then append: the list's type
                    table[name] = base.type()
                else:  # torch's schema-matching error
                    got = v.type().annotation_str() + (" (inferred)" if v in self.inferred else "")
                    raise RuntimeError(
                        f"\n\naten::{name}.t(t[](a!) self, "
                        + ("int idx, " if name == "insert" else "")
                        + f"t(c -> *) el) -> {'t[](a!)' if name == 'append' else '()'}:\n"
                        f"Could not match type {got} to t in argument 'el': Type variable 't' "
                        f"previously matched to type {et.annotation_str()} is matched to type "
                        f"{got}.\n:\n{self._where(e.func)}"
                    )
        if isinstance(t, IR.StringType) and name == "format":
            return self.emit("aten::format", [base, *args], table[name], e).output()
        out = table[name]

        def payload(obj, *a, name=name):
            r = getattr(obj, name)(*a)
            if name in ("keys", "values", "items"):
                return list(r)
            return r

        n = self.emit(f"aten::{name}", [base, *args], out, e, payload=payload,
                      n_out=1 if out is not None else 0)  # fmt: skip
        return n.output() if out is not None else self.const(None)

    def tensor_method(self, base, name, e, kw, env):
        args = [self.expr(a, env) for a in e.args]
        kwvals = [self.expr(v, env) for v in kw.values()]
        names = list(kw)
        if name in ("view", "reshape", "permute", "repeat", "expand") and (
            len(args) > 1 or (len(args) == 1 and isinstance(args[0].type(), IR.IntType))
        ):  # sizes as varargs: one ``int[]`` (torch's ListConstruct has no source range)
            args = [self.emit("prim::ListConstruct", args, IR.ListType(_I)).output()]
        if name == "where" and len(args) == 2 and not kwvals:  # ``where.self(cond, self, other)``
            return self.emit("aten::where", [args[0], base, args[1]], _T, e,
                             payload=lambda c, x, y: x.where(c, y)).output()  # fmt: skip
        made = self._schema_args(name, args, dict(zip(names, kwvals)))
        if made is not None:
            full, returns, call = made
            payload = _schema_payload(name, call)
            if returns.startswith("("):  # a named tuple of tensors (``values``, ``indices``)
                fields = [f.strip() for f in returns.strip("()").split(",")]
                n = self.emit(f"aten::{name}", [base, *full], None, e, payload, len(fields))
                for o in n.outputs():
                    o.setType(_T)
                tt = IR.TupleType([_T] * len(fields), fields)
                return self.emit("prim::TupleConstruct", list(n.outputs()), tt).output()
            out = IR.ListType(_T) if returns == "Tensor[]" else _T
            return self.emit(f"aten::{name}", [base, *full], out, e, payload=payload).output()
        npos = len(args)

        def payload(x, *a, name=name, npos=npos, names=names):
            return getattr(x, name)(*a[:npos], **dict(zip(names, a[npos:])))

        t = _I if name in ("dim", "numel") else (_F if name == "item" else _T)
        if name == "size":
            t = _I if args else IR.ListType(_I)
        return self.emit(f"aten::{name}", [base] + args + kwvals, t, e, payload=payload).output()

    def _schema_args(self, name, args, kwargs):
        """Match a method call against its overloads (``ember/jit/_method_schemas.py``) as
        torch's schema matching does: return ``(inputs after self, result type, call)`` with
        omitted parameters as their defaults and an ``int`` for an ``int[]`` parameter as a
        one-element list, ``call`` saying how the user passed each argument; or None."""
        for ov in _method_schemas.overloads(name) or ():
            if len(args) > ov.n_positional:
                if any(p.kwonly for p in ov.params):
                    self.g._new_unique()  # (torch's failed match spends a number)
                continue
            by_name = {p.name: i for i, p in enumerate(ov.params)}
            given = dict(enumerate(args))
            if any(k not in by_name or by_name[k] in given for k in kwargs):
                continue
            given.update({by_name[k]: v for k, v in kwargs.items()})
            params = ov.params
            if any(i not in given and not p.has_default for i, p in enumerate(params)) or any(
                not _fits(v.type(), params[i].type) for i, v in given.items()
            ):
                continue
            wrapped = [i for i, v in given.items()
                       if params[i].is_int_list and isinstance(v.type(), IR.IntType)]  # fmt: skip
            for i in wrapped:
                given[i] = self.emit("prim::ListConstruct", [given[i]], IR.ListType(_I)).output()
            full = [given[i] if i in given else self.const(p.default) for i, p in enumerate(params)]
            call = (
                tuple(range(len(args))),
                tuple((k, by_name[k]) for k in kwargs),
                frozenset(wrapped),
                frozenset(i for i, p in enumerate(params) if p.type.startswith("ScalarType")),
            )
            return full, ov.returns, call
        return None

    def call_module_attr(self, e, f, env):
        holder = self.expr(f.value, env)
        obj = self._resolve(f.value, env)
        attr = getattr(obj, f.attr, None)
        if isinstance(attr, ember.nn.Module):
            sub = self.emit("prim::GetAttr", [holder], _module_type(attr))
            sub.s_("name", f.attr)
            sub.output().setDebugName(f.attr)
            return self.call_submodule(sub.output(), attr, e, env)
        if inspect.ismethod(attr) and attr.__self__ is obj:
            mod = getattr(attr.__func__, "_torchscript_modifier", None)
            args = [self.expr(a, env) for a in e.args]
            if mod == "unused":
                # torch compiles a call of an unused method into a raise
                msg = self.const(
                    "This Python function is annotated to be ignored and cannot be run"
                )
                self.emit("prim::RaiseException", [msg, self.const(None)], node=e, n_out=0)
                return self.emit("prim::Uninitialized", [], _T, e).output()
            if mod == "ignore":
                return self.emit("prim::PythonOp", args, _T, e, payload=attr).output()
            callee = compile_function(attr.__func__, module=obj)
            n = self.emit("prim::CallMethod", [holder] + args, callee.outputs()[0].type(), e)
            n.s_("name", f.attr)
            set_callee(n, callee)
            return n.output()
        raise Unsupported("module attribute call")

    def call_submodule(self, holder, mod, e, env):
        from ember.jit._script import ScriptModule

        args = [self.expr(a, env) for a in e.args]
        target = (
            mod._original if isinstance(mod, ScriptModule) and mod._original is not None else mod
        )
        library = is_ember_module(type(target).__module__)
        try:
            callee = layer_graph(target) or compile_function(type(target).forward, module=target)
        except Exception as err:
            if not library and not isinstance(err, Unsupported):
                raise  # the user's own module: torch's script-time error
            # (a library layer whose code the compiler does not take is run, never refused)
            # a layer whose forward ember's compiler does not cover runs it as a method call
            n = self.emit("prim::CallMethod", [holder] + args, _T, e)
            n.s_("name", "forward")
            return n.output()
        n = self.emit("prim::CallMethod", [holder] + args, callee.outputs()[0].type(), e)
        n.s_("name", "forward")
        set_callee(n, callee)
        return n.output()


_RET = "$return"
_RAISED = "$raised"
_INPLACE = {ast.Add: ("add_", "__iadd__"), ast.Sub: ("sub_", "__isub__"),
            ast.Mult: ("mul_", "__imul__"), ast.Div: ("div_", "__itruediv__")}  # fmt: skip
_SIZE_FACTORIES = frozenset(f"aten::{n}" for n in ("zeros", "ones", "empty", "rand", "randn"))


def _getitem(seq, i):
    return seq[i]


def _dim(x):
    return x.dim()


def _keys(d):
    return list(d)


def _contains(xs, x):
    return x in xs


def _concat(a, b):
    return a + b


def _repeat(xs, n):
    return xs * n


_COMPARE = {ast.Lt: lambda a, b: a < b, ast.Gt: lambda a, b: a > b,
            ast.LtE: lambda a, b: a <= b, ast.GtE: lambda a, b: a >= b,
            ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}  # fmt: skip


def _unify(a, b):
    """The type two branches' values meet in (``None`` and ``T``: ``Optional[T]``), or None."""
    if a == b:
        return a
    if isinstance(a, IR.TensorType) and isinstance(b, IR.TensorType):
        return _T
    for x, y in ((a, b), (b, a)):
        if isinstance(x, IR.NoneType):
            return y if isinstance(y, IR.OptionalType) else IR.OptionalType(y)
        if isinstance(x, IR.OptionalType) and x.getElementType() == y:
            return x
    return None


def _assignable(t, want) -> bool:
    """Whether a value of type ``t`` may be declared ``want`` (``[]`` as ``List[int]``,
    ``None`` or ``T`` as ``Optional[T]``)."""
    if isinstance(want, IR.OptionalType):
        return isinstance(t, IR.NoneType) or _assignable(t, want.getElementType())
    if isinstance(want, IR.ListType) and isinstance(t, IR.ListType):
        return True  # an empty or inferred list literal
    if isinstance(want, IR.DictType) and isinstance(t, IR.DictType):
        return True
    return t == want or (isinstance(t, IR.TensorType) and isinstance(want, IR.TensorType))


def _is_constant_attr(obj, name: str) -> bool:
    """Whether ``name`` is in the module's ``__constants__`` or annotated ``Final``."""
    cls = type(obj)
    if name in getattr(cls, "__constants__", ()):
        return True
    for klass in cls.__mro__:
        ann = klass.__dict__.get("__annotations__", {}).get(name)
        if ann is None:
            continue
        if isinstance(ann, str):
            return ann.startswith(("Final", "typing.Final", "torch.jit.Final", "jit.Final"))
        return ann is typing.Final or typing.get_origin(ann) is typing.Final
    return False


def _constant_value(x) -> bool:
    if x is None or isinstance(x, (bool, int, float, str)):
        return True
    return isinstance(x, (tuple, list)) and all(_constant_value(e) for e in x)


def _raise_assert(msg):
    from ember.jit._extras import Error

    raise Error(msg)  # torch raises torch.jit.Error("AssertionError: ...")


def _type_matches(t, want) -> bool:
    """Whether a value of IR type ``t`` is an instance of annotation type ``want``."""
    if isinstance(want, IR.TensorType):
        return isinstance(t, IR.TensorType)
    if isinstance(want, (IR.ListType, IR.TupleType, IR.DictType)) and type(t) is type(want):
        return True
    return t == want


def _delete(xs, k):
    del xs[k]


def _append(xs, v):
    xs.append(v)
    return xs


def _set_item(d, k, v):
    d[k] = v


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_ellipsis(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


class _Bind(ast.stmt):
    """A statement the compiler runs as a callback (binding an unrolled loop's target)."""

    _fields = ()

    def __init__(self, bind):
        super().__init__()
        self.bind = bind
        self.lineno, self.col_offset = 1, 0


def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _set(name: str, value) -> ast.Assign:
    v = value if isinstance(value, ast.AST) else ast.Constant(value=value)
    return ast.Assign(targets=[_name(name, True)], value=v)


def _exits(stmts) -> set:
    """The loop exits (break, continue, return) in ``stmts``, outside nested loops."""
    found = set()
    for s in stmts:
        if isinstance(s, ast.Break):
            found.add("break")
        elif isinstance(s, ast.Continue):
            found.add("continue")
        elif isinstance(s, ast.Return):
            found.add("return")
        elif isinstance(s, ast.If):
            found |= _exits(s.body) | _exits(s.orelse)
        elif isinstance(s, (ast.With, ast.Try)):
            found |= _exits(s.body)
    return found


def _lower_exits(stmts: list, counter: list) -> list:
    """Rewrite loops holding ``break``/``continue``/``return`` into flags (a loop's
    condition is ``not <break flag>``; statements after an exit run under
    ``if not (<break> or <continue>)``; a ``return`` sets the value, breaks, and returns
    after the loop), as TorchScript compiles them into ``prim::Loop``."""
    out = []
    for s in stmts:
        if isinstance(s, ast.If):
            s.body = _lower_exits(s.body, counter)
            s.orelse = _lower_exits(s.orelse, counter)
            out.append(s)
        elif isinstance(s, (ast.For, ast.While)):
            out.extend(_lower_loop(s, counter))
        else:
            out.append(s)
    return out


def _lower_loop(loop, counter: list) -> list:
    loop.body = _lower_exits(loop.body, counter)
    kinds = _exits(loop.body)
    if not kinds:
        return [loop]
    counter[0] += 1
    brk, cont = f"$break{counter[0]}", f"$continue{counter[0]}"
    flags = [brk] + ([cont] if "continue" in kinds else [])

    def guard(stmts):
        res = []
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Break):
                res.append(_set(brk, True))
                return res
            if isinstance(s, ast.Continue):
                res.append(_set(cont, True))
                return res
            if isinstance(s, ast.Return):
                value = s.value if s.value is not None else ast.Constant(value=None)
                res += [_set("$retv", value), _set("$ret", True), _set(brk, True)]
                return res
            if isinstance(s, ast.If) and _exits([s]):
                s.body, s.orelse = guard(s.body), guard(s.orelse)
                res.append(s)
                rest = guard(stmts[i + 1 :])
                if rest:
                    test = ast.UnaryOp(
                        op=ast.Not(),
                        operand=ast.BoolOp(op=ast.Or(), values=[_name(f) for f in flags])
                        if len(flags) > 1
                        else _name(flags[0]),
                    )
                    res.append(ast.copy_location(ast.If(test=test, body=rest, orelse=[]), s))
                return res
            res.append(s)
        return res

    body = guard(loop.body)
    if "continue" in kinds:
        body = [_set(cont, False)] + body
    loop.body = body
    loop._exit_flag = brk
    out = [_set(brk, False)]
    if "return" in kinds:
        uninit = ast.Call(func=_name("$uninitialized"), args=[], keywords=[])
        out += [_set("$retv", uninit), _set("$ret", False)]
    out.append(loop)
    if "return" in kinds:
        out.append(ast.If(test=_name("$ret"), body=[ast.Return(value=_name("$retv"))], orelse=[]))
    for x in out:
        ast.copy_location(x, loop)
        ast.fix_missing_locations(x)
    return out


def _always_returns(stmts) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse)


def _fold_returns(stmts: list) -> list:
    """Rewrite early returns into if/else: ``if c: return a`` followed by more code becomes
    ``if c: return a else: <the rest>``, so every return ends a branch."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If) and (_always_returns(s.body) or _always_returns(s.orelse)):
            rest = list(stmts[i + 1 :])
            body = s.body if _always_returns(s.body) else list(s.body) + rest
            orelse = s.orelse if _always_returns(s.orelse) else list(s.orelse) + rest
            out.append(
                ast.copy_location(ast.If(s.test, _fold_returns(body), _fold_returns(orelse)), s)
            )
            return out
        out.append(s)
    return out


# --- ember's library layers, as torch's scripted versions of them compute (ember writes its
# layers for speed, not in TorchScript's subset): one graph per layer reading its parameters
# through ``prim::GetAttr`` and calling the aten op, so freezing folds them (Conv-BN...)


def _layer_head(module, n_inputs: int = 1):
    from ember.jit._tracer import module_type

    g = IR.Graph()
    self_v = g.addInput("self", module_type(module))
    ins = [g.addInput("input" if i == 0 else f"input{i}", _T) for i in range(n_inputs)]
    return g, self_v, ins


def _attr(g, self_v, name, type_=None):
    n = g.insertNode(g.create("prim::GetAttr", [self_v]))
    n.s_("name", name)
    n.output().setType(type_ or _T)
    n.output().setDebugName(name)
    return n.output()


def _op(g, kind, args, payload=None, out_type=None):
    vals = [a if isinstance(a, IR.Value) else g.insertConstant(a) for a in args]
    n = g.insertNode(g.create(kind, vals))
    n.output().setType(out_type or _T)
    if payload is not None:
        n._payload = payload
    return n.output()


def _ints(v, n):
    return [int(e) for e in v] if isinstance(v, (list, tuple)) else [int(v)] * n


def layer_graph(m) -> IR.Graph | None:
    """The graph torch's ``jit.script`` makes of an ember library layer (``nn.Linear``,
    ``ConvNd``, ``BatchNormNd``, pooling, activations), or None for other modules."""
    nn = ember.nn
    F = ember.nn.functional
    if type(m).forward is nn.Linear.forward:
        g, s, (x,) = _layer_head(m)
        w, b = _attr(g, s, "weight"), _attr(g, s, "bias", _py_type(m.bias))
        g.registerOutput(_op(g, "aten::linear", [x, w, b]))
        return g
    convs = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3}
    if type(m) in convs and m.padding_mode == "zeros" and not isinstance(m.padding, str):
        k = convs[type(m)]
        g, s, (x,) = _layer_head(m)
        w, b = _attr(g, s, "weight"), _attr(g, s, "bias", _py_type(m.bias))
        fn = getattr(F, f"conv{k}d")
        out = _op(
            g, f"aten::conv{k}d",
            [x, w, b, _ints(m.stride, k), _ints(m.padding, k), _ints(m.dilation, k), m.groups],
            payload=lambda x, w, b, st, p, d, gr, fn=fn: fn(x, w, b, st, p, d, gr),
        )  # fmt: skip
        g.registerOutput(out)
        return g
    bns = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
    if type(m) in bns and m.track_running_stats and m.momentum is not None:
        return _batch_norm_graph(m)
    if type(m) is nn.MaxPool2d and not m.return_indices:
        g, s, (x,) = _layer_head(m)
        stride = m.stride if m.stride not in (None, []) else m.kernel_size
        args = [x, _ints(m.kernel_size, 2), _ints(stride, 2), _ints(m.padding, 2),
                _ints(m.dilation, 2), bool(m.ceil_mode)]  # fmt: skip
        g.registerOutput(_op(g, "aten::max_pool2d", args))
        return g
    if type(m) is nn.AdaptiveAvgPool2d:
        g, s, (x,) = _layer_head(m)
        size = list(m.output_size) if isinstance(m.output_size, (tuple, list)) else m.output_size
        out = _op(
            g, "aten::adaptive_avg_pool2d", [x, _ints(size, 2) if size is not None else None],
            payload=lambda x, size: F.adaptive_avg_pool2d(x, size),
        )  # fmt: skip
        g.registerOutput(out)
        return g
    if type(m) is nn.Identity:
        g, s, (x,) = _layer_head(m)
        g.registerOutput(x)
        return g
    return None


def _batch_norm_graph(m) -> IR.Graph:
    """``BatchNormNd.forward`` as torch's scripted graph computes it: in training the batch
    count (``num_batches_tracked.add_(1)``, under ``prim::If(training)``), then one
    ``aten::batch_norm`` whose training flag is the module's (running statistics updated
    in place by the same kernel eager runs)."""
    F = ember.nn.functional
    g, s, (x,) = _layer_head(m)
    n = g.insertNode(g.create("prim::If", [_attr(g, s, "training", _B)], 0))
    body = n.addBlock()
    n.addBlock()
    with g.insert_point_guard(body):
        count = _attr(g, s, "num_batches_tracked")
        _op(g, "aten::add_", [count, 1, 1], payload=lambda t, v, alpha: t.add_(v, alpha=alpha))
    training = _attr(g, s, "training", _B)
    mean, var = _attr(g, s, "running_mean"), _attr(g, s, "running_var")
    w, b = _attr(g, s, "weight", _py_type(m.weight)), _attr(g, s, "bias", _py_type(m.bias))

    def run_bn(x, w, b, mean, var, training, momentum, eps, cudnn):
        return F.batch_norm(x, mean, var, w, b, training, momentum, eps)

    out = _op(
        g, "aten::batch_norm",
        [x, w, b, mean, var, training, float(m.momentum), float(m.eps), True],
        payload=run_bn,
    )  # fmt: skip
    g.registerOutput(out)
    return g


def _loop_names(block_input, output, name: str) -> None:
    """Name a loop-carried variable's block input and loop output as torch's SSA pass leaves
    them: two renames of ``name`` go by first, then the input is renamed by the output."""
    g = output.owningGraph()
    spare = [g.create("prim::Load", [], 1).output() for _ in range(2)]
    for v in spare:
        g._unique -= 1
        v.setDebugName(name)
    block_input.setDebugName(name)
    output.setDebugName(name)
    for v in spare:
        v.setDebugName(None)


def _fits(t, want: str) -> bool:
    """Whether a value of IR type ``t`` can be passed for a schema parameter of type ``want``."""
    if want.endswith("?"):
        if isinstance(t, IR.NoneType):
            return True
        want = want[:-1]
    if isinstance(t, IR.OptionalType):
        return False
    if want == "Tensor":
        return isinstance(t, IR.TensorType)
    if want == "int[]":
        return isinstance(t, IR.IntType) or (
            isinstance(t, IR.ListType) and isinstance(t.getElementType(), IR.IntType)
        )
    if want in ("int", "ScalarType"):
        return isinstance(t, IR.IntType)
    if want == "bool":
        return isinstance(t, IR.BoolType)
    if want == "Scalar":
        return isinstance(t, (IR.IntType, IR.FloatType, IR.BoolType, IR.NumberType))
    return False


def _schema_payload(name, call):
    """Run a method node ``_schema_args`` made: the method called as the user called it."""
    pos, kws, wrapped, dtypes = call

    def run(x, *a):
        a = [v[0] if i in wrapped else _dtype_of(v) if i in dtypes else v for i, v in enumerate(a)]
        return getattr(x, name)(*(a[i] for i in pos), **{k: a[i] for k, i in kws})

    return run


def _dtype_of(code):
    from ember.jit._aten import _dtype

    return _dtype(code)


def _leftmost(node):
    """The node whose position starts ``node``'s source as torch counts it (after any
    opening parenthesis: ``(y - 1).relu()`` starts at ``y``)."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.BinOp):
            node = node.left
        elif isinstance(node, ast.Compare):
            node = node.left
        else:
            return node


# list/dict methods that change their container (kept when their result is unused)
_MUTATORS = {"aten::append", "aten::extend", "aten::insert", "aten::pop", "aten::remove",
             "aten::clear", "aten::reverse", "aten::_set_item", "aten::Delete",
             "aten::setdefault", "aten::update", "aten::popitem", "aten::sort",
             "aten::format"}  # fmt: skip


def _effectful(n) -> bool:
    from ember.jit.passes.dce import has_side_effects

    if n.kind() in _MUTATORS or has_side_effects(n) or not n.outputs():
        return True
    return any(_effectful(m) for b in n.blocks() for m in b.nodes())


def _lower_simple_tuples(block) -> None:
    """Reads of a ``prim::TupleConstruct`` (an unpack, an index by a constant) become the
    values it was built from, as torch's cleanup of a compiled function leaves them."""
    for n in list(block.nodes()):
        for b in n.blocks():
            _lower_simple_tuples(b)
        src = n.inputs()[0].node() if n.inputs() else None
        if src is None or src.kind() != "prim::TupleConstruct":
            continue
        if n.kind() == "prim::TupleUnpack" and len(n.outputs()) == len(src.inputs()):
            for o, v in zip(n.outputs(), src.inputs()):
                o.replaceAllUsesWith(v)
        elif n.kind() == "prim::TupleIndex" and n.inputs()[1].node().kind() == "prim::Constant":
            k = n.inputs()[1].node().i("value")
            if isinstance(k, int) and -len(src.inputs()) <= k < len(src.inputs()):
                n.output().replaceAllUsesWith(src.inputs()[k])


def _sweep_dead(block) -> None:
    """Dead code elimination as torch runs it on a compiled function (list mutations kept;
    an if's unused outputs go)."""
    for n in reversed(list(block.nodes())):
        if n.kind() == "prim::If":
            for i in reversed(range(len(n.outputs()))):
                if not n.outputs()[i].uses():
                    n.eraseOutput(i)
                    for b in n.blocks():
                        b.eraseOutput(i)
        for b in n.blocks():
            _sweep_dead(b)
        if not n.hasUses() and not _effectful(n):
            n.destroy()


def pool_constants(g: IR.Graph) -> None:
    """Torch's constant pooling: walking the graph (blocks included), the first constant of
    each value moves to the top of the graph (so they end in reverse order) and later equal
    ones are replaced by it."""
    seen: dict = {}
    top = g.block()

    def walk(block):
        for n in list(block.nodes()):
            if n.kind() == "prim::Constant":
                if not n.output().uses() and block is top:
                    n.destroy()  # (dead code elimination, which torch runs before)
                    continue
                key = _constant_key(n)
                if key is not None:
                    kept = seen.get(key)
                    if kept is not None:
                        n.output().replaceAllUsesWith(kept)
                        n.destroy()
                        continue
                    seen[key] = n.output()
                first = next(iter(top.nodes()))
                if first is not n:
                    n.moveBefore(first)
                continue
            for b in n.blocks():
                walk(b)

    walk(top)


def _constant_key(n):
    v = n.output()
    if "value" not in n.attributeNames():
        return (v.type().annotation_str(), None)
    value = n.output().toIValue()
    if isinstance(value, (int, float, bool, str)):
        return (v.type().annotation_str(), type(value), value)
    return None


def compile_function(fn, module=None) -> IR.Graph:
    """Compile a Python function (or a module's method, with ``module``) to a graph."""
    fn = inspect.unwrap(fn)
    glb = dict(getattr(fn, "__globals__", {}))
    if fn.__closure__:
        glb.update(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))
    try:
        c = _Compiler(fn, IR.Graph(), glb, module)
    except (OSError, TypeError) as err:
        raise Unsupported(f"no source: {err}") from None
    return c.compile(skip_self=module is not None)


def compile_module(module) -> IR.Graph:
    """Compile ``module``'s ``forward`` (and what it calls) to a graph; its first input is
    the module."""
    return layer_graph(module) or compile_function(type(module).forward, module=module)

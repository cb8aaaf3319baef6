"""Resume after a graph break in a plain function: split its body at the breaking statement.

A capture that breaks knows the line of the function it was running (``Recorder.break_line``).
The function's source is split at the top-level statement holding that line into pieces that
pass their live local variables along: the statements before it (compiled), the statement
itself (run eagerly; for an ``if``, only its test), and the statements after it (compiled as a
*resume function*, which may break and split again). This is dynamo's behaviour — a graph
before the break, the breaking code eager, a graph resumed after it — built from the source
rather than the bytecode. A break inside a top-level ``if`` branch cuts inside it: the prefix
runs the test and the branch up to the break, or the whole other path (returning the result
tagged). What the split cannot express (a break inside a loop, a ``with`` or ``try`` block,
``global``/``nonlocal``, a lambda) runs the whole function eagerly, as torch skips such a
frame.
"""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap
import types

_BLOCKS = (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class Piece:
    """A function body as statements: ``params`` are its positional parameter names."""

    def __init__(self, name, params, body, filename, globals_, signature=None):
        self.name = name
        self.params = params
        self.body = body
        self.filename = filename
        self.globals = globals_
        self.signature = signature  # the original function's (binds a call's arguments)
        self.cells: dict = {}  # the closure's cells by name (the pieces share them)


def piece_of(fn) -> Piece | None:
    """The splittable form of a plain Python function, or None."""
    code = getattr(fn, "__code__", None)
    if not inspect.isfunction(fn) or fn.__name__ == "<lambda>":
        return None
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != fn.__name__:
        return None
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in _walk(fdef.body)):
        return None
    ast.increment_lineno(tree, code.co_firstlineno - 1)  # the lines of the file
    a = fdef.args
    params = [x.arg for x in (*a.posonlyargs, *a.args)]
    params += [a.vararg.arg] if a.vararg else []
    params += [x.arg for x in a.kwonlyargs]
    params += [a.kwarg.arg] if a.kwarg else []
    sig = inspect.signature(fn)
    piece = Piece(fn.__name__, params, fdef.body, code.co_filename, fn.__globals__, sig)
    piece.cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    return piece


def _walk(stmts):
    """Every node of ``stmts``, not descending into nested functions and classes."""
    todo = list(stmts)
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, _SCOPES):
            todo.extend(ast.iter_child_nodes(n))


def _loaded(nodes) -> set:
    # (descends into lambdas and comprehensions too: an over-approximation is harmless)
    return {n.id for s in nodes for n in ast.walk(s) if isinstance(n, ast.Name)}


def _stored(stmts) -> set:
    return {
        n.id for n in _walk(stmts) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    } | {n.name for n in stmts if isinstance(n, _SCOPES[:3])}


def _surely_stored(stmts) -> set:
    """Names every run of ``stmts`` binds (top-level assignments and definitions)."""
    out: set = set()
    for s in stmts:
        if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign, *_SCOPES[:3], ast.Import,
                          ast.ImportFrom)):  # fmt: skip
            out |= _stored([s])
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                out |= {(x.asname or x.name).split(".")[0] for x in s.names}
    return out


def _NO_ARGS():
    return ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
        defaults=[],
    )  # fmt: skip


class Plan:
    """How a call runs once split: ``prefix`` (compiled), ``eager`` (the breaking statement)
    and what follows (``rest``: one compiled resume function, or ``branches`` of an ``if``)."""

    def __init__(self, piece, make_compiled):
        self.piece = piece
        self.make = make_compiled  # (python function, piece) -> a CompiledFunction
        self.prefix = None
        self.eager = None
        self.kind = None  # "stmt" | "return" | "if"
        self.tagged = False  # the prefix returns (0, result) or (1, *live)
        self.rest = None
        self.branches: list = []
        self.pieces: list = []  # the CompiledFunctions made
        self.span = None  # the lines of the breaking statement (run eagerly)

    def _function(self, name, params, body, line):
        args = _NO_ARGS()
        args.args = [ast.arg(p) for p in params]
        fdef = ast.FunctionDef(name, args, body or [ast.Pass()], [], None)
        fdef.lineno, fdef.col_offset = line, 0
        fdef.end_lineno, fdef.end_col_offset = max(x.end_lineno or line for x in fdef.body), 0
        cells = self.piece.cells
        if not cells:
            mod = ast.fix_missing_locations(ast.Module([fdef], type_ignores=[]))
            ns: dict = {}
            exec(compile(mod, self.piece.filename, "exec"), self.piece.globals, ns)
            return ns[name]
        # a closure: compile the piece inside a function binding the free names, then build
        # it on the original function's own cells (rebinding them is seen by both)
        bind = ast.Assign([ast.Name(n, ast.Store()) for n in cells], ast.Constant(None))
        outer = ast.FunctionDef("_cells", _NO_ARGS(), [bind, fdef], [], None)
        for n in (bind, *ast.walk(bind), outer):
            n.lineno, n.end_lineno, n.col_offset, n.end_col_offset = line, line, 0, 0
        outer.end_lineno = fdef.end_lineno
        mod = ast.fix_missing_locations(ast.Module([outer], type_ignores=[]))
        code = compile(mod, self.piece.filename, "exec")
        outer_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
        inner = next(c for c in outer_code.co_consts if isinstance(c, types.CodeType))
        closure = tuple(cells[n] for n in inner.co_freevars)
        return types.FunctionType(inner, self.piece.globals, name, None, closure)

    def _returning(self, names, line):
        ret = ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in names], ast.Load()))
        for n in ast.walk(ret):
            n.lineno = n.end_lineno = line
            n.col_offset = n.end_col_offset = 0
        return ret

    def _compiled(self, name, params, body, line):
        fn = self._function(name, params, body, line)
        piece = Piece(name, params, body, self.piece.filename, self.piece.globals)
        piece.cells = self.piece.cells
        cf = self.make(fn, piece)
        self.pieces.append(cf)
        return cf

    def run(self, args, kwargs):
        p = self.piece
        if p.signature is not None:
            bound = p.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args = [bound.arguments[n] for n in p.params]
        live = self.prefix(*args) if self.prefix is not None else args
        if self.tagged:  # (0, result): the prefix ran the call to its end
            if live[0] == 0:
                return live[1]
            live = live[1:]
        if self.kind == "return":
            return self.eager(*live)
        if self.kind == "stmt":
            live = self.eager(*live)
            return None if self.rest is None else self.rest(*live)
        return self.branches[0 if self.eager(*live) else 1](*live)


def split(piece: Piece, line: int | None, make_compiled) -> Plan | None:
    """The plan of ``piece`` split at the top-level statement holding ``line``, or None."""
    if line is None:
        return None
    body = piece.body
    k = next((i for i, s in enumerate(body) if s.lineno <= line <= s.end_lineno), None)
    if k is None:
        return None
    s = body[k]
    if isinstance(s, ast.If) and not s.test.lineno <= line <= s.test.end_lineno:
        plan = _split_in_branch(piece, k, line, make_compiled)
        if plan is not None:
            return plan
    if isinstance(s, _BLOCKS + _SCOPES + (ast.Delete,)):
        return None  # a break inside a block: the whole function runs eagerly
    before = body[:k]
    if any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) for n in _walk(before)):
        return None
    live = _live(piece, before, [s, *body[k + 1 :]])
    if live is None:
        return None
    plan = Plan(piece, make_compiled)
    if before:
        ret = plan._returning(live, before[-1].end_lineno)
        plan.prefix = plan._compiled(piece.name, piece.params, [*before, ret], before[0].lineno)
    return _finish(plan, s, live, body[k + 1 :])


def _live(piece, before, later_stmts):
    """The names bound by ``before`` (or parameters) that ``later_stmts`` read, in a fixed
    order; None when one of them is bound on some paths only."""
    known = set(piece.params) | _surely_stored(before)
    later = _loaded(later_stmts)
    if (_stored(before) - known) & later:
        return None
    order = list(piece.params) + sorted(_stored(before) - set(piece.params))
    return [n for n in order if n in known and n in later]


def _split_in_branch(piece, k, line, make_compiled):
    """A break at a simple statement inside a top-level ``if`` branch: the prefix runs the code
    before the ``if``, its test and the branch up to the break (returning ``(1, *live)``), or
    the whole other path (returning ``(0, result)``); as torch's, one graph up to the break."""
    body = piece.body
    s, before, after = body[k], body[:k], body[k + 1 :]
    in_body = any(x.lineno <= line <= x.end_lineno for x in s.body)
    chosen, other = (s.body, s.orelse) if in_body else (s.orelse, s.body)
    j = next((i for i, x in enumerate(chosen) if x.lineno <= line <= x.end_lineno), None)
    if j is None or isinstance(chosen[j], _BLOCKS + _SCOPES + (ast.Delete, ast.If)):
        return None
    brk, pre = chosen[j], chosen[:j]
    rest = [*chosen[j + 1 :], *after]
    live = _live(piece, [*before, *pre], [brk, *rest])
    if live is None:
        return None
    plan = Plan(piece, make_compiled)
    names = [ast.Name(n, ast.Load()) for n in live]
    resume = ast.Return(ast.Tuple([ast.Constant(1), *names], ast.Load()))
    done = ast.Return(ast.Tuple([ast.Constant(0), ast.Constant(None)], ast.Load()))
    for n in (*ast.walk(resume), *ast.walk(done)):
        n.lineno = n.end_lineno = brk.lineno
        n.col_offset = n.end_col_offset = 0
    finish = [*_tagged(other), *_tagged(after), done]
    branch = [*_tagged(pre), resume]
    test = ast.If(s.test, branch, finish) if in_body else ast.If(s.test, finish, branch)
    ast.copy_location(test, s)
    test.end_lineno = s.end_lineno
    prefix = [*_tagged(before), test]
    plan.prefix = plan._compiled(piece.name, piece.params, prefix, prefix[0].lineno)
    plan.tagged = True
    return _finish(plan, brk, live, rest)


class _Tag(ast.NodeTransformer):
    # ``return e`` -> ``return (0, e)``: the prefix finished the call (not inside nested scopes)
    def visit_Return(self, node):
        value = node.value if node.value is not None else ast.Constant(None)
        return ast.copy_location(ast.Return(ast.Tuple([ast.Constant(0), value], ast.Load())), node)

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef


def _tagged(stmts: list) -> list:
    return [ast.fix_missing_locations(_Tag().visit(copy.deepcopy(x))) for x in stmts]


def _finish(plan, s, live, after):
    """The breaking statement ``s`` (eager) and what follows it (resumed) of a plan."""
    name = plan.piece.name
    at = f"torch_dynamo_resume_in_{name}_at_{s.lineno}"
    plan.span = (s.lineno, s.end_lineno)
    if isinstance(s, ast.If):  # (only its test runs eagerly)
        plan.span = (s.test.lineno, s.test.end_lineno)
    if isinstance(s, ast.Return):
        plan.kind = "return"
        plan.eager = plan._function(f"{name}_eager", live, [s], s.lineno)
    elif isinstance(s, ast.If):
        plan.kind = "if"
        test = ast.copy_location(ast.Return(s.test), s)
        plan.eager = plan._function(f"{name}_test", live, [test], s.lineno)
        for branch in (s.body, s.orelse):
            line0 = branch[0].lineno if branch else s.end_lineno
            plan.branches.append(plan._compiled(at, live, [*branch, *after], line0))
    else:
        plan.kind = "stmt"
        known2 = set(live) | _surely_stored([s])
        if _stored([s]) - known2:
            return None
        rest_loads = _loaded(after)
        live2 = [n for n in [*live, *sorted(known2 - set(live))] if n in rest_loads]
        ret = plan._returning(live2, s.end_lineno)
        plan.eager = plan._function(f"{name}_eager", live, [s, ret], s.lineno)
        if after:
            plan.rest = plan._compiled(at, live2, after, after[0].lineno)
    return plan

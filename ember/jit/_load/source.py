"""An archive's ``code/`` files, parsed (``ast.parse``, never run) and checked: what classes and
functions they define, and that they hold only serialized TorchScript.

TorchScript source as torch prints it is a small, fully typed subset of Python syntax. Every
syntax node outside that subset, and every name that reaches for Python itself (``__import__``,
``exec``, ``eval``, ``open``, dunder attributes...), is refused here, before anything compiles.
"""

from __future__ import annotations

import ast
import re

from ember.jit._load.reader import UnsafeArchiveError

__all__ = ["ClassDecl", "FunctionDecl", "SourceUnit", "parse_code", "where"]

# syntax TorchScript's printer writes; anything else is not serialized TorchScript
_ALLOWED_NODES = (
    ast.Module, ast.ClassDef, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign,
    ast.AnnAssign, ast.AugAssign, ast.For, ast.While, ast.If, ast.Expr, ast.Pass, ast.Break,
    ast.Continue, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Dict, ast.Compare, ast.Call,
    ast.keyword, ast.Constant, ast.Attribute, ast.Subscript, ast.Name, ast.List, ast.Tuple,
    ast.Load, ast.Store, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.Add, ast.Sub,
    ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.Eq, ast.NotEq, ast.Lt, ast.LtE,
    ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.Assert, ast.Slice,
)  # fmt: skip

# names that only make sense as a reach into the Python running the loader
_REFUSED_NAMES = frozenset(
    "__import__ exec eval compile open globals locals vars setattr delattr breakpoint "
    "__builtins__ __builtin__ builtins importlib os sys subprocess pickle marshal ctypes "
    "shutil socket exit quit".split()
)
# dunder names serialized TorchScript legitimately uses
_DUNDER_OK = frozenset(
    "__torch__ __parameters__ __buffers__ __annotations__ __new__ __is__ __isnot__ __not__ "
    "__getitem__ __contains__ __and__ __or__ __xor__ __init__ __getstate__ __setstate__ "
    "__derive_index __range_length __interpolate __upsample __round_to_zero __lshift__ "
    "__rshift__ __iand__ __ior__ __ixor__ __len__".split()
)


_MANGLE = re.compile(r"___torch_mangle_\d+")


def where(decl_file: str, lines: list[str], node) -> str:
    """``code/__torch__.py:12: <the line>`` for an error message."""
    line = getattr(node, "lineno", 0)
    text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return f"{decl_file}:{line}: {text}"


def _refuse(file: str, lines, node, what: str):
    raise UnsafeArchiveError(
        f"ember.jit.load refused the archive: {what} ({where(file, lines, node)}); nothing was run"
    )


def check_syntax(tree, file: str, lines: list[str]) -> None:
    """Raise UnsafeArchiveError on any syntax or name outside serialized TorchScript."""
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            _refuse(file, lines, node, f"{type(node).__name__} syntax is not TorchScript")
        name = None
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            name = node.name
        elif isinstance(node, ast.arg):
            name = node.arg
        elif isinstance(node, ast.keyword):
            name = node.arg
        if name is None:
            continue
        if name in _REFUSED_NAMES:
            _refuse(file, lines, node, f"the code names '{name}'")
        if name.startswith("__") and name not in _DUNDER_OK and not _MANGLE.fullmatch(name):
            _refuse(file, lines, node, f"the code names the dunder '{name}'")
        if isinstance(node, ast.FunctionDef) and node.decorator_list:
            _refuse(file, lines, node, "decorators are not serialized TorchScript")
        if isinstance(node, ast.ClassDef) and (node.decorator_list or node.keywords):
            _refuse(file, lines, node, "class decorators and keywords are not TorchScript")


class FunctionDecl:
    """A function or method of the archive: its AST, file and qualified name."""

    def __init__(self, qualname: str, node: ast.FunctionDef, file: str, lines: list[str], owner):
        self.qualname = qualname
        self.node = node
        self.file = file
        self.lines = lines
        self.owner = owner  # the ClassDecl of a method, None for a free function
        self.name = node.name

    def source(self) -> str:
        start, end = self.node.lineno, self.node.end_lineno
        return "\n".join(self.lines[start - 1 : end]) + "\n"


class ClassDecl:
    """A class of the archive: a module (``class X(Module)``) or a TorchScript class."""

    def __init__(self, qualname: str, node: ast.ClassDef, file: str, lines: list[str]):
        self.qualname = qualname
        self.file = file
        self.lines = lines
        self.node = node
        self.is_module = False
        self.is_namedtuple = False
        self.parameters: list[str] = []
        self.buffers: list[str] = []
        self.attributes: dict[str, ast.expr] = {}  # name -> type annotation
        self.constants: dict[str, object] = {}
        self.methods: dict[str, FunctionDecl] = {}
        self._read(node)

    def _read(self, node: ast.ClassDef) -> None:
        f, lines = self.file, self.lines
        for b in node.bases:
            if isinstance(b, ast.Name) and b.id == "Module":
                self.is_module = True
            elif isinstance(b, ast.Name) and b.id == "NamedTuple":
                self.is_namedtuple = True
            elif not (
                isinstance(b, ast.Name) and b.id in ("object", "Enum", "Interface", "NamedTuple")
            ):
                _refuse(f, lines, b, "a class base that is not Module")
        for item in node.body:
            if isinstance(item, ast.FunctionDef):
                self.methods[item.name] = FunctionDecl(
                    f"{self.qualname}.{item.name}", item, f, lines, self
                )
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                name = item.target.id
                self.attributes[name] = item.annotation
                if item.value is not None:
                    self.constants[name] = literal(item.value, f, lines)
            elif isinstance(item, ast.Assign) and len(item.targets) == 1:
                t = item.targets[0]
                if isinstance(t, ast.Name) and t.id in ("__parameters__", "__buffers__"):
                    names = literal(item.value, f, lines)
                    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                        _refuse(f, lines, item, f"{t.id} is not a list of names")
                    if t.id == "__parameters__":
                        self.parameters = names
                    else:
                        self.buffers = names
                elif (
                    isinstance(t, ast.Subscript)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "__annotations__"
                    and isinstance(t.slice, ast.Constant)
                    and isinstance(t.slice.value, str)
                ):
                    self.attributes[t.slice.value] = item.value
                else:
                    _refuse(f, lines, item, "an assignment in a class body")
            elif isinstance(item, ast.Pass):
                pass
            else:
                _refuse(f, lines, item, f"{type(item).__name__} in a class body")
        for name in self.parameters + self.buffers:
            if name.startswith("__"):
                _refuse(f, lines, node, f"a dunder parameter name {name!r}")


def literal(node, file: str, lines: list[str]):
    """The value of a literal expression (numbers, strings, None, lists, tuples)."""
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        _refuse(file, lines, node, "a class constant that is not a literal")


class SourceUnit:
    """Every class and function the archive's code defines, by qualified name."""

    def __init__(self):
        self.classes: dict[str, ClassDecl] = {}
        self.functions: dict[str, FunctionDecl] = {}
        self.files: dict[str, list[str]] = {}


def _module_name(path: str) -> str:
    # code/__torch__/torch/nn/modules/linear.py -> __torch__.torch.nn.modules.linear
    rel = path[len("code/") : -len(".py")]
    parts = rel.split("/")
    if parts[0] != "__torch__" or not all(p.isidentifier() for p in parts):
        raise UnsafeArchiveError(f"ember.jit.load refused the archive: odd code path {path!r}")
    return ".".join(parts)


def parse_code(files: dict[str, str]) -> SourceUnit:
    """Parse and check every ``code/*.py`` of an archive."""
    unit = SourceUnit()
    for path in sorted(files):
        text = files[path]
        lines = text.splitlines()
        unit.files[path] = lines
        module = _module_name(path)
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as e:
            raise UnsafeArchiveError(
                f"ember.jit.load refused the archive: {path}:{e.lineno} is not TorchScript "
                f"source ({e.msg})"
            ) from None
        check_syntax(tree, path, lines)
        for item in tree.body:
            if isinstance(item, ast.ClassDef):
                q = f"{module}.{item.name}"
                unit.classes[q] = ClassDecl(q, item, path, lines)
            elif isinstance(item, ast.FunctionDef):
                q = f"{module}.{item.name}"
                unit.functions[q] = FunctionDecl(q, item, path, lines, None)
            elif (
                isinstance(item, ast.Assign)
                and len(item.targets) == 1
                and isinstance(item.targets[0], ast.Name)
                and item.targets[0].id == "op_version_set"
                and isinstance(item.value, ast.Constant)
            ):
                pass  # old archives' header
            else:
                _refuse(path, lines, item, f"top-level {type(item).__name__}")
    return unit

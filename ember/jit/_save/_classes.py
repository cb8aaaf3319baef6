"""The classes an archive declares for a module tree, and the objects ``data.pkl`` holds.

Each module becomes an instance of a class ``__torch__.<python module>.<class>`` (ember's
``ember.nn...`` modules named after torch's ``torch.nn...``), declaring its parameters
(``__parameters__``), buffers (``__buffers__``), ``training`` and submodules in that order,
which is the order of ``state_dict``. Two modules of one Python class whose declarations
differ (a ``Linear`` with and one without bias) get two classes, the second one named
``...___torch_mangle_N.<class>`` as torch names them.
"""

from __future__ import annotations

import keyword
import re

from ember.jit._names import torch_module

# a method's ``self`` annotation until its class is named (names are given after mangling)
SELF = "__SELF__"

__all__ = ["SELF", "ClassDecl", "ModuleObj", "ClassTable", "is_identifier", "python_qualname"]


def python_qualname(cls) -> str:
    """Return ``__torch__.<module>.<qualname>`` for a Python class, as torch names it."""
    mod = torch_module(cls)
    parts = [] if mod == "__main__" else mod.split(".")
    parts += [p for p in cls.__qualname__.split(".") if p != "<locals>"]
    return "__torch__." + ".".join(_ident(p) for p in parts if p)


def is_identifier(name: str) -> bool:
    """True when ``name`` can follow a dot in TorchScript (``self.fc``, not ``self.0``)."""
    return name.isidentifier() and not keyword.iskeyword(name)


def _ident(part: str) -> str:
    s = re.sub(r"\W", "_", part)
    return "_" + s if s[:1].isdigit() else s


class ClassDecl:
    """One ``class Name(Module):`` of the archive's code."""

    def __init__(self, qualname: str):
        self.qualname = qualname
        self.parameters: list[str] = []
        self.buffers: list[str] = []
        self.attributes: list[tuple[str, str]] = []  # (name, annotation), declaration order
        self.methods: list[list[str]] = []  # each a method's lines, indented for the class

    @property
    def namespace(self) -> str:
        return self.qualname.rpartition(".")[0]

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]

    def signature(self) -> tuple:
        return (
            tuple(self.parameters),
            tuple(self.buffers),
            tuple(self.attributes),
            tuple(tuple(m) for m in self.methods),
        )

    def source(self) -> str:
        def names(xs):
            return "[" + "".join(f'"{x}", ' for x in xs) + "]"

        lines = [
            f"class {self.name}(Module):",
            f"  __parameters__ = {names(self.parameters)}",
            f"  __buffers__ = {names(self.buffers)}",
        ]
        lines += [
            f"  {n} : {t}" if is_identifier(n) else f'  __annotations__["{n}"] = {t}'
            for n, t in self.attributes
        ]
        for m in self.methods:
            lines += [line.replace(SELF, self.qualname) for line in m]
        return "\n".join(lines) + "\n"


class ModuleObj:
    """A module instance for ``data.pkl``: its class and its attributes' values."""

    __slots__ = ("qualname", "state")

    def __init__(self, qualname: str, state: dict):
        self.qualname = qualname
        self.state = state


class ClassTable:
    """The classes of one archive: deduplicated by declaration, mangled on a name clash."""

    def __init__(self):
        self.by_name: dict[str, list[ClassDecl]] = {}
        self.classes: list[ClassDecl] = []
        self.mangle = 0

    def add(self, decl: ClassDecl) -> str:
        """Register ``decl`` (or find its twin); return the qualified name it goes by."""
        same = self.by_name.setdefault(decl.qualname, [])
        for other in same:
            if other.signature() == decl.signature():
                return other.qualname
        if same:
            ns, _, name = decl.qualname.rpartition(".")
            decl.qualname = f"{ns}.___torch_mangle_{self.mangle}.{name}"
            self.mangle += 1
        same.append(decl)
        self.classes.append(decl)
        return decl.qualname

    def files(self) -> dict[str, str]:
        """Return ``{"code/__torch__/....py": source}``, one file per namespace."""
        out: dict[str, list[str]] = {}
        for c in self.classes:
            path = "code/" + c.namespace.replace(".", "/") + ".py"
            out.setdefault(path, []).append(c.source())
        return {path: "\n".join(srcs) for path, srcs in out.items()}

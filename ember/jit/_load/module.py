"""The ember objects a loaded archive becomes: ``LoadedScriptModule`` (a ``RecursiveScriptModule``
whose methods run their compiled graphs) and ``LoadedScriptObject`` (a TorchScript class
instance), built from the inert ``ArchiveObject``s of ``data.pkl``."""

from __future__ import annotations

from ember.jit._load.reader import ArchiveObject, UnsafeArchiveError
from ember.jit._script import RecursiveScriptModule

__all__ = ["LoadedScriptModule", "LoadedScriptObject", "build_object"]


def _run_method(owner, cu, decl, args, kwargs):
    from ember.jit.executor import run

    graph = cu.graph_of(decl)
    if kwargs:
        names = [a.arg for a in decl.node.args.args[1:]]
        full = list(args) + [None] * (len(names) - len(args))
        given = [True] * len(args) + [False] * (len(names) - len(args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"{decl.name}() got an unexpected keyword argument '{k}'")
            full[names.index(k)] = v
            given[names.index(k)] = True
        args = _fill_defaults(decl, full, given)
    elif len(args) < len(graph.inputs()) - 1:
        n = len(graph.inputs()) - 1
        args = _fill_defaults(decl, list(args) + [None] * (n - len(args)), [True] * len(args)
                              + [False] * (n - len(args)))  # fmt: skip
    (out,) = run(graph, [owner, *args])
    return out


def _fill_defaults(decl, values, given):
    import ast

    params = decl.node.args.args[1:]
    defaults = decl.node.args.defaults
    first = len(params) - len(defaults)
    for i, ok in enumerate(given):
        if not ok:
            if i < first:
                raise TypeError(f"{decl.name}() missing required argument '{params[i].arg}'")
            values[i] = ast.literal_eval(defaults[i - first])
    return values


class _BoundMethod:
    """A compiled method of a loaded module or object (``m.forward``, exported methods)."""

    def __init__(self, owner, cu, decl):
        self._owner, self._cu, self._decl = owner, cu, decl
        self.name = decl.name

    def __call__(self, *args, **kwargs):
        return _run_method(self._owner, self._cu, self._decl, args, kwargs)

    @property
    def graph(self):
        return self._cu.graph_of(self._decl)

    @property
    def code(self) -> str:
        return _method_code(self._decl)

    def __repr__(self) -> str:
        return f"<ember.jit method {self._decl.qualname}>"


def _method_code(decl) -> str:
    """The method's TorchScript source as the archive holds it (``self`` without its type,
    dedented), as torch's ``.code`` shows it."""
    import re
    import textwrap

    lines = textwrap.dedent(decl.source()).splitlines(keepends=True)
    # the signature's continuation lines sit 4 in from the def, as torch prints them
    body = decl.node.body[0].lineno - decl.node.lineno
    lines[1:body] = ["  " + ln for ln in lines[1:body]]
    return re.sub(r"^def (\w+)\(self: [\w.]+,", r"def \1(self,", "".join(lines), count=1)


class LoadedScriptModule(RecursiveScriptModule):
    """A module loaded from a TorchScript archive: parameters, buffers, submodules and
    attributes as the archive holds them; ``forward`` and the other methods run the graphs
    compiled from the archive's code."""

    def __init__(self, decl, cu):
        super().__init__()
        d = self.__dict__
        d["original_name"] = decl.qualname.rsplit(".", 1)[-1]
        d["_decl"] = decl
        d["_cu"] = cu
        forward = decl.methods.get("forward")
        d["_graph"] = cu.graph_of(forward) if forward is not None else None

    def forward(self, *args, **kwargs):
        decl = self._decl.methods.get("forward")
        if decl is None:
            raise RuntimeError(f"{self._decl.qualname} has no forward method")
        return _run_method(self, self._cu, decl, args, kwargs)

    def __getattr__(self, name: str):
        d = self.__dict__
        decl = d.get("_decl")
        if decl is not None and name in decl.methods:
            return _BoundMethod(self, d["_cu"], decl.methods[name])
        return super().__getattr__(name)

    # a loaded container (Sequential, ModuleList, ModuleDict) indexes its submodules
    def __getitem__(self, idx):
        if isinstance(idx, str):
            return self._modules[idx]
        return list(self._modules.values())[idx]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __contains__(self, key) -> bool:
        return key in self._modules

    @property
    def code(self) -> str:
        """The TorchScript source of ``forward``, as the archive holds it."""
        decl = self._decl.methods.get("forward")
        return "" if decl is None else _method_code(decl)

    def _method_names(self) -> list[str]:
        return list(self._decl.methods)

    def _get_name(self) -> str:
        return "RecursiveScriptModule"


# torch's loaded modules are RecursiveScriptModules: so is the type name of ember's
LoadedScriptModule.__name__ = LoadedScriptModule.__qualname__ = "RecursiveScriptModule"


class LoadedScriptObject:
    """An object of a TorchScript class from an archive: its attributes, compiled methods."""

    def __init__(self, decl, cu):
        self.__dict__["_decl"] = decl
        self.__dict__["_cu"] = cu

    def __getattr__(self, name: str):
        decl = self.__dict__["_decl"]
        if name in decl.methods:
            return _BoundMethod(self, self.__dict__["_cu"], decl.methods[name])
        raise AttributeError(f"'{decl.qualname}' object has no attribute '{name}'")

    def __repr__(self) -> str:
        return f"<{self._decl.qualname} object>"


def build_object(obj, unit, cu, memo: dict | None = None):
    """Turn the unpickled archive objects (and containers of them) into ember objects."""
    memo = {} if memo is None else memo
    if id(obj) in memo:
        return memo[id(obj)]
    if isinstance(obj, ArchiveObject):
        decl = unit.classes.get(obj._qualname)
        if decl is None:
            raise UnsafeArchiveError(f"refused: class {obj._qualname} has no code in the archive")
        state = obj.__dict__.get("state", {})
        if decl.is_module:
            out = LoadedScriptModule(decl, cu)
            memo[id(obj)] = out
            _fill_module(out, decl, state, unit, cu, memo)
        else:
            out = LoadedScriptObject(decl, cu)
            memo[id(obj)] = out
            for k, v in state.items():
                out.__dict__[k] = build_object(v, unit, cu, memo)
        return out
    if isinstance(obj, list):
        out = []
        memo[id(obj)] = out
        out.extend(build_object(v, unit, cu, memo) for v in obj)
        return out
    if isinstance(obj, tuple):
        return tuple(build_object(v, unit, cu, memo) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((k, build_object(v, unit, cu, memo)) for k, v in obj.items())
    return obj


def _fill_module(m, decl, state: dict, unit, cu, memo) -> None:
    import ember
    from ember.nn import Parameter

    # parameters first, each remembered: other attributes (an LSTM's _flat_weights list)
    # hold the same tensors and must get the same Parameter objects
    for k, v in state.items():
        if k in decl.parameters:
            if v is not None and not isinstance(v, ember.Tensor):
                raise UnsafeArchiveError(
                    f"refused: parameter {k} of {decl.qualname} is not a tensor"
                )
            p = memo.get(id(v), v)
            if p is not None and not isinstance(p, Parameter):
                p = Parameter(v, v.requires_grad)
                memo[id(v)] = p
            m.register_parameter(k, p)
    for k, v in state.items():
        if k in decl.parameters:
            continue
        if k in decl.buffers:
            m.register_buffer(k, v)
        elif k == "training":
            m.__dict__["training"] = bool(v)
        else:
            value = build_object(v, unit, cu, memo)
            if isinstance(value, LoadedScriptModule):
                m._modules[k] = value
            else:
                m.__dict__[k] = value

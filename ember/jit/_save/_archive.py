"""The TorchScript archive: a module tree, its code and its tensors as torch's zip records.

Records, in torch's order: ``extra/<name>``, ``data/<key>`` (the storages ``data.pkl``
names), ``data.pkl`` (the module objects, protocol 2), ``code/__torch__/...py`` (the classes'
TorchScript source), ``constants.pkl`` (a tuple of the code's tensor constants, their storages
under ``constants/<key>``), ``version``, ``byteorder``, ``.data/serialization_id``.
Everything is built in memory first, so a graph that cannot be written raises before a byte
reaches the file; a path is written through ``atomic_write``.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import sys
import warnings

from ember.jit._save._classes import SELF, ClassDecl, ClassTable, ModuleObj, python_qualname
from ember.jit._save._layers import layer_forward, leaf_forward
from ember.jit._save._source import FunctionPrinter, SaveError
from ember.serialization._pickler import REBUILD_V2, TorchGlobal, TorchPickler
from ember.serialization._save import _serialization_id, atomic_write, is_path
from ember.serialization._zip import ZipWriter

__all__ = ["write_archive", "ArchivePickler"]

# the file format version: 3 for code without versioned operators, else the version that
# introduced the newest operator schema the code calls (an older number makes torch's loader
# run its upgraders: ``div`` of integer tensors as truncation, ``gelu`` without ``approximate``)
_BASE_VERSION = 3
_OP_VERSIONS = {"div": 4, "div_": 4, "full": 5, "linspace": 8, "logspace": 9, "gelu": 10}
_CALL = re.compile(r"(?:\btorch|\))\.(" + "|".join(_OP_VERSIONS) + r")\(")


def file_version(sources) -> int:
    """The file format version torch writes for an archive holding ``sources``."""
    found = {m.group(1) for src in sources for m in _CALL.finditer(src)}
    return max([_BASE_VERSION] + [_OP_VERSIONS[k] for k in found])


class ArchivePickler(TorchPickler):
    """``TorchPickler`` for TorchScript's pickles: parameters are plain tensors (the class's
    ``__parameters__`` says which attributes are parameters), modules are class instances."""

    dispatch = dict(TorchPickler.dispatch)

    def _reduce_tensor(self, t):
        return (REBUILD_V2, self._tensor_args(t))

    def save_module(self, obj: ModuleObj) -> None:
        ns, _, name = obj.qualname.rpartition(".")
        self.save(TorchGlobal(ns, name))
        self.write(pickle.EMPTY_TUPLE + pickle.NEWOBJ)
        self.memoize(obj)
        self.save(obj.state)
        self.write(pickle.BUILD)

    dispatch[ModuleObj] = save_module


def _pickle(obj) -> tuple[bytes, list]:
    buf = io.BytesIO()
    p = ArchivePickler(buf, 2)
    p.dump(obj)
    return buf.getvalue(), p.storages


class _Builder:
    """Walk a module tree into class declarations and module objects."""

    def __init__(self):
        self.table = ClassTable()
        self.constants: list = []
        self.called: dict[int, object] = {}  # modules whose forward the code calls

    def module(self, m, forward=None, only: dict | None = None) -> ModuleObj:
        """``forward``: the graph printed as the class's ``forward`` (its first input is
        ``m``); ``only``: the attribute paths to keep (a frozen module keeps what its code
        reads). A module the code calls without a graph of its own gets the forward its
        layer type writes (``_layers``)."""
        from ember.jit._script import ScriptModule

        target = m._original if isinstance(m, ScriptModule) and m._original is not None else m
        decl = ClassDecl(python_qualname(type(target)))
        if id(target) in self.called:
            only = None  # a module the code calls keeps what its own forward reads
        own = m.__dict__.get("_graph") if isinstance(m, ScriptModule) else None
        if forward is None and own is not None and (only is None or id(target) in self.called):
            forward = prepare(own)  # a script or traced submodule: its own graph
        elif forward is None and id(target) in self.called:
            lines, calls = layer_forward(target)
            decl.methods.append(lines)
            self.called.update((id(c), c) for c in calls)
        if forward is not None:
            decl.methods.append(self.method(forward, "forward", m))
        elif not decl.methods and only is None:
            leaf = leaf_forward(target)
            if leaf is not None:
                decl.methods.append(leaf)
        state: dict = {}

        def keep(name):
            return only is None or name in only

        buffers = target._buffers
        for k, p in target._parameters.items():
            if p is not None and keep(k):
                decl.parameters.append(k)
                decl.attributes.append((k, "Tensor"))
                state[k] = p
        for k, b in buffers.items():
            if b is not None and k not in target._non_persistent_buffers_set and keep(k):
                decl.buffers.append(k)
                decl.attributes.append((k, "Tensor"))
                state[k] = b
        for k, b in buffers.items():  # non-persistent: attributes the code reads, not state
            if b is not None and k in target._non_persistent_buffers_set and keep(k):
                decl.attributes.append((k, "Tensor"))
                state[k] = b
        decl.attributes.append(("training", "bool"))
        state["training"] = bool(m.training)
        for k, child in target._modules.items():
            if child is None or not keep(k):
                continue
            obj = self.module(child, only=None if only is None else only[k])
            decl.attributes.append((k, obj.qualname))
            state[k] = obj
        return ModuleObj(self.table.add(decl), state)

    def method(self, graph, name: str, owner=None) -> list[str]:
        """A method's lines, its ``self`` annotated with the class's name (filled in when
        the class is named); ``owner``: the module behind the graph's first input."""
        printer = FunctionPrinter(self.constants, root=owner)
        head, body = printer.function(graph, name, SELF, owner is not None)
        self.called.update(printer.called)
        return ["  " + head[0], *head[1:], *("  " + line for line in body)]


def _attr_paths(graph) -> dict:
    """The tree of attribute names the graph reads from its ``self`` (a nested dict)."""
    self_v = graph.inputs()[0]
    tree: dict = {}
    where = {self_v: tree}
    for n in _all_nodes(graph.block()):
        if n.kind() == "prim::GetAttr" and n.inputs()[0] in where:
            sub = where[n.inputs()[0]].setdefault(n.s("name"), {})
            where[n.output()] = sub
    return tree


def _all_nodes(block):
    for n in block.nodes():
        yield n
        for b in n.blocks():
            yield from _all_nodes(b)


def build_records(obj) -> tuple[ModuleObj, ClassTable, list]:
    """Return the root object, its classes and the code's constants for ``obj`` (a script or
    traced module, or a ScriptFunction)."""
    from ember.jit._script import ScriptFunction, ScriptModule

    b = _Builder()
    if isinstance(obj, ScriptFunction):
        graph = obj._graph
        if graph is None:
            raise SaveError(
                f"ember.jit.save: {obj.name} has no graph (ember's compiler could not compile "
                "it); only functions with a graph can be saved"
            )
        decl = ClassDecl("__torch__.PlaceholderModule")
        decl.attributes.append(("training", "bool"))
        decl.methods.append(b.method(prepare(graph), "forward"))
        return ModuleObj(b.table.add(decl), {"training": True}), b.table, b.constants
    if not isinstance(obj, ScriptModule):
        raise SaveError(
            f"ember.jit.save expects a ScriptModule or a ScriptFunction, got {type(obj).__name__}"
        )
    graph = obj.__dict__.get("_graph")
    if graph is None:
        warnings.warn(
            f"ember.jit.save: this {type(obj).__name__} has no graph (ember's compiler did not "
            "compile its forward), so the archive holds its parameters, buffers and submodules "
            "but no forward; trace it with ember.jit.trace to save its code",
            UserWarning,
            stacklevel=5,
        )
        return b.module(obj), b.table, b.constants
    graph = prepare(graph)
    only = _attr_paths(graph) if obj.__dict__.get("_frozen") else None
    root = b.module(obj, graph, only=only)
    return root, b.table, b.constants


def prepare(graph):
    """A copy of the graph with known calls inlined: one ``forward`` reads the whole tree."""
    from ember.jit.passes import inline_calls

    g = graph.copy()
    inline_calls(g)
    return g


def archive_bytes(obj, extra_files=None) -> list[tuple[str, bytes]]:
    """Return the archive's records ``[(name, bytes)]`` for ``obj``."""
    root, table, constants = build_records(obj)
    data, storages = _pickle(root)
    consts, const_storages = _pickle(tuple(constants))
    records: list[tuple[str, object]] = []
    for name, content in (extra_files or {}).items():
        records.append((f"extra/{name}", content.encode() if isinstance(content, str) else
                        bytes(content)))  # fmt: skip
    records += [(f"data/{s.key}", s.bytes()) for s in storages]
    records.append(("data.pkl", data))
    files = table.files()
    records += [(path, src.encode()) for path, src in files.items()]
    records.append(("constants.pkl", consts))
    records += [(f"constants/{s.key}", s.bytes()) for s in const_storages]
    version = file_version(files.values())
    # torch moved the record to .data/version with format 6
    records.append(("version" if version < 6 else ".data/version", f"{version}\n".encode()))
    records.append(("byteorder", sys.byteorder.encode()))
    return records


def _write(records, fh, folder: str) -> None:
    w = ZipWriter(fh, folder)
    for name, data in records:
        w.write_record(name, data)
    w.write_record(".data/serialization_id", _serialization_id(w))
    w.close()


def write_archive(obj, f, extra_files=None) -> None:
    """Write ``obj`` as a TorchScript archive to ``f`` (a path, atomically, or a binary file)."""
    records = archive_bytes(obj, extra_files)
    if is_path(f):
        path = os.fsdecode(os.fspath(f))
        stem = os.path.splitext(os.path.basename(path))[0] or "archive"
        atomic_write(path, lambda fh: _write(records, fh, stem))
        return
    if not hasattr(f, "write"):
        raise AttributeError(
            "expected 'f' to be string, path, or a file-like object with a 'write' attribute"
        )
    buf = io.BytesIO()
    _write(records, buf, "archive")
    f.write(buf.getbuffer())

"""Loading TorchScript archives written by torch (``torch.jit.save``), without running any of
them as Python.

- ``reader``: the zip records; ``data.pkl``/``constants.pkl`` through ember's weights-only
  unpickler, allowing only the ``__torch__.*`` classes the archive's code defines.
- ``source``: ``code/*.py`` parsed with ``ast`` and checked to be serialized TorchScript.
- ``compiler``: that source compiled to ember's graph IR (ops resolved in ``ops``).
- ``module``: the ember modules and objects the archive's data becomes; their methods run the
  graphs with ``ember.jit.executor``.
"""

from __future__ import annotations

from ember.jit._load.reader import ArchiveObject, UnsafeArchiveError, read_archive

__all__ = ["UnsafeArchiveError", "load_archive", "inspect_archive"]


def _open(f, map_location):
    from ember.jit._load.compiler import CompilationUnit
    from ember.jit._load.source import parse_code

    arc = read_archive(f, map_location)
    try:
        unit = parse_code(arc.code_files())
        classes = {
            q: type(q.rsplit(".", 1)[-1], (ArchiveObject,), {"_qualname": q, "__slots__": ()})
            for q in unit.classes
        }
        constants = arc.unpickle("constants.pkl", "constants", classes)
        constants = () if constants is None else constants
        if type(constants) is not tuple:
            raise UnsafeArchiveError("refused: constants.pkl does not hold a tuple")
        root = arc.unpickle("data.pkl", "data", classes)
        if not isinstance(root, ArchiveObject):
            raise RuntimeError(
                "ember.jit.load: data.pkl does not hold a module (is this a torch.save "
                "checkpoint? load it with ember.load)"
            )
        cu = CompilationUnit(unit, constants)
        return arc, unit, cu, root
    except BaseException:
        arc.close()
        raise


def load_archive(f, map_location=None, _extra_files=None):
    """Return the ``LoadedScriptModule`` of a TorchScript archive (a path or binary file)."""
    from ember.jit._load.module import build_object

    arc, unit, cu, root = _open(f, map_location)
    try:
        cu.compile_all()
        module = build_object(root, unit, cu)
        if _extra_files is not None:
            for name in list(_extra_files):
                data = arc.read_extra(name)
                _extra_files[name] = b"" if data is None else data  # torch: b"" when absent
    finally:
        arc.close()
    return module


def inspect_archive(f) -> dict:
    """What an archive holds, without compiling or running its code: parameters and buffers
    (name -> (shape, dtype)), methods per class, forward's source, extra files, sizes."""
    arc, unit, cu, root = _open(f, "cpu")
    try:
        tensors: dict = {}
        _walk_tensors(root, unit, "", tensors, set())
        root_decl = unit.classes[root._qualname]
        info = {
            "class": root._qualname,
            "tensors": tensors,
            "methods": {q: list(c.methods) for q, c in unit.classes.items() if c.methods},
            "functions": list(unit.functions),
            "forward": root_decl.methods["forward"].source()
            if "forward" in root_decl.methods else None,
            "extra": {n: len(arc.read_extra(n) or b"") for n in arc.extra_names()},
            "size": arc.size,
            "unit": unit,
            "cu": cu,
        }  # fmt: skip
    finally:
        arc.close()
    return info


def _walk_tensors(obj, unit, prefix: str, out: dict, seen: set) -> None:
    import ember

    if id(obj) in seen or not isinstance(obj, ArchiveObject):
        return
    seen.add(id(obj))
    decl = unit.classes.get(obj._qualname)
    state = obj.__dict__.get("state", {})
    for k, v in state.items():
        if isinstance(v, ember.Tensor) and decl is not None:
            kind = "parameter" if k in decl.parameters else (
                "buffer" if k in decl.buffers else "attribute"
            )  # fmt: skip
            out[prefix + k] = (tuple(v.shape), str(v.dtype).replace("ember.", "torch."), kind)
        elif isinstance(v, ArchiveObject):
            _walk_tensors(v, unit, prefix + k + ".", out, seen)

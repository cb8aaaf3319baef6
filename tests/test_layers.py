"""Layers import only downward: every ``import`` in ``ember/`` (module level and inside
functions, read from the AST) is checked against the layer list in ``docs/ARCHITECTURE.md``.

A module belongs to the layer of the longest prefix listed for it; a module may import its own
layer and the layers below. The root package (``ember/__init__.py``, the public namespace)
imports every layer; importing the bare root counts at the layer listed for ``ember``.

``ALLOWED`` below held the upward imports still to fix (issue 19's recorded debt), each with
its reason; it is empty now. A new upward import fails here: fix it with a slot filled from
above (as ``_core/tensor.py``'s ``ABOVE``, ``registry.ABOVE`` or ``_core/profiling.py``) or by
moving the code to the layer it belongs to, rather than by adding an entry.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ember"
DOC = ROOT / "docs" / "ARCHITECTURE.md"

# (importing module prefix, imported module prefix): why it is still there
ALLOWED: dict[tuple[str, str], str] = {}


def layers() -> dict[str, int]:
    """``{module prefix: layer number}`` from the ```layers block of docs/ARCHITECTURE.md."""
    text = DOC.read_text()
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    assert block, "docs/ARCHITECTURE.md has no ```layers block"
    out: dict[str, int] = {}
    for line in block.group(1).splitlines():
        line = line.split("#", 1)[0].split()
        if line:
            for prefix in line[1:]:
                assert prefix not in out, f"{prefix} listed twice"
                out[prefix] = int(line[0])
    return out


def layer_of(module: str, table: dict[str, int]) -> tuple[str, int] | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in table:
            return prefix, table[prefix]
    return None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> list[tuple[str, int]]:
    """``[(imported module, line)]`` for every import of an ember module in ``path``
    (``from ember.x import y`` counts as ``ember.x.y`` when ``y`` is a submodule)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                found.append((sub if sub in _modules() else target, node.lineno))
    return [(m, line) for m, line in found if m == "ember" or m.startswith("ember.")]


@functools.cache
def _modules() -> frozenset[str]:
    """Every module name of the package."""
    return frozenset(_module_name(p) for p in PACKAGE.rglob("*.py"))


@functools.cache
def upward_imports() -> list[tuple[str, str, str, str, int]]:
    """``[(importer prefix, imported prefix, importer module, imported module, line)]``."""
    table = layers()
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if module == "ember":
            continue  # the public namespace: re-exports every layer
        own = layer_of(module, table)
        assert own is not None, f"{module} is in no layer of docs/ARCHITECTURE.md"
        for target, line in imports(path):
            other = layer_of(target, table)
            assert other is not None, f"{target} (imported by {module}) is in no layer"
            if other[1] > own[1]:
                bad.append((own[0], other[0], module, target, line))
    return bad


def test_layers_import_only_downward():
    found = upward_imports()
    new = [b for b in found if (b[0], b[1]) not in ALLOWED]
    report = "\n".join(f"  {m}:{line} imports {t} ({p} -> {q})" for p, q, m, t, line in new)
    assert not new, "upward imports (see docs/ARCHITECTURE.md, Layers):\n" + report


def _module_level_imports(path: Path) -> list[str]:
    """The ember modules ``path`` imports when it runs (not inside functions)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    todo = list(ast.parse(path.read_text(), str(path)).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found += [
                f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in _modules()
            ]
            found.append(target)
        else:
            todo += list(ast.iter_child_nodes(node))
    return [m for m in found if m.startswith("ember.")]


def test_importing_a_module_runs_no_package_above_it():
    """Importing ``a.b.c`` runs ``a/b/__init__.py`` first: a package holding a low module (the
    core's ``ember.utils.hooks``) must import nothing above that module's layer when it runs."""
    table = layers()
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        own = layer_of(module, table)
        parts = module.split(".")
        for n in range(2, len(parts)):
            parent = ".".join(parts[:n])
            init = PACKAGE.parent.joinpath(*parts[:n], "__init__.py")
            if not init.exists():
                continue  # a namespace package runs nothing
            for target in _module_level_imports(init):
                other = layer_of(target, table)
                if other is not None and other[1] > own[1]:
                    bad.append(f"  {module} (layer {own[1]}): {parent} imports {target}")
    assert not bad, "importing these runs a package above them:\n" + "\n".join(sorted(set(bad)))


def test_allowlist_has_no_stale_entries():
    used = {(b[0], b[1]) for b in upward_imports()}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"fixed: delete these ALLOWED entries: {stale}"


def test_core_imports_nothing_above_it():
    table = layers()
    assert table["ember._core"] == 0
    assert not [k for k in ALLOWED if k[0] == "ember._core"]


_ALONE = """
import importlib, sys, types
pkg = types.ModuleType("ember")  # the package without its __init__ (the public namespace)
pkg.__path__ = [sys.argv[1]]
sys.modules["ember"] = pkg
importlib.import_module(sys.argv[2])
print(" ".join(sorted(m for m in sys.modules if m.startswith("ember."))))
"""


def test_the_op_table_imports_alone_without_autograd_or_nn():
    # the layers below the engine, run for real: importing the whole op table (and so the
    # graph's nodes, which dispatch creates) loads no engine, no nn, no compiler
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _ALONE, str(PACKAGE), "ember._ops"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "ember._ops.registry" in out and "ember._core.node" in out
    above = [m for m in out if m.startswith(("ember.autograd", "ember.nn", "ember._dynamo"))]
    assert not above, above

"""Script and traced modules and functions, ``save``/``load``, ``freeze``.

A scripted or traced object runs its compiled graph (``ember.jit.executor``): a trace's
control flow is frozen as torch freezes it. Where ``jit.script``'s compiler does not cover a
module (``Unsupported``), the module runs its eager ``forward`` and has no ``graph``. Either
way it shares the original's parameters, buffers and submodules, so ``state_dict`` keys,
training and attribute access are the original's.

``save`` writes torch's TorchScript archive (``ember.jit._save``): real ``torch.jit.load`` runs
it. ``load`` reads TorchScript archives (``ember.jit._load``), torch's or ember's.
"""

from __future__ import annotations

import os
import warnings
import zipfile
from collections import OrderedDict

from ember.nn.modules.module import Module

_MAGIC = "ember_jit/version"

_ALTERNATIVE = {
    "compile": "Please use `torch.compile` instead.",
    "both": "Please switch to `torch.compile` or `torch.export`.",
    "export": "Please switch to `torch.export`.",
}


def deprecated(name: str, alternative: str) -> None:
    """Warn as torch 2.13 does on every call of its TorchScript API."""
    # attributed to ember's own frame, as torch's to its own: Python's default filters then
    # hide it from a user's ``__main__`` script, as they hide torch's
    warnings.warn(
        f"`torch.jit.{name}` is deprecated. {_ALTERNATIVE[alternative]}",
        DeprecationWarning,
        stacklevel=2,
    )


_FORMAT_VERSION = "1"


class _Saveable:
    """``save`` of script modules and functions: one method, ``ember.jit.save`` (torch loads
    a saved function as a module whose ``forward`` is the function)."""

    def save(self, f, _extra_files=None) -> None:
        """Save this object with ``ember.jit.save`` as a TorchScript archive."""
        save(self, f, _extra_files)


class ScriptModule(_Saveable, Module):
    """A module wrapping an eager ``nn.Module`` with torch's script-module surface."""

    def __init__(self, original: Module | None = None, graph=None):
        super().__init__()
        d = self.__dict__
        d["_original"] = original
        d["_graph"] = graph
        if original is None:  # subclassed, as torch's legacy ``class M(jit.ScriptModule)``
            d["original_name"] = type(self).__name__
            return
        # share the original's state: same tensors, same state_dict keys, same children
        d["_parameters"] = original._parameters
        d["_buffers"] = original._buffers
        d["_non_persistent_buffers_set"] = original._non_persistent_buffers_set
        d["training"] = original.training
        d["original_name"] = type(original).__name__
        # children appear as script/traced modules themselves (torch's print shows each one's
        # original_name), each sharing its original's state; forward runs the originals
        child = type(self)._child_class()
        d["_modules"] = OrderedDict(
            (name, m if m is None or isinstance(m, ScriptModule) else _made(child(m)))
            for name, m in original._modules.items()
        )

    @classmethod
    def _child_class(cls) -> type:
        return cls

    def forward(self, *args, **kwargs):
        if self._original is None:
            return super().forward(*args, **kwargs)
        from ember.jit._api import _has_no_forward

        if _has_no_forward(self._original):  # torch's script module then has no forward
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'forward'")
        graph = self.__dict__.get("_graph")
        from ember.jit._tracer import _TRACING

        # inside another trace (a traced child, ONNX export), run the Python the graph came
        # from so the outer recorder sees its modules and ops
        if graph is not None and not _TRACING:
            from ember.jit.executor import run

            full = _bind(self._original.forward, args, kwargs, len(graph.inputs()) - 1)
            if full is not None:
                (out,) = run(graph, [self._original, *full])
                return out
        return self._original(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            original = self.__dict__.get("_original")
            if original is None:
                raise
            return getattr(original, name)

    # containers (Sequential, ModuleList, ModuleDict) stay indexable (torch's traced ones are
    # not, its scripted ones are); of any other module, as in torch, these raise
    # NotImplementedError, and ``in`` works on a ModuleDict only. A script module is always
    # true (``bool`` does not go through ``len``: an empty Sequential is true too).
    def _container(self, dicts_only: bool = False):
        from ember.nn import ModuleDict, ModuleList, Sequential

        kinds = (ModuleDict,) if dicts_only else (Sequential, ModuleList, ModuleDict)
        if not isinstance(self._original, kinds):
            raise NotImplementedError
        return self._original

    def __bool__(self) -> bool:
        return True

    def __getitem__(self, idx):
        return self._container()[idx]

    def __len__(self) -> int:
        return len(self._container())

    def __iter__(self):
        return iter(self._container())

    def __contains__(self, key) -> bool:
        return key in self._container(dicts_only=True)

    def train(self, mode: bool = True) -> ScriptModule:
        if self._original is None:
            return super().train(mode)
        self._original.train(mode)
        self.__dict__["training"] = mode
        for m in self._modules.values():
            if isinstance(m, ScriptModule):
                m.train(mode)
        return self

    @property
    def graph(self):
        """The graph recorded when the module was traced."""
        if self._graph is None:
            raise RuntimeError(
                f"{type(self).__name__} has no graph: ember's TorchScript compiler does not "
                "cover this module, so it runs eagerly. Use ember.jit.trace to record a graph."
            )
        return self._graph

    @property
    def inlined_graph(self):
        """The graph with its calls to compiled methods inlined."""
        from ember.jit.passes import inline_calls

        g = self.graph.copy()
        inline_calls(g)
        return g

    @property
    def code(self) -> str:
        """The graph as TorchScript-like source; for a module without a graph, the Python
        source of the ``forward`` it runs."""
        if self._graph is None:
            target = self._original if self._original is not None else self
            return _python_source(type(target).forward)
        from ember.jit._code import graph_to_code

        return graph_to_code(self.graph, module=self, inline=not isinstance(self, TracedModule))

    def _get_name(self) -> str:
        return self.original_name

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"


def _made(m: ScriptModule) -> ScriptModule:
    m.__dict__["_made_by_trace"] = True  # a wrapper of a child, made with its parent
    return m


class RecursiveScriptModule(ScriptModule):
    """What ``script`` and ``load`` return for an ``nn.Module``."""

    def _get_name(self) -> str:
        return "RecursiveScriptModule"


class TracedModule(ScriptModule):
    """A traced module: runs the original forward eagerly; ``graph`` is the recorded trace."""


class TopLevelTracedModule(TracedModule):
    """What ``trace`` returns for an ``nn.Module``."""

    @classmethod
    def _child_class(cls) -> type:
        return TracedModule


def _python_source(fn) -> str:
    """The dedented source of ``fn`` without decorators: ember runs scripted code as Python,
    so that source is what ``.code`` shows (torch shows its compiled TorchScript)."""
    import inspect
    import textwrap

    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return f"# the source of {getattr(fn, '__qualname__', fn)!s} is not available\n"
    lines = src.splitlines(keepends=True)
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    return "".join(lines)


def _bind(fn, args: tuple, kwargs: dict, n: int):
    """The ``n`` positional inputs of a graph for a call of ``fn`` (keywords and defaults
    filled in), or None when they cannot be made."""
    if not kwargs and len(args) == n:
        return list(args)
    import inspect

    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    full = list(bound.arguments.values())
    return full if len(full) == n else None


class ScriptMethod:
    """A compiled method of a script module (``@jit.export``): runs its graph."""

    def __init__(self, module, fn, graph):
        self._module, self._fn, self.graph = module, fn, graph
        self.name = fn.__name__

    def __call__(self, *args, **kwargs):
        from ember.jit.executor import run

        bound = self._fn.__get__(self._module)
        full = _bind(bound, args, kwargs, len(self.graph.inputs()) - 1)
        if full is None:
            return bound(*args, **kwargs)
        (out,) = run(self.graph, [self._module, *full])
        return out

    @property
    def inlined_graph(self):
        from ember.jit.passes import inline_calls

        g = self.graph.copy()
        inline_calls(g)
        return g

    @property
    def code(self) -> str:
        from ember.jit._code import graph_to_code

        return graph_to_code(self.graph, self.name)

    def __repr__(self) -> str:
        return f"<ember.jit.ScriptMethod object {self.name}>"


class ScriptFunction(_Saveable):
    """A scripted or traced function: calls the Python function; ``graph`` if traced."""

    def __init__(self, fn, graph=None):
        self._fn = fn
        self._graph = graph
        self.name = getattr(fn, "__name__", type(fn).__name__)
        self.qualified_name = getattr(fn, "__qualname__", self.name)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        from ember.jit._tracer import _TRACING

        if self._graph is not None and not _TRACING:
            from ember.jit.executor import run

            full = _bind(self._fn, args, kwargs, len(self._graph.inputs()))
            if full is not None:
                (out,) = run(self._graph, full)
                return out
        return self._fn(*args, **kwargs)

    @property
    def graph(self):
        if self._graph is None:
            raise RuntimeError(
                "this ScriptFunction has no graph: ember's TorchScript compiler does not cover "
                "it, so it runs eagerly. Use ember.jit.trace to record one."
            )
        return self._graph

    inlined_graph = graph

    @property
    def code(self) -> str:
        """The traced ops as Python-like source (a listing of the trace, not compiled code);
        for a scripted function, its Python source (what ember runs)."""
        if self._graph is None:
            return _python_source(self._fn)
        from ember.jit._code import graph_to_code

        return graph_to_code(self.graph, self.name, method=False)

    def __repr__(self) -> str:
        return f"<ember.jit.ScriptFunction object {self.name}>"


# ---------------------------------------------------------------------------------------------
# save / load


def save(m, f, _extra_files=None) -> None:
    """Save a script or traced module, or a ScriptFunction, to ``f`` (a path, written
    atomically, or a binary file object) as a TorchScript archive: real ``torch.jit.load``
    runs it, and ``state_dict`` keeps ember's keys. ``_extra_files`` maps names to str or
    bytes stored beside it (``torch.jit.load(f, _extra_files=...)`` reads them back)."""
    from ember.jit._save import write_archive

    deprecated("save", "export")
    if not isinstance(m, (ScriptModule, ScriptFunction)):
        if isinstance(m, Module):
            raise RuntimeError(
                f"ember.jit.save expects a ScriptModule, got {type(m).__name__}: script or "
                "trace it first (ember.jit.trace(m, example_inputs))"
            )
        raise RuntimeError(
            f"ember.jit.save expects a ScriptModule or a ScriptFunction, got {type(m).__name__}"
        )
    write_archive(m, f, _extra_files)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False) -> RecursiveScriptModule:
    """Load a TorchScript archive (written by ``torch.jit.save`` or ``ember.jit.save``) and
    return a ``RecursiveScriptModule`` running its compiled code; fill ``_extra_files`` (a
    dict of names) with the archive's extra files, as bytes.

    The archive's code is TorchScript source: ember compiles it to its graph IR and never runs
    it as Python; its pickles go through the weights-only unpickler, allowing only tensors,
    primitive containers and the archive's own ``__torch__`` classes. Anything else raises
    ``UnsafeArchiveError`` (a RuntimeError) naming what was refused, before anything runs."""
    from ember.jit._load import load_archive

    deprecated("load", "export")
    if isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {f} does not exist")
        if os.path.isdir(f):
            raise ValueError(f"The provided filename {f} is a directory")
    _refuse_legacy(f)
    return load_archive(f, map_location, _extra_files)


def _refuse_legacy(f) -> None:
    """ember's first archive format held a pickled Python module, which only a full unpickler
    (running code from the file) reads: it is no longer loaded."""
    own = isinstance(f, (str, os.PathLike))
    fh = open(f, "rb") if own else f  # noqa: SIM115
    start = fh.tell()
    try:
        try:
            with zipfile.ZipFile(fh) as z:
                legacy = _MAGIC in z.namelist()
        except zipfile.BadZipFile:
            raise RuntimeError(
                "ember.jit.load: not a TorchScript archive (not a zip file)"
            ) from None
    finally:
        if own:
            fh.close()
        else:
            fh.seek(start)
    if legacy:
        raise RuntimeError(
            "ember.jit.load: this archive is in ember's old format (a pickled Python module, "
            "which loads only by running code from the file); it is no longer read. Re-save "
            "the module with the current ember.jit.save."
        )


# ---------------------------------------------------------------------------------------------
# freeze / optimize_for_inference


def _expect_script(mod, fn: str) -> None:
    if not isinstance(mod, ScriptModule):
        raise RuntimeError(
            f"{fn} expects a ScriptModule as input. Please use torch.jit.script or "
            "torch.jit.trace to script your 'nn.Module'."
        )


def freeze(mod, preserved_attrs: list[str] | None = None, optimize_numerics: bool = True):
    """Return ``mod`` (an eval-mode ScriptModule): ember has nothing to inline or fold."""
    deprecated("freeze", "compile")
    if not isinstance(mod, ScriptModule):
        raise RuntimeError(
            "Freezing expects a ScriptModule as input. Please use torch.jit.script or "
            "torch.jit.trace to script your 'nn.Module'."
        )
    if mod.training:
        raise RuntimeError(
            "Freezing is currently only implemented for modules in eval mode. Please call .eval() "
            "on your module before freezing."
        )
    graph = mod.__dict__.get("_graph")
    if graph is None or mod._original is None:
        return mod  # a scripted module ember runs eagerly: nothing to inline or fold
    from ember.jit.passes import freeze_graph, optimize_frozen

    frozen = graph.copy()
    freeze_graph(frozen, mod._original, preserved_attrs or ())
    if optimize_numerics:
        optimize_frozen(frozen)
    else:
        from ember.jit.passes import eliminate_dead_code, propagate_constants, remove_dropout

        remove_dropout(frozen)
        propagate_constants(frozen)
        eliminate_dead_code(frozen)
    out = type(mod)(mod._original, frozen)
    out.__dict__["training"] = False
    out.__dict__["_frozen"] = True  # jit.save writes only the attributes its code reads
    return out


def optimize_for_inference(mod, other_methods: list[str] | None = None):
    """Return ``mod`` in eval mode: ember runs the same eager code either way."""
    deprecated("optimize_for_inference", "compile")
    _expect_script(mod, "optimize_for_inference")
    mod = mod.eval()
    if mod.__dict__.get("_graph") is None:
        return mod
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return freeze(mod)

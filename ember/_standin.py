"""ember standing in for ``torch``: ``import torch`` anywhere in a process gives ember.

:func:`install_as_torch` puts a finder first on ``sys.meta_path`` that answers every import of
``torch`` or ``torch.X.Y`` with the already-imported (or now imported) ``ember`` / ``ember.X.Y``
module object itself, so ``torch.nn is ember.nn`` and code that nobody rewrites -- third-party
libraries, ``from torch.utils.data import DataLoader`` -- runs on ember. Real torch, installed
or not, is not reachable as ``torch`` in that process. The same finder answers
``importlib.metadata`` queries for the ``torch`` distribution with torch's API level
(``ember.__version__``), so version checks through package metadata pass too.

Child processes inherit the stand-in through the environment: :func:`install_as_torch` sets
``EMBER_AS_TORCH=1``, and the ``ember-as-torch.pth`` file installed beside ember (inert unless
that variable is set) installs the finder at every interpreter start. So DataLoader workers
under spawn/forkserver, ``mp.spawn``, ``torch.distributed.run`` ranks and
``subprocess.run([sys.executable, ...])`` all see ember as torch.

This module must not import ember at module level: the ``.pth`` hook loads it by file path at
interpreter start, and ember itself is imported only when something imports ``torch``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import pathlib
import re
import sys
import types

__all__ = ["ENV_VAR", "install_as_torch", "is_ember_module", "is_installed", "module_name"]

ENV_VAR = "EMBER_AS_TORCH"
_ALIAS = "torch"
_TARGET = "ember"


def _target_name(fullname: str) -> str | None:
    """``torch.nn.functional`` -> ``ember.nn.functional``; None for names not under torch."""
    if fullname == _ALIAS:
        return _TARGET
    if fullname.startswith(_ALIAS + "."):
        return _TARGET + fullname[len(_ALIAS) :]
    return None


def _missing(fullname: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(
        f"No module named '{fullname}': ember stands in for torch in this process and does not "
        f"provide '{fullname}'",
        name=fullname,
    )


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system an existing ember module instead of creating one."""

    def __init__(self, module: types.ModuleType):
        self._module = module
        self._spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self._module

    # runpy (``python -m torch.distributed.run`` under the stand-in) runs a module's code
    # afresh as __main__: it asks the loader for that code, which is ember's module's
    def get_code(self, fullname):
        return self._spec.loader.get_code(self._spec.name)

    def is_package(self, fullname) -> bool:
        return self._spec.submodule_search_locations is not None

    def get_source(self, fullname):
        return self._spec.loader.get_source(self._spec.name)

    def exec_module(self, module) -> None:
        # the import system stamped the alias spec on the shared module object; ember's own
        # spec goes back so that reload() and pickling by module name keep meaning ember
        if self._spec is not None:
            module.__spec__ = self._spec


class _TorchDistribution(importlib.metadata.Distribution):
    """Package metadata of the ``torch`` distribution that ember stands in for."""

    def read_text(self, filename):
        if filename == "METADATA":
            from ember.version import __version__

            return (
                "Metadata-Version: 2.1\nName: torch\n"
                f"Version: {__version__}\n"
                "Summary: ember, PyTorch's programming model on NumPy, standing in for torch\n"
            )
        if filename == "top_level.txt":
            return "torch\n"
        return None

    def locate_file(self, path):
        spec = importlib.util.find_spec(_TARGET)
        root = pathlib.Path(spec.origin).parent.parent if spec and spec.origin else pathlib.Path()
        return root / path


class _TorchAliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``torch`` and ``torch.*`` to ember's modules, and ``torch``'s metadata."""

    def find_spec(self, fullname, path=None, target=None):
        name = _target_name(fullname)
        if name is None:
            return None
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # only the module asked for (or a parent of it) being absent means "ember lacks
            # it"; a dependency missing inside an ember module is that module's own error
            if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
                raise
            module = _module_attribute(name)
            if module is None:
                raise _missing(fullname) from None
        own = getattr(module, "__spec__", None)
        return importlib.machinery.ModuleSpec(
            fullname,
            _AliasLoader(module),
            origin=getattr(own, "origin", None),  # (runpy's sys.argv[0])
            is_package=hasattr(module, "__path__"),
        )

    def find_distributions(self, context=None):
        wanted = getattr(context, "name", None)
        if wanted is None or re.sub(r"[-_.]+", "-", wanted).lower() == _ALIAS:
            return iter([_TorchDistribution()])
        return iter(())


# ------------------------------------------------------------------ torch's module names
# Under the stand-in ember's functions and classes report torch's module names (``torch.nn.init``
# for ``ember.nn.init``), as code written for torch reads them: pickle writes ``__module__``,
# libraries compare it (``func.__module__ == "torch.nn.init"``). Each ember module is relabelled
# when it has run (a finder wraps ember's loaders), the ones loaded before at install; ember's
# own checks of "is this ember's" go through is_ember_module, which then accepts both spellings.
_ROOTS = [_TARGET]


def is_ember_module(name, package: str = "") -> bool:
    """Whether ``name`` (a ``__module__``) is ``ember<package>`` or a module below it -- or,
    under the stand-in, where ember's objects carry torch's module names, ``torch<package>``."""
    if not isinstance(name, str):
        return False
    for root in _ROOTS:
        base = root + package
        if name == base or name.startswith(base + "."):
            return True
    return False


def module_name(name: str) -> str:
    """The ``__module__`` an ember object made now should carry: ``name`` (``ember.X``), or
    torch's spelling of it under the stand-in."""
    return (_torch_spelling(name) or name) if _ALIAS in _ROOTS else name


# ember's own packages with no torch counterpart keep their names (a TorchServe handler module's
# classes are found by ``cls.__module__ == module.__name__``)
_OWN_PACKAGES = (_TARGET + ".serve.", _TARGET + ".contrib.")


def _torch_spelling(name: str) -> str | None:
    if (name + ".").startswith(_OWN_PACKAGES):
        return None
    if name == _TARGET or name.startswith(_TARGET + "."):
        return _ALIAS + name[len(_TARGET) :]
    return None


def _ember_spelling(name: str) -> str:
    return _target_name(name) or name


def _relabel_object(obj) -> None:
    new = _torch_spelling(getattr(obj, "__module__", None) or "")
    if new is None:
        return
    try:
        obj.__module__ = new
    except (AttributeError, TypeError):  # (an extension type's name is fixed)
        return
    if isinstance(obj, type):
        for member in list(vars(obj).values()):
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            elif isinstance(member, property):
                member = member.fget
            if isinstance(member, types.FunctionType):
                _relabel_object(member)


def _relabel(module: types.ModuleType) -> None:
    """Give the functions and classes of ember module ``module`` torch's module names (the
    ``torch.X`` module itself appears in ``sys.modules`` when something imports it: putting it
    there beforehand let libraries that sweep ``sys.modules`` re-import ember's modules twice)."""
    for value in list(vars(module).values()):
        if isinstance(value, (types.FunctionType, type)):
            _relabel_object(value)


def _relabel_loaded() -> None:
    for name, module in list(sys.modules.items()):
        if _torch_spelling(name) is not None and isinstance(module, types.ModuleType):
            _relabel(module)


class _RelabelLoader(importlib.abc.Loader):
    """ember's own loader for one module, which relabels the module once it has run."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):  # get_source, get_resource_reader... as the real loader
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    # runpy (``python -m torch.X``) may ask ember's loader for the code by torch's name
    def get_code(self, fullname):
        return self._loader.get_code(_ember_spelling(fullname))

    def get_source(self, fullname):
        return self._loader.get_source(_ember_spelling(fullname))

    def is_package(self, fullname) -> bool:
        return self._loader.is_package(_ember_spelling(fullname))

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        if module.__name__ == _TARGET:  # (ember's __init__ also rewraps other modules' names)
            _relabel_loaded()
        else:
            _relabel(module)


class _RelabelFinder(importlib.abc.MetaPathFinder):
    """Finds ember's modules with the finders after it, and relabels them when they run."""

    def find_spec(self, fullname, path=None, target=None):
        if _torch_spelling(fullname) is None:
            return None
        others = sys.meta_path[sys.meta_path.index(self) + 1 :] if self in sys.meta_path else []
        for finder in others:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RelabelLoader(spec.loader)
                return spec
        return None


def _module_attribute(name: str) -> types.ModuleType | None:
    """A module that ember exposes as an attribute rather than a file (``ember._C._nn``)."""
    parent, _, child = name.rpartition(".")
    try:
        owner = importlib.import_module(parent)
    except ImportError:
        return None
    value = getattr(owner, child, None)
    return value if isinstance(value, types.ModuleType) else None


def is_installed() -> bool:
    """Return True if ``torch`` resolves to ember in this process."""
    return any(isinstance(f, _TorchAliasFinder) for f in sys.meta_path)


def install_as_torch() -> None:
    r"""Make ``import torch`` (and every ``torch.*`` module) resolve to ember in this process
    and in the child processes it starts.

    Call it before anything imports torch. The stand-in is inherited by child processes through
    the ``EMBER_AS_TORCH=1`` environment variable, which the ``ember-as-torch.pth`` hook
    installed with ember reads at interpreter start. Calling it again is a no-op.

    Raises:
        RuntimeError: if real torch was already imported in this process.

    Example::

        >>> import ember
        >>> ember.install_as_torch()
        >>> import torch
        >>> torch.nn is ember.nn
        True
    """
    loaded = sys.modules.get(_ALIAS)
    if loaded is not None and getattr(loaded, "__name__", None) != _TARGET:
        where = getattr(loaded, "__file__", None) or "an unknown location"
        raise RuntimeError(
            "install_as_torch() must run before anything imports torch: real torch is already "
            f"imported in this process (from {where}), and modules holding it would mix two "
            "frameworks. Call it first thing in the program, or start the program with "
            "`python -m ember run script.py` (or EMBER_AS_TORCH=1 in the environment)."
        )
    os.environ[ENV_VAR] = "1"
    if not is_installed():
        sys.meta_path.insert(0, _RelabelFinder())
        sys.meta_path.insert(0, _TorchAliasFinder())
        _ROOTS.append(_ALIAS)
        _relabel_loaded()
    importlib.invalidate_caches()


def _enabled(environ=os.environ) -> bool:
    """The ``.pth`` hook's test: is ``EMBER_AS_TORCH`` set to something other than 0/empty?"""
    return environ.get(ENV_VAR, "").strip().lower() not in ("", "0", "false", "no")

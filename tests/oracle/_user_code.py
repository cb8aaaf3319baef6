"""Run a snippet of user code with ``torch`` bound to torch and to ember; compare what it prints.

The snippet is source text executed with the globals ``torch``, ``nn`` (``torch.nn``), ``F``
(``torch.nn.functional``) and ``np``, as a script that did ``import torch`` would see them;
under ember, the snippet's own ``import torch...`` / ``from torch... import`` statements import
the matching ``ember`` modules.
Everything it prints is captured; object addresses are normalized. An exception ends the run
and is recorded as its class name and message, so snippets that end in torch's error compare
that too.
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import importlib.util
import io
import itertools
import re
import sys
import textwrap
import warnings

import numpy as np

import ember
from tests.oracle.helper import torch
from tests.printed import assert_same_printed

_ADDR = re.compile(r"0x[0-9a-f]+")


def _import_as_ember(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and (name == "torch" or name.startswith("torch.")):
        name = "ember" + name[5:]
    return builtins.__import__(name, globals, locals, fromlist, level)


def run_snippet(lib, src: str) -> str:
    """Return what ``src`` prints (and the error it ends in) with ``torch`` bound to ``lib``."""
    env = {"torch": lib, "nn": lib.nn, "F": lib.nn.functional, "np": np, "__name__": "snippet"}
    if lib is ember:
        env["__builtins__"] = dict(vars(builtins), __import__=_import_as_ember)
    buf = io.StringIO()
    threads = lib.get_num_threads()
    if lib is torch:
        # tiny ops: torch's thread pool only adds overhead (and spins on a shared machine)
        lib.set_num_threads(1)
    # What the snippet leaves behind (a DataLoader iterator's worker processes, say) may sit in
    # reference cycles: collect them at the end. Freezing the objects that existed before the
    # snippet keeps that collection to the snippet's own objects (a full collection over torch's
    # and the suite's heap costs ~0.1-0.4 s, twice per snippet).
    gc.freeze()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(textwrap.dedent(src), "<snippet>", "exec"), env)
        except Exception as e:  # noqa: BLE001 - the error is part of the output compared
            print(f"!! {type(e).__name__}: {e}")
        finally:
            lib.set_num_threads(threads)
            env.clear()  # DataLoader worker processes end with their iterators
            gc.collect()
            gc.unfreeze()
    return _ADDR.sub("0xADDR", buf.getvalue())


def run_as_module(lib, src: str, directory) -> str:
    """Return what ``src`` prints run as a module file in ``directory`` (so that
    ``inspect.getsource`` finds its classes, as ``jit.script`` needs) with ``torch`` bound to
    ``lib``; the module gets a name of its own, so two runs never share classes."""
    name = f"_user_module_{lib.__name__}_{next(_modules)}"
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(src))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.torch = lib
    sys.modules[name] = module
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return _ADDR.sub("0xADDR", buf.getvalue())


_modules = itertools.count()


def check_snippet(src: str) -> str:
    """Assert that ``src`` prints the same under torch and ember (floats within rounding:
    ``tests/printed.py``); return the output."""
    want = run_snippet(torch, src)
    got = run_snippet(ember, src)
    assert_same_printed(got, want)
    return got

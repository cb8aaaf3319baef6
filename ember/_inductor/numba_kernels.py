"""Fused pointwise kernels compiled by numba (optional: the ``fast`` extra installs it).

A run of IEEE-exact pointwise ops (``+ - * /`` and negation on one float dtype, every operand
the run's shape and C-contiguous, or a number) becomes one loop over the elements: each element
is loaded once, the ops run on it in the program's order, each rounded to the dtype as NumPy
rounds each ufunc's result (no fast-math, no FMA contraction: numba's default), and what later
code reads is stored. The results are bit for bit NumPy's; transcendental ops (``sin``,
``exp``...) stay NumPy calls, since numba's libm is not NumPy's SIMD code.

Kernels are keyed by their source (the expression, the dtype, the rank), so the same expression
compiles once per process, and are compiled with ``cache=True`` from a source file in
``$EMBER_CACHE_DIR`` (default ``~/.cache/ember/numba``): a later process loads them from disk.
``EMBER_NUMBA=0`` turns the kernels off (the NumPy calls run, as without numba).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import sys
import types

import numpy as np

_STATE: dict = {}  # "ok": whether numba can be used; "dir": the cache directory or None
_KERNELS: dict = {}  # source -> the compiled kernel's entry point
SYMBOLS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/"}
UNARY = {np.negative: "-", np.sqrt: "np.sqrt", np.absolute: "np.abs"}  # (correctly rounded)
FAST = {
    uf: f"np.{uf.__name__}"
    for uf in (np.sin, np.cos, np.tan, np.exp, np.log, np.tanh, np.expm1, np.log1p, np.sinh,
               np.cosh)
}  # fmt: skip


MODE = [None]  # the fusion of the entry being compiled: None, "exact" or "fast"


def mode_of(mode) -> str | None:
    """The fusion a ``compile(mode=...)`` asks for: ``"reduce-overhead"`` the bit-exact
    kernels, ``"max-autotune"`` (and ``-no-cudagraphs``) also transcendental ops inside the
    loops (not bit-exact: numba's libm is not NumPy's); ``EMBER_NUMBA=1`` makes the exact
    kernels the default, ``EMBER_NUMBA=0`` turns every kernel off."""
    env = os.environ.get("EMBER_NUMBA")
    if env == "0":
        return None
    if mode in ("max-autotune", "max-autotune-no-cudagraphs"):
        return "fast"
    if mode == "reduce-overhead" or env == "1":
        return "exact"
    return None


def enabled() -> bool:
    """Whether the entry being compiled gets fused numba kernels (its mode asks for them and
    numba is importable)."""
    if MODE[0] is None:
        return False
    ok = _STATE.get("ok")
    if ok is None:
        try:
            import numba  # noqa: F401

            ok = True
        except Exception:
            ok = False
        _STATE["ok"] = ok
    return ok


def exact(uf) -> bool:
    """Whether ufunc ``uf`` may join a kernel: an IEEE-exact op, or (max-autotune) one of the
    transcendental functions numba computes with its own libm."""
    return uf in SYMBOLS or uf in UNARY or (MODE[0] == "fast" and uf in FAST)


def _cache_dir():
    if "dir" not in _STATE:
        d = os.environ.get("EMBER_CACHE_DIR") or os.path.join(
            os.path.expanduser("~"), ".cache", "ember"
        )
        d = os.path.join(d, "numba")
        try:
            os.makedirs(d, exist_ok=True)
            _STATE["dir"] = d if os.access(d, os.W_OK) else None
        except OSError:
            _STATE["dir"] = None
    return _STATE["dir"]


def source(steps, n_in: int, n_const: int, outs, dtype: np.dtype, ndim: int) -> str:
    """The kernel's source. ``steps``: (symbol, operands) per op in order, an operand being
    ``("i", k)`` (input array k), ``("c", k)`` (number k) or ``("t", k)`` (step k's value);
    ``outs``: the steps whose values are stored, in the order of the output arrays."""
    ins = [f"i{k}" for k in range(n_in)]
    params = ins + [f"c{k}" for k in range(n_const)] + [f"o{k}" for k in range(len(outs))]
    arr = f"{dtype.name}[{', '.join([':'] * (ndim - 1) + ['::1'])}]"
    sig = f"void({', '.join([arr] * n_in + [dtype.name] * n_const + [arr] * len(outs))})"
    body = [
        "import numba",
        "import numpy as np",
        "",
        "",
        f'@numba.njit("{sig}", cache=True, error_model="numpy")',
        f"def kernel({', '.join(params)}):",
        "    n = o0.size",
    ]
    flat = [*ins, *(f"o{k}" for k in range(len(outs)))]
    if ndim > 1:
        body += [f"    {a}_ = {a}.reshape(n)" for a in flat]
    sfx = "_" if ndim > 1 else ""
    body.append("    for j in range(n):")
    body += [f"        a{k} = i{k}{sfx}[j]" for k in range(n_in)]  # (every load first)

    def spell(o):
        kind, k = o
        return {"i": "a", "c": "c", "t": "t"}[kind] + str(k)

    for k, (sym, ops) in enumerate(steps):
        if len(ops) == 2:
            expr = f"{spell(ops[0])} {sym} {spell(ops[1])}"
        elif sym == "-":
            expr = f"-{spell(ops[0])}"
        else:
            expr = f"{sym}({spell(ops[0])})"
        body.append(f"        t{k} = {expr}")
    body += [f"        o{m}{sfx}[j] = t{k}" for m, k in enumerate(outs)]
    return "\n".join(body) + "\n"


def compiled(src: str):
    """The entry point of the kernel ``src`` (compiled, or loaded from the disk cache, once)."""
    fn = _KERNELS.get(src)
    if fn is not None:
        return fn
    name = "ember_kernel_" + hashlib.sha1(src.encode()).hexdigest()[:20]
    d = _cache_dir()
    if d is not None:
        path = os.path.join(d, name + ".py")
        if not os.path.exists(path):  # (never rewritten: its stamp keys numba's cache)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(src)
            os.replace(tmp, path)
        mod = types.ModuleType(name)
        mod.__file__ = path
        sys.modules[name] = mod  # (numba's cache finds the kernel's globals by module name)
        importlib.machinery.SourceFileLoader(name, path).exec_module(mod)
        kernel = mod.kernel
    else:
        ns: dict = {}
        exec(compile(src.replace("cache=True", "cache=False"), f"<{name}>", "exec"), ns)
        kernel = ns["kernel"]
    # the compiled function's own entry: no dispatch on the argument types (the generated code
    # passes exactly the types of its one signature)
    fn = kernel.overloads[kernel.signatures[0]].entry_point
    _KERNELS[src] = fn
    return fn

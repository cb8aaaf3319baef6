"""``torch.overrides``: the ``__torch_function__`` protocol, as torch's.

A Tensor subclass, or any class defining ``__torch_function__``, takes over the public
functions it is passed to: ``torch.add(x, 1)``, ``x.add(1)``, ``x + 1``, ``F.relu(x)`` call
``type(x).__torch_function__(func, types, args, kwargs)`` with ``func`` the public function
itself (``torch.add``, ``torch.Tensor.add``; an operator as torch reports it: ``x + 1`` as
``Tensor.add``, ``1 - x`` as ``Tensor.__rsub__``). ``Tensor``'s own ``__torch_function__`` runs
the function with the protocol disabled and returns its tensors as the subclass (``_convert``),
so ops on a subclass keep the subclass; ``nn.Parameter`` opts out
(``__torch_function__ = _disabled_torch_function_impl``) and its results are plain Tensors.

How ember gets there: each public function is wrapped in ``_public``, which looks for
overriding arguments (a type test per argument) before running the function. The functions of
``torch``, ``torch.linalg``, ``torch.fft`` and ``torch.special`` are wrapped at import
(``_install_namespaces``; a fraction of a microsecond per call). ``Tensor``'s methods, operators
and tensor-valued properties (``T``, ``mT``, ``H``, ``mH``, ``real``, ``imag``, ``data``) are
called far more often, and ``torch.nn.functional``'s warnings name the caller's line (a wrapper
frame would take its place), so those are wrapped only when the first Tensor subclass is
defined or made (``_install``): a program that never subclasses pays nothing there. Functions
torch lists as not overridable (seeding, ``torch.save``...) are left alone, and factories
(``torch.zeros``, ``torch.tensor``...) only modes see. A tensor-like that is not a Tensor
subclass reaches the functions of ``torch``, ``linalg``, ``fft`` and ``special``, and the rest
once the protocol is on for Tensors too.

``TorchFunctionMode``: entering a mode pushes it on this thread's stack; while the stack is not
empty, every wrapped call goes first to the top mode's ``__torch_function__``, with that mode
taken off the stack while it runs (so the ``func(*args, **kwargs)`` it makes reaches the modes
below it, then the subclasses, then the function). Not supported: ``__torch_dispatch__``.
"""

from __future__ import annotations

import contextlib
import threading
import types
import warnings
from typing import Any

from ember._core.tensor import Tensor
from ember._standin import is_ember_module, module_name

__all__ = [
    "BaseTorchFunctionMode",
    "TorchFunctionMode",
    "get_default_nowrap_functions",
    "get_ignored_functions",
    "handle_torch_function",
    "has_torch_function",
    "has_torch_function_unary",
    "has_torch_function_variadic",
    "is_tensor_like",
]


class _Local(threading.local):
    disabled = 0  # > 0 inside DisableTorchFunction(Subclass) blocks: no subclass overrides
    modes_disabled = 0  # > 0 inside DisableTorchFunction blocks: no modes either

    def __init__(self) -> None:
        self.modes: list = []  # this thread's TorchFunctionMode stack, innermost last


_TLS = _Local()
_MODES = [0]  # modes entered on any thread: while 0, calls skip the thread-local stack


def _disabled_torch_function_impl(cls, func, types, args=(), kwargs=None):
    """``__torch_function__`` of classes that opt out (``nn.Parameter``): run ``func``."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


class DisableTorchFunctionSubclass:
    """Context manager: inside it, ``__torch_function__`` overrides are not called."""

    def __enter__(self):
        _TLS.disabled += 1
        return self

    def __exit__(self, *exc) -> None:
        _TLS.disabled -= 1


class DisableTorchFunction(DisableTorchFunctionSubclass):
    """Context manager: inside it, neither overrides nor ``TorchFunctionMode``s are called."""

    def __enter__(self):
        _TLS.modes_disabled += 1
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        _TLS.modes_disabled -= 1
        super().__exit__()


def _is_disabled(impl) -> bool:
    return getattr(impl, "__func__", impl) is _disabled_torch_function_impl


# ---------------------------------------------------------------------------------------------
# finding the overloaded arguments

_PLAIN = frozenset({int, float, bool, complex, str, type(None), slice, type(Ellipsis)})


_OVERRIDES: dict = {}  # type -> whether its instances override (cached: asked on every call)


def _overrides(t: type) -> bool:
    known = _OVERRIDES.get(t)
    if known is None:
        impl = getattr(t, "__torch_function__", None)
        # (torch's own tensors are data to ember, read through DLPack/NumPy)
        foreign = t.__module__.partition(".")[0] == "torch" and not is_ember_module(t.__module__)
        known = not (impl is None or _is_disabled(impl) or foreign)
        _OVERRIDES[t] = known
    return known


def _add_overloaded(found: list | None, arg) -> list | None:
    t = type(arg)
    if t is Tensor or t in _PLAIN or not _overrides(t):
        return found
    if found is None:
        return [arg]
    if any(type(a) is t for a in found):
        return found
    # subclasses before their superclasses, otherwise in order of appearance
    for i, a in enumerate(found):
        if issubclass(t, type(a)):
            found.insert(i, arg)
            return found
    found.append(arg)
    return found


def _overloaded_args(args, kwargs) -> list | None:
    found = None
    for a in args:
        t = type(a)
        if t is Tensor or t in _PLAIN:  # (the common case, tested first)
            continue
        if t is list or t is tuple:
            for e in a:
                if type(e) is not Tensor and type(e) not in _PLAIN:
                    found = _add_overloaded(found, e)
        else:
            found = _add_overloaded(found, a)
    if kwargs:
        for a in kwargs.values():
            t = type(a)
            if t is Tensor or t in _PLAIN:
                continue
            if t is list or t is tuple:
                for e in a:
                    found = _add_overloaded(found, e)
            else:
                found = _add_overloaded(found, a)
    return found


def _public_name(func) -> str:
    name = getattr(func, "_torch_name", None)
    if name is not None:
        return name
    module = getattr(func, "__module__", None) or ""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    if module.partition(".")[0] == "ember":
        module = "torch" + module[len("ember") :]
    return f"{module}.{name}" if module else name


def _call_torch_function(func, overloaded: list, args, kwargs):
    types_ = tuple(type(a) for a in overloaded)
    for a in overloaded:
        result = a.__torch_function__(func, types_, args, kwargs)
        if result is not NotImplemented:
            return result
    name = _public_name(func)
    if getattr(func, "_native", False):  # (torch's C++ functions word it so)
        listed = "".join(f"  - tensor subclass {t}\n" for t in types_)
        raise TypeError(
            f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers returned "
            f"NotImplemented:\n\n{listed}\nFor more information, try re-running with "
            "TORCH_LOGS=not_implemented"
        )
    raise TypeError(
        f"no implementation found for '{name}' on types that implement __torch_function__: "
        f"{list(types_)}"
    )


def _mode_active() -> bool:
    return bool(_MODES[0] and _TLS.modes and not _TLS.modes_disabled)


def _call_mode(func, overloaded, args, kwargs):
    """Offer the call to the innermost mode (off the stack while it runs)."""
    modes = _TLS.modes
    mode = modes.pop()
    try:
        types_ = tuple(type(a) for a in overloaded) if overloaded else ()
        return mode.__torch_function__(func, types_, args, kwargs)
    finally:
        modes.append(mode)


# ---------------------------------------------------------------------------------------------
# the public API of torch.overrides


def has_torch_function(relevant_args) -> bool:
    """Return True if any of ``relevant_args`` overrides ``__torch_function__`` or a
    ``TorchFunctionMode`` is active."""
    _install()
    if _mode_active():
        return True
    return not _TLS.disabled and _overloaded_args(tuple(relevant_args), None) is not None


def has_torch_function_unary(arg) -> bool:
    """``has_torch_function((arg,))``."""
    return has_torch_function((arg,))


def has_torch_function_variadic(*args) -> bool:
    """``has_torch_function(args)``."""
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs) -> Any:
    """Call the ``__torch_function__`` overrides of ``relevant_args`` for ``public_api``."""
    _install()
    overloaded = _overloaded_args(tuple(relevant_args), None)
    if _mode_active():
        result = _call_mode(public_api, overloaded, args, kwargs)
        if result is not NotImplemented:
            return result
    if overloaded is None:
        return public_api(*args, **kwargs)
    return _call_torch_function(public_api, overloaded, args, kwargs)


def is_tensor_like(inp) -> bool:
    """Return True if ``inp`` is a Tensor or an instance of a class with ``__torch_function__``."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def get_ignored_functions() -> set:
    """The public functions that ``__torch_function__`` cannot override."""
    torch = NAMESPACES["torch"]
    return {getattr(torch, n) for n in _IGNORED_TORCH if hasattr(torch, n)}


def get_default_nowrap_functions() -> set:
    """Functions whose results ``Tensor.__torch_function__`` returns as they are (not as the
    subclass): the getter of ``grad``."""
    grad = Tensor.__dict__.get("grad")
    return {grad.__get__} if isinstance(grad, property) else set()


# ---------------------------------------------------------------------------------------------
# Tensor's own __torch_function__ and subclass creation


def _convert(ret, cls):
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        return type(ret)._make(items) if hasattr(ret, "_make") else type(ret)(items)
    return ret


def _tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """Run ``func`` with overrides disabled; return its tensors as ``cls``."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        return _convert(func(*args, **kwargs), cls)


def _note_subclass(cls) -> None:
    """Install the protocol if ``cls`` is a user Tensor subclass that takes part in it (called
    where subclasses are defined and where their instances are made)."""
    if _STATE["installed"] or cls is Tensor or is_ember_module(cls.__module__):
        return  # (ember's own subclasses: Parameter, Buffer, sparse... keep plain Tensor ops)
    if not _is_disabled(getattr(cls, "__torch_function__", _disabled_torch_function_impl)):
        _install()


def _init_subclass(cls, **kwargs) -> None:
    super(Tensor, cls).__init_subclass__(**kwargs)
    _note_subclass(cls)


def _make_subclass(cls, data: Tensor, require_grad: bool = False, *args, **kwargs) -> Tensor:
    """Return a tensor of class ``cls`` sharing ``data``'s memory (detached from its graph),
    as ``torch.Tensor._make_subclass``."""
    _note_subclass(cls)
    t = data.detach()
    t.__class__ = cls
    t._requires_grad = False
    if require_grad:
        t._set_requires_grad(True, "Only Tensors of floating point and complex dtype")
    return t


Tensor.__torch_function__ = classmethod(_tensor_torch_function)
Tensor.__init_subclass__ = classmethod(_init_subclass)
Tensor._make_subclass = staticmethod(_make_subclass)


# ---------------------------------------------------------------------------------------------
# installing the protocol: wrappers around the public functions

# the public namespaces the protocol wraps, {torch's name: module}: they sit above this module,
# so the root package hands them over (``_install_namespaces``, at the end of ``import ember``)
NAMESPACES: dict = {}

_STATE: dict = {
    "installed": False,
    "factories": False,
    "replaced": [],
}  # replaced: (owner, name, original)

# torch.overrides.get_ignored_functions(), by name: functions of the torch namespace that no
# override sees (factories, seeding, global switches, I/O)
_IGNORED_TORCH = frozenset(
    """arange are_deterministic_algorithms_enabled as_strided as_tensor asarray bartlett_window
    blackman_window broadcast_shapes can_cast compile device dtype empty empty_permuted
    empty_strided enable_grad eye fill finfo from_numpy frombuffer full get_default_device
    get_default_dtype get_deterministic_debug_mode get_float32_matmul_precision
    get_num_interop_threads get_num_threads get_rng_state hamming_window hann_window iinfo
    inference_mode initial_seed is_anomaly_check_nan_enabled is_anomaly_enabled
    is_autocast_enabled is_deterministic_algorithms_warn_only_enabled is_grad_enabled
    is_inference_mode_enabled is_storage is_tensor is_warn_always_enabled kaiser_window layout
    linspace load logspace manual_seed memory_format no_grad normal ones promote_types rand
    rand_like randint randint_like randn randn_like randperm range result_type save
    scalar_tensor seed set_anomaly_enabled set_default_device set_default_dtype
    set_default_tensor_type set_deterministic_debug_mode set_float32_matmul_precision
    set_flush_denormal set_grad_enabled set_num_interop_threads set_num_threads
    set_printoptions set_rng_state set_warn_always sparse_coo_tensor tensor tril_indices
    triu_indices typename use_deterministic_algorithms vander vmap zeros""".split()
)
# Tensor members left alone: construction, conversion to Python/NumPy values, metadata that
# ember's own code reads everywhere, and the protocol itself
_IGNORED_TENSOR = frozenset(
    """as_subclass new stride size dim ndimension numel nelement element_size data_ptr
    storage_offset is_contiguous untyped_storage storage numpy tolist item register_hook
    register_post_accumulate_grad_hook retain_grad backward type""".split()
)
_OPERATORS = frozenset(
    f"__{n}__"
    for n in """add radd iadd sub rsub isub mul rmul imul truediv rtruediv itruediv floordiv
    rfloordiv ifloordiv mod rmod imod pow rpow ipow matmul rmatmul imatmul and rand iand or ror
    ior xor rxor ixor lshift rlshift ilshift rshift rrshift irshift neg pos abs invert eq ne lt
    le gt ge getitem setitem""".split()
)
_PROPERTIES = ("T", "mT", "H", "mH", "real", "imag", "data")
# torch.nn.init helpers that take no tensor (torch does not route them through the protocol)
_NOT_INIT = frozenset({"calculate_gain"})
# of the functions no override sees, those a TorchFunctionMode sees all the same: the
# factories, which make a tensor from nothing
_FACTORIES = frozenset(
    """arange as_strided as_tensor asarray bartlett_window blackman_window empty
    empty_permuted empty_strided eye full hamming_window hann_window kaiser_window linspace
    logspace normal ones rand rand_like randint randint_like randn randn_like randperm range
    scalar_tensor sparse_coo_tensor tensor tril_indices triu_indices vander zeros""".split()
)


# the operators torch reports to ``__torch_function__`` as the method they run (``x + 1`` and
# ``1 + x`` as ``Tensor.add``, ``x += 1`` as ``Tensor.add_``); the others as themselves
_OPERATOR_FUNC = {
    "__add__": "add",
    "__radd__": "add",
    "__sub__": "sub",
    "__mul__": "mul",
    "__rmul__": "mul",
    "__truediv__": "div",
    "__mod__": "remainder",
    "__matmul__": "matmul",
    "__ne__": "ne",
    "__lt__": "lt",
    "__le__": "le",
    "__gt__": "gt",
    "__ge__": "ge",
    "__neg__": "neg",
    "__abs__": "abs",
    "__pos__": "positive",
    "__iadd__": "add_",
    "__isub__": "sub_",
    "__imul__": "mul_",
    "__itruediv__": "div_",
    "__imod__": "remainder_",
    "__ifloordiv__": "floor_divide_",
    "__ipow__": "pow_",
}


def _public(fn, public_name: str, reported: str | None = None):
    """Wrap the public function ``fn`` known to users as ``public_name`` (``"torch.add"``,
    ``"torch.Tensor.add"``): arguments that override ``__torch_function__`` get it called with
    the wrapper (or the Tensor method named ``reported``) as ``func``; otherwise ``fn`` runs."""
    operator = public_name.endswith("__")
    native = not public_name.startswith("torch.nn.")

    def public(*args, **kwargs):
        if _MODES[0] and _mode_active():
            func = public if reported is None else getattr(Tensor, reported)
            result = _call_mode(func, _overloaded_args(args, kwargs), args, kwargs)
            if result is not NotImplemented:
                return result
        # the common case first: plain tensors and numbers, no keywords
        if not kwargs:
            for a in args:
                t = type(a)
                if t is not Tensor and t not in _PLAIN:
                    break
            else:
                return fn(*args)
        elif native and "axis" in kwargs and _takes_dim(fn) and "dim" not in kwargs:
            # torch's C++ functions take NumPy's ``axis`` for ``dim`` (torch.cat(xs, axis=1))
            kwargs["dim"] = kwargs.pop("axis")
        overloaded = _overloaded_args(args, kwargs)
        if overloaded is None or _TLS.disabled:
            return fn(*args, **kwargs)
        func = public if reported is None else getattr(Tensor, reported)
        if operator:  # Python's own TypeError when every override declines
            types_ = tuple(type(a) for a in overloaded)
            for a in overloaded:
                result = a.__torch_function__(func, types_, args, kwargs)
                if result is not NotImplemented:
                    return result
            return NotImplemented
        return _call_torch_function(func, overloaded, args, kwargs)

    # (functools.wraps, by hand: it would cost a third of ember's import)
    public.__doc__ = fn.__doc__
    public.__wrapped__ = fn
    public.__dict__.update(fn.__dict__)
    public.__name__ = public_name.rpartition(".")[2]
    # where the wrapper is found (pickle looks functions up by module and qualified name)
    module, _, name = public_name.rpartition(".")
    if module == "torch.Tensor":
        public.__module__, public.__qualname__ = module_name("ember"), "Tensor." + name
    else:
        public.__module__ = module_name("ember" + module[len("torch") :])
        public.__qualname__ = name
    public._torch_name = public_name
    # torch's C++ functions and Python ones (nn.functional) word "all declined" differently
    public._native = native
    return public


_TAKES_DIM: dict = {}


def _takes_dim(fn) -> bool:
    """Whether ``fn`` has a ``dim`` parameter and no ``axis`` one (looked up once per fn)."""
    takes = _TAKES_DIM.get(fn)
    if takes is None:
        import inspect

        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        takes = _TAKES_DIM[fn] = "dim" in params and "axis" not in params
    return takes


def _unwrap(fn):
    """``fn`` without its ``_public`` wrapper (for identity tests against public functions)."""
    return getattr(fn, "__wrapped__", fn)


def _wrap_functions(mod, public_prefix: str, skip=frozenset()) -> list:
    """Replace the public functions of module ``mod`` by ``_public`` wrappers named
    ``public_prefix.<name>``; return ``[(mod, name, original), ...]``."""
    done = []
    for name, v in list(vars(mod).items()):
        if type(v) is not types.FunctionType or name.startswith("_") or name in skip:
            continue
        if hasattr(v, "_torch_name") or name in ("has_torch_function", "handle_torch_function"):
            continue
        setattr(mod, name, _public(v, f"{public_prefix}.{name}"))
        done.append((mod, name, v))
    return done


def _wrap_public(name: str, value):
    """``value`` as ``torch.<name>`` is published: wrapped as ``_install_namespaces`` wraps the
    top-level functions (for names ember's ``__getattr__`` resolves on first use)."""
    if type(value) is not types.FunctionType or name in _IGNORED_TORCH:
        return value
    if hasattr(value, "_torch_name"):
        return value
    return _public(value, f"torch.{name}")


def _install_namespaces(torch, functional, init) -> None:
    """Wrap the functions of ``torch``, ``torch.linalg``, ``torch.fft`` and ``torch.special``
    (once, at the end of ``import ember``): these stay wrapped, so that ``torch.mean`` is the
    same object before and after a Tensor subclass appears (``HANDLED_FUNCTIONS =
    {torch.mean: ...}`` tables of tensor-likes). The namespaces sit above this module: the
    root package hands them over (``torch``, ``torch.nn.functional``, ``torch.nn.init``), and
    they are kept in ``NAMESPACES``."""
    NAMESPACES.update({"torch": torch, "torch.nn.functional": functional, "torch.nn.init": init})
    _wrap_functions(torch, "torch", _IGNORED_TORCH)
    for name in ("linalg", "fft", "special"):
        _wrap_functions(getattr(torch, name), f"torch.{name}")


def _install() -> None:
    """Wrap the methods, operators and tensor-valued properties of ``Tensor`` and the functions
    of ``torch.nn.functional`` (once, when the first Tensor subclass appears): see the module
    docstring. (nn.functional waits too: its warnings name the caller's line, which a wrapper
    frame would take.)"""
    if _STATE["installed"]:
        return
    _STATE["installed"] = True
    replaced = _STATE["replaced"]
    for name in dir(Tensor):
        if name.startswith("_") and name not in _OPERATORS or name in _IGNORED_TENSOR:
            continue
        v = Tensor.__dict__.get(name)
        if type(v) is types.FunctionType:
            replaced.append((Tensor, name, v))
            setattr(Tensor, name, _public(v, f"torch.Tensor.{name}", _OPERATOR_FUNC.get(name)))
    for name in _PROPERTIES:
        p = Tensor.__dict__.get(name)
        if isinstance(p, property) and p.fget is not None:
            replaced.append((Tensor, name, p))
            fget = _public(p.fget, f"torch.Tensor.{name}")
            setattr(Tensor, name, property(fget, p.fset, p.fdel, p.__doc__))
    replaced += _wrap_functions(NAMESPACES["torch.nn.functional"], "torch.nn.functional")
    replaced += _wrap_functions(NAMESPACES["torch.nn.init"], "torch.nn.init", _NOT_INIT)


def _uninstall() -> None:
    """Put the unwrapped Tensor members and nn.functional back (the test suite does, between
    tests, so that each test runs as a program that never subclassed Tensor unless it does)."""
    replaced = _STATE["replaced"]
    while replaced:
        owner, name, original = replaced.pop()
        setattr(owner, name, original)
    _STATE["installed"] = _STATE["factories"] = False


# ---------------------------------------------------------------------------------------------
# TorchFunctionMode


def _mode_visible(fn, public_name: str):
    """Wrap the factory ``fn``: a ``TorchFunctionMode`` sees its calls; overrides do not."""

    def factory(*args, **kwargs):
        if _MODES[0] and _mode_active():
            result = _call_mode(factory, None, args, kwargs)
            if result is not NotImplemented:
                return result
        return fn(*args, **kwargs)

    factory.__doc__, factory.__wrapped__, factory.__name__ = fn.__doc__, fn, fn.__name__
    factory.__module__, factory.__qualname__ = module_name("ember"), fn.__name__
    factory._torch_name = public_name
    return factory


def _install_modes() -> None:
    """Route the Tensor members, nn.functional, nn.init and the factories through the modes
    (once, when the first mode is entered)."""
    _install()
    if _STATE["factories"]:
        return
    torch = NAMESPACES["torch"]
    for name in _FACTORIES:
        fn = vars(torch).get(name)
        if type(fn) is types.FunctionType and not hasattr(fn, "_torch_name"):
            setattr(torch, name, _mode_visible(fn, f"torch.{name}"))
            _STATE["replaced"].append((torch, name, fn))
    _STATE["factories"] = True


def _push_mode(mode) -> None:
    _install_modes()
    _TLS.modes.append(mode)
    _MODES[0] += 1


def _pop_mode():
    if not _TLS.modes:
        raise AssertionError("Trying to pop from an empty mode stack")
    _MODES[0] -= 1
    return _TLS.modes.pop()


@contextlib.contextmanager
def _pop_mode_temporarily():
    """Take the innermost mode off the stack for the duration of the block; yield it."""
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


def _get_current_function_mode():
    """Return the innermost active ``TorchFunctionMode`` of this thread, or None."""
    return _TLS.modes[-1] if _TLS.modes else None


def _get_current_function_mode_stack() -> list:
    """Return this thread's ``TorchFunctionMode`` stack, outermost first (a copy)."""
    return list(_TLS.modes)


def _is_torch_function_mode_enabled() -> bool:
    return bool(_TLS.modes) and not _TLS.modes_disabled


class TorchFunctionMode:
    """A context manager that sees every torch function called inside it.

    Subclasses define ``__torch_function__(self, func, types, args=(), kwargs=None)``; inside
    ``with mode:`` each call of a public function (``torch.add``, ``Tensor.add``, ``x + y``,
    ``F.relu``, ``nn.init.normal_``, the factories) reaches it instead of running, and what it
    returns is the call's result. ``func(*args, **kwargs)`` inside it runs the call (the mode
    is off the stack meanwhile, so the modes below it, then subclass overrides, come next).
    """

    inner: TorchFunctionMode | None = None

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError()

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        warnings.warn(
            "`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
            stacklevel=2,
        )
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A ``TorchFunctionMode`` that runs every call unchanged (a base for modes that watch)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

"""Grad modes: whether ops record the autograd graph. Thread-local, as in torch.

``STATE.grad_enabled`` is the flag dispatch reads. A new thread starts with grad enabled and
inference mode off, whatever the thread that started it was doing.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import warnings


class _State(threading.local):
    grad_enabled = True
    inference = False


STATE = _State()


def is_grad_enabled() -> bool:
    """Return True if grad mode is currently enabled."""
    return STATE.grad_enabled


def is_inference_mode_enabled() -> bool:
    """Return True if inference mode is currently enabled."""
    return STATE.inference


# ---------------------------------------------------------------------------------------------
# context managers that are also decorators (torch.utils._contextlib)


def _wrap_generator(ctx_factory, func):
    """Wrap a generator function so that the context is active whenever the generator runs
    (and not while it is suspended at a ``yield``)."""

    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator_context


def _context_decorator(ctx_factory, func):
    if inspect.isclass(func):
        raise RuntimeError(
            "Cannot decorate classes; it is ambiguous whether or not only the constructor or all "
            "methods should have the context manager applied; additionally, decorating a class "
            "at definition-site will prevent use of the identifier as a conventional type.  To "
            "specify which methods to decorate, decorate each of them individually."
        )
    if inspect.isgeneratorfunction(func):
        return _wrap_generator(ctx_factory, func)

    @functools.wraps(func)
    def decorate_context(*args, **kwargs):
        with ctx_factory():
            return func(*args, **kwargs)

    return decorate_context


class _DecoratorContextManager:
    """A context manager that is also usable as a function decorator (a fresh one per call)."""

    def __call__(self, orig_func):
        if inspect.isclass(orig_func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You "
                "should only decorate functions or methods. To preserve the current behavior of "
                "class decoration, you can directly decorate the `__init__` method and nothing "
                "else.",
                FutureWarning,
                stacklevel=2,
            )
            func = lambda *args, **kwargs: orig_func(*args, **kwargs)  # noqa: E731
        else:
            func = orig_func
        return _context_decorator(self.clone, func)

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        raise NotImplementedError

    def clone(self):
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a decorator without parentheses: ``@no_grad``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


# ---------------------------------------------------------------------------------------------
# the modes


class no_grad(_NoParamDecoratorContextManager):
    """Context manager / decorator that disables gradient recording (thread-local)."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        STATE.grad_enabled = self.prev


class enable_grad(_NoParamDecoratorContextManager):
    """Context manager / decorator that enables gradient recording (thread-local)."""

    def __enter__(self) -> None:
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = True

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        STATE.grad_enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off: at once when called as a function; restored on exit when used
    as a context manager; for the duration of each call when used as a decorator."""

    def __init__(self, mode: bool) -> None:
        self.prev = STATE.grad_enabled
        self.mode = mode
        STATE.grad_enabled = bool(mode)

    def __call__(self, orig_func):
        STATE.grad_enabled = self.prev
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        STATE.grad_enabled = bool(self.mode)

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        STATE.grad_enabled = self.prev

    def __str__(self) -> str:
        return f"{type(self).__module__}.{type(self).__qualname__}(mode={self.mode})"

    __repr__ = __str__

    def clone(self):
        """Return a new context manager with the same settings."""
        return self.__class__(self.mode)


# set by ember._ops.inference: told when an inference_mode(True) block starts and ends, so that
# the op table marks the tensors made inside it (layers below the op table cannot import it)
INFERENCE_HOOK: list = []


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad`` (``mode=True``); ``inference_mode(False)`` turns grad mode back on.

    Also a decorator, with or without parentheses.
    """

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self._prev = (STATE.grad_enabled, STATE.inference)
        STATE.grad_enabled = not self.mode
        STATE.inference = bool(self.mode)
        if self.mode and INFERENCE_HOOK:
            INFERENCE_HOOK[0].start()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        STATE.grad_enabled, STATE.inference = self._prev
        if self.mode and INFERENCE_HOOK:
            INFERENCE_HOOK[0].stop()

    def clone(self):
        """Return a new context manager with the same settings."""
        return self.__class__(self.mode)

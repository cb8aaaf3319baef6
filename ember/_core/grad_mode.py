"""Grad modes: whether ops record the autograd graph. Thread-local, as in torch."""

from __future__ import annotations

import functools
import threading


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


class _DecoratorContextManager:
    """A context manager that is also usable as a function decorator (a fresh one per call)."""

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Context manager / decorator that disables gradient recording."""

    def __enter__(self) -> None:
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc) -> None:
        STATE.grad_enabled = self.prev


class enable_grad(_DecoratorContextManager):
    """Context manager / decorator that enables gradient recording."""

    def __enter__(self) -> None:
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = True

    def __exit__(self, *exc) -> None:
        STATE.grad_enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off; acts at once as a function, and restores on exit as a context."""

    def __init__(self, mode: bool) -> None:
        self.prev = STATE.grad_enabled
        self.mode = bool(mode)
        STATE.grad_enabled = self.mode

    def __enter__(self) -> None:
        STATE.grad_enabled = self.mode

    def __exit__(self, *exc) -> None:
        STATE.grad_enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``, and tensors made inside are marked as inference tensors."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        self.prev = (STATE.grad_enabled, STATE.inference)
        if self.mode:
            STATE.grad_enabled = False
            STATE.inference = True
        else:
            STATE.inference = False

    def __exit__(self, *exc) -> None:
        STATE.grad_enabled, STATE.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)

"""``torch.utils._python_dispatch``: dispatch modes, which ember does not have.

torch's ``TorchDispatchMode`` intercepts every ATen operator call below autograd. ember has no
layer below its ops to intercept: the class exists so that libraries that define a mode import,
and entering one raises, saying so (a Tensor subclass's ``__torch_function__``, one layer
up, is ember's way to intercept calls).
"""

from __future__ import annotations

__all__ = ["TorchDispatchMode", "_get_current_dispatch_mode"]

_ABSENT = (
    "ember has no dispatcher below its ops, so TorchDispatchMode (torch's ATen-level "
    "interception) cannot be entered; a Tensor subclass's __torch_function__ intercepts torch "
    "function calls instead"
)


class TorchDispatchMode:
    """Base of torch's dispatch modes; entering one raises NotImplementedError on ember."""

    def __init__(self, _dispatch_key=None):
        pass

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError(_ABSENT)

    def __enter__(self):
        raise NotImplementedError(_ABSENT)

    def __exit__(self, exc_type, exc_val, exc_tb):
        return None

    @classmethod
    def push(cls, *args, **kwargs):
        raise NotImplementedError(_ABSENT)


def _get_current_dispatch_mode():
    """The innermost dispatch mode in force: never one on ember."""
    return None

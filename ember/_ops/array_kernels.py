"""Helpers that compute on arrays outside the op table and declare themselves to a
``torch.compile`` capture: ``rng_kernel`` (a draw from the default generator: dropout's mask)
and ``array_kernel`` (max pooling's indices, batch norm's statistics). With no capture running
each is a plain call; while one runs (``ACTIVE``, the recorders capturing now, innermost last:
``_dynamo/capture.py`` pushes and pops them) the call goes to ``ABOVE``'s recorder, which
records it as one kernel. nn decorates its helpers here; the capture, above nn, fills ``ABOVE``.
"""

from __future__ import annotations

from ember._core.tensor import Tensor, _wrap

ACTIVE: list = []  # the recorders capturing now (innermost last); _dynamo.capture's ACTIVE


class ABOVE:
    """What ``ember._dynamo.capture`` gives these helpers, filled when it is imported (nothing
    can be capturing before): ``record_rng(fn, kernel, input, consts)`` and
    ``record_arrays(fn, args)``."""

    record_rng = record_arrays = None


def rng_kernel(fn):
    """Decorate ``fn(input: Tensor, *consts) -> tuple of arrays`` drawing from the default
    generator: a capture records the call as a kernel returning those arrays."""

    def kernel(x_arr, *consts):
        return fn(_wrap(x_arr), *consts)

    kernel.__name__ = fn.__name__
    kernel.draws = True  # running it advances the generator (never run it to verify)

    def wrapper(input, *consts):
        if not ACTIVE:
            return fn(input, *consts)
        return ABOVE.record_rng(fn, kernel, input, consts)

    wrapper.__wrapped__ = fn
    return wrapper


def array_kernel(fn=None, *, effects: bool = False):
    """Decorate ``fn(*arrays_and_consts) -> array or tuple of arrays``, a helper computing on
    arrays outside the op table (max-pool's indices, batch norm's statistics): called with
    Tensors in place of the arrays, it runs ``fn`` on their data, and a capture records the
    call as one kernel whose results later ops read. ``effects``: ``fn`` also writes into
    its inputs' data (batch norm's running statistics), so the compiled code runs it exactly
    once per call, as eager does."""

    def deco(fn):
        fn.effects = effects

        def wrapper(*args):
            if not ACTIVE:
                return fn(*[a._data if isinstance(a, Tensor) else a for a in args])
            return ABOVE.record_arrays(fn, args)

        wrapper.__wrapped__ = fn
        wrapper.__name__ = fn.__name__
        return wrapper

    return deco if fn is None else deco(fn)

"""``torch.ops.aten.<name>``: torch's operator namespace, over ember's public functions.

torch exposes each of its C++ operators as ``torch.ops.aten.<name>`` (an overload packet,
``.default`` its main overload). ember has no C++ operator library: a packet here calls ember's
public function of the same name (``ember.<name>``, else ``ember.nn.functional.<name>``), and
a name ember lacks is torch's AttributeError. Libraries use the packets as keys (FLOP counters'
tables) and call them; ember has no dispatcher beneath its ops for them to intercept
(``ember.utils._python_dispatch``).
"""

from __future__ import annotations

import types
from collections.abc import Callable

__all__ = ["OpOverload", "OpOverloadPacket", "ops"]


def _convolution(
    input,
    weight,
    bias,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
    *_backend_flags,
):
    # aten::_convolution is convolution plus flags choosing a backend (cudnn, tf32): none here
    import ember

    return ember.convolution(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )


def _convolution_backward(
    grad_output,
    input,
    weight,
    bias_sizes,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
    output_mask,
):
    # the three gradients of a convolution, those ``output_mask`` asks for (else None)
    import ember

    with ember.enable_grad():
        x = input.detach().requires_grad_(bool(output_mask[0]))
        w = weight.detach().requires_grad_(bool(output_mask[1]))
        with_bias = bias_sizes is not None and bool(output_mask[2])
        b = ember.zeros(bias_sizes, dtype=weight.dtype, requires_grad=True) if with_bias else None
        out = ember.convolution(
            x, w, b, stride, padding, dilation, transposed, output_padding, groups
        )
        wanted = [t for t, m in zip((x, w, b), output_mask) if m and t is not None]
        found = iter(ember.autograd.grad(out, wanted, grad_output) if wanted else ())
    return tuple(
        next(found) if m and t is not None else None for t, m in zip((x, w, b), output_mask)
    )


_EXTRA = {"_convolution": _convolution, "convolution_backward": _convolution_backward}


def _resolve(name: str) -> Callable | None:
    import ember
    import ember.nn.functional as F

    if name in _EXTRA:
        return _EXTRA[name]
    for owner in (ember, F):
        fn = getattr(owner, name, None)
        if callable(fn) and not isinstance(fn, type):
            return fn
    return None


class OpOverload:
    """One overload of an operator (``torch.ops.aten.mm.default``)."""

    def __init__(self, packet: OpOverloadPacket, overload: str):
        self._overloadpacket = packet
        self._overloadname = overload

    @property
    def overloadpacket(self) -> OpOverloadPacket:
        return self._overloadpacket

    def name(self) -> str:
        return self._overloadpacket._qualified_op_name

    def __call__(self, *args, **kwargs):
        return self._overloadpacket._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<OpOverload(op='{self._overloadpacket}', overload='{self._overloadname}')>"

    def __str__(self) -> str:
        return f"{self._overloadpacket}.{self._overloadname}"


class OpOverloadPacket:
    """An operator with all its overloads (``torch.ops.aten.mm``); calling it calls ember's."""

    def __init__(self, namespace: str, name: str, fn: Callable):
        self.__name__ = name
        self._qualified_op_name = f"{namespace}::{name}"
        self._str = f"{namespace}.{name}"
        self._fn = fn
        self.default = OpOverload(self, "default")

    def overloads(self) -> list:
        return ["default"]

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self._str}')>"

    def __str__(self) -> str:
        return self._str


class _OpNamespace(types.ModuleType):
    """``torch.ops.aten``: packets made on first use and kept, so each is one object."""

    def __init__(self, name: str):
        super().__init__(f"torch.ops.{name}")
        self.name = name

    def __getattr__(self, op_name: str) -> OpOverloadPacket:
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        fn = _resolve(op_name) if self.name == "aten" else None
        if fn is None:
            raise AttributeError(
                f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'"
            )
        packet = OpOverloadPacket(self.name, op_name, fn)
        setattr(self, op_name, packet)
        return packet


class _Ops(types.ModuleType):
    """``torch.ops``: operator namespaces by name (only ``aten`` holds operators here)."""

    def __init__(self):
        super().__init__("torch.ops")
        self.aten = _OpNamespace("aten")

    def __getattr__(self, name: str) -> _OpNamespace:
        if name.startswith("__"):
            raise AttributeError(name)
        namespace = _OpNamespace(name)
        setattr(self, name, namespace)
        return namespace


ops = _Ops()

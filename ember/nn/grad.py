"""``ember.nn.grad``: the gradients of a convolution with respect to its input and its weight,
as ``torch.nn.grad`` (used to write the backward of custom convolution Functions).

Each is the reverse-mode gradient of the convolution at zeros: the convolution is linear in
the argument differentiated, so the result does not depend on the zeros, and it stays
differentiable with respect to the other argument and ``grad_output`` in grad mode.
"""

from __future__ import annotations

from collections.abc import Sequence

from ember._core.grad_mode import enable_grad, is_grad_enabled
from ember._core.tensor import Tensor

__all__ = [
    "conv1d_input",
    "conv1d_weight",
    "conv2d_input",
    "conv2d_weight",
    "conv3d_input",
    "conv3d_weight",
]


def _conv(nd: int):
    from ember.nn import functional as F

    return (F.conv1d, F.conv2d, F.conv3d)[nd - 1]


def _grad_at_zeros(nd, x, w, grad_output, stride, padding, dilation, groups, wrt: int):
    """The gradient of ``conv{nd}d(x, w)`` under ``grad_output`` with respect to argument
    ``wrt`` (0: x, 1: w), which is given by its size and taken as zeros."""
    import ember
    from ember.autograd.engine import grad

    args = [x, w]
    other = args[1 - wrt]
    create = is_grad_enabled() and (other.requires_grad or grad_output.requires_grad)
    args[wrt] = ember.zeros(tuple(args[wrt]), dtype=grad_output.dtype, requires_grad=True)
    with enable_grad():
        out = _conv(nd)(*args, None, stride, padding, dilation, groups)
        (g,) = grad(out, args[wrt], grad_output, create_graph=create)
    return g


def _input_grad(nd: int):
    def conv_input(
        input_size: Sequence[int],
        weight: Tensor,
        grad_output: Tensor,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
    ) -> Tensor:
        return _grad_at_zeros(
            nd, input_size, weight, grad_output, stride, padding, dilation, groups, 0
        )

    conv_input.__name__ = conv_input.__qualname__ = f"conv{nd}d_input"
    conv_input.__doc__ = (
        f"Return the gradient of ``conv{nd}d`` with respect to an input of shape ``input_size``."
    )
    return conv_input


def _weight_grad(nd: int):
    def conv_weight(
        input: Tensor,
        weight_size: Sequence[int],
        grad_output: Tensor,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
    ) -> Tensor:
        return _grad_at_zeros(
            nd, input, weight_size, grad_output, stride, padding, dilation, groups, 1
        )

    conv_weight.__name__ = conv_weight.__qualname__ = f"conv{nd}d_weight"
    conv_weight.__doc__ = (
        f"Return the gradient of ``conv{nd}d`` with respect to a weight of shape ``weight_size``."
    )
    return conv_weight


conv1d_input, conv2d_input, conv3d_input = (_input_grad(nd) for nd in (1, 2, 3))
conv1d_weight, conv2d_weight, conv3d_weight = (_weight_grad(nd) for nd in (1, 2, 3))

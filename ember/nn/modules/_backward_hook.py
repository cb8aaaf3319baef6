"""Full backward hooks of a Module: identity autograd nodes around its inputs and outputs.

The node over the outputs sees ``grad_output`` (backward pre-hooks run there and may replace
it); the node over the inputs sees ``grad_input`` (backward hooks run there and may replace
it), as torch's ``torch.utils.hooks.BackwardHook``."""

from __future__ import annotations

import warnings

import ember
from ember._core.tensor import Tensor
from ember.autograd import Function


class _Identity(Function):
    @staticmethod
    def forward(ctx, *tensors):
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _tensor_positions(values) -> list[int]:
    return [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]


class BackwardHook:
    """Run a module's full backward (pre-)hooks during backward."""

    def __init__(self, module, hooks, pre_hooks) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_positions: list[int] = []

    def _run_hooks(self, grad_input):
        for hook in self.hooks.values():
            out = hook(self.module, grad_input, self.grad_outputs)
            if out is None:
                continue
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            if len(out) != len(grad_input):
                raise RuntimeError(
                    f"Backward hook returned an invalid number of grad_input, got {len(out)}, "
                    f"but expected {len(grad_input)}"
                )
            grad_input = out
        return grad_input

    def setup_input_hook(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        self.input_positions = _tensor_positions(args)
        if not ember.is_grad_enabled() or not self.input_positions or not self.hooks:
            return args
        wrapped = _Identity.apply(*(args[i] for i in self.input_positions))
        if isinstance(wrapped, Tensor):
            wrapped = (wrapped,)
        positions = self.input_positions

        def hook(grad_inputs, grad_outputs):
            full = [None] * self.n_inputs
            for i, g in zip(positions, grad_outputs):
                full[i] = g
            new = self._run_hooks(tuple(full))
            return tuple(new[i] for i in positions)

        wrapped[0].grad_fn.register_hook(hook)
        args = list(args)
        for i, t in zip(positions, wrapped):
            args[i] = t
        return tuple(args)

    def setup_output_hook(self, result):
        if not ember.is_grad_enabled():
            return result
        is_tensor = isinstance(result, Tensor)
        values = (result,) if is_tensor else result
        if not isinstance(values, tuple):
            return result
        positions = _tensor_positions(values)
        if not positions:
            return result
        wrapped = _Identity.apply(*(values[i] for i in positions))
        if isinstance(wrapped, Tensor):
            wrapped = (wrapped,)
        n_out = len(values)

        def pre_hook(grad_outputs):
            full = [None] * n_out
            for i, g in zip(positions, grad_outputs):
                full[i] = g
            full = tuple(full)
            for hook in self.pre_hooks.values():
                out = hook(self.module, full)
                if out is not None:
                    full = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            self.grad_outputs = full
            if not self.input_positions and self.hooks:
                # no input requires grad: the hooks run now with grad_input all None
                warnings.warn(
                    "Full backward hook is firing when gradients are computed "
                    "with respect to module outputs since no inputs require gradients. See "
                    "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                    "#torch.nn.Module.register_full_backward_hook for more details.",
                    stacklevel=_user_stacklevel(),
                )
                self._run_hooks((None,) * self.n_inputs)
            return tuple(full[i] for i in positions)

        wrapped[0].grad_fn.register_prehook(pre_hook)
        values = list(values)
        for i, t in zip(positions, wrapped):
            values[i] = t
        return values[0] if is_tensor else tuple(values)


def _user_stacklevel() -> int:
    """The ``stacklevel`` that attributes a warning raised here to the first frame outside
    ember (the user's ``backward()`` call, where torch's C++ engine leaves it)."""
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root):
        frame, level = frame.f_back, level + 1
    return level

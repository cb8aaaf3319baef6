"""CopySlices: the history of a base tensor after an in-place op on one of its views.

``y = x[0]; y.mul_(2)`` changes ``x``. Its new grad_fn is CopySlices: the gradient flowing into
``x`` passes unchanged everywhere except in the region ``y`` views, where it goes through the
in-place op's own backward (``fn``).
"""

from __future__ import annotations

import numpy as np

from ember._core.node import Node, _empty_like_layout, edge_of
from ember._core.tensor import _wrap, contiguous_format
from ember._ops.registry import replay_view


class CopySlices(Node):
    """grad_fn of a base whose view was modified in place (torch's ``CopySlices``)."""

    __slots__ = ("view_fn", "fn", "_layout")

    def name(self) -> str:
        return "torch::autograd::CopySlices"

    def __init__(self, base, view_fn, fn):
        super().__init__()
        self.view_fn = view_fn
        self.fn = fn
        self.next_functions = (edge_of(base),) + fn.next_functions[1:]
        self._input_meta = ((base._data.shape, base.dtype),) + fn._input_meta[1:]
        # the view is replayed on the gradient, so the gradient must have the base's layout
        # (as_strided views address memory); a zero-strided stand-in keeps only the geometry
        data = base._data
        self._layout = (
            None
            if data.flags.c_contiguous
            else np.lib.stride_tricks.as_strided(np.empty(1, data.dtype), data.shape, data.strides)
        )

    def apply(self, grads: list) -> tuple:
        g = grads[0]
        if self._layout is None:
            result = g.clone(memory_format=contiguous_format)  # the base is C-contiguous
        else:  # torch: grad.new_empty_strided(base.sizes(), base.strides()).copy_(grad)
            result = _wrap(_empty_like_layout(self._layout, g._data.dtype)).copy_(g)
        grad_slice = replay_view(result, self.view_fn)
        res = self.fn.apply([grad_slice.clone()])
        if res[0] is None:
            grad_slice.zero_()
        else:
            grad_slice.copy_(res[0])
        return (result,) + tuple(res[1:])

    def release(self) -> None:
        self.fn.release()

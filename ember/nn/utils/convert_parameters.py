"""``parameters_to_vector`` / ``vector_to_parameters``."""

from __future__ import annotations

from collections.abc import Iterable

import ember
from ember._core.tensor import Tensor
from ember.nn.modules.module import _typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Return the parameters flattened and concatenated into one vector."""
    return ember.cat([param.view(-1) for param in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter's data the matching slice of ``vec`` (sharing its memory)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        param.data = vec[pointer : pointer + num_param].view_as(param).data
        pointer += num_param

"""ember.func: functional transforms (``vmap``, ``grad``, ``jacrev``...) and ``functional_call``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember._core.tensor import Tensor
from ember.func._transforms import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stack_module_state,
    vjp,
    vmap,
)
from ember.nn.modules.module import Module
from ember.nn.utils.stateless import _functional_call

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "replace_all_batch_norm_modules_",
    "stack_module_state",
    "vjp",
    "vmap",
]


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: dict[str, Tensor] | Sequence[dict[str, Tensor]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Return ``module(*args, **kwargs)`` computed with the parameters and buffers named (by
    dotted path) in ``parameter_and_buffer_dicts`` substituted for the module's own for this
    call only; with ``tie_weights`` a value given for one of several tied names is used for
    all of them; with ``strict`` the names must cover exactly the module's tensors."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError(
                "Expected all elements of parameter_and_buffer_dicts to be dictionaries"
            )
        counts: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated_keys = [k for k, n in counts.items() if n > 1]
        if repeated_keys:
            raise ValueError(
                f"{repeated_keys} appeared in multiple dictionaries; behavior of functional "
                "call is ambiguous"
            )
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
            f"but got {type(parameter_and_buffer_dicts)}"
        )
    return _functional_call(
        module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict
    )


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """Make every batch norm module of ``root`` stop tracking running statistics (in place,
    so that it can run under ``vmap``); return ``root``."""
    from ember.nn.modules.batchnorm import _BatchNorm

    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root

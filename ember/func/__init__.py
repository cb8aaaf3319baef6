"""ember.func: functional transforms (``vmap``, ``grad``, ``jacrev``...) and ``functional_call``."""

from __future__ import annotations

from collections import Counter
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
    return _functional_call(
        module,
        _merged(parameter_and_buffer_dicts),
        args,
        kwargs,
        tie_weights=tie_weights,
        strict=strict,
    )


def _merged(given) -> dict[str, Tensor]:
    # functional_call's one dict, or its sequence of dicts merged (a name in two of them is
    # ambiguous, reported in the order the names first appear)
    if isinstance(given, dict):
        return given
    if not isinstance(given, Sequence):
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
            f"but got {type(given)}"
        )
    if any(not isinstance(d, dict) for d in given):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    seen = Counter(name for d in given for name in d)
    repeated = [name for name, times in seen.items() if times > 1]
    if repeated:
        raise ValueError(
            f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
            "ambiguous"
        )
    return {name: value for d in given for name, value in d.items()}


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

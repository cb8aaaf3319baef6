"""The few ``torch._C`` names user code reaches for: the ``__torch_function__`` switches and
``_TensorMeta``, Tensor's metaclass.

torch's ``_C`` is its C++ extension; ember has none. Its protocol pieces live in
``ember.overrides`` and are re-exported here under torch's private names.
"""

from __future__ import annotations

import types

from ember._core.tensor import _TensorMeta
from ember.overrides import (
    DisableTorchFunction,
    DisableTorchFunctionSubclass,
    _disabled_torch_function_impl,
)


class _NNBindings(types.ModuleType):
    """``torch._C._nn``: of torch's C++ nn bindings, the argument parser of ``Module.to`` and
    the nn.functional functions torch implements as such bindings (traced code spells them
    so: ``torch._C._nn.gelu(x)``), bound on first use so that importing ember stays cheap."""

    _bound = False

    def __getattr__(self, name: str):
        if not type(self)._bound:
            type(self)._bound = True
            _bind_nn_functions()
            return getattr(self, name)
        raise AttributeError(f"module 'torch._C._nn' has no attribute '{name}'")


_nn = _NNBindings("torch._C._nn")


def _parse_to(*args, **kwargs):
    """Return ``(device, dtype, non_blocking, memory_format)`` as ``Module.to`` reads them."""
    from ember.nn.modules._to_args import parse_to

    return parse_to(*args, **kwargs)


_nn._parse_to = _parse_to


def _bind_nn_functions() -> None:
    import ember.nn.functional as F
    from ember.fx.node import FUNCTIONAL_SPELLINGS

    for name, spelling in FUNCTIONAL_SPELLINGS.items():
        fn = getattr(F, name, None)
        if fn is not None and spelling.startswith("torch._C._nn."):
            setattr(_nn, spelling.rpartition(".")[2], fn)


def _log_api_usage_once(event: str) -> None:
    """torch's usage logging hook for libraries; ember logs nothing."""


__all__ = [
    "DisableTorchFunction",
    "DisableTorchFunctionSubclass",
    "_TensorMeta",
    "_disabled_torch_function_impl",
]


# --- TorchScript passes under torch's ``torch._C._jit_pass_*`` names (ember.jit.passes)


def _jit_pass_dce(graph) -> None:
    from ember.jit.passes import eliminate_dead_code

    eliminate_dead_code(graph)


def _jit_pass_cse(graph) -> bool:
    from ember.jit.passes import eliminate_common_subexpression

    return eliminate_common_subexpression(graph)


def _jit_pass_constant_propagation(graph) -> None:
    from ember.jit.passes import propagate_constants

    propagate_constants(graph)


def _jit_pass_inline(graph) -> None:
    from ember.jit.passes import inline_calls

    inline_calls(graph)


def _jit_pass_peephole(graph, disable_shape_peepholes: bool = False) -> None:
    from ember.jit.passes import peephole

    peephole(graph)


def _jit_pass_loop_unrolling(graph) -> None:
    from ember.jit.passes import unroll_loops

    unroll_loops(graph)


def _jit_pass_lint(graph) -> None:
    graph.lint()


def _jit_pass_remove_dropout(module) -> None:
    """Remove dropout from a scripted or traced module's graph (the module must be in eval)."""
    from ember.jit.passes import remove_dropout

    if module.training:
        raise RuntimeError("Dropout removal module in training mode is not yet supported")
    remove_dropout(module.graph, eval_mode=True)


def _jit_pass_fold_convbn(module) -> None:
    """Fold Conv-BN pairs of a frozen module's graph."""
    from ember.jit.passes import fold_conv_bn

    fold_conv_bn(module.graph)


def _jit_pass_fuse_linear(graph) -> None:
    """Nothing to fuse: ember's traces already hold ``aten::linear``."""

"""Passes over ember's IR: plain functions changing a graph in place."""

from ember.jit.passes.constant_propagation import propagate_constants
from ember.jit.passes.cse import eliminate_common_subexpression
from ember.jit.passes.dce import eliminate_dead_code
from ember.jit.passes.fold_conv_bn import fold_conv_bn
from ember.jit.passes.freeze import freeze_graph, optimize_frozen
from ember.jit.passes.inline import inline_calls
from ember.jit.passes.peephole import peephole
from ember.jit.passes.remove_dropout import remove_dropout

# the short names the IR contract uses
dce = eliminate_dead_code
cse = eliminate_common_subexpression
constant_propagation = propagate_constants
inline = inline_calls

__all__ = [
    "constant_propagation",
    "cse",
    "dce",
    "eliminate_common_subexpression",
    "eliminate_dead_code",
    "fold_conv_bn",
    "freeze_graph",
    "inline",
    "inline_calls",
    "optimize_frozen",
    "peephole",
    "propagate_constants",
    "remove_dropout",
]

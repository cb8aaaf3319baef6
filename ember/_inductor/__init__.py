"""ember's compiler backend (torch's ``_inductor``): code generation from a captured trace.

``codegen`` turns a trace into one straight-line Python function over NumPy arrays; ``aot``
derives the backward at compile time from the op table's formulas and wraps forward and
backward as one autograd node.
"""

"""The state of one translation to ONNX: node list, constants, names, and small helpers."""

from __future__ import annotations

import numpy as np

from ember.onnx._graph import Value

INT64_MAX = np.iinfo(np.int64).max

# ops whose axes (or split sizes) moved from an attribute to an input, and the opset they did
_ATTR_UNTIL = {
    "Squeeze": (13, "axes"),
    "Unsqueeze": (13, "axes"),
    "Split": (13, "split"),
    "ReduceSum": (13, "axes"),
    **{
        f"Reduce{k}": (18, "axes")
        for k in ("Mean", "Max", "Min", "Prod", "L1", "L2", "LogSumExp", "SumSquare")
    },
}


def onnx_type(dtype) -> int:
    """Return the ONNX TensorProto element type of an ember dtype."""
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype.np))


class Context:
    """Builds the ONNX graph: ``add`` appends a node, ``const`` an initializer."""

    def __init__(self, opset: int):
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.names: dict = {}  # id(Value) -> ONNX name
        self.counts: dict = {}
        self.scope = ""
        self.const_values: dict = {}  # name -> array of the constants made here
        self.symbols: dict = {}  # dynamic dim symbol -> (input name, axis)
        self.symbol_values: dict = {}

    def fresh(self, base: str) -> str:
        n = self.counts.get(base, 0)
        self.counts[base] = n + 1
        return f"{base}_{n}" if n else base

    def name(self, v: Value) -> str:
        return self.names[id(v)]

    def add(self, op_type: str, inputs: list, n_out: int = 1, outputs=None, **attrs) -> list:
        """Append an ONNX node; return its output names."""
        from onnx import helper

        base = f"{self.scope}/{op_type}"
        node_name = self.fresh(base)
        if outputs is None:
            outputs = [f"{node_name}_output_{i}" for i in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        moved = _ATTR_UNTIL.get(op_type)
        if moved and self.opset < moved[0] and len(inputs) > 1:
            # older opsets take the (constant) axes as an attribute
            if inputs[1]:
                attrs[moved[1]] = [int(a) for a in self.const_values[inputs[1]].reshape(-1)]
            inputs = [inputs[0]]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=node_name, **attrs))
        return outputs

    def add1(self, op_type: str, inputs: list, **attrs) -> str:
        return self.add(op_type, inputs, **attrs)[0]

    def const(self, value, dtype=None, hint: str = "Constant") -> str:
        """Add a constant tensor (an initializer) and return its name."""
        from onnx import numpy_helper

        arr = np.asarray(value, dtype=dtype)
        name = self.fresh(f"onnx::{hint}")
        self.initializers.append(numpy_helper.from_array(arr.copy(order="C"), name))
        self.const_values[name] = arr
        return name

    def symbol(self, sym: str) -> str:
        """Return a one-element int64 tensor holding the run-time size of dynamic dim ``sym``."""
        name = self.symbol_values.get(sym)
        if name is None:
            src, axis = self.symbols[sym]
            saved, self.scope = self.scope, ""
            if self.opset >= 15:
                name = self.add1("Shape", [src], start=axis, end=axis + 1)
            else:
                name = self.add1("Gather", [self.add1("Shape", [src]), self.ints([axis])], axis=0)
            self.scope = saved
            self.symbol_values[sym] = name
        return name

    def ints(self, values, hint: str = "Constant") -> str:
        return self.const(np.asarray(list(values), dtype=np.int64), hint=hint)

"""The model graph of ``SummaryWriter.add_graph``: ember's tracer record as a TensorBoard GraphDef.

torch traces the module with TorchScript and writes one NodeDef per IR node; ember records the
op-table calls with ``ember.jit``'s tracer and writes them the same way: ``input/<arg>`` and
``output/output.<i>`` IO nodes, ``prim::GetAttr`` nodes for parameters and buffers, ``aten::<op>``
nodes named by module scope (``Net/Sequential[features]/Conv2d[0]/...``) with their output shapes.
The ops are ember's (``addmm`` where TorchScript shows ``linear``), the scopes are torch's.
"""

from __future__ import annotations

import inspect

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ember._core.tensor import Tensor

__all__ = ["graph", "load_onnx_graph"]


def _node(name: str, op: str, inputs=(), shape=None, attr: str = "") -> NodeDef:
    attrs = {"attr": AttrValue(s=attr.encode(encoding="utf_8"))}
    if shape is not None:
        dims = [TensorShapeProto.Dim(size=int(s)) for s in shape]
        attrs["_output_shapes"] = AttrValue(
            list=AttrValue.ListValue(shape=[TensorShapeProto(dim=dims)])
        )
    return NodeDef(name=name, op=op, input=list(inputs), attr=attrs)


def _scope_names(model) -> dict[str, str]:
    """Return {dotted module name: torch's scope string} for every submodule of ``model``."""
    root = type(model).__name__
    out = {"": root}
    for name, _ in model.named_modules():
        if not name:
            continue
        parent, _, attr = name.rpartition(".")
        out[name] = f"{out[parent]}/{type(model.get_submodule(name)).__name__}[{attr}]"
    return out


def graph(model, args, verbose: bool = False, use_strict_trace: bool = True):
    """Return ``(GraphDef, RunMetadata)`` of one traced call ``model(*args)``, run in eval mode."""
    from ember.jit._trace import Value, trace_graph

    if isinstance(args, Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    params = dict(model.state_dict(keep_vars=True))
    try:
        arg_names = [
            p.name
            for p in inspect.signature(model.forward).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        arg_names = []
    training = model.training
    model.eval()
    try:
        g, _ = trace_graph(model, args, params=params, input_names=arg_names)
    except Exception:
        print("Error occurs, No graph saved")
        raise
    finally:
        model.train(training)
    if verbose:
        print(g)

    scopes = _scope_names(model)
    root = scopes[""]
    names: dict[int, str] = {}  # id(Value) -> node name
    nodes = []
    for v in g.inputs:
        names[id(v)] = f"input/{v.name}"
        nodes.append(_node(names[id(v)], "IO Node", shape=v.shape))
    # every parameter and buffer the forward may read (ember's batch norm reads its running
    # statistics outside the op table, so they are not all among the traced values)
    by_name = {v.name: v for v in g.params}
    for key in params:
        if key.endswith("num_batches_tracked"):
            continue
        owner, _, leaf = key.rpartition(".")
        name = f"{scopes.get(owner, root)}/{leaf}/{leaf}"
        if key in by_name:
            names[id(by_name[key])] = name
        nodes.append(_node(name, "prim::GetAttr", attr=f"{{ name :  {leaf} }}"))
    for v in g.consts:
        names[id(v)] = f"{root}/{v.name}"
        nodes.append(_node(names[id(v)], "prim::Constant", shape=v.shape, attr="{}"))
    for n in g.nodes:
        scope = scopes.get(n.scope.rpartition("/")[2], root) if n.scope else root
        if not n.outputs:
            continue
        name = f"{scope}/{n.outputs[0].name}"
        for out in n.outputs:
            names[id(out)] = name
        inputs = [names[id(x)] for x in n.inputs if isinstance(x, Value) and id(x) in names]
        op = f"aten::{n.name}" if n.kind == "op" else n.name
        nodes.append(_node(name, op, inputs, shape=n.outputs[0].shape, attr="{}"))
    for i, v in enumerate(g.outputs):
        src = names.get(id(v))
        nodes.append(
            _node(f"output/output.{i + 1}", "IO Node", [src] if src else [], shape=v.shape)
        )
    stepstats = RunMetadata(
        step_stats=StepStats(dev_stats=[DeviceStepStats(device="/device:CPU:0")])
    )
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), stepstats


def load_onnx_graph(fname) -> GraphDef:
    """Return the GraphDef of the ONNX model in ``fname``: a ``Variable`` node per graph input
    and output, a node per ONNX node (named by its first output), as torch writes it."""
    import itertools

    import onnx

    g = onnx.load(fname).graph
    nodes = []
    for node in itertools.chain(g.input, g.output):
        print(node.name)
        dims = [TensorShapeProto.Dim(size=d.dim_value) for d in node.type.tensor_type.shape.dim]
        attrs = {
            "dtype": AttrValue(type=node.type.tensor_type.elem_type),
            "shape": AttrValue(shape=TensorShapeProto(dim=dims)),
        }
        nodes.append(NodeDef(name=node.name.encode(encoding="utf_8"), op="Variable", attr=attrs))
    for node in g.node:
        params = ", ".join(
            " = ".join(str(f[1]) for f in a.ListFields()) for a in node.attribute
        ).encode(encoding="utf_8")
        print(node.output[0])
        nodes.append(
            NodeDef(
                name=node.output[0].encode(encoding="utf_8"),
                op=node.op_type,
                input=node.input,
                attr={"parameters": AttrValue(s=params)},
            )
        )
    return GraphDef(node=nodes, versions=VersionDef(producer=22))

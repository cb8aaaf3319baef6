"""The model graph of ``SummaryWriter.add_graph``: ``ember.jit``'s IR as a TensorBoard GraphDef.

torch traces the module with TorchScript and writes one NodeDef per node of the inlined
graph; ember does the same with ``ember.jit``'s tracer (the IR ``jit.trace`` makes, in its
``inlined_graph`` form): ``input/<arg>`` and ``output/output.<i>`` IO nodes, ``prim::GetAttr``
nodes for parameters and buffers, one node per IR node (``aten::linear``, ``prim::Constant``,
``prim::ListConstruct``...) named by its module scope (``Net/Sequential[features]/Linear[0]/...``)
with its output shape.
"""

from __future__ import annotations

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


def _shape(v):
    from ember.jit.ir import TensorType

    t = v.type()
    return t.sizes() if isinstance(t, TensorType) else None


def graph(model, args, verbose: bool = False, use_strict_trace: bool = True):
    """Return ``(GraphDef, RunMetadata)`` of one traced call ``model(*args)``, run in eval mode."""
    from ember.jit._tracer import trace_to_graph

    if isinstance(args, Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    params = dict(model.state_dict(keep_vars=True))
    training = model.training
    model.eval()
    try:
        g, _ = trace_to_graph(model, args, module=model, inline=True)
    except Exception:
        print("Error occurs, No graph saved")
        raise
    finally:
        model.train(training)
    if verbose:
        print(g)

    scopes = _scope_names(model)
    root = scopes[""]
    names: dict = {}  # IR Value -> node name
    nodes = []
    ir_inputs = g.inputs()[1:]  # after %self
    for v in ir_inputs:
        base = v.debugName().split(".")[0]
        names[v] = f"input/{base}"
        nodes.append(_node(names[v], "IO Node", shape=_shape(v)))
    # every parameter and buffer the forward may read, as torch lists them
    param_names = {}
    for key in params:
        if key.endswith("num_batches_tracked"):
            continue
        owner, _, leaf = key.rpartition(".")
        param_names[key] = f"{scopes.get(owner, root)}/{leaf}/{leaf}"
        nodes.append(_node(param_names[key], "prim::GetAttr", attr=f"{{ name :  {leaf} }}"))
    paths = {g.inputs()[0]: ""}  # module values -> dotted path
    for n in g.nodes():
        kind = n.kind()
        if kind == "prim::GetAttr":
            parent = paths.get(n.inputs()[0])
            if parent is None:
                continue
            path = f"{parent}.{n.s('name')}" if parent else n.s("name")
            if path in param_names:
                names[n.output()] = param_names[path]
            else:
                paths[n.output()] = path
            continue
        if not n.outputs():
            continue
        scope = n.scopeName().rpartition("/")[2].removeprefix("__module.")
        prefix = scopes.get(scope, root) if scope else root
        out = n.outputs()[0]
        name = f"{prefix}/{out.debugName()}"
        for o in n.outputs():
            names[o] = name
        inputs = [names[x] for x in n.inputs() if x in names]
        nodes.append(_node(name, kind, inputs, shape=_shape(out), attr="{}"))
    result = g.outputs()[0]
    outs = (
        list(result.node().inputs())
        if result.node().kind() in ("prim::TupleConstruct", "prim::ListConstruct")
        else [result]
    )
    for i, v in enumerate(outs):
        src = names.get(v)
        nodes.append(
            _node(f"output/output.{i + 1}", "IO Node", [src] if src else [], shape=_shape(v))
        )
    cpu = DeviceStepStats(device="/device:CPU:0")
    run = RunMetadata(step_stats=StepStats(dev_stats=[cpu]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), run


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

"""``export``: read a model's jit IR (``_graph.py``) and write it as an ONNX model."""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import warnings

from ember._core.tensor import Tensor
from ember.onnx import (
    _dynamic,
    _symbolic_more,  # noqa: F401  (registers its translations)
    _symbolic_shape,  # noqa: F401
)
from ember.onnx._context import Context, onnx_type
from ember.onnx._graph import ControlFlowError, TracingError, Value, flatten, scripted, trace
from ember.onnx._modules import MODULE_SYMBOLICS
from ember.onnx._program import ONNXProgram
from ember.onnx._state import EXPORTING, TrainingMode
from ember.onnx._symbolic import lookup
from ember.onnx._symbolic_aten import ATEN
from ember.onnx.errors import OnnxExporterError, UnsupportedOperatorError

DEFAULT_OPSET = 20  # torch's TorchScript-based exporter's default (torch.onnx._constants)
MIN_OPSET, MAX_OPSET = 11, 20


@contextlib.contextmanager
def _mode(model, training):
    from ember.nn import Module

    if not isinstance(model, Module):
        yield
        return
    preserve_training = training == TrainingMode.PRESERVE and any(
        m.training for m in model.modules()
    )
    if training == TrainingMode.TRAINING or preserve_training:
        raise OnnxExporterError(
            "ember exports evaluation-mode graphs only: export with training=TrainingMode.EVAL "
            "or TrainingMode.PRESERVE of a model in eval mode"
        )
    if training == TrainingMode.PRESERVE:
        yield
        return
    was = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was)


def _params_of(model) -> dict:
    from ember.nn import Module

    if not isinstance(model, Module):
        return {}
    named = dict(model.named_parameters())
    named.update(model.named_buffers())
    return named


def export(
    model,
    args=(),
    f=None,
    *,
    kwargs: dict | None = None,
    verbose: bool | None = None,
    input_names=None,
    output_names=None,
    opset_version: int | None = None,
    dynamo: bool = True,
    external_data: bool = True,
    dynamic_shapes=None,
    custom_translation_table=None,
    report: bool = False,
    optimize: bool = True,
    verify: bool = False,
    profile: bool = False,
    dump_exported_program: bool = False,
    artifacts_dir=".",
    export_params: bool = True,
    keep_initializers_as_inputs: bool = False,
    dynamic_axes=None,
    training: TrainingMode = TrainingMode.EVAL,
    operator_export_type=None,
    do_constant_folding: bool = True,
    custom_opsets=None,
    export_modules_as_functions=False,
    autograd_inlining: bool = True,
):
    """Export ``model`` (an ``nn.Module`` or a function of tensors) to ONNX by tracing it once
    on ``args``; write the model to ``f`` (a path or a binary file object).

    Whatever ``dynamo`` says, the graph is made the way torch's TorchScript-based exporter
    makes it: a trace of one run on the example inputs (Python control flow fixed), or for a
    ``jit.script``-compiled module its own graph (branches and loops on the data as ONNX's
    ``If`` and ``Loop``).
    ``dynamic_axes`` (``{name: {dim: "symbol"}}`` or ``{name: [dims]}``) or ``dynamic_shapes``
    (per argument of ``forward``: ``{dim: "symbol"}``) make those dims symbolic. Options of the
    dynamo exporter with no meaning here (``report``, ``verify``, ``optimize``...) are accepted
    and ignored. Return an ``ONNXProgram`` when ``dynamo`` (torch's default), else None."""
    for name, value, default in (
        ("custom_translation_table", custom_translation_table, None),
        ("custom_opsets", custom_opsets, None),
        ("export_modules_as_functions", export_modules_as_functions, False),
    ):
        if value not in (default, {}, ()):
            raise OnnxExporterError(f"ember's ONNX exporter does not support {name}")
    import onnx

    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(
            f"ember exports ONNX opset versions {MIN_OPSET} to {MAX_OPSET}, got {opset}"
        )
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict) and kwargs is None:
        kwargs, args = args[-1], args[:-1]  # torch's legacy "dict as the last arg" form
    params = _params_of(model)
    if dynamic_shapes is not None:
        dynamic_axes = {
            **_axes_from_shapes(model, args, kwargs, dynamic_shapes, input_names),
            **(dynamic_axes or {}),
        }

    def build(script_graph):
        def run(a, k):
            return trace(model, a, k, params, input_names, do_constant_folding, script_graph)

        with _mode(model, training):
            from ember._core.grad_mode import no_grad

            with no_grad():
                try:
                    graph = run(args, kwargs)
                    built.append(graph)
                    if dynamic_axes:
                        _dynamic.follow_dynamic_dims(graph, args, kwargs, dynamic_axes, run)
                except TracingError as e:
                    raise OnnxExporterError(str(e)) from None
        return to_onnx(
            graph,
            opset,
            input_names,
            output_names,
            dynamic_axes,
            export_params,
            keep_initializers_as_inputs,
        )

    built: list = []
    EXPORTING[0] = True
    try:
        if scripted(model):
            try:
                proto = build(True)  # the scripted module's own graph
            except ControlFlowError:
                raise
            except Exception:  # noqa: BLE001 (a node kind the translation lacks...)
                if built and any(n.kind in ("if", "loop") for n in built[0].nodes):
                    raise  # a trace would fix the branch the data takes: not that silently
                # what the scripted graph holds that is not translated yet: trace its run
                # instead (its control flow then fixed by the example inputs, as any trace)
                proto = build(False)
        else:
            proto = build(False)
    finally:
        EXPORTING[0] = False
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    result = ONNXProgram(proto) if dynamo else None
    if f is None:
        return result
    data = proto.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    elif isinstance(f, io.IOBase) or hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"f must be a path or a writable binary file, got {type(f).__name__}")
    return result


def _axes_from_shapes(model, args, kwargs, dynamic_shapes, input_names) -> dict:
    """Turn dynamo-style ``dynamic_shapes`` (per argument: ``{dim: name}`` or a list with one
    entry per dim) into ``dynamic_axes`` keyed by the graph's input names."""
    fn = getattr(model, "forward", model)
    bound = inspect.signature(fn).bind(*args, **(kwargs or {}))
    flat = [t for t in flatten(list(args) + list((kwargs or {}).values())) if isinstance(t, Tensor)]
    names = list(input_names or [])
    if isinstance(dynamic_shapes, dict):
        specs = [(bound.arguments.get(k), v) for k, v in dynamic_shapes.items()]
    else:
        specs = list(zip(args, dynamic_shapes))
    axes = {}
    for value, spec in specs:
        if not isinstance(value, Tensor) or spec is None:
            continue
        i = next(j for j, t in enumerate(flat) if t is value)
        name = names[i] if i < len(names) else f"input.{i + 1}"
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        axes[name] = {
            int(d): dim if isinstance(dim, str) else getattr(dim, "__name__", f"{name}_dim{d}")
            for d, dim in items
            if dim is not None
        }
    return axes


def _dims(name, shape, dynamic_axes):
    spec = (dynamic_axes or {}).get(name)
    if spec is None:
        return list(shape)
    if not isinstance(spec, dict):
        spec = {int(d): f"{name}_dynamic_axes_{i + 1}" for i, d in enumerate(spec)}
    return [spec.get(i, n) for i, n in enumerate(shape)]


def to_onnx(
    graph,
    opset,
    input_names=None,
    output_names=None,
    dynamic_axes=None,
    export_params=True,
    keep_initializers_as_inputs=False,
):
    """Translate a read ``Graph`` (``_graph.read``) into an ``onnx.ModelProto``."""
    from onnx import helper, numpy_helper

    ctx = Context(opset)
    _check_names(graph, input_names, output_names, dynamic_axes)
    for v in graph.inputs:
        ctx.names[id(v)] = v.name
    ctx.symbols = {
        sym: (graph.inputs[i].name, axis)
        for sym, (i, axis) in _dynamic.symbols(graph, dynamic_axes).items()
    }
    extra = list(input_names or [])[len(graph.inputs) :]
    for i, v in enumerate(graph.params):
        ctx.names[id(v)] = extra[i] if i < len(extra) else v.name  # names past the inputs
    for v in graph.consts:
        ctx.names[id(v)] = ctx.const(v.data, hint="Constant")
    _emit(ctx, graph.nodes, _live_nodes(graph), opset)
    ctx.scope = ""
    # graph outputs: named as asked (an Identity when a name is taken or an input is returned)
    out_names = list(output_names or [])
    outputs = []
    for i, v in enumerate(graph.outputs):
        src = ctx.name(v)
        want = out_names[i] if i < len(out_names) else None
        if want is None and (v.kind != "node" or src in [o.name for o in outputs]):
            want = ctx.fresh(f"output_{i}")
        if want is not None and want != src:
            _rename_or_copy(ctx, v, src, want, {o.name for o in outputs})
            src = want
        dims = _dims(src, v.shape, dynamic_axes)
        if dynamic_axes and src not in dynamic_axes:
            dims = [None] * len(dims)  # may follow a dynamic input: left unknown
        outputs.append(_info(src, v.dtype, dims))
    inputs = [_info(v.name, v.dtype, _dims(v.name, v.shape, dynamic_axes)) for v in graph.inputs]
    ctx.nodes = _prune(ctx.nodes, {o.name for o in outputs})
    used = {n for node in ctx.nodes for n in _reads(node)} | {o.name for o in outputs}
    params = [v for v in graph.params if ctx.name(v) in used]
    initializers = [i for i in ctx.initializers if i.name in used]
    if export_params:
        initializers = [numpy_helper.from_array(v.data, ctx.name(v)) for v in params] + initializers
        if keep_initializers_as_inputs:
            inputs += [_info(ctx.name(v), v.dtype, v.shape) for v in params]
    else:
        inputs += [_info(ctx.name(v), v.dtype, v.shape) for v in params]
    g = helper.make_graph(ctx.nodes, "main_graph", inputs, outputs, initializers)
    model = helper.make_model(
        g,
        opset_imports=[helper.make_opsetid("", opset)],
        producer_name="ember",
        ir_version=helper.find_min_ir_version_for([helper.make_opsetid("", opset)]),
    )
    from ember.version import ember_version

    model.producer_version = ember_version
    return model


def _emit(ctx, nodes, live, opset) -> None:
    """Translate ``nodes`` (those in ``live``, or all when it is None) into ``ctx``."""
    for node in nodes:
        if live is not None and id(node) not in live:
            continue
        if node.kind == "if":
            _emit_if(ctx, node, opset)
            continue
        if node.kind == "loop":
            _emit_loop(ctx, node, opset)
            continue
        ins = [_onnx_arg(ctx, a) for a in node.inputs]
        if node.kind == "module":
            fn = MODULE_SYMBOLICS.get(type(node.target).__name__)
        elif node.positional:
            fn = ATEN.get(f"aten::{node.name}")
        else:
            fn = lookup(node.name)
        ctx.scope = node.scope
        if fn is None:
            raise UnsupportedOperatorError(f"aten::{node.name}", opset, None)
        if node.positional:  # by node kind, on the node's positional arguments
            outs = fn(ctx, node, *ins)
        else:  # recorded without a schema: by op name, on the op's parameters
            outs = fn(ctx, node, *ins, **{k: v for k, v in node.params.items() if k != "out"})
        for v, name in zip(node.outputs, outs):
            if v is not None:
                ctx.names[id(v)] = name


def _emit_if(ctx, node, opset) -> None:
    """A branch on the data: ONNX's ``If`` with one subgraph per branch (they read the outer
    graph's values by name; each ends in Identities naming its outputs)."""
    from onnx import helper

    graphs = []
    saved = ctx.nodes
    for i, (nodes, outs) in enumerate(node.blocks):
        ctx.nodes = []
        _emit(ctx, nodes, None, opset)
        ctx.scope = node.scope
        infos = []
        for v in outs:
            name = ctx.fresh(f"{node.scope}/If_branch{i}_output")
            ctx.add("Identity", [ctx.name(v)], outputs=[name])
            infos.append(helper.make_tensor_value_info(name, onnx_type(v.dtype), None))
        graphs.append(helper.make_graph(ctx.nodes, f"{node.scope}/If_branch{i}", [], infos))
    ctx.nodes = saved
    ctx.scope = node.scope
    outs = ctx.add("If", [ctx.name(node.inputs[0])], n_out=len(node.outputs),
                   then_branch=graphs[0], else_branch=graphs[1])  # fmt: skip
    for v, name in zip(node.outputs, outs):
        ctx.names[id(v)] = name


def _emit_loop(ctx, node, opset) -> None:
    """A loop on the data: ONNX's ``Loop`` whose body takes (iteration, condition, carried
    values) and gives (condition, carried values)."""
    import numpy as np
    from onnx import TensorProto, helper

    nodes, own, outs = node.blocks
    trip, cond, *init = node.inputs[: node.n_loop_inputs]
    ctx.scope = node.scope
    for v in own:
        ctx.names[id(v)] = ctx.fresh(f"{node.scope}/Loop_{v.name.split('.')[0]}")
    cond_in = ctx.fresh(f"{node.scope}/Loop_cond")
    saved, ctx.nodes = ctx.nodes, []
    _emit(ctx, nodes, None, opset)
    ctx.scope = node.scope
    infos = []
    for i, v in enumerate(outs):
        src = ctx.name(v) if isinstance(v, Value) else ctx.const(np.asarray(v, dtype=np.bool_))
        name = ctx.fresh(f"{node.scope}/Loop_body_output")
        ctx.add("Identity", [src], outputs=[name])
        elem = TensorProto.BOOL if i == 0 else onnx_type(v.dtype)
        infos.append(helper.make_tensor_value_info(name, elem, None))
    body_inputs = [
        helper.make_tensor_value_info(ctx.name(own[0]), TensorProto.INT64, []),
        helper.make_tensor_value_info(cond_in, TensorProto.BOOL, []),
        *[helper.make_tensor_value_info(ctx.name(v), onnx_type(v.dtype), None) for v in own[1:]],
    ]
    body = helper.make_graph(ctx.nodes, f"{node.scope}/Loop_body", body_inputs, infos)
    ctx.nodes = saved

    def tensor(a, dtype):
        if isinstance(a, Value):
            return ctx.name(a)
        return ctx.const(np.asarray(a, dtype=dtype))

    trip_in = tensor(trip, np.int64)
    if node.dyn and "trip" in node.dyn:  # a trip count that follows the dynamic dims
        from ember.onnx._dynamic import size_tensor

        trip_in = ctx.add1("Reshape", [size_tensor(ctx, node.dyn["trip"]), ctx.ints([])])
    ins = [trip_in, tensor(cond, np.bool_), *[tensor(a, None) for a in init]]
    names = ctx.add("Loop", ins, n_out=len(node.outputs), body=body)
    for v, name in zip(node.outputs, names):
        ctx.names[id(v)] = name


def _info(name, dtype, dims):
    from onnx import helper

    return helper.make_tensor_value_info(name, onnx_type(dtype), list(dims))


def _check_names(graph, input_names, output_names, dynamic_axes):
    if output_names is not None and len(output_names) > len(graph.outputs):
        raise RuntimeError(
            f"number of output names provided ({len(output_names)}) exceeded number of outputs "
            f"({len(graph.outputs)})"
        )
    n_in = len(graph.inputs) + len(graph.params)  # torch's graph takes the parameters last
    if input_names is not None and len(input_names) > n_in:
        raise RuntimeError(
            f"number of input names provided ({len(input_names)}) exceeded number of inputs "
            f"({n_in})"
        )
    known = {v.name for v in graph.inputs} | set(output_names or [])
    for name in dynamic_axes or {}:
        if name not in known:
            warnings.warn(
                f"Provided key {name} for dynamic axes is not a valid input/output name",
                stacklevel=3,
            )


def _onnx_arg(ctx, a):
    if isinstance(a, Value):
        return ctx.name(a)
    if isinstance(a, (list, tuple)) and any(isinstance(e, Value) for e in a):
        return type(a)(_onnx_arg(ctx, e) for e in a)
    return a


def _live_nodes(graph) -> set:
    """Return the ids of the nodes an output depends on (dead code is not exported)."""
    live, stack = set(), [v.node for v in graph.outputs if v.node is not None]
    while stack:
        n = stack.pop()
        if id(n) in live:
            continue
        live.add(id(n))
        linked = [link[1] for link in (n.links or {}).values()]
        for a in [*_values(n.inputs), *linked]:
            if a.node is not None:
                stack.append(a.node)
    return live


def _prune(nodes: list, needed: set) -> list:
    """Drop the ONNX nodes no output depends on (a Transpose a Gemm made unnecessary...)."""
    kept = []
    for n in reversed(nodes):
        if any(o in needed for o in n.output):
            kept.append(n)
            needed.update(_reads(n))
    return kept[::-1]


def _reads(n) -> set:
    """The names an ONNX node reads, those its subgraphs read from outside included."""
    names = {i for i in n.input if i}
    for a in n.attribute:
        if a.type == a.GRAPH:
            inner = {o for m in a.g.node for o in m.output}
            for m in a.g.node:
                names.update(x for x in _reads(m) if x not in inner)
    return names


def _values(xs):
    for x in xs:
        if isinstance(x, Value):
            yield x
        elif isinstance(x, (list, tuple)):
            yield from _values(x)


def _rename_or_copy(ctx, v, src, want, outputs: set):
    producer = next((n for n in ctx.nodes if src in n.output), None) if v.kind == "node" else None
    taken = src in outputs or any(src in n.input for n in ctx.nodes)
    if producer is not None and not taken:
        producer.output[list(producer.output).index(src)] = want
        ctx.names[id(v)] = want
    else:
        ctx.add("Identity", [src], outputs=[want])

"""torch.jit's tracing, scripting and helper functions (re-exported by ``ember.jit``)."""

from __future__ import annotations

import difflib
import inspect
import re
import warnings
from typing import Any

from ember.jit._fork import Future, fork_call
from ember.jit._script import (
    RecursiveScriptModule,
    ScriptFunction,
    ScriptModule,
    TopLevelTracedModule,
    deprecated,
)
from ember.jit._tracer import (
    TracerWarning,
    trace_to_graph,
)


def _as_tuple(example_inputs) -> tuple:
    from ember._core.tensor import Tensor

    if isinstance(example_inputs, Tensor):
        return (example_inputs,)
    return tuple(example_inputs)


def _params(mod) -> dict:
    from ember.nn import Module

    if not isinstance(mod, Module):
        return {}
    named = dict(mod.named_parameters())
    named.update(mod.named_buffers())
    return named


_OPTIMIZE_DEPRECATED = (
    "`optimize` is deprecated and has no effect. Use `with torch.jit.optimized_execution()` instead"
)


def trace(
    func,
    example_inputs=None,
    optimize=None,
    check_trace: bool = True,
    check_inputs=None,
    check_tolerance: float = 1e-05,
    strict: bool = True,
    _force_outplace: bool = False,
    _module_class=None,
    _compilation_unit=None,
    example_kwarg_inputs: dict | None = None,
    _store_inputs: bool = True,
):
    """Run ``func`` (a function or an ``nn.Module``) on ``example_inputs`` and record its ops.

    Return a ``TopLevelTracedModule`` for a module, a ``ScriptFunction`` for a function; both
    run the recorded ``graph``. ``check_trace`` traces again (on ``check_inputs`` if given)
    and raises ``TracingCheckError`` when the ops or the outputs differ; ``strict=False``
    allows a dict output."""
    from ember.nn import Module

    deprecated("trace", "both")
    if isinstance(func, ScriptModule | ScriptFunction):
        warnings.warn(
            "The input to trace is already a ScriptModule, tracing it is a no-op. Returning the "
            "object as is.",
            stacklevel=2,
        )
        return func
    if optimize is not None:
        warnings.warn(_OPTIMIZE_DEPRECATED, FutureWarning, stacklevel=2)
    if example_inputs is None and example_kwarg_inputs is None:
        # torch fails inside its binding with a TypeError here too
        raise TypeError(
            "trace() needs example_inputs (a tuple of tensors) or "
            "example_kwarg_inputs (a dict of them)"
        )
    if example_kwarg_inputs is not None and not isinstance(example_kwarg_inputs, dict):
        raise RuntimeError("example_kwarg_inputs should be a dict")
    args = () if example_inputs is None else _as_tuple(example_inputs)
    if isinstance(func, Module):
        return trace_module(
            func,
            {"forward": args}
            if example_kwarg_inputs is None
            else {"forward": example_kwarg_inputs},
            check_trace=check_trace,
            check_inputs=None if check_inputs is None else [{"forward": c} for c in check_inputs],
            check_tolerance=check_tolerance,
            strict=strict,
            example_inputs_is_kwarg=example_kwarg_inputs is not None,
        )
    graph, _ = trace_to_graph(func, args, example_kwarg_inputs, strict=strict)
    traced = ScriptFunction(func, graph)
    if check_trace:
        for example in check_inputs or [args]:
            example = _as_tuple(example)
            deprecated("trace", "both")  # torch's check traces again, warning again
            again, _ = trace_to_graph(func, example, example_kwarg_inputs, strict=strict)
            kw = example_kwarg_inputs
            _check_trace(
                graph, again, traced, ScriptFunction(func, again), func, example,
                check_tolerance, kw,
            )  # fmt: skip
    return traced


def _indent(text: str) -> str:
    return "\n".join("\t" + line for line in text.splitlines())


class TracingCheckError(Exception):
    """A second trace of the same code recorded a different graph (as
    torch.jit.TracingCheckError)."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        parts = ["Tracing failed sanity checks!\n"]
        if extra_msg is not None:
            parts.append(extra_msg + "\n")
        if graph_diff_error is not None:
            parts.append("ERROR: Graphs differed across invocations!\n")
            parts.append(_indent(graph_diff_error) + "\n")
        if tensor_compare_error is not None:
            parts.append(
                "ERROR: Tensor-valued Constant nodes differed in value across invocations. "
                "This often indicates that the tracer has encountered untraceable code.\n"
            )
            parts.append(_indent(tensor_compare_error) + "\n")
        self.message = "".join(parts)
        super().__init__(self.message)


# a complete tensor type (``Float(2, 3, strides=[3, 1], ...)``): the check compares graphs
# with shapes erased, as torch's does
_TENSOR_TYPE = re.compile(
    r"\b(?:Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool|ComplexFloat|"
    r"ComplexDouble)\([^()]*\)"
)


_MANGLE = re.compile(r"___torch_mangle_[0-9]+\.")  # a class retraced gets a new name


def _canonical(graph) -> str:
    return _MANGLE.sub("", _TENSOR_TYPE.sub("Tensor", str(graph)))


_CONSTANT_VALUE = re.compile(r"\[value=.*\]\(\)")


def _written_constants(graph) -> set:
    """The tensor constants an in-place node of ``graph`` writes (``empty(2, 3).normal_()``:
    torch records ``aten::empty``, ember a constant holding the storage ``normal_`` fills).
    Their recorded values are what the trace's run wrote, so the check does not compare them."""
    out = set()
    for n in graph.nodes():
        ins = list(n.inputs())
        if n.kind().endswith("_") and ins and ins[0].node().kind() == "prim::Constant":
            c = ins[0].node()
            if "value" in c.attributeNames() and c.kindOf("value") == "t":
                out.add(c)
    return out


def _canonical_checked(graph, written: set) -> str:
    # the printed graph the check compares: shapes erased, written constants' values hidden
    text = _canonical(graph)
    for c in written:
        line = _canonical(c).rstrip("\n")
        text = text.replace(line, _CONSTANT_VALUE.sub("[value=<Tensor>]()", line))
    return text


def _diff(a: str, b: str) -> str:
    return "".join(difflib.ndiff(a.splitlines(True), b.splitlines(True)))


def _graph_errors(first, second):
    """Return ``(graph_diff, tensor_diff)`` between two traces of one function (None where
    they agree): the printed graphs, then the values of their tensor constants."""
    w1, w2 = _written_constants(first), _written_constants(second)
    a, b = _canonical_checked(first, w1), _canonical_checked(second, w2)
    written = w1 | w2
    graph_diff = None
    pairs = list(zip(first.nodes(), second.nodes()))
    if a != b:
        graph_diff = "Graph diff:\n" + _indent(_diff(a, b)) + "\n"
        for n, m in pairs:
            sn, sm = _canonical(n), _canonical(m)
            if sn != sm and not (n in written and m in written):
                graph_diff += "First diverging operator:\nNode diff:\n" + _indent(_diff(sn, sm))
                graph_diff += "\n"
                for what, node in (("Trace", n), ("Check", m)):
                    if node.sourceRange():
                        graph_diff += f"{what} source location:\n" + _indent(node.sourceRange())
                        graph_diff += "\n"
                break
    tensor_diff = None
    for n, m in pairs:
        if n.kind() != m.kind():
            break
        if n.kind() != "prim::Constant" or "value" not in n.attributeNames() or n in written:
            continue
        if n.kindOf("value") != "t" or m.kindOf("value") != "t":
            continue
        problem = _tensor_mismatch(n.t("value"), m.t("value"))
        if problem is not None:
            tensor_diff = "Node:\n" + _indent(_canonical(n)) + "\n"
            if n.sourceRange():
                tensor_diff += "Source Location:\n" + _indent(n.sourceRange()) + "\n"
            tensor_diff += "Comparison exception: " + _indent(problem)
            break
    return graph_diff, tensor_diff


def _tensor_mismatch(actual, expected, **tol) -> str | None:
    from ember.testing import assert_close

    try:
        assert_close(actual, expected, equal_nan=True, **tol)
    except (AssertionError, RuntimeError) as e:
        return str(e)
    return None


# the node kinds torch's ``Node.isNondeterministic`` reports (dropout only when training)
_NONDETERMINISTIC = frozenset(
    "aten::" + k
    for k in ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
              "randperm", "bernoulli", "bernoulli_", "normal", "normal_", "uniform_",
              "multinomial", "poisson", "random_", "exponential_", "geometric_",
              "log_normal_", "cauchy_", "dropout", "feature_dropout", "alpha_dropout")
)  # fmt: skip


def _nondeterministic(graph) -> list:
    found = []
    for n in graph.nodes():
        if n.kind() not in _NONDETERMINISTIC:
            continue
        if "dropout" in n.kind():
            train = n.inputs()[-1].node()
            if train.kind() == "prim::Constant" and not train.i("value"):
                continue
        found.append(n)
    return found


class _OutputCheck:
    """Compare a traced graph's outputs with the Python function's (torch's check warns on
    a mismatch, after warning once about nondeterministic nodes)."""

    def __init__(self, graph, tolerance):
        self.graph, self.tolerance, self.warned = graph, tolerance, False

    def _warn_nondeterministic(self) -> None:
        if self.warned:
            return
        self.warned = True
        nodes = _nondeterministic(self.graph)
        if nodes:
            warnings.warn(
                "Trace had nondeterministic nodes. Did you forget call .eval() on your model? "
                "Nodes:\n" + "\n".join(_indent(str(n)) for n in nodes[:20])
                + "\nThis may cause errors in trace checking. To disable trace checking, "
                "pass check_trace=False to torch.jit.trace()",
                TracerWarning,
                stacklevel=5,
            )  # fmt: skip

    def compare(self, got, expected, what) -> bool:
        from ember._core.tensor import Tensor
        from ember.jit._tracer import _flatten

        got = [t for t in _flatten(got) if isinstance(t, Tensor)]
        expected = [t for t in _flatten(expected) if isinstance(t, Tensor)]
        ok = True
        for i, (a, b) in enumerate(zip(got, expected)):
            problem = _tensor_mismatch(
                a.detach().double(), b.detach().double(), rtol=self.tolerance, atol=1e-5
            )
            if problem is not None:
                self._warn_nondeterministic()
                warnings.warn(
                    f"Output nr {i + 1}. of the traced function does not match the "
                    f"corresponding output of the {what}. Detailed error:\n{problem}",
                    TracerWarning,
                    stacklevel=5,
                )
                ok = False
        return ok


def _check_trace(graph, again, traced, again_fn, fn, inputs, tolerance, kwargs=None) -> None:
    """torch's trace check: outputs of the trace vs the function (then vs the repeated
    trace), warning on mismatches; then the two graphs, raising ``TracingCheckError``."""
    kwargs = kwargs or {}
    check = _OutputCheck(graph, tolerance)

    def run(f, what):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TracerWarning)
                return f(*_clone(inputs), **kwargs)
        except Exception as e:
            gd, td = _graph_errors(graph, again)
            msg = (
                f"encountered an exception while running the {what} with test inputs.\n"
                f"Exception:\n{_indent(str(e))}"
            )
            raise TracingCheckError(gd, td, extra_msg=msg) from e

    out = run(traced, "trace")
    if check.compare(out, run(fn, "Python function"), "Python function") and again_fn:
        check.compare(out, run(again_fn, "repeated trace"), "repeated trace")
    gd, td = _graph_errors(graph, again)
    if gd is not None or td is not None:
        raise TracingCheckError(gd, td)


def _clone(inputs) -> tuple:
    from ember._core.tensor import Tensor

    return tuple(a.clone() if isinstance(a, Tensor) else a for a in inputs)


def trace_module(
    mod,
    inputs: dict,
    optimize=None,
    check_trace: bool = True,
    check_inputs=None,
    check_tolerance: float = 1e-05,
    strict: bool = True,
    _force_outplace: bool = False,
    _module_class=None,
    _compilation_unit=None,
    example_inputs_is_kwarg: bool = False,
    _store_inputs: bool = True,
):
    """Trace the methods of ``mod`` named in ``inputs`` (``{"forward": example_inputs}``);
    return a ``TopLevelTracedModule`` (see ``trace``)."""
    from ember.nn import Module

    deprecated("trace_method", "both")
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    if optimize is not None:
        warnings.warn(_OPTIMIZE_DEPRECATED, FutureWarning, stacklevel=2)
    graphs = {}
    for name, example in inputs.items():
        method = getattr(mod, name)
        if example_inputs_is_kwarg:
            graphs[name], _ = trace_to_graph(method, (), example, module=mod, strict=strict)
        else:
            graphs[name], _ = trace_to_graph(method, _as_tuple(example), module=mod, strict=strict)
    traced = TopLevelTracedModule(mod, graphs.get("forward"))
    _attach_method_graphs(traced, graphs.get("forward"))
    if check_trace:
        for checks in check_inputs or [inputs]:
            example = checks.get("forward")
            if example_inputs_is_kwarg:
                again, _ = trace_to_graph(mod.forward, (), example, module=mod, strict=strict)
                _check_trace(graphs["forward"], again, traced, None, mod, (), check_tolerance,
                             example)  # fmt: skip
                continue
            example = _as_tuple(example)
            again, _ = trace_to_graph(mod.forward, example, module=mod, strict=strict)
            _check_trace(graphs["forward"], again, traced, None, mod, example, check_tolerance)
    return traced


def _attach_method_graphs(traced, graph) -> None:
    """Give each called submodule of a traced module its own graph (``traced.fc.graph``)."""
    for path, sub in (getattr(graph, "_method_graphs", None) or {}).items():
        m = traced
        for p in path:
            m = m._modules[p]
        if m.__dict__.get("_made_by_trace"):  # not a script module the user put there
            m.__dict__["_graph"] = sub


def _compile_exports(scripted, module) -> None:
    """Compile the module's ``@jit.export`` methods; each runs its graph on the script
    module (``scripted.method.graph``)."""
    from ember.jit._compiler import Unsupported, compile_function
    from ember.jit._script import ScriptMethod

    seen = set()
    for klass in type(module).__mro__:
        for name, fn in vars(klass).items():
            if name in seen or getattr(fn, "_torchscript_modifier", None) != "export":
                continue
            seen.add(name)
            try:
                graph = compile_function(fn, module=module)
            except Unsupported:
                continue  # beyond ember's compiler: the method stays eager Python
            scripted.__dict__[name] = ScriptMethod(module, fn, graph)


def _has_no_forward(module) -> bool:
    from ember.nn.modules.module import _missing_forward

    return getattr(type(module), "forward", None) is _missing_forward


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Compile ``obj`` (a module's ``forward`` and what it calls, or a function) to a graph:
    a module becomes a ``RecursiveScriptModule``, a function a ``ScriptFunction``, both
    running the graph. What TorchScript rejects raises torch's error quoting the line; what
    ember's compiler does not cover yet keeps the eager code (no ``graph``). A class is
    returned unchanged."""
    from ember.nn import Module

    deprecated("script", "both")
    if isinstance(obj, ScriptModule | ScriptFunction):
        return obj
    from ember.jit._compiler import Unsupported, compile_function, compile_module

    if isinstance(obj, Module):
        try:
            # a container without a forward (ModuleList, ModuleDict) scripts as in torch;
            # calling it then raises AttributeError (ScriptModule.forward)
            graph = None if _has_no_forward(obj) else compile_module(obj)
        except Unsupported:
            graph = None  # beyond ember's compiler: the module runs its eager forward
        scripted = RecursiveScriptModule(obj, graph)
        _compile_exports(scripted, obj)
        return scripted
    if inspect.isclass(obj):
        return obj
    if callable(obj):
        try:
            graph = compile_function(obj)
        except Unsupported:
            graph = None
        return ScriptFunction(obj, graph)
    raise RuntimeError(
        f"Type '{type(obj).__name__}' cannot be compiled since it is not a "
        "function, class or module"
    )


def is_scripting() -> bool:
    """Return False: ember never compiles code (torch returns True inside TorchScript)."""
    return False


def ignore(drop=False, **kwargs):
    """Mark a function as left to Python by the compiler; return it (usable as ``@ignore`` or
    ``@ignore(drop=True)``)."""
    if callable(drop):
        drop._torchscript_modifier = "ignore"
        return drop
    if not isinstance(drop, bool):
        raise RuntimeError(
            f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}"
        )
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export:
        warnings.warn(
            "ignore(drop_on_export=True) has been deprecated. TorchScript will now drop the "
            "function call on compilation. Use torch.jit.unused now. {}",
            stacklevel=2,
            category=FutureWarning,
        )
        drop = drop_on_export
    elif drop:
        warnings.warn(
            "ignore(True) has been deprecated. TorchScript will now drop the function "
            "call on compilation. Use torch.jit.unused now. {}",
            stacklevel=2,
            category=FutureWarning,
        )

    def decorator(fn):
        fn._torchscript_modifier = "unused" if drop else "ignore"
        return fn

    return decorator


def unused(fn):
    """Mark a function or method as not compiled; return it."""
    if isinstance(fn, property):
        return fn
    fn._torchscript_modifier = "unused"
    return fn


def export(fn):
    """Mark a method as compiled even when ``forward`` does not call it; return it."""
    fn._torchscript_modifier = "export"
    return fn


def annotate(the_type, the_value):
    """Return ``the_value`` (a type hint for the TorchScript compiler)."""
    return the_value


def fork(func, *args, **kwargs) -> Future:
    """Run ``func(*args, **kwargs)`` on ember's inter-op thread pool and return a ``Future``
    at once (torch's eager mode runs it inline; its TorchScript runs it asynchronously, as
    ember does); ``wait`` returns the result or raises the task's exception."""
    deprecated("fork", "compile")
    return fork_call(func, *args, **kwargs)


def wait(future: Future) -> Any:
    """Return the result of a ``fork``."""
    deprecated("wait", "compile")
    return future.wait()

"""ONNX export from ember's jit IR: the functional forms at the default opset, scripted modules
(their compiled graph with loops and branches read through), dynamic axes, traced sizes, and
the IR's node kinds as the exporter reads them; compared with onnxruntime, ember's eager
output and torch's own export."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ember
from tests.oracle._onnx_helper import _export, _fn_module, _run, check_export

_rng = np.random.default_rng(16)

_FUNCTIONAL = {
    "torch_max_pool2d": lambda lib, x: lib.max_pool2d(x, 2),
    "F_max_pool2d_no_indices": lambda lib, x: lib.nn.functional.max_pool2d(
        x, 3, 2, 1, return_indices=False
    ),
    "F_max_pool2d_ceil_dilation": lambda lib, x: lib.nn.functional.max_pool2d(
        x, 2, 2, 0, 2, ceil_mode=True
    ),
    "F_adaptive_avg_pool2d_grid": lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (4, 2)),
    "F_adaptive_avg_pool2d_one": lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, 1),
    "F_interpolate_nearest": lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2),
    "F_interpolate_bilinear": lambda lib, x: lib.nn.functional.interpolate(
        x, size=(5, 7), mode="bilinear", align_corners=False
    ),
}


@pytest.mark.parametrize("name", sorted(_FUNCTIONAL))
def test_functional_forms_export_at_the_default_opset(name):
    # the default exporter path, dynamic batch; ORT == ember eager == torch's exported file
    proto = check_export(_fn_module(_FUNCTIONAL[name]), [(2, 3, 8, 8)])
    assert proto.opset_import[0].version == 20 == torch.onnx._constants.ONNX_DEFAULT_OPSET


def test_adaptive_avg_pool2d_to_sizes_torch_refuses():
    # torch exports only output sizes dividing the input's; ember's is one matrix per dim
    f = lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (3, 5))  # noqa: E731
    check_export(_fn_module(f), [(2, 3, 8, 7)], torch_too=False)


def test_functional_max_pool_is_one_maxpool_node_as_torch():
    x = _rng.normal(size=(1, 2, 6, 6)).astype(np.float32)
    make = _fn_module(lambda lib, t: lib.nn.functional.max_pool2d(t, 2))
    mine = onnx.load_from_string(_export(ember, make(ember), (ember.tensor(x),)))
    theirs = onnx.load_from_string(_export(torch, make(torch), (torch.from_numpy(x),)))
    assert [n.op_type for n in mine.graph.node] == [n.op_type for n in theirs.graph.node]
    assert [n.op_type for n in mine.graph.node] == ["MaxPool"]


def _scripted_pair():
    def make(lib):
        nn = lib.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)
                self.n = 3
                self.use_relu = True

            def forward(self, x):
                y = self.fc(x)
                for _ in range(self.n):
                    y = y * 2.0 + 1.0
                if self.use_relu:
                    y = y.relu()
                if x.dim() == 2:
                    y = y - 1.0
                return y

        return M().eval()

    tm, em = make(torch), make(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, em


def test_scripted_module_with_loops_and_branches_reads_its_graph():
    tm, em = _scripted_pair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        se, st = ember.jit.script(em), torch.jit.script(tm)
    assert se.graph.findNode("prim::Loop") is not None
    assert se.graph.findNode("prim::If") is not None
    x = _rng.normal(size=(2, 4)).astype(np.float32)
    opts = dict(input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})
    data = _export(ember, se, (ember.tensor(x),), **opts)
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Mul") == 3 and "Relu" in ops  # three iterations, the branch taken
    assert {i.name for i in proto.graph.initializer} >= {"fc.weight", "fc.bias"}
    tdata = _export(torch, st, (torch.from_numpy(x),), **opts)
    for xs in (x, _rng.normal(size=(5, 4)).astype(np.float32)):
        (got,) = _run(data, {"x": xs})
        with ember.no_grad():
            np.testing.assert_allclose(got, em(ember.tensor(xs)).numpy(), atol=1e-5)
        np.testing.assert_allclose(got, _run(tdata, {"x": xs})[0], atol=1e-5)


def _branchy(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 3)

        def forward(self, x):
            y = self.fc(x)
            if bool(y.sum() > 0):
                z = y * 2 + x
            else:
                w = y - 1
                z = w.relu()
            return z.tanh()

    return M().eval()


def test_scripted_branch_on_the_data_exports_as_onnx_if():
    tm, em = _branchy(torch), _branchy(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        se, st = ember.jit.script(em), torch.jit.script(tm)
    x = np.abs(_rng.normal(size=(2, 3))).astype(np.float32)
    opts = dict(input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})
    data = _export(ember, se, (ember.tensor(x),), **opts)
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    ifs = [n for n in proto.graph.node if n.op_type == "If"]
    assert len(ifs) == 1 and {a.name for a in ifs[0].attribute} == {"then_branch", "else_branch"}
    tdata = _export(torch, st, (torch.from_numpy(x),), **opts)
    for xs in (x, -10 * x, _rng.normal(size=(4, 3)).astype(np.float32) * 5):
        (got,) = _run(data, {"x": xs})
        with ember.no_grad():
            np.testing.assert_allclose(got, em(ember.tensor(xs)).numpy(), atol=1e-5)
        np.testing.assert_allclose(got, _run(tdata, {"x": xs})[0], atol=1e-5)


def test_scripted_loop_on_the_data_exports_as_onnx_loop():
    def make(lib):
        class M(lib.nn.Module):
            def forward(self, x):
                while bool(x.sum() < 10):
                    x = x * 2
                return x

        return M()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        se, st = ember.jit.script(make(ember)), torch.jit.script(make(torch))
    x = np.full(3, 0.5, np.float32)
    data = _export(ember, se, (ember.tensor(x),), input_names=["x"])
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    assert [n.op_type for n in proto.graph.node].count("Loop") == 1
    tdata = _export(torch, st, (torch.from_numpy(x),), input_names=["x"])
    for xs in (x, np.full(3, 0.01, np.float32), np.full(3, 7.0, np.float32)):
        (got,) = _run(data, {"x": xs})
        np.testing.assert_allclose(got, se(ember.tensor(xs)).numpy())
        np.testing.assert_allclose(got, _run(tdata, {"x": xs})[0])


def test_traced_sizes_follow_dynamic_axes():
    # x.size(0) is aten::size in the IR; the exporter computes it at run time
    def make(lib):
        class M(lib.nn.Module):
            def forward(self, x):
                n = x.size(0)
                return x.reshape(n, -1).sum(1) + x.shape[1]

        return M()

    proto = check_export(make, [(3, 4, 5)], batch2=7)
    assert "Reshape" in [n.op_type for n in proto.graph.node]


def test_exporter_reads_the_ir_the_tracer_records():
    # one IR: the nodes the exporter translates are jit.trace's (aten::linear, aten::relu)
    from ember.jit._tracer import trace_to_graph
    from ember.onnx._graph import read

    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU()).eval()
    x = ember.randn(2, 3)
    with ember.no_grad():
        g, _ = trace_to_graph(m, (x,), module=m)
    assert [n.kind() for n in g.nodes() if n.kind() == "prim::CallMethod"] == [
        "prim::CallMethod"
    ] * 2
    read_graph = read(g, [m, x], m, dict(m.named_parameters()))
    assert [(n.name, n.scope, n.positional) for n in read_graph.nodes] == [
        ("linear", "/0", True),
        ("relu", "/1", True),
    ]
    assert [v.name for v in read_graph.params] == ["0.weight", "0.bias"]


def test_one_ir_the_old_listing_is_gone():
    # the tracer module keeps only tracing state; the exporter's nodes come from ember.jit.ir
    import ember.jit._tracer as state

    assert not any(hasattr(state, n) for n in ("Graph", "Value", "Tracer", "trace_graph"))
    assert state.is_tracing() is False
    seen = []

    def f(x):
        seen.append(state.is_tracing())
        return x * 2

    ember.onnx.export(f, (ember.ones(2),), io.BytesIO())
    assert seen[0] is True


def test_scripted_loop_over_a_size_exports_as_onnx_loop():
    # ``for i in range(x.size(0))``: the trip count is computed from the input's shape (ONNX's
    # Loop over Shape), so a dynamic batch runs as many iterations as it has rows, as torch's
    def make(lib):
        class M(lib.nn.Module):
            def forward(self, x):
                y = x[0] * 0
                for i in range(x.size(0)):
                    y = y + x[i] * 2
                return y

        return M()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        se, st = ember.jit.script(make(ember)), torch.jit.script(make(torch))
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    axes = {"dynamic_axes": {"x": {0: "n"}}, "input_names": ["x"]}
    data = _export(ember, se, (ember.tensor(x),), **axes)
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    assert [n.op_type for n in proto.graph.node].count("Loop") == 1
    tdata = _export(torch, st, (torch.from_numpy(x),), **axes)
    for rows in (3, 5, 1):
        xs = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
        (got,) = _run(data, {"x": xs})
        np.testing.assert_allclose(got, se(ember.tensor(xs)).numpy())
        np.testing.assert_allclose(got, _run(tdata, {"x": xs})[0])

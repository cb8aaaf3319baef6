"""ember.onnx.export's interface: names, dynamic axes and shapes, modes, errors, the returned
ONNXProgram, signatures, against torch.onnx where torch answers."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ember
from ember.onnx.errors import OnnxExporterError, UnsupportedOperatorError
from tests.oracle._onnx_helper import (
    _build,
    _export,
    _mlp,
    _rng,
    _run,
    check_export,
)


def test_static_shapes_and_initializer_names():
    proto = check_export(_mlp, [(2, 6)], dynamic=False)
    inits = {i.name for i in proto.graph.initializer}
    assert {"0.weight", "0.bias", "3.weight", "5.weight"} <= inits
    assert [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim] == [2, 6]
    assert proto.opset_import[0].version == 20


def test_dynamic_axes_names():
    em = _mlp(ember).eval()
    data = _export(
        ember,
        em,
        (ember.randn(2, 6),),
        input_names=["x"],
        output_names=["y"],
        dynamic_axes={"x": {0: "n"}, "y": [0]},
    )
    proto = onnx.load_from_string(data)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "n"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "y_dynamic_axes_1"


def test_function_and_path_and_default_names(tmp_path):
    path = tmp_path / "f.onnx"
    ember.onnx.export(lambda x: (x * 2).relu(), (ember.randn(3),), str(path))
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    (y,) = _run(proto.SerializeToString(), {proto.graph.input[0].name: x})
    np.testing.assert_allclose(y, [0.0, 1.0, 4.0])


def test_export_params_false_makes_weights_inputs():
    em = nn_linear = ember.nn.Linear(3, 2)
    data = _export(ember, em, (ember.randn(1, 3),), input_names=["x"], export_params=False)
    proto = onnx.load_from_string(data)
    assert [i.name for i in proto.graph.input] == ["x", "weight", "bias"]
    assert len(proto.graph.initializer) == 0
    w, b = nn_linear.weight.detach().numpy(), nn_linear.bias.detach().numpy()
    x = np.ones((1, 3), np.float32)
    (y,) = _run(data, {"x": x, "weight": w, "bias": b})
    np.testing.assert_allclose(y, x @ w.T + b, rtol=1e-6)


def test_model_mode_restored_and_is_in_onnx_export():
    seen = []

    class M(ember.nn.Module):
        def forward(self, x):
            seen.append((self.training, ember.onnx.is_in_onnx_export()))
            return x + 1

    m = M()
    ember.onnx.export(m, (ember.ones(2),), io.BytesIO())
    assert seen == [(False, True)] and m.training and not ember.onnx.is_in_onnx_export()


def test_unsupported_operator_error():
    with pytest.raises(UnsupportedOperatorError) as info:
        ember.onnx.export(lambda x: x.digamma(), (ember.ones(3),), io.BytesIO())
    assert str(info.value) == (
        "Exporting the operator 'aten::digamma' to ONNX opset version 20 is not supported"
    )
    assert isinstance(info.value, OnnxExporterError) and isinstance(info.value, RuntimeError)
    assert issubclass(torch.onnx.errors.UnsupportedOperatorError, torch.onnx.OnnxExporterError)


def test_functional_max_pool_exports():
    # read from the IR's aten::max_pool2d node (the functional form's indices stay unread)
    x = _rng.normal(size=(1, 2, 6, 6)).astype(np.float32)
    data = _export(ember, lambda t: ember.nn.functional.max_pool2d(t, 2), (ember.tensor(x),))
    (y,) = _run(data, {"input.1": x})
    np.testing.assert_allclose(y, torch.nn.functional.max_pool2d(torch.from_numpy(x), 2).numpy())


def test_training_mode_export_is_refused():
    with pytest.raises(OnnxExporterError, match="evaluation-mode"):
        ember.onnx.export(
            ember.nn.Linear(2, 2),
            (ember.ones(1, 2),),
            io.BytesIO(),
            training=ember.onnx.TrainingMode.TRAINING,
        )


def test_write_through_a_view_is_caught():
    def f(x):
        y = x * 1
        v = y[0]
        v.add_(1)  # changes y behind the tracer's back
        return y + 0

    with pytest.raises(OnnxExporterError, match="modified in place"):
        ember.onnx.export(f, (ember.ones(2, 2),), io.BytesIO())


def test_inplace_ops_are_recorded():
    def f(x):
        y = x.clone()
        y.mul_(3).add_(1)
        return y.relu_()

    data = _export(ember, f, (ember.ones(4),), input_names=["x"])
    x = np.array([-1.0, 0.0, 1.0, 2.0], np.float32)
    np.testing.assert_allclose(_run(data, {"x": x})[0], np.maximum(3 * x + 1, 0))


def test_data_dependent_pooling_and_instance_stats_are_refused():
    with pytest.raises(UnsupportedOperatorError, match="adaptive max pooling"):
        ember.onnx.export(ember.nn.AdaptiveMaxPool2d(1), (ember.ones(1, 1, 4, 4),), io.BytesIO())
    with pytest.raises(OnnxExporterError, match="evaluation mode only"):
        ember.onnx.export(ember.nn.InstanceNorm2d(2), (ember.ones(1, 2, 4, 4),), io.BytesIO())


def test_preserve_mode_of_a_training_model_is_refused():
    m = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Dropout())
    with pytest.raises(OnnxExporterError, match="evaluation-mode"):
        ember.onnx.export(
            m, (ember.ones(1, 2),), io.BytesIO(), training=ember.onnx.TrainingMode.PRESERVE
        )
    ember.onnx.export(
        m.eval(), (ember.ones(1, 2),), io.BytesIO(), training=ember.onnx.TrainingMode.PRESERVE
    )


def test_node_names_and_op_types_as_torch():
    def make(lib):
        nn = lib.nn
        return nn.Sequential(
            nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.ReLU())),
            nn.Linear(4, 2),
            nn.Softmax(-1),
        )

    tm, em = _build(make)
    x = _rng.normal(size=(2, 3)).astype(np.float32)
    opts = dict(input_names=["x"], output_names=["y"])
    mine = onnx.load_from_string(_export(ember, em, (ember.tensor(x),), **opts))
    theirs = onnx.load_from_string(_export(torch, tm, (torch.from_numpy(x),), **opts))
    assert [(n.name, n.op_type) for n in mine.graph.node] == [
        (n.name, n.op_type) for n in theirs.graph.node
    ]
    assert sorted(i.name for i in mine.graph.initializer) == sorted(
        i.name for i in theirs.graph.initializer
    )


def test_kwargs_and_non_tensor_arguments():
    class M(ember.nn.Module):
        def forward(self, x, scale=1.0, *, bias=None, flag=False):
            y = x * scale
            return y + bias if bias is not None else y

    x, b = ember.ones(2, 2), ember.full((2,), 3.0)
    cases = [((x, 2.0, {"bias": b}), None), ((x, 2.0), {"bias": b}), ((x, 2.0), None)]
    for args, kwargs in cases:  # the first is torch's older "dict last" form
        with_bias = kwargs is not None or isinstance(args[-1], dict)
        names = ["x", "b"] if with_bias else ["x"]
        buf = io.BytesIO()
        ember.onnx.export(M(), args, buf, kwargs=kwargs, input_names=names)
        proto = onnx.load_from_string(buf.getvalue())
        assert [i.name for i in proto.graph.input] == names
        feeds = {"x": x.numpy(), "b": b.numpy()}
        (y,) = _run(buf.getvalue(), {n: feeds[n] for n in names})
        np.testing.assert_allclose(y, 2 * x.numpy() + (b.numpy() if with_bias else 0))
    with pytest.raises(RuntimeError, match=r"number of input names provided \(3\) exceeded"):
        ember.onnx.export(M(), (x,), io.BytesIO(), input_names=["a", "b", "c"])


def test_input_names_past_the_inputs_name_the_parameters():
    lin = ember.nn.Linear(3, 2)
    data = _export(ember, lin, (ember.ones(1, 3),), input_names=["x", "w", "b"])
    assert sorted(i.name for i in onnx.load_from_string(data).graph.initializer) == ["b", "w"]


def test_verbose_prints_the_graph(capsys):
    ember.onnx.export(ember.nn.Linear(2, 1), (ember.ones(1, 2),), io.BytesIO(), verbose=True)
    assert "Gemm" in capsys.readouterr().out


def test_repeated_input_and_constant_outputs():
    def f(x, unused):
        y = x + 1
        return y, y, x, ember.ones(2)

    x = np.array([0.5, -1.0], np.float32)
    feeds = {"input.1": x, "input.2": x}
    for names in (None, ["a", "b", "c", "d"]):
        data = _export(ember, f, (ember.tensor(x), ember.ones(2)), output_names=names)
        proto = onnx.load_from_string(data)
        outs = [o.name for o in proto.graph.output]
        assert len(set(outs)) == 4 and (names is None or outs == names)
        got = _run(data, feeds)
        for g, e in zip(got, [x + 1, x + 1, x, np.ones(2, np.float32)], strict=True):
            np.testing.assert_allclose(g, e)


def test_export_a_traced_or_scripted_module():
    m = _mlp(ember).eval()
    x = ember.randn(2, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped = [ember.jit.trace(m, x), ember.jit.script(m)]
    for w in wrapped:
        data = _export(ember, w, (x,), input_names=["x"])
        proto = onnx.load_from_string(data)
        assert "0.weight" in {i.name for i in proto.graph.initializer}
        assert proto.graph.node[0].name == "/0/Gemm"
        np.testing.assert_allclose(
            _run(data, {"x": x.numpy()})[0], m(x).detach().numpy(), atol=1e-6
        )


def test_signature_matches_torch():
    import inspect

    t = inspect.signature(torch.onnx.export).parameters
    e = inspect.signature(ember.onnx.export).parameters
    assert list(e) == list(t)
    for name in t:
        if isinstance(t[name].default, (bool, int, str, type(None))):
            assert e[name].default == t[name].default, name
    with pytest.raises(OnnxExporterError, match="export_modules_as_functions"):
        ember.onnx.export(
            ember.nn.ReLU(), (ember.ones(1),), io.BytesIO(), export_modules_as_functions=True
        )


def test_dynamic_shapes_per_argument():
    class M(ember.nn.Module):
        def forward(self, x, y):
            return x + y.sum(1, keepdim=True)

    x, y = ember.ones(2, 3), ember.ones(2, 4)
    for shapes in ({"x": {0: "n"}, "y": {0: "n"}}, ({0: "n"}, [Dim("n"), None])):
        data = _export(ember, M(), (x, y), dynamic_shapes=shapes)
        proto = onnx.load_from_string(data)
        assert [i.type.tensor_type.shape.dim[0].dim_param for i in proto.graph.input] == ["n", "n"]
        got = _run(
            data, {"input.1": np.ones((5, 3), np.float32), "input.2": np.ones((5, 4), np.float32)}
        )[0]
        np.testing.assert_allclose(got, np.full((5, 3), 5.0))


class Dim:
    """Stands for torch.export.Dim: a named dimension."""

    def __init__(self, name):
        self.__name__ = name


def test_onnx_program_the_dynamo_way(tmp_path):
    # torch's current tutorial: program = export(model, args, dynamo=True); program.save(path)
    m = _mlp(ember).eval()
    x = ember.randn(3, 6)
    program = ember.onnx.export(m, (x,), dynamic_shapes=({0: "batch"},))
    assert type(program).__name__ == "ONNXProgram" and program.exported_program is None
    assert program.optimize() is None
    (y,) = program(x)
    assert isinstance(y, ember.Tensor)
    np.testing.assert_allclose(y.numpy(), m(x).detach().numpy(), atol=1e-6)
    (y5,) = program(ember.randn(5, 6))
    assert y5.shape == (5, 3)
    program.release()
    path = tmp_path / "m.onnx"
    program.save(path)
    np.testing.assert_allclose(_run(path.read_bytes(), {"input.1": x.numpy()})[0], y.numpy())
    program.save(tmp_path / "ext.onnx", external_data=True)
    assert (tmp_path / "ext.onnx.data").exists()
    sess = ort.InferenceSession(str(tmp_path / "ext.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"input.1": x.numpy()})[0], y.numpy())
    assert isinstance(program.model_proto, onnx.ModelProto)
    assert ember.onnx.export(m, (x,), io.BytesIO(), dynamo=False) is None


def test_size_dependent_constant_warns():
    def f(x):
        return x + ember.zeros(x.shape[0], 1)

    with pytest.warns(ember.onnx.errors.OnnxExporterWarning, match="constant of shape"):
        ember.onnx.export(
            f, (ember.ones(2, 3),), io.BytesIO(), input_names=["x"], dynamic_axes={"x": [0]}
        )


def test_opset_too_old_for_an_op():
    with pytest.raises(UnsupportedOperatorError) as info:
        ember.onnx.export(lambda x: x.tril(), (ember.ones(3, 3),), io.BytesIO(), opset_version=13)
    assert str(info.value) == (
        "Exporting the operator 'aten::tril' to ONNX opset version 13 is not supported. Support "
        "for this operator was added in version 14, try exporting with this version"
    )


def test_model_refusing_another_size_warns_and_exports():
    def f(x):
        if x.shape[0] != 2:
            raise ValueError("batch of 2 only")
        return x.reshape(-1)

    buf = io.BytesIO()
    with pytest.warns(ember.onnx.errors.OnnxExporterWarning, match="failed with the dynamic dim"):
        ember.onnx.export(f, (ember.ones(2, 3),), buf, input_names=["x"], dynamic_axes={"x": [0]})
    (y,) = _run(buf.getvalue(), {"x": np.ones((2, 3), np.float32)})
    np.testing.assert_allclose(y, np.ones(6))


def test_keep_initializers_as_inputs():
    lin = ember.nn.Linear(3, 2)
    data = _export(
        ember, lin, (ember.ones(1, 3),), input_names=["x"], keep_initializers_as_inputs=True
    )
    proto = onnx.load_from_string(data)
    assert [i.name for i in proto.graph.input] == ["x", "weight", "bias"]
    assert sorted(i.name for i in proto.graph.initializer) == ["bias", "weight"]
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(
        _run(data, {"x": x})[0], lin(ember.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6
    )  # Gemm in onnxruntime sums in another order than ember's matmul


def test_mask_past_the_leading_dims_is_refused():
    with pytest.raises(UnsupportedOperatorError, match="bool mask over the leading dims"):
        ember.onnx.export(lambda x: x[:, x[0] > 0], (ember.randn(3, 4),), io.BytesIO())

"""``ember.utils.tensorboard.SummaryWriter`` against ``torch.utils.tensorboard.SummaryWriter``.

Each case makes the same calls on both writers, each in its own directory, then reads every
event file back and compares the events (wall times aside) proto for proto: tags, steps, values,
histogram buckets, PNG bytes, text, hparams plugin data, sub-run directories.
"""

from __future__ import annotations

import glob
import importlib
import os
import re
import socket
import sys

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

import torch.utils.tensorboard as ttb  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import (  # noqa: E402
    RawEventFileLoader,
)
from tensorboard.compat.proto.event_pb2 import Event  # noqa: E402

import ember.utils.tensorboard as etb  # noqa: E402

_rng = np.random.default_rng(0)


def _events(root: str) -> dict:
    """Return {run dir relative to root: [Event without wall_time, ...]} for every event file."""
    out = {}
    for path in sorted(
        glob.glob(os.path.join(root, "**", "events.out.tfevents.*"), recursive=True)
    ):
        run = os.path.relpath(os.path.dirname(path), root)
        evs = []
        for raw in RawEventFileLoader(path).Load():
            ev = Event.FromString(raw)
            ev.wall_time = 0
            evs.append(ev)
        out.setdefault(run, []).extend(evs)
    return out


def _run_both(tmp_path, calls, **kwargs):
    """Run ``calls(writer, lib)`` with torch's and ember's writers; return both event dicts."""
    res = []
    for name, lib, mod in (("torch", torch, ttb), ("ember", ember, etb)):
        root = str(tmp_path / name)
        with mod.SummaryWriter(root, **kwargs) as w:
            calls(w, lib)
        res.append(_events(root))
    return res


def _same(tmp_path, calls, **kwargs):
    t, e = _run_both(tmp_path, calls, **kwargs)
    assert sorted(e) == sorted(t)
    for run in t:
        assert len(e[run]) == len(t[run]), run
        for ee, te in zip(e[run], t[run], strict=True):
            assert ee == te, f"{run}:\nember {ee}\ntorch {te}"
    return t, e


def _t(lib, a):
    return lib.from_numpy(np.array(a, copy=True))


# ------------------------------------------------------------------------------ scalars


def test_add_scalar_values_and_steps(tmp_path):
    def calls(w, lib):
        w.add_scalar("loss", 0.5, 0)
        w.add_scalar("loss", 3, global_step=1, walltime=12.5)
        w.add_scalar("loss", lib.tensor(0.25), 2)
        w.add_scalar("acc", lib.tensor([0.75]), np.int64(3))
        w.add_scalar("acc", np.float32(0.125), 4)
        w.add_scalar("acc/x", lib.tensor(1.5, requires_grad=True) * 2, 5)
        w.add_scalar("new", 2.5, 6, new_style=True)
        w.add_scalar("new64", 1 / 3, 7, new_style=True, double_precision=True)
        w.add_scalar("nostep", 1.0)

    _same(tmp_path, calls)


def test_add_scalar_bfloat16_and_int_tensor(tmp_path):
    def calls(w, lib):
        w.add_scalar("bf", lib.tensor(1.3, dtype=lib.bfloat16), 0)
        w.add_scalar("i", lib.tensor(7), 1)

    _same(tmp_path, calls)


def test_add_scalar_not_one_element_raises(tmp_path):
    msgs = []
    for lib, mod in ((torch, ttb), (ember, etb)):
        with mod.SummaryWriter(str(tmp_path / lib.__name__)) as w:
            with pytest.raises(AssertionError) as exc:
                w.add_scalar("x", lib.ones(2), 0)
            msgs.append(str(exc.value))
    assert msgs[0] == msgs[1]


def test_add_scalars_sub_runs(tmp_path):
    def calls(w, lib):
        for i in range(3):
            w.add_scalars("run/14h", {"xsinx": i * np.sin(i), "tanx": lib.tensor(float(i))}, i, 1.0)

    t, _ = _same(tmp_path, calls)
    assert sorted(t) == [".", "run_14h_tanx", "run_14h_xsinx"]


def test_add_tensor(tmp_path):
    f32 = _rng.standard_normal((2, 3)).astype("float32")

    def calls(w, lib):
        w.add_tensor("f", _t(lib, f32), 0)
        w.add_tensor("d", _t(lib, np.arange(4.0)), 1)
        w.add_tensor("i", _t(lib, np.arange(5)), 2)
        w.add_tensor("b", _t(lib, np.array([True, False])), 3)
        w.add_tensor("h", lib.ones(3, dtype=lib.float16) / 3, 4)
        w.add_tensor("c", _t(lib, np.array([1 + 2j, 3 - 1j], dtype="complex64")), 5)

    _same(tmp_path, calls)


def test_custom_scalars(tmp_path):
    def calls(w, lib):
        w.add_custom_scalars_multilinechart(["a", "b"])
        w.add_custom_scalars_marginchart(["a", "lo", "hi"], category="c", title="t")
        w.add_custom_scalars(
            {"Taiwan": {"twse": ["Multiline", ["twse/0050", "twse/2330"]]}, "USA": {}}
        )

    _same(tmp_path, calls)


# ------------------------------------------------------------------------------ histograms


@pytest.mark.parametrize("bins", ["tensorflow", "auto", "fd", 7])
def test_add_histogram_bins(tmp_path, bins):
    data = _rng.standard_normal(500).astype("float32")

    def calls(w, lib):
        w.add_histogram("h", _t(lib, data), 0, bins=bins)
        w.add_histogram("nd", data * 3 + 1, 1, bins=bins)
        w.add_histogram("int", _t(lib, np.arange(-5, 20)), 2, bins=bins, walltime=3.0)

    _same(tmp_path, calls)


def test_add_histogram_max_bins_and_raw(tmp_path):
    data = _rng.standard_normal((20, 30))

    def calls(w, lib):
        w.add_histogram("m", _t(lib, data), 0, bins=50, max_bins=7)
        w.add_histogram("one", _t(lib, np.full(10, 2.0)), 1)
        values = np.repeat(np.arange(10.0), np.arange(10))
        counts, limits = np.histogram(values, bins=np.arange(12))
        w.add_histogram_raw(
            "raw",
            values.min(),
            values.max(),
            len(values),
            values.sum(),
            values.dot(values),
            limits[1:].tolist(),
            counts.tolist(),
            global_step=0,
        )

    _same(tmp_path, calls)


def test_histogram_errors(tmp_path):
    for lib, mod in ((torch, ttb), (ember, etb)):
        with mod.SummaryWriter(str(tmp_path / lib.__name__)) as w:
            with pytest.raises(ValueError, match="The input has no element."):
                w.add_histogram("e", lib.zeros(0), 0)
            with pytest.raises(ValueError, match="len\\(bucket_limits\\)"):
                w.add_histogram_raw("r", 0, 1, 1, 1, 1, [1, 2], [1], 0)


# ------------------------------------------------------------------------------ images


def test_add_image_formats(tmp_path):
    pytest.importorskip("PIL")  # torch encodes images with pillow
    chw = _rng.random((3, 8, 6)).astype("float32")
    hwc_u8 = _rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    rgba = _rng.random((4, 5, 5))

    def calls(w, lib):
        w.add_image("chw", _t(lib, chw), 0)
        w.add_image("chw_out_of_range", _t(lib, chw * 3 - 1), 0)
        w.add_image("hwc", _t(lib, hwc_u8), 1, dataformats="HWC")
        w.add_image("hw", _t(lib, chw[0]), 2, dataformats="HW")
        w.add_image("wh", chw[1], 2, dataformats="WH")
        w.add_image("1hw", _t(lib, chw[:1]), 3)
        w.add_image("rgba", _t(lib, rgba), 4)
        w.add_image("f64", chw.astype("float64"), 5)

    _same(tmp_path, calls)


def test_add_images_grid(tmp_path):
    pytest.importorskip("PIL")  # torch encodes images with pillow
    nchw = _rng.random((11, 3, 4, 5)).astype("float32")

    def calls(w, lib):
        w.add_images("b", _t(lib, nchw), 0)
        w.add_images("nhwc", _t(lib, nchw.transpose(0, 2, 3, 1).copy()), 1, dataformats="NHWC")
        w.add_images("gray", _t(lib, nchw[:3, :1]), 2)
        w.add_images("chw", _t(lib, nchw[0]), 3, dataformats="CHW")

    _same(tmp_path, calls)


def test_image_format_errors(tmp_path):
    for lib, mod in ((torch, ttb), (ember, etb)):
        with mod.SummaryWriter(str(tmp_path / lib.__name__)) as w:
            with pytest.raises(
                AssertionError,
                match="size of input tensor and input format are different.         tensor shape",
            ):
                w.add_image("x", lib.zeros(3, 4), 0)
            with pytest.raises(
                AssertionError,
                match="same dimension shorthand twice.             input_format: CCW",
            ):
                w.add_image("x", lib.zeros(3, 4, 4), 0, dataformats="CCW")


def test_png_fallback_encoder_decodes_like_pil():
    pytest.importorskip("PIL")  # torch encodes images with pillow
    from PIL import Image

    from ember.utils.tensorboard import _utils

    for c in (1, 3, 4):
        img = _rng.integers(0, 256, (6, 9, c), dtype=np.uint8)
        real = _utils.encode_png(img)
        saved = sys.modules.get("PIL")
        sys.modules["PIL"] = None  # the writer's fallback when pillow is missing
        try:
            mine = _utils.encode_png(img)
        finally:
            sys.modules["PIL"] = saved
        import io

        for data in (real, mine):
            got = np.asarray(Image.open(io.BytesIO(data)))
            np.testing.assert_array_equal(got.reshape(img.shape), img)


def test_add_figure(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def calls(w, lib):
        fig = plt.figure(figsize=(2, 1.5), dpi=40)
        plt.plot([0, 1, 2], [1, 0, 1])
        w.add_figure("fig", fig, 0)
        figs = []
        for k in range(2):
            f = plt.figure(figsize=(1, 1), dpi=30)
            plt.plot([0, k])
            figs.append(f)
        w.add_figure("figs", figs, 1, close=False)
        assert all(plt.fignum_exists(f.number) for f in figs)
        plt.close("all")

    _same(tmp_path, calls)


def test_add_audio(tmp_path):
    snd = np.sin(np.linspace(0, 20, 300))[None]

    def calls(w, lib):
        w.add_audio("a", _t(lib, snd), 0, sample_rate=8000)

    _same(tmp_path, calls)


def test_add_image_with_boxes(tmp_path):
    pytest.importorskip("PIL")  # boxes are drawn with pillow
    img = _rng.random((3, 20, 24)).astype("float32")
    boxes = np.array([[2, 3, 10, 12], [5, 5, 20, 18]], dtype="float32")

    def calls(w, lib):
        w.add_image_with_boxes("b", _t(lib, img), _t(lib, boxes), 0)
        w.add_image_with_boxes("lab", _t(lib, img), _t(lib, boxes), 1, labels=["cat", "dog"])
        w.add_image_with_boxes("one", _t(lib, img), _t(lib, boxes[:1]), 2, labels="cat")
        w.add_image_with_boxes("bad", _t(lib, img), _t(lib, boxes), 3, labels=["cat"])
        hwc = (img.transpose(1, 2, 0) * 255).astype(np.uint8)
        w.add_image_with_boxes("hwc", hwc, boxes, 4, rescale=2, dataformats="HWC")

    _same(tmp_path, calls)


def test_add_video_without_moviepy(tmp_path, capsys):
    try:
        import moviepy  # noqa: F401

        pytest.skip("compares the no-moviepy path")
    except ImportError:
        pass
    vid = _rng.random((3, 2, 3, 4, 4)).astype("float32")

    def calls(w, lib):
        w.add_video("v", _t(lib, vid), 0, fps=2)
        w.add_video("u8", (vid * 255).astype(np.uint8), 1)

    _same(tmp_path, calls)
    assert capsys.readouterr().out.count("add_video needs package moviepy") == 4


def test_add_mesh(tmp_path):
    vertices = np.array([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]], dtype="float32")
    colors = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]]], dtype="int32")
    faces = np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], dtype="int32")

    def calls(w, lib):
        w.add_mesh("m", _t(lib, vertices), colors=_t(lib, colors), faces=_t(lib, faces))
        w.add_mesh("pc", _t(lib, vertices), global_step=1, config_dict={"camera": {"fov": 75}})

    _same(tmp_path, calls)


def test_add_onnx_graph(tmp_path, capsys):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"]),
            helper.make_node("Relu", ["h"], ["y"]),
            helper.make_node("Softmax", ["y"], ["z"], axis=1),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4]),
        ],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 4])],
    )
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(graph), path)

    def calls(w, lib):
        w.add_onnx_graph(path)

    _same(tmp_path, calls)
    out = capsys.readouterr().out
    assert out[: len(out) // 2] == out[len(out) // 2 :]


# ------------------------------------------------------------------------------ text, hparams


def test_add_text(tmp_path):
    def calls(w, lib):
        w.add_text("lstm", "This is an lstm", 0)
        w.add_text("rnn", "unicode: é ü 漢字 *markdown*", 10, walltime=2.0)

    _same(tmp_path, calls)


def test_add_hparams(tmp_path):
    def calls(w, lib):
        for i in range(2):
            w.add_hparams(
                {"lr": 0.1 * i, "bsize": i, "opt": "sgd", "flag": True, "none": None},
                {"hparam/accuracy": 10 * i, "hparam/loss": lib.tensor(0.5)},
                hparam_domain_discrete={"opt": ["sgd", "adam"], "bsize": [0, 1]},
                run_name=f"run{i}",
                global_step=i,
            )

    t, _ = _same(tmp_path, calls)
    assert sorted(t) == [".", "run0", "run1"]


def test_add_hparams_tensor_values(tmp_path):
    def calls(w, lib):
        w.add_hparams({"lr": lib.tensor([0.25]), "wd": 1e-4}, {"m": 1.0}, run_name="t")

    _same(tmp_path, calls)


def test_summary_module_functions():
    """``from torch.utils.tensorboard.summary import hparams, scalar, ...``: same protos."""
    import torch.utils.tensorboard.summary as ts

    import ember.utils.tensorboard.summary as es

    img = _rng.random((3, 4, 5)).astype("float32")
    values = _rng.standard_normal(100)
    pairs = [
        (
            ts.hparams({"lr": 0.1, "opt": "adam"}, {"acc": 0.5}),
            es.hparams({"lr": 0.1, "opt": "adam"}, {"acc": 0.5}),
        ),
        (ts.scalar("s", 1.5), es.scalar("s", 1.5)),
        (ts.scalar("s", 1.5, new_style=True), es.scalar("s", 1.5, new_style=True)),
        (ts.histogram("h", values, "auto"), es.histogram("h", values, "auto")),
        (ts.image("i", img, dataformats="CHW"), es.image("i", img, dataformats="CHW")),
        (ts.text("t", "hi"), es.text("t", "hi")),
        (
            ts.custom_scalars({"c": {"x": ["Multiline", ["a"]]}}),
            es.custom_scalars({"c": {"x": ["Multiline", ["a"]]}}),
        ),
        (ts.pr_curve_raw("p", *np.ones((6, 3))), es.pr_curve_raw("p", *np.ones((6, 3)))),
        (
            ts.tensor_proto("tp", torch.arange(6).reshape(2, 3)),
            es.tensor_proto("tp", ember.arange(6).reshape(2, 3)),
        ),
    ]
    for t, e in pairs:
        assert e == t
    assert es.make_histogram(values, 10) == ts.make_histogram(values, 10)
    arr = (img.transpose(1, 2, 0) * 255).astype(np.uint8)
    assert es.make_image(arr) == ts.make_image(arr)
    labels, preds = _rng.integers(0, 2, 50), _rng.random(50)
    np.testing.assert_array_equal(
        es.compute_curve(labels, preds, 11), ts.compute_curve(labels, preds, 11)
    )


def test_add_hparams_errors(tmp_path):
    for lib, mod in ((torch, ttb), (ember, etb)):
        with mod.SummaryWriter(str(tmp_path / lib.__name__)) as w:
            with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary"):
                w.add_hparams([("lr", 1)], {})
            with pytest.raises(TypeError, match=r"hparam_domain_discrete\[lr\] should be a list"):
                w.add_hparams({"lr": 0.1}, {}, hparam_domain_discrete={"lr": [1]}, run_name="r")
            with pytest.raises(ValueError, match="value should be one of int, float, str, bool"):
                w.add_hparams({"lr": [0.1]}, {}, run_name="r")


def test_add_pr_curve(tmp_path):
    labels = _rng.integers(0, 2, 100)
    preds = _rng.random(100)

    def calls(w, lib):
        w.add_pr_curve("pr", _t(lib, labels), _t(lib, preds), 0)
        w.add_pr_curve("pr_w", labels, preds, 1, num_thresholds=300, weights=0.5)
        w.add_pr_curve_raw("raw", *np.arange(6 * 5, dtype=float).reshape(6, 5), 2, num_thresholds=5)

    _same(tmp_path, calls)


def test_add_embedding_files(tmp_path):
    pytest.importorskip("PIL")  # torch encodes images with pillow
    mat = _rng.standard_normal((6, 4)).astype("float32")
    imgs = _rng.random((6, 3, 4, 4)).astype("float32")
    meta = [f"p{i}" for i in range(6)]
    roots = {}
    for lib, mod in ((torch, ttb), (ember, etb)):
        root = str(tmp_path / lib.__name__)
        with mod.SummaryWriter(root) as w:
            w.add_embedding(_t(lib, mat), metadata=meta, label_img=_t(lib, imgs), tag="a/b")
            w.add_embedding(
                _t(lib, mat),
                metadata=[[m, i] for i, m in enumerate(meta)],
                global_step=3,
                metadata_header=["name", "idx"],
            )
        roots[lib.__name__] = root
    files = {
        k: sorted(
            os.path.relpath(p, r)
            for p in glob.glob(os.path.join(r, "**", "*"), recursive=True)
            if os.path.isfile(p) and "tfevents" not in p
        )
        for k, r in roots.items()
    }
    assert files["ember"] == files["torch"]
    for rel in files["torch"]:
        with open(os.path.join(roots["torch"], rel), "rb") as f:
            tdata = f.read()
        with open(os.path.join(roots["ember"], rel), "rb") as f:
            edata = f.read()
        assert edata == tdata, rel


# ------------------------------------------------------------------------------ writer lifetime


def test_purge_step_and_options(tmp_path):
    def calls(w, lib):
        w.add_scalar("x", 1.0, 5)

    _same(tmp_path, calls, purge_step=3, max_queue=2, flush_secs=5, filename_suffix=".sfx")
    for name in ("torch", "ember"):
        files = glob.glob(str(tmp_path / name / "events.out.tfevents.*"))
        assert len(files) == 1 and files[0].endswith(".sfx")


def test_default_log_dir_and_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    host = re.escape(socket.gethostname())
    for mod in (ttb, etb):
        w = mod.SummaryWriter(comment="LR_0.1")
        try:
            pattern = rf"runs/[A-Z][a-z]{{2}}\d\d_\d\d-\d\d-\d\d_{host}LR_0\.1"
            assert re.fullmatch(pattern, w.get_logdir()), w.get_logdir()
            assert os.path.isdir(w.get_logdir())
        finally:
            w.close()
        w = mod.SummaryWriter(log_dir=tmp_path / "p", comment="ignored")
        assert w.get_logdir() == tmp_path / "p"
        assert w.file_writer.get_logdir() == str(tmp_path / "p")
        w.close()


def test_flush_close_reopen(tmp_path):
    counts = []
    for lib, mod in ((torch, ttb), (ember, etb)):
        root = str(tmp_path / lib.__name__)
        w = mod.SummaryWriter(root, flush_secs=1000, max_queue=1000)
        w.add_scalar("a", 1.0, 0)
        w.flush()
        acc = event_accumulator.EventAccumulator(root)
        acc.Reload()
        seen = [s.value for s in acc.Scalars("a")]
        w.close()
        w.close()  # a second close does nothing
        w.add_scalar("a", 2.0, 1)  # writing after close opens a new event file
        w.flush()
        w.close()
        n_files = len(glob.glob(os.path.join(root, "events.out.tfevents.*")))
        assert w.all_writers is None and w.file_writer is None
        w.flush()  # after close: nothing to flush
        counts.append((seen, n_files >= 1))
    assert counts[0] == counts[1] == ([1.0], True)


def test_file_writer(tmp_path):
    from tensorboard.compat.proto.summary_pb2 import Summary

    t, e = [], []
    for mod, out in ((ttb, t), (etb, e)):
        root = str(tmp_path / mod.__name__)
        fw = mod.FileWriter(root, max_queue=5, flush_secs=60, filename_suffix=".x")
        fw.add_summary(Summary(value=[Summary.Value(tag="a", simple_value=1.0)]), 3, 7.0)
        fw.add_summary(Summary(value=[Summary.Value(tag="a", simple_value=2.0)]), np.int64(4))
        fw.flush()
        fw.close()
        # tensorboard's EventFileWriter has no reopen: torch's FileWriter.reopen fails so
        with pytest.raises(AttributeError) as exc:
            fw.reopen()
        out.append(str(exc.value))
        out.append(fw.get_logdir() == root)
        out.append([f.endswith(".x") for f in os.listdir(root)])
        out.append(_events(root)["."])
    assert e == t


def test_event_accumulator_reads_back(tmp_path):
    pytest.importorskip("PIL")  # torch encodes images with pillow
    data = _rng.standard_normal(200)
    img = _rng.random((3, 10, 12))
    acc = {}
    for lib, mod in ((torch, ttb), (ember, etb)):
        root = str(tmp_path / lib.__name__)
        with mod.SummaryWriter(root) as w:
            for i in range(4):
                w.add_scalar("loss", lib.tensor(1.0 / (i + 1)), i)
            w.add_histogram("w", _t(lib, data), 0)
            w.add_image("img", _t(lib, img), 0)
            w.add_text("note", "hello", 0)
        a = event_accumulator.EventAccumulator(root, size_guidance={"tensors": 0})
        a.Reload()
        acc[lib.__name__] = a
    t, e = acc["torch"], acc["ember"]
    assert e.Tags()["scalars"] == t.Tags()["scalars"] == ["loss"]
    assert [(s.step, s.value) for s in e.Scalars("loss")] == [
        (s.step, s.value) for s in t.Scalars("loss")
    ]
    (eh,), (th,) = e.Histograms("w"), t.Histograms("w")
    assert eh.histogram_value == th.histogram_value
    (ei,), (ti,) = e.Images("img"), t.Images("img")
    assert (ei.width, ei.height, ei.encoded_image_string) == (
        ti.width,
        ti.height,
        ti.encoded_image_string,
    )
    assert e.Tags()["tensors"] == t.Tags()["tensors"] == ["note/text_summary"]


def _graph_net(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
            self.bn = nn.BatchNorm1d(6)
            self.out = nn.Linear(6, 2)

        def forward(self, x, y):
            return self.out(self.bn(self.features(x))) + y

    return Net()


def _graph_summary(gdef):
    io = sorted(
        (n.name, list(n.input) != [], [d.size for d in n.attr["_output_shapes"].list.shape[0].dim])
        for n in gdef.node
        if n.op == "IO Node"
    )
    params = sorted(n.name.rsplit("/", 1)[0] for n in gdef.node if n.op == "prim::GetAttr")
    scopes = sorted({n.name.rsplit("/", 1)[0] for n in gdef.node if n.op.startswith("aten::")})
    return io, params, scopes


@pytest.mark.filterwarnings("ignore:`torch.jit.trace:DeprecationWarning")
def test_add_graph_like_torch(tmp_path):
    x = _rng.standard_normal((5, 4)).astype("float32")
    y = _rng.standard_normal((5, 2)).astype("float32")
    got = {}
    for lib, mod in ((torch, ttb), (ember, etb)):
        root = str(tmp_path / lib.__name__)
        net = _graph_net(lib)
        net.train()
        with mod.SummaryWriter(root) as w:
            w.add_graph(net, (_t(lib, x), _t(lib, y)))
        assert net.training  # traced in eval mode, then restored
        evs = _events(root)["."]
        graph_evs = [e for e in evs if e.HasField("graph_def")]
        meta_evs = [e for e in evs if e.HasField("tagged_run_metadata")]
        assert len(graph_evs) == 1 and len(meta_evs) == 1
        assert meta_evs[0].tagged_run_metadata.tag == "step1"
        acc = event_accumulator.EventAccumulator(root)
        acc.Reload()
        got[lib.__name__] = _graph_summary(acc.Graph())
        assert acc.Graph().versions.producer == 22
    e_io, e_params, e_scopes = got["ember"]
    t_io, t_params, t_scopes = got["torch"]
    assert e_io == t_io
    # torch reads BatchNorm's running stats inside the batch_norm call, ember as GetAttr nodes
    assert set(t_params) <= set(e_params)
    # torch's scopes are its module scopes; ember's ops are recorded in the same ones
    assert set(e_scopes) - {"Net"} == set(t_scopes) - {"Net"}


def test_add_graph_single_tensor_and_errors(tmp_path, capsys):
    net = ember.nn.Linear(3, 2)
    with etb.SummaryWriter(str(tmp_path)) as w:
        w.add_graph(net, ember.ones(4, 3), verbose=True)
        assert "aten::linear" in capsys.readouterr().out  # the IR, as torch prints it
        with pytest.raises(RuntimeError):
            w.add_graph(net, ember.ones(4, 5))
        assert "Error occurs, No graph saved" in capsys.readouterr().out


def test_import_without_tensorboard_fails_as_torch(monkeypatch):
    errors = []
    for name in ("torch.utils.tensorboard", "ember.utils.tensorboard"):
        cached = {k: v for k, v in sys.modules.items() if k.startswith(name)}
        for k in cached:
            monkeypatch.delitem(sys.modules, k)
        monkeypatch.setitem(sys.modules, "tensorboard", None)
        with pytest.raises(ImportError) as exc:
            importlib.import_module(name)
        errors.append((type(exc.value), str(exc.value)))
        monkeypatch.undo()
    assert errors[0] == errors[1]
    assert errors[0][0] is ModuleNotFoundError


def test_summary_edge_cases_same_protos():
    """The rewritten summary helpers against torch's: merged histogram bins, curves with
    weights and out-of-range predictions, hparams of every kind with domains, audio."""
    import torch.utils.tensorboard.summary as ts

    import ember.utils.tensorboard.summary as es

    rng = np.random.default_rng(4)
    values = rng.standard_normal(500)
    for bins, max_bins in [(50, 7), (50, 5), (10, 3), (64, 64), (9, 2), ("auto", 4), (13, 1)]:
        assert es.make_histogram(values, bins, max_bins) == ts.make_histogram(
            values, bins, max_bins
        ), (bins, max_bins)
    sparse = np.concatenate([np.zeros(5), np.full(3, 9.0)])  # empty bins inside and around
    for bins in (4, 10, 30):
        assert es.make_histogram(sparse, bins) == ts.make_histogram(sparse, bins)

    labels = rng.integers(0, 2, 200)
    preds = np.concatenate([rng.random(195), [1.0, 0.0, 1.2, -0.3, 0.5]])
    weights = rng.random(200)
    for n, w in [(11, None), (127, weights), (2, weights), (5, 2.0)]:
        np.testing.assert_array_equal(
            es.compute_curve(labels, preds, n, weights=w),
            ts.compute_curve(labels, preds, n, weights=w),
        )
    assert es.pr_curve("p", labels, preds, 300, weights) == ts.pr_curve(
        "p", labels, preds, 300, weights
    )

    hp = {"lr": 0.1, "n": 3, "flag": True, "opt": "adam", "skip": None}
    domains = {"opt": ["adam", "sgd"], "n": [1, 3], "flag": [True, False]}
    assert es.hparams(hp, {"acc": 0.5, "loss": 1}, domains) == ts.hparams(
        hp, {"acc": 0.5, "loss": 1}, domains
    )
    assert es.hparams({"t": ember.tensor([2.5, 1.0])}, {"m": 0}, []) == ts.hparams(
        {"t": torch.tensor([2.5, 1.0])}, {"m": 0}, []
    )
    for bad in [{"lr": [0.1]}, {"x": object()}]:
        errors = []
        for mod in (es, ts):
            with pytest.raises(Exception) as exc:
                mod.hparams(bad, {})
            errors.append((type(exc.value), str(exc.value)))
        assert errors[0] == errors[1]
    for bad_domain in [{"opt": ["a", 1]}, {"zz": ["a"]}, {"opt": "adam"}, ("opt",)]:
        errors = []
        for mod in (es, ts):
            with pytest.raises(TypeError) as exc:
                mod.hparams({"opt": "adam"}, {}, bad_domain)
            errors.append(str(exc.value))
        assert errors[0] == errors[1]

    snd = np.sin(np.linspace(0, 20, 400)) * 0.8
    assert es.audio("a", snd, 8000) == ts.audio("a", snd, 8000)
    big = ember.zeros(3).expand(3)
    assert es.tensor_proto("z", big) == ts.tensor_proto("z", torch.zeros(3).expand(3))


def test_writer_reused_after_close_and_nested_scalars(tmp_path):
    """After ``close`` the next add_* opens a new default file (purge markers written once);
    ``add_scalars`` with '/' in its main tag makes the same sub-runs as torch's."""
    results = []
    for name, mod in (("torch", ttb), ("ember", etb)):
        root = str(tmp_path / name)
        w = mod.SummaryWriter(root, purge_step=2)
        w.add_scalar("a", 1.0, 0)
        w.add_scalars("loss/train", {"x": 1.0, "y/z": 2.0}, 1, walltime=5.0)
        w.close()
        w.close()  # a second close does nothing
        w.add_scalar("a", 2.0, 1)
        w.add_scalars("loss/train", {"x": 3.0}, 2)
        w.flush()
        w.close()
        events = _events(root)
        files = sorted(
            os.path.relpath(os.path.dirname(p), root)
            for p in glob.glob(os.path.join(root, "**", "events.out.tfevents.*"), recursive=True)
        )
        results.append((events, files))
    (t_events, t_files), (e_events, e_files) = results
    assert e_files == t_files
    assert sorted(e_events) == sorted(t_events)
    for run in t_events:
        assert sorted(map(str, e_events[run])) == sorted(map(str, t_events[run])), run

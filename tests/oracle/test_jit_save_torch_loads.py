"""ember.jit.save writes TorchScript archives that real torch.jit.load runs: the model zoo
(traced, frozen), scripted functions with control flow, traced functions; outputs, gradients
and state_dict keys compared with ember's; extra files; the archive's layout; atomic writes."""

from __future__ import annotations

import io
import os
import warnings
import zipfile
from typing import Optional

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember
from tests.oracle import _jit_zoo as zoo

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _model(name: str):
    ember.manual_seed(0)
    m = zoo.make(ember, name)
    if name in ("resnet",):  # move BatchNorm's running statistics off their initial values
        with ember.no_grad():
            for seed in range(3):
                m(ember.tensor(zoo.example(name, seed + 10)))
    return m.eval()


def _trace(m, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ember.jit.trace(m, x)


def _torch_load(obj, **kw):
    buf = io.BytesIO()
    ember.jit.save(obj, buf, **kw)
    buf.seek(0)
    return torch.jit.load(buf), buf.getvalue()


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(
        np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()), rtol=tol, atol=tol
    )


@pytest.mark.parametrize("name", zoo.NAMES)
def test_traced_zoo_loads_in_torch(name):
    m = _model(name)
    x = zoo.example(name)
    traced = _trace(m, ember.tensor(x))
    loaded, _ = _torch_load(traced)
    expected = m(ember.tensor(x))
    _close(loaded(torch.from_numpy(x)), expected)
    # parameters and buffers keep ember's names, order and values
    mine, theirs = m.state_dict(), loaded.state_dict()
    assert list(theirs) == list(mine)
    for k, v in mine.items():
        assert theirs[k].dtype == getattr(torch, str(v.dtype).split(".")[1])
        np.testing.assert_array_equal(theirs[k].numpy(), v.numpy())
    assert [k for k, _ in loaded.named_parameters()] == [k for k, _ in m.named_parameters()]
    assert loaded.training is False
    # its layers have a forward of their own, as in torch's traced archives
    if name == "lenet":
        y = np.random.default_rng(4).normal(size=(2, 400)).astype(np.float32)
        _close(loaded.fc1(torch.from_numpy(y)), m.fc1(ember.tensor(y)))
        _close(loaded.conv1(torch.from_numpy(x)), m.conv1(ember.tensor(x)))


@pytest.mark.parametrize("name", zoo.NAMES)
def test_gradients_through_the_loaded_archive(name):
    m = _model(name)
    x = zoo.example(name)
    loaded, _ = _torch_load(_trace(m, ember.tensor(x)))
    m(ember.tensor(x)).square().sum().backward()
    loaded(torch.from_numpy(x)).square().sum().backward()
    grads = dict(loaded.named_parameters())
    for k, p in m.named_parameters():
        np.testing.assert_allclose(grads[k].grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "resnet", "transformer"])
def test_frozen_archive_loads_in_torch(name):
    m = _model(name)
    x = zoo.example(name)
    frozen = ember.jit.freeze(_trace(m, ember.tensor(x)))
    loaded, raw = _torch_load(frozen)
    _close(loaded(torch.from_numpy(x)), m(ember.tensor(x)))
    # as torch's frozen modules: the weights are constants of the code, not attributes
    assert len(loaded.state_dict()) == 0
    assert len(torch.jit.freeze(torch.jit.script(torch.nn.Linear(2, 2)).eval()).state_dict()) == 0
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        assert any(n.startswith("archive/constants/") for n in z.namelist())
        src = "".join(z.read(n).decode() for n in z.namelist() if n.endswith(".py"))
    assert "CONSTANTS.c0" in src


def test_batchnorm_in_training_mode_updates_torch_buffers():
    m = _model("resnet").train()
    x = zoo.example("resnet")
    traced = _trace(m, ember.tensor(x))
    loaded, _ = _torch_load(traced)
    loaded.train()
    before = {k: v.clone() for k, v in loaded.state_dict().items()}
    out = loaded(torch.from_numpy(x))
    expected = m(ember.tensor(x))  # the same step in ember: batch statistics, buffers move
    _close(out, expected, 1e-4)
    after = loaded.state_dict()
    assert not torch.equal(before["bn1.running_mean"], after["bn1.running_mean"])
    np.testing.assert_allclose(
        after["bn1.running_mean"].numpy(), m.state_dict()["bn1.running_mean"].numpy(), atol=1e-5
    )


# ------------------------------------------------------------------------ scripted functions


def loop_and_branch(x, n: int):
    y = x
    for i in range(n):  # noqa: B007
        y = y * 2
    if bool(y.sum() > 0):
        z = y + 1
    else:
        z = y - 1
    return z


def while_loop(x, n: int):
    s = x
    i = 0
    while i < n:
        s = s + x
        i += 1
    return s.relu()


def _helper(a):
    return a * a


def calls_helper(x, k: float):
    return _helper(x) + k


def swaps(x, n: int):
    y = x + 1
    for _ in range(n):
        x, y = y, x * 2
    return x - y


def methods_and_keywords(x):
    y = x.sum(dim=0, keepdim=True)
    if x.dim() > 1:
        y = y.view(-1)
    return ember.tanh(y) * x.size(0)


def early_return(x, flag: bool):
    if flag:
        return x * 3
    return x.neg()


def optional_arg(x, y: Optional[float]):  # noqa: UP045  (the form ember's compiler reads)
    if y is None:  # the archive's code keeps the test on y itself: TorchScript refines y
        return x
    return x * y


def nested_loops(x, n: int):
    s = x * 0
    for i in range(n):
        for j in range(i):
            if j % 2 == 0:
                s = s + x
            else:
                s = s - 1
    return s


def shapes_and_casts(x, a: int, b: int):
    k = max(a, b) - min(a, b)
    y = x.view(x.size(0), -1).sum(1) / x.shape[1]
    return y.float().abs() * k + x.mean()


def early_exits(x, n: int):
    if n > 2:
        return x * 2
    y = x + 1
    if n == 0:
        return y
    else:
        y = y * 3
    return y - n


_SCRIPTED = [
    (optional_arg, (None,)),
    (optional_arg, (2.0,)),
    (nested_loops, (4,)),
    (shapes_and_casts, (2, 5)),
    (early_exits, (0,)),
    (early_exits, (1,)),
    (early_exits, (5,)),
    (loop_and_branch, (3,)),
    (loop_and_branch, (0,)),
    (while_loop, (2,)),
    (calls_helper, (0.5,)),
    (swaps, (3,)),
    (methods_and_keywords, ()),
    (early_return, (True,)),
    (early_return, (False,)),
]


@pytest.mark.parametrize("fn,args", _SCRIPTED, ids=[f"{f.__name__}{a}" for f, a in _SCRIPTED])
def test_scripted_function_loads_in_torch(fn, args):
    scripted = ember.jit.script(fn)
    assert scripted._graph is not None
    loaded, raw = _torch_load(scripted)
    for sign in (1.0, -1.0):
        x = (sign * np.arange(1, 7)).astype(np.float32).reshape(2, 3)
        _close(loaded(torch.from_numpy(x), *args), scripted(ember.tensor(x), *args))
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        src = z.read("archive/code/__torch__.py").decode()
    assert src.startswith("class PlaceholderModule(Module):")  # torch's name for a function
    if fn is loop_and_branch:
        assert "for i in range(n):" in src and "if " in src and "else:" in src
    if fn is while_loop:
        assert "while " in src


def test_traced_function_with_tuple_output_and_constants():
    def f(x, y):
        return x * 2.5 + y, (x - 1).relu()

    a, b = (np.random.default_rng(1).normal(size=(3, 2)).astype(np.float32) for _ in range(2))
    traced = _trace(f, (ember.tensor(a), ember.tensor(b)))
    loaded, _ = _torch_load(traced)
    got = loaded(torch.from_numpy(a), torch.from_numpy(b))
    want = traced(ember.tensor(a), ember.tensor(b))
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        _close(g, w)


# ------------------------------------------------------------------------ the archive itself


def test_extra_files_read_back_by_torch(tmp_path):
    traced = _trace(_model("mlp"), ember.tensor(zoo.example("mlp")))
    path = tmp_path / "model.pt"
    ember.jit.save(traced, str(path), _extra_files={"meta.txt": "hello", "blob.bin": b"\x00\x01"})
    extra = {"meta.txt": "", "blob.bin": ""}
    torch.jit.load(str(path), _extra_files=extra)
    assert extra == {"meta.txt": b"hello", "blob.bin": b"\x00\x01"}


def test_archive_layout_as_torch_writes_it(tmp_path):
    m = _model("mlp")
    x = zoo.example("mlp")
    path = tmp_path / "mlp_model.pt"
    ember.jit.save(_trace(m, ember.tensor(x)), path, _extra_files={"a.txt": "1"})
    tpath = tmp_path / "torch_model.pt"
    tm = zoo.make(torch, "mlp")
    torch.jit.save(torch.jit.trace(tm, torch.from_numpy(x)), str(tpath))
    with zipfile.ZipFile(path) as z, zipfile.ZipFile(tpath) as t:
        mine = z.namelist()
        assert {n.split("/")[0] for n in mine} == {"mlp_model"}  # the folder is the stem
        rel = [n.split("/", 1)[1] for n in mine]
        theirs = [n.split("/", 1)[1] for n in t.namelist()]
        for name in ("data.pkl", "constants.pkl", "version", "byteorder", ".data/serialization_id"):
            assert name in rel and name in theirs
        assert z.read("mlp_model/version") == t.read("torch_model/version")
        assert rel[0] == "extra/a.txt"
        assert "code/__torch__/torch/nn/modules/linear.py" in rel
        # records are stored uncompressed, as torch writes them
        for info in z.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
        src = z.read("mlp_model/code/__torch__/torch/nn/modules/linear.py").decode()
    assert src.startswith('class Linear(Module):\n  __parameters__ = ["weight", "bias", ]\n')


def test_digit_named_submodules_and_mangled_classes():
    nn = ember.nn
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2, bias=False)).eval()
    x = np.random.default_rng(2).normal(size=(2, 3)).astype(np.float32)
    loaded, raw = _torch_load(_trace(m, ember.tensor(x)))
    _close(loaded(torch.from_numpy(x)), m(ember.tensor(x)))
    assert list(loaded.state_dict()) == ["0.weight", "0.bias", "2.weight"]
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        names = z.namelist()
    # the bias-less Linear declares other attributes: a second class, mangled as torch does
    assert "archive/code/__torch__/torch/nn/modules/linear/___torch_mangle_0.py" in names


def test_save_to_path_is_atomic(tmp_path):
    traced = _trace(_model("mlp"), ember.tensor(zoo.example("mlp")))
    path = tmp_path / "m.pt"
    ember.jit.save(traced, path)
    good = path.read_bytes()

    from ember.jit._save import SaveError

    # a call into Python has no TorchScript spelling: save fails before writing anything
    broken = _trace(lambda x: x + 1, ember.ones(4))
    g = broken._graph
    with g.insert_point_guard(g.return_node()):
        g.insertNode(g.create("prim::PythonOp", [g.inputs()[0]]))
    with pytest.raises(SaveError, match="prim::PythonOp"):
        ember.jit.save(broken, path)
    assert path.read_bytes() == good
    assert sorted(os.listdir(tmp_path)) == ["m.pt"]  # no temporary file left behind
    buf = io.BytesIO()
    with pytest.raises(SaveError):
        ember.jit.save(broken, buf)
    assert buf.getvalue() == b""  # nothing half-written to a file object either


def test_module_without_graph_saves_its_state_with_a_warning():
    class Eager(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(2, 2)

        def forward(self, x):
            with ember.no_grad():  # beyond ember's compiler: script keeps the eager module
                return self.lin(x)

    s = ember.jit.script(Eager())
    assert s._graph is None
    with pytest.warns(UserWarning, match="no forward"):
        loaded, _ = _torch_load(s)
    assert list(loaded.state_dict()) == ["lin.weight", "lin.bias"]


def test_save_refuses_plain_modules():
    with pytest.raises(RuntimeError, match="expects a ScriptModule"):
        ember.jit.save(ember.nn.Linear(2, 2), io.BytesIO())


# ------------------------------------------------------------------------ scripted modules


F = ember.nn.functional


class _Gate(ember.nn.Module):
    def forward(self, x):
        if bool(x.sum() > 0):
            return x
        return -x


class _Net(ember.nn.Module):
    """Layers ember runs eagerly (their forwards written by the archive), a scripted
    submodule with a branch, a loop, nn.functional calls with keywords."""

    def __init__(self):
        super().__init__()
        nn = ember.nn
        self.features = nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2)
        )
        self.gate = _Gate()
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(16, 3)
        self.norm = nn.LayerNorm(3)

    def forward(self, x, steps: int):
        h = self.features(x)
        h = F.relu(h, inplace=False)
        h = self.gate(ember.flatten(h, 1))
        for _ in range(steps):
            h = h * 0.5
        return self.norm(self.fc(self.drop(h)))


@pytest.mark.parametrize("name", ["mlp", "lenet", "lstm", "gru", "transformer"])
def test_scripted_zoo_loads_in_torch(name):
    m = _model(name)
    scripted = ember.jit.script(m)
    assert scripted._graph is not None
    loaded, _ = _torch_load(scripted)
    x = zoo.example(name)
    _close(loaded(torch.from_numpy(x)), scripted(ember.tensor(x)))
    assert list(loaded.state_dict()) == list(m.state_dict())
    # the layers are callable on their own in torch, as in a torch-scripted archive
    first = next(iter(m.named_children()))[0]
    sub = zoo.example(name)
    got, want = getattr(loaded, first)(torch.from_numpy(sub)), getattr(m, first)(ember.tensor(sub))
    if isinstance(want, tuple):  # a recurrent layer: (output, h_n)
        got, want = got[0], want[0]
    _close(got, want)


@pytest.mark.parametrize("train", [False, True])
def test_scripted_module_with_layers_and_control_flow(train):
    ember.manual_seed(0)
    m = _Net()
    m.train(train)
    if train:
        m.drop.p = 0.0  # no random mask: the two libraries draw different ones
    scripted = ember.jit.script(m)
    assert scripted._graph is not None
    loaded, raw = _torch_load(scripted)
    loaded.train(train)
    x = np.random.default_rng(3).normal(size=(2, 2, 4, 4)).astype(np.float32)
    for steps in (0, 2):
        _close(loaded(torch.from_numpy(x), steps), m(ember.tensor(x), steps), 1e-4)
    assert list(loaded.state_dict()) == list(m.state_dict())
    if train:  # BatchNorm's statistics moved the same way on both sides
        for k, v in m.state_dict().items():
            np.testing.assert_allclose(loaded.state_dict()[k].numpy(), v.numpy(), atol=1e-5)
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        names = z.namelist()
    assert "archive/code/__torch__/torch/nn/modules/batchnorm.py" in names


class _NoGrad(ember.nn.Module):
    def forward(self, x):
        with ember.no_grad():  # beyond ember's compiler: runs as Python in a scripted parent
            return x * 2


class _Parent(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.child = _NoGrad()

    def forward(self, x):
        return self.child(x) + 1


def test_scripted_module_the_archive_cannot_spell_raises_before_writing(tmp_path):
    m = ember.jit.script(_Parent())
    assert m._graph is not None
    path = tmp_path / "parent.pt"
    from ember.jit._save import SaveError

    with pytest.raises(SaveError, match="_NoGrad.forward"):
        ember.jit.save(m, path)
    assert not path.exists() and os.listdir(tmp_path) == []


# ------------------------------------------------------------------------ .code


@pytest.mark.parametrize(
    "fn",
    [loop_and_branch, while_loop, swaps, early_return, early_exits],
    ids=lambda f: f.__name__,
)
def test_scripted_code_is_torchs_text(fn):
    assert ember.jit.script(fn).code == torch.jit.script(fn).code


def _chain(x):
    h = x * 2
    a = h.relu()
    c = a.tanh().view(3, 2)
    return c + 1


def _long(x):
    return x[0] + x.sum(1, keepdim=True).mean() - 1


def _softmax(x, y):
    return (x.softmax(1) - y).exp()


@pytest.mark.parametrize("fn", [_chain, _long, _softmax], ids=lambda f: f.__name__)
def test_traced_code_is_torchs_text(fn):
    x = np.ones((2, 3), np.float32)
    args = (x,) if fn is not _softmax else (x, x)
    mine = _trace(fn, tuple(ember.tensor(a) for a in args)).code
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.jit.trace(fn, tuple(torch.tensor(a) for a in args)).code
    assert mine == theirs


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_versioned_operators_raise_the_file_version(approximate):
    # integer division: a version-3 file would make torch's loader truncate (its upgrader)
    a, b = np.array([7, -7, 9]), np.array([2, 2, 4])
    traced = _trace(lambda x, y: ember.div(x, y), (ember.tensor(a), ember.tensor(b)))
    loaded, raw = _torch_load(traced)
    out = loaded(torch.from_numpy(a), torch.from_numpy(b))
    assert out.tolist() == [3.5, -3.5, 2.25] == traced(ember.tensor(a), ember.tensor(b)).tolist()
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        assert z.read("archive/version") == b"4\n"
    # gelu with its approximate argument: format 10, whose version record is .data/version
    x = np.linspace(-2, 2, 7).astype(np.float32)
    gelu = _trace(lambda t: ember.nn.functional.gelu(t, approximate=approximate), ember.tensor(x))
    loaded, raw = _torch_load(gelu)
    _close(loaded(torch.from_numpy(x)), gelu(ember.tensor(x)))
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        assert z.read("archive/.data/version") == b"10\n"


# ------------------------------------------------------------------------ ops


_OPS = {
    "slice": lambda x: x[:, 1:] * 2,
    "cat_stack": lambda x: ember.stack([ember.cat([x, x * 2], 1)] * 2, 0).sum(0),
    "expand": lambda x: x.unsqueeze(0).expand(3, 2, 4),
    "reshape_permute": lambda x: x.reshape(-1).view(4, 2).permute(1, 0).contiguous(),
    "chunk_index": lambda x: x.chunk(2, 1)[1] + x[0, 2],
    "clamp_where": lambda x: ember.where(x > 0, x, -x).clamp(-0.5, 0.5),
    "pow_sqrt": lambda x: x**2 + x.abs().sqrt() + (x.abs() + 1).rsqrt(),
    "softmaxes": lambda x: F.softmax(x, -1) + F.log_softmax(x, 1),
    "activations": lambda x: F.gelu(x) + F.silu(x) + F.leaky_relu(x, 0.1) + ember.erf(x),
    "pad": lambda x: F.pad(x, (1, 2)),
    "max_argmax": lambda x: x.max(1)[0] + x.argmax(1),
    "moments": lambda x: x.mean(1, keepdim=True) + x.var(1, keepdim=True) + x.norm(dim=1),
    "products": lambda x: (x @ x.t()).sum() + ember.einsum("ij,ij->i", x, x),
    "double": lambda x: x.double() * 2,
    "factories": lambda x: ember.zeros_like(x) + x + ember.ones(2, 4) + ember.arange(4),
    "masked_fill_flip": lambda x: x.masked_fill(x > 0, 0.0).flip(0).cumsum(1),
    "sort_topk": lambda x: x.sort(1)[0][:, :2] + x.topk(2, 1)[0],
    "norms": lambda x: F.layer_norm(x, (4,)) + F.dropout(x, 0.5, False),
    "pools": lambda x: (
        F.avg_pool2d(x.view(1, 1, 2, 4), 2) + F.adaptive_avg_pool2d(x.view(1, 1, 2, 4), 1)
    ),
    "losses": lambda x: F.mse_loss(x, x * 0.5) + F.cross_entropy(x, ember.tensor([1, 3])),
    "scalars": lambda x: (1 - x) / 3,
    "tuple_out": lambda x: (x.neg(), x.sign(), x.tril(), x.repeat(2, 1)),
}


@pytest.mark.parametrize("name", list(_OPS))
def test_traced_ops_load_in_torch(name):
    x = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
    traced = _trace(_OPS[name], ember.tensor(x))
    loaded, _ = _torch_load(traced)
    got, want = loaded(torch.from_numpy(x)), traced(ember.tensor(x))
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert str(g.dtype) == str(w.dtype)
        _close(g, w)


_OPS4 = {
    "nearest": lambda t: F.interpolate(t, scale_factor=2.0, mode="nearest"),
    "bilinear": lambda t: F.interpolate(t, size=(4, 7), mode="bilinear", align_corners=False),
    "bilinear_corners": lambda t: F.interpolate(t, scale_factor=1.5, mode="bilinear",
                                                align_corners=True),
    "bicubic": lambda t: F.interpolate(t, size=(6, 6), mode="bicubic"),
    "linear_1d": lambda t: F.interpolate(t[:, :, 0], scale_factor=3, mode="linear"),
    "adaptive_pool": lambda t: F.adaptive_avg_pool2d(t, (2, 3)),
    "grid_sample": lambda t: F.grid_sample(t, ember.zeros(1, 2, 2, 2), align_corners=False),
    "unfold_fold": lambda t: F.fold(F.unfold(t, 2), (3, 5), 2),
    "pixel_shuffle": lambda t: F.pixel_shuffle(t.repeat(1, 2, 1, 1), 2)[:, :, :4],
    "gather_roll": lambda t: t.gather(3, ember.zeros(1, 2, 3, 1, dtype=ember.int64)) + t.roll(1, 2),
    "reflect_pad": lambda t: F.pad(t, (1, 1, 1, 1), mode="reflect"),
    "cdist": lambda t: ember.cdist(t[0], t[0]),
    "fft": lambda t: ember.fft.irfft(ember.fft.rfft(t), n=5) + ember.fft.fft(t).abs(),
}  # fmt: skip


@pytest.mark.parametrize("name", list(_OPS4))
def test_traced_image_and_signal_ops_load_in_torch(name):
    x = np.random.default_rng(0).normal(size=(1, 2, 3, 5)).astype(np.float32)
    traced = _trace(_OPS4[name], ember.tensor(x))
    loaded, _ = _torch_load(traced)
    _close(loaded(torch.from_numpy(x)), traced(ember.tensor(x)))


def test_an_op_without_a_spelling_is_named():
    from ember.jit._save import SaveError

    f = _trace(lambda w: F.embedding_bag(ember.tensor([[0, 1]]), w), ember.ones(3, 2))
    with pytest.raises(SaveError, match="embedding_bag.*has no TorchScript spelling"):
        ember.jit.save(f, io.BytesIO())


_RNNS = {
    "lstm_proj_bidir": lambda nn: nn.LSTM(4, 6, 2, batch_first=True, bidirectional=True,
                                          proj_size=3),
    "gru_no_bias": lambda nn: nn.GRU(4, 5, bias=False),
    "rnn_relu": lambda nn: nn.RNN(4, 5, 2, nonlinearity="relu"),
    "rnn_tanh_bidir": lambda nn: nn.RNN(4, 3, bidirectional=True, batch_first=True),
}  # fmt: skip


@pytest.mark.parametrize("name", list(_RNNS))
def test_recurrent_layers_forward_in_the_archive(name):
    """A recurrent layer's own forward (written from its configuration) and the traced
    model's (ember's recurrent kernel as a loop) both run in torch."""
    ember.manual_seed(0)

    class Wrap(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = _RNNS[name](ember.nn)

        def forward(self, x):
            out, _ = self.rnn(x)
            return out

    m = Wrap().eval()
    x = np.random.default_rng(5).normal(size=(3, 2, 4)).astype(np.float32)
    for obj in (_trace(m, ember.tensor(x)), ember.jit.script(m)):
        loaded, _ = _torch_load(obj)
        _close(loaded(torch.from_numpy(x)), m(ember.tensor(x)))
        out, h = loaded.rnn(torch.from_numpy(x))
        eout, eh = m.rnn(ember.tensor(x))
        _close(out, eout)
        for a, b in zip(
            h if isinstance(h, tuple) else (h,), eh if isinstance(eh, tuple) else (eh,)
        ):
            _close(a, b)
        # with an initial state, as the layer takes it
        out2, _ = loaded.rnn(torch.from_numpy(x), h)
        eout2, _ = m.rnn(ember.tensor(x), eh)
        _close(out2, eout2)


@pytest.mark.parametrize("name", ["mlp", "lenet", "lstm"])
def test_frozen_scripted_module_keeps_what_its_layers_read(name):
    # ember's freeze leaves the calls of layers it runs eagerly: their weights stay attributes
    m = _model(name)
    frozen = ember.jit.freeze(ember.jit.script(m))
    loaded, _ = _torch_load(frozen)
    x = zoo.example(name)
    _close(loaded(torch.from_numpy(x)), m(ember.tensor(x)))


class _Cell(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = ember.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = ember.tanh(self.linear(x) + h)
        return new_h, new_h


class _Loop(ember.nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, xs):
        h = ember.zeros(3, 4)
        y = h
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h


def test_script_and_traced_submodules_keep_their_own_forward():
    # the TorchScript tutorial's shape: a traced model holding a scripted loop over a traced cell
    ember.manual_seed(0)
    x, h = ember.rand(3, 4), ember.rand(3, 4)
    cell = _trace(_Cell(), (x, h))
    loop = ember.jit.script(_Loop(cell))
    assert loop._graph is not None

    class Wrap(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.loop = loop

        def forward(self, xs):
            y, h = self.loop(xs)
            return ember.relu(y)

    xs = np.random.default_rng(6).random((5, 3, 4)).astype(np.float32)
    traced = _trace(Wrap(), ember.tensor(xs))
    loaded, _ = _torch_load(traced)
    _close(loaded(torch.from_numpy(xs)), traced(ember.tensor(xs)))
    y, h_n = loaded.loop(torch.from_numpy(xs))
    ey, eh = loop(ember.tensor(xs))
    _close(y, ey)
    _close(h_n, eh)
    a, b = torch.from_numpy(xs[0]), torch.from_numpy(xs[1])
    _close(loaded.loop.cell(a, b)[0], cell(ember.tensor(xs[0]), ember.tensor(xs[1]))[0])


@pytest.mark.parametrize(
    "kw",
    [
        {"batch_first": True},
        {"batch_first": False, "norm_first": True, "activation": "gelu"},
        {"batch_first": True, "dropout": 0.0, "bias": False},
    ],
    ids=["post_norm", "pre_norm_gelu", "no_bias"],
)
def test_transformer_encoder_layer_forward_in_the_archive(kw):
    ember.manual_seed(0)
    kw = {"dropout": 0.0, **kw}
    layer = ember.nn.TransformerEncoderLayer(8, 2, 16, **kw)
    m = ember.nn.TransformerEncoder(layer, 2, norm=ember.nn.LayerNorm(8),
                                    enable_nested_tensor=False).eval()  # fmt: skip

    class Wrap(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = m

        def forward(self, x):
            return self.encoder(x)

    x = np.random.default_rng(7).normal(size=(3, 4, 8)).astype(np.float32)
    for obj in (ember.jit.script(Wrap()), _trace(Wrap(), ember.tensor(x))):
        loaded, _ = _torch_load(obj)
        _close(loaded(torch.from_numpy(x)), m(ember.tensor(x)), 1e-4)
        _close(
            getattr(loaded.encoder.layers, "1")(torch.from_numpy(x)),
            m.layers[1](ember.tensor(x)),
            1e-4,
        )


@pytest.mark.parametrize("name", ["lenet", "lstm", "transformer"])
@pytest.mark.parametrize("how", ["trace", "script"])
def test_torch_resaves_and_freezes_the_archive(name, how):
    # the loaded module is a well-formed TorchScript module: torch saves it again and freezes it
    m = _model(name)
    x = zoo.example(name)
    obj = _trace(m, ember.tensor(x)) if how == "trace" else ember.jit.script(m)
    loaded, _ = _torch_load(obj)
    assert loaded.original_name == type(m).__name__
    buf = io.BytesIO()
    torch.jit.save(loaded, buf)
    buf.seek(0)
    again = torch.jit.load(buf)
    frozen = torch.jit.freeze(again.eval())
    xs = torch.from_numpy(x)
    _close(again(xs), m(ember.tensor(x)))
    _close(frozen(xs), m(ember.tensor(x)), 1e-4)


@pytest.mark.parametrize("batch_first", [True, False])
def test_scripted_multihead_attention_in_the_archive(batch_first):
    ember.manual_seed(0)

    class Attend(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = ember.nn.MultiheadAttention(8, 2, batch_first=batch_first)
            self.fc = ember.nn.Linear(8, 3)

        def forward(self, x, memory):
            a, w = self.attn(x, memory, memory)  # cross-attention, weights averaged over heads
            b, _ = self.attn(x, x, x)
            return self.fc(a + b), w

    m = Attend().eval()
    rng = np.random.default_rng(8)
    shape_x, shape_m = ((2, 5, 8), (2, 3, 8)) if batch_first else ((5, 2, 8), (3, 2, 8))
    x, mem = (
        rng.normal(size=shape_x).astype(np.float32),
        rng.normal(size=shape_m).astype(np.float32),
    )
    loaded, _ = _torch_load(ember.jit.script(m))
    (out, w), (eout, ew) = (
        loaded(torch.from_numpy(x), torch.from_numpy(mem)),
        m(ember.tensor(x), ember.tensor(mem)),
    )
    _close(out, eout)
    _close(w, ew)

"""ember.save / ember.load against real torch, both directions: every dtype, views, the state
dicts of real modules and optimizers (which must continue training identically in torch after a
trip through ember), Parameters, the legacy format, mmap, error parity, and safetensors."""

from __future__ import annotations

import collections
import io
import pickle
import zipfile

import numpy as np
import pytest

import ember
from ember._core import dtype as D

torch = pytest.importorskip("torch")


def t2e(t) -> ember.Tensor:
    """An ember copy of a torch tensor (same bits)."""
    t = t.detach().contiguous()
    if t.dtype is torch.bfloat16:
        import ml_dtypes

        return ember.from_numpy(t.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy())
    return ember.from_numpy(t.numpy().copy())


def bits_equal(e: ember.Tensor, t) -> bool:
    t = t.detach()
    name = str(t.dtype).removeprefix("torch.")
    if t.dtype is torch.bfloat16:
        t = t.view(torch.int16)
    return (
        e.shape == tuple(t.shape)
        and e.stride() == t.stride()
        and e.storage_offset() == t.storage_offset()
        and e.dtype.name == name
        and np.ascontiguousarray(e._data).tobytes() == t.contiguous().numpy().tobytes()
    )


def via_ember(obj):
    """torch.save -> ember.load -> ember.save -> torch.load."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    loaded = ember.load(buf)
    out = io.BytesIO()
    ember.save(loaded, out)
    out.seek(0)
    return loaded, torch.load(out)


def torch_dtype(d: D.dtype):
    return getattr(torch, d.name)


@pytest.mark.parametrize("dtype", D.ALL_DTYPES, ids=lambda d: d.name)
def test_every_dtype_both_ways(dtype):
    g = torch.Generator().manual_seed(0)
    if dtype is D.bool:
        t = torch.rand(3, 5, generator=g) > 0.5
    elif dtype.is_floating_point or dtype.is_complex:
        t = torch.randn(3, 5, generator=g, dtype=torch_dtype(dtype))
    else:
        t = torch.randint(0 if dtype is D.uint8 else -100, 100, (3, 5), generator=g)
        t = t.to(torch_dtype(dtype))
    e, back = via_ember(t)
    assert bits_equal(e, t)
    assert back.dtype is t.dtype and torch.equal(
        back.view(-1).view(torch.uint8), t.view(-1).view(torch.uint8)
    )


def test_views_and_strides_both_ways():
    base = torch.arange(60.0).reshape(5, 12)
    views = {
        "base": base,
        "cols": base[:, 2:7],
        "t": base.t(),
        "step": base[1::2, ::3],
        "row": base[3],
        "expand": base[0:1].expand(4, 12),
        "perm": base.view(5, 3, 4).permute(2, 0, 1),
        "scalar": base[2, 2],
    }
    loaded, back = via_ember(views)
    for k, v in views.items():
        assert bits_equal(loaded[k], v), k
        assert back[k].stride() == v.stride() and back[k].storage_offset() == v.storage_offset()
        assert torch.equal(back[k], v)
    ptrs = {x.untyped_storage().data_ptr() for x in back.values()}
    assert len(ptrs) == 1  # one storage, shared, in torch after the trip through ember
    back["base"][0, 2] = -7
    assert back["cols"][0, 0].item() == -7


def test_ember_views_load_in_torch_sharing_memory():
    base = ember.arange(24.0).reshape(4, 6)
    buf = io.BytesIO()
    ember.save({"a": base, "b": base[:, 1:4], "c": base.t()}, buf)
    buf.seek(0)
    out = torch.load(buf)
    assert out["b"].storage_offset() == 1 and out["b"].stride() == (6, 1)
    assert out["c"].stride() == (1, 6)
    out["a"][1, 2] = 100
    assert out["b"][1, 1].item() == 100 and out["c"][2, 1].item() == 100


def check_state_dict(module):
    sd = module.state_dict()
    loaded, back = via_ember(sd)
    assert type(loaded) is collections.OrderedDict and list(loaded) == list(sd)
    assert loaded._metadata == sd._metadata
    for k, v in sd.items():
        assert bits_equal(loaded[k], v), k
    fresh = type(module)(*module._ctor_args)
    fresh.load_state_dict(back)  # strict: keys, shapes and dtypes all fit
    for k, v in fresh.state_dict().items():
        assert torch.equal(v, sd[k]), k
    # and a state dict built in ember from numpy loads into the torch module
    built = collections.OrderedDict((k, t2e(v)) for k, v in sd.items())
    built._metadata = sd._metadata
    buf = io.BytesIO()
    ember.save(built, buf)
    buf.seek(0)
    fresh = type(module)(*module._ctor_args)
    fresh.load_state_dict(torch.load(buf))
    return loaded


class MLP(torch.nn.Sequential):
    _ctor_args = ()

    def __init__(self):
        torch.manual_seed(0)
        super().__init__(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


class CNN(torch.nn.Sequential):
    _ctor_args = ()

    def __init__(self):
        torch.manual_seed(0)
        super().__init__(
            torch.nn.Conv2d(3, 4, 3),
            torch.nn.BatchNorm2d(4),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(4 * 6 * 6, 2),
        )
        self.train()
        for _ in range(3):  # move running stats and num_batches_tracked off their defaults
            self(torch.randn(2, 3, 8, 8))


class LSTM(torch.nn.LSTM):
    _ctor_args = ()

    def __init__(self):
        torch.manual_seed(0)
        super().__init__(5, 7, num_layers=2, bidirectional=True)


def test_mlp_state_dict():
    check_state_dict(MLP())


def test_cnn_with_batchnorm_state_dict():
    loaded = check_state_dict(CNN())
    nbt = loaded["1.num_batches_tracked"]
    assert nbt.dtype is ember.int64 and nbt.dim() == 0 and nbt.item() == 3


def test_lstm_state_dict():
    check_state_dict(LSTM())


def train(model, opt, steps, seed):
    torch.manual_seed(seed)
    losses = []
    for _ in range(steps):
        x = torch.randn(4, 8)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
        lambda p: torch.optim.Adam(p, lr=1e-2),
        lambda p: torch.optim.AdamW(p, lr=1e-2, amsgrad=True),
    ],
    ids=["sgd_momentum", "adam", "adamw_amsgrad"],
)
def test_optimizer_state_dicts_continue_training_identically(make_opt):
    model = MLP()
    opt = make_opt(model.parameters())
    train(model, opt, 3, seed=1)
    checkpoint = {"model": model.state_dict(), "optim": opt.state_dict()}
    loaded, back = via_ember(checkpoint)

    state = loaded["optim"]["state"]
    assert sorted(state) == list(range(4))  # integer keys
    if "step" in state[0]:
        step = state[0]["step"]
        assert step.dtype is ember.float32 and step.dim() == 0 and step.item() == 3.0
    assert loaded["optim"]["param_groups"] == checkpoint["optim"]["param_groups"]

    expected = train(model, opt, 5, seed=2)
    resumed = MLP()
    resumed.load_state_dict(back["model"])
    opt2 = make_opt(resumed.parameters())
    opt2.load_state_dict(back["optim"])
    assert train(resumed, opt2, 5, seed=2) == expected
    for a, b in zip(model.parameters(), resumed.parameters()):
        assert torch.equal(a, b)


def test_parameters_both_ways():
    p = torch.nn.Parameter(torch.randn(3))
    frozen = torch.nn.Parameter(torch.randn(2), requires_grad=False)
    loaded, back = via_ember({"p": p, "frozen": frozen})
    assert loaded["p"].requires_grad and not loaded["frozen"].requires_grad
    assert bits_equal(loaded["p"], p)
    # without ember.nn.Parameter they come back as tensors: torch gets plain tensors too
    assert torch.equal(back["p"], p) and back["p"].requires_grad


def test_ember_parameters_load_as_torch_parameters():
    class Parameter(ember.Tensor):
        _is_param = True

    p = ember.randn(4)
    p.__class__ = Parameter
    p.requires_grad_()
    q = ember.ones(2)
    q.__class__ = Parameter
    q.tag = "extra"
    buf = io.BytesIO()
    ember.save({"p": p, "q": q}, buf)
    buf.seek(0)
    out = torch.load(buf)
    assert type(out["p"]) is torch.nn.Parameter and out["p"].requires_grad
    assert type(out["q"]) is torch.nn.Parameter and not out["q"].requires_grad
    assert out["q"].tag == "extra"
    assert torch.equal(out["p"].detach(), torch.from_numpy(p.detach().numpy()))


def test_tensor_attributes_both_ways():
    t = torch.ones(2)
    t.note = "kept"
    loaded, back = via_ember(t)
    assert loaded.note == "kept" and back.note == "kept"


def test_dtype_device_size_objects_both_ways():
    obj = [torch.float16, torch.bfloat16, torch.device("cpu"), torch.Size([2, 3]), torch.bool]
    loaded, back = via_ember(obj)
    assert loaded[0] is ember.float16 and loaded[1] is ember.bfloat16
    assert loaded[2] == ember.device("cpu") and loaded[3] == ember.Size([2, 3])
    assert back == obj


def test_legacy_torch_files_both_ways(tmp_path):
    base = torch.arange(10.0)
    obj = {"a": base, "v": base[2:5], "h": torch.ones(2, dtype=torch.float16), "n": [1, 2]}
    torch.save(obj, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    for weights_only in (True, False):
        out = ember.load(tmp_path / "old.pt", weights_only=weights_only)
        for k in ("a", "v", "h"):
            assert bits_equal(out[k], obj[k])
        assert out["v"].untyped_storage().data_ptr() == out["a"].untyped_storage().data_ptr()
    ember.save(out, tmp_path / "mine.pt", _use_new_zipfile_serialization=False)
    back = torch.load(tmp_path / "mine.pt")
    assert all(torch.equal(back[k], obj[k]) for k in ("a", "v", "h")) and back["n"] == [1, 2]


def test_torch_mmap_reads_ember_files(tmp_path):
    from torch.utils.serialization import config

    sd = {f"w{i}": ember.randn(10 * i + 1) for i in range(5)}
    ember.save(sd, tmp_path / "e.pt")
    old = config.load.calculate_storage_offsets
    try:
        for calculate in (False, True):  # torch may compute offsets from miniz's layout
            config.load.calculate_storage_offsets = calculate
            out = torch.load(tmp_path / "e.pt", mmap=True)
            for k, v in sd.items():
                assert torch.equal(out[k], torch.from_numpy(v.numpy()))
    finally:
        config.load.calculate_storage_offsets = old


def test_ember_mmap_reads_torch_files(tmp_path):
    sd = {"w": torch.randn(100, 10), "b": torch.arange(5)}
    torch.save(sd, tmp_path / "t.pt")
    out = ember.load(tmp_path / "t.pt", mmap=True)
    assert bits_equal(out["w"], sd["w"]) and bits_equal(out["b"], sd["b"])


def test_file_records_match_torch(tmp_path):
    obj = {"a": torch.randn(3), "b": torch.ones(2, dtype=torch.bfloat16)}
    torch.save(obj, tmp_path / "ckpt.pt")
    (tmp_path / "mine").mkdir()
    ember.save({k: t2e(v) for k, v in obj.items()}, tmp_path / "mine" / "ckpt.pt")
    theirs = zipfile.ZipFile(tmp_path / "ckpt.pt")
    mine = zipfile.ZipFile(tmp_path / "mine" / "ckpt.pt")
    assert mine.namelist() == theirs.namelist()
    for a, b in zip(mine.infolist(), theirs.infolist()):
        assert (a.compress_type, a.flag_bits) == (b.compress_type, b.flag_bits)
        if a.filename.endswith(("data/0", "data/1", "version", "byteorder", "alignment")):
            assert mine.read(a) == theirs.read(b), a.filename


def test_same_errors_as_torch():
    x = torch.zeros(4)
    with pytest.raises(RuntimeError) as theirs:
        torch.save([x, x.view(torch.int32)], io.BytesIO())
    e = ember.zeros(4)
    with pytest.raises(RuntimeError) as mine:
        ember.save([e, e.view(ember.int32)], io.BytesIO())
    assert str(mine.value) == str(theirs.value)

    buf = io.BytesIO()
    torch.save({"c": collections.Counter("aab"), "f": pickle.dumps}, buf)
    msgs = []
    for lib in (torch, ember):
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError) as info:
            lib.load(buf)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    buf.seek(0)
    expected = torch.serialization.get_unsafe_globals_in_checkpoint(buf)
    buf.seek(0)
    assert ember.serialization.get_unsafe_globals_in_checkpoint(buf) == sorted(expected)


def test_whole_torch_modules_need_weights_only_false():
    buf = io.BytesIO()
    torch.save(torch.nn.Linear(2, 2), buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.linear.Linear"):
        ember.load(buf)


def test_dtypes_ember_lacks_fail_clearly():
    buf = io.BytesIO()
    torch.save({"u": torch.zeros(2, dtype=torch.uint16)}, buf)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="ember has no dtype torch.uint16"):
        ember.load(buf)


def test_storage_types_and_rebuild_v3():
    buf = io.BytesIO()
    torch.save([torch.arange(4, dtype=torch.int16).untyped_storage(), torch.ones(2)], buf)
    buf.seek(0)
    storage, ones = ember.load(buf)
    assert isinstance(storage, ember.UntypedStorage) and storage.nbytes() == 8
    assert ones.tolist() == [1.0, 1.0]


# ------------------------------------------------------------------------------ safetensors
def _safetensors():
    return pytest.importorskip("safetensors.torch")


def test_safetensors_written_by_ember_read_by_torch(tmp_path):
    stt = _safetensors()
    tensors = {
        "w": ember.randn(4, 3),
        "b16": ember.randn(5).to(ember.bfloat16),
        "i": ember.arange(6).reshape(2, 3),
        "m": ember.tensor([True, False]),
        "h": ember.ones(2, dtype=ember.float16),
        "s": ember.tensor(2.5),
        "e": ember.zeros(0, 2),
    }
    path = tmp_path / "m.safetensors"
    ember.serialization.save_safetensors(tensors, path, metadata={"format": "pt"})
    out = stt.load_file(str(path))
    assert list(out) == sorted(tensors) or set(out) == set(tensors)
    for k, v in tensors.items():
        assert bits_equal(v, out[k]), k
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
    assert ember.serialization.safetensors_metadata(path) == {"format": "pt"}


def test_safetensors_written_by_torch_read_by_ember(tmp_path):
    stt = _safetensors()
    tensors = {
        "w": torch.randn(4, 3),
        "b16": torch.randn(5, dtype=torch.bfloat16),
        "c": torch.randn(3, dtype=torch.complex64),
        "i8": torch.arange(-3, 3, dtype=torch.int8),
    }
    path = tmp_path / "t.safetensors"
    stt.save_file(tensors, str(path))
    for out in (ember.serialization.load_safetensors(path), ember.load(path)):
        for k, v in tensors.items():
            assert bits_equal(out[k], v), k
    out["w"][0, 0] = 5.0  # copy-on-write mapping: writable, the file is untouched
    assert torch.equal(stt.load_file(str(path))["w"], tensors["w"])


def test_safetensors_refuses_what_safetensors_refuses(tmp_path):
    _safetensors()
    base = ember.randn(4, 4)
    save = ember.serialization.save_safetensors
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        save({"a": base, "b": base[1:]}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="non contiguous tensor"):
        save({"a": base.t()}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="dtype"):
        save({"a": ember.zeros(2, dtype=ember.complex128)}, tmp_path / "x.safetensors")
    save({"a": base[:2], "b": base[2:]}, tmp_path / "ok.safetensors")  # disjoint views are fine
    assert not (tmp_path / "x.safetensors").exists()

"""nn.Module against torch: registration, iteration, state_dict, load_state_dict, printing,
modes, casting, errors; Parameter and Buffer."""

from __future__ import annotations

import copy
import io
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def to_ember(t):
    return ember.from_numpy(t.detach().numpy().copy())


def to_np(t):
    return t.detach().numpy()


def ember_sd(torch_model):
    sd = OrderedDict((k, to_ember(v)) for k, v in torch_model.state_dict().items())
    return sd


def pair(build):
    """Build the same model in both libraries; torch's weights copied into ember's."""
    torch.manual_seed(0)
    t = build(torch)
    e = build(ember)
    e.load_state_dict(ember_sd(t))
    return t, e


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 8), nn.Flatten(), nn.Linear(8, 3, bias=False))


def net_class(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 5)
            self.blocks = nn.ModuleList([nn.Linear(5, 5) for _ in range(2)])
            self.heads = nn.ModuleDict({"a": nn.Linear(5, 2), "b": nn.Identity()})
            self.scale = nn.Parameter(lib.ones(1))
            self.register_buffer("steps", lib.zeros(2))
            self.register_buffer("tmp", lib.ones(3), persistent=False)
            self.plain = [nn.Linear(2, 2)]  # a plain list is not registered

        def forward(self, x):
            x = self.fc(x)
            for b in self.blocks:
                x = b(x)
            return self.heads["a"](x) * self.scale

    return Net


def make_net(lib):
    return net_class(lib)()


# ------------------------------------------------------------------------------ Parameter
def test_parameter_basics():
    data = ember.ones(2, 3)
    p = ember.nn.Parameter(data)
    assert isinstance(p, ember.Tensor) and isinstance(p, ember.nn.Parameter)
    assert p.requires_grad and p.is_leaf and p._is_param
    with ember.no_grad():
        data.add_(1)
    assert float(p[0, 0]) == 2.0  # shares memory
    tp = torch.nn.Parameter(torch.ones(2, 3))
    assert repr(ember.nn.Parameter(ember.ones(2, 3))) == repr(tp)
    assert repr(ember.nn.Parameter(ember.ones(2), requires_grad=False)) == repr(
        torch.nn.Parameter(torch.ones(2), requires_grad=False)
    )
    assert repr(ember.nn.Parameter()) == repr(torch.nn.Parameter())
    y = p * 2
    assert type(y) is ember.Tensor


def test_parameter_deepcopy_and_pickle():
    p = ember.nn.Parameter(ember.arange(6.0).reshape(2, 3))
    p.grad = ember.ones(2, 3)
    q = copy.deepcopy(p)
    assert type(q) is ember.nn.Parameter and q.requires_grad
    assert np.array_equal(q.numpy(force=True) if hasattr(q, "numpy") else q._data, p._data)
    tp = torch.nn.Parameter(torch.ones(2))
    tp.grad = torch.ones(2)
    # torch's Parameter.__deepcopy__ copies the data only: no .grad (a plain tensor keeps it)
    assert q._data is not p._data and (q.grad is None) == (copy.deepcopy(tp).grad is None)
    r = pickle.loads(pickle.dumps(ember.nn.Parameter(ember.ones(2), requires_grad=False)))
    assert type(r) is ember.nn.Parameter and not r.requires_grad


def test_parameter_save_load_roundtrip_with_torch():
    p = ember.nn.Parameter(ember.arange(4.0))
    buf = io.BytesIO()
    ember.save({"p": p}, buf)
    buf.seek(0)
    tp = torch.load(buf)["p"]
    assert isinstance(tp, torch.nn.Parameter) and tp.requires_grad
    buf = io.BytesIO()
    torch.save({"p": torch.nn.Parameter(torch.ones(3), requires_grad=False)}, buf)
    buf.seek(0)
    ep = ember.load(buf)["p"]
    assert type(ep) is ember.nn.Parameter and not ep.requires_grad


def test_buffer():
    for lib in (torch, ember):
        m = lib.nn.Module()
        m.b = lib.nn.Buffer(lib.ones(2))
        m.c = lib.nn.Buffer(lib.ones(2), persistent=False)
        assert list(dict(m.named_buffers())) == ["b", "c"]
        assert list(m.state_dict()) == ["b"]
        assert isinstance(m.b, lib.Tensor)
    assert isinstance(ember.nn.Buffer(ember.ones(1)), ember.nn.Buffer)
    assert not isinstance(ember.ones(1), ember.nn.Buffer)


# ------------------------------------------------------------------------------ registration
def test_registration_and_iteration_match():
    t, e = pair(make_net)
    for name in ("named_parameters", "named_buffers", "named_children", "named_modules"):
        tn = [n for n, _ in getattr(t, name)()]
        en = [n for n, _ in getattr(e, name)()]
        assert tn == en, name
    assert [n for n, _ in t.named_parameters(prefix="m", recurse=False)] == [
        n for n, _ in e.named_parameters(prefix="m", recurse=False)
    ]
    assert len(list(e.parameters())) == len(list(t.parameters()))
    assert len(list(e.modules())) == len(list(t.modules()))
    assert "plain" not in e._modules and isinstance(e.plain, list)
    assert e.get_submodule("blocks.1") is e.blocks[1]
    assert e.get_parameter("heads.a.weight") is e.heads.a.weight
    assert e.get_buffer("steps") is e.steps


def test_shared_parameters_remove_duplicate():
    def build(lib):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Linear(2, 2))
        m[1].weight = m[0].weight
        return m

    t, e = build(torch), build(ember)
    for kw in ({}, {"remove_duplicate": False}):
        assert [n for n, _ in t.named_parameters(**kw)] == [n for n, _ in e.named_parameters(**kw)]
    assert list(t.state_dict()) == list(e.state_dict())


def test_getattr_error_and_dir():
    e = make_net(ember)
    t = make_net(torch)
    for m in (e, t):
        with pytest.raises(AttributeError) as exc:
            _ = m.nope
        m.msg = str(exc.value)
    assert e.msg == t.msg
    assert "fc" in dir(e) and "steps" in dir(e) and "scale" in dir(e)
    del e.fc
    assert "fc" not in e._modules
    del e.steps
    assert "steps" not in e._buffers


def errors(lib):
    nn = lib.nn
    cases = []

    def case(fn):
        try:
            fn()
        except Exception as ex:  # noqa: BLE001
            cases.append((type(ex).__name__, str(ex)))
        else:
            cases.append(None)

    m = nn.Linear(2, 2)

    def assign_tensor_to_param():
        m.weight = lib.ones(2, 2)

    def assign_int_to_module():
        s = nn.Sequential(nn.Linear(1, 1))
        setattr(s, "0", 3)

    def assign_to_buffer():
        b = nn.Module()
        b.register_buffer("x", lib.ones(1))
        b.x = 3

    case(assign_tensor_to_param)
    case(assign_int_to_module)
    case(assign_to_buffer)
    case(lambda: m.register_parameter("a.b", None))
    case(lambda: m.register_parameter("", None))
    case(lambda: m.register_parameter("weight2", lib.ones(1)))
    case(lambda: m.register_parameter("in_features", None))
    case(lambda: m.register_buffer("a.b", None))
    case(lambda: m.register_buffer("weight", lib.ones(1)))
    case(lambda: m.register_buffer("z", 3))
    case(lambda: m.add_module("a.b", nn.Linear(1, 1)))
    case(lambda: m.add_module("x", 3))
    case(lambda: m.add_module("", nn.Linear(1, 1)))
    case(lambda: m.get_submodule("foo"))
    case(lambda: m.get_submodule("weight"))
    case(lambda: m.get_parameter("in_features"))
    case(lambda: m.get_buffer("weight"))
    case(lambda: m.train("yes"))
    case(lambda: nn.Module()(1))
    case(lambda: nn.Module(3))
    case(lambda: nn.Module().__setattr__("p", None) or m.to(lib.int64))
    p = nn.Parameter(lib.ones(1))
    case(lambda: m.register_parameter("q", nn.Parameter(p * 2)))

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(lib.ones(1))

    case(Early)
    return cases


def test_error_messages_match_torch():
    assert errors(ember) == errors(torch)


# ------------------------------------------------------------------------------ state dict
def test_state_dict_keys_order_metadata():
    t, e = pair(make_net)
    tsd, esd = t.state_dict(), e.state_dict()
    assert list(tsd) == list(esd)
    assert tsd._metadata == esd._metadata
    for k in tsd:
        np.testing.assert_array_equal(to_np(tsd[k]), esd[k]._data)
        assert not esd[k].requires_grad
    assert e.state_dict(keep_vars=True)["fc.weight"] is e.fc.weight
    assert list(e.state_dict(prefix="p.")) == list(t.state_dict(prefix="p."))


def test_load_state_dict_errors_match_torch():
    t, e = pair(make_net)
    sd_t = t.state_dict()
    sd_e = e.state_dict()
    # missing / unexpected, non-strict
    for m, sd in ((t, sd_t), (e, sd_e)):
        bad = OrderedDict(sd)
        del bad["fc.bias"]
        bad["extra.w"] = bad["fc.weight"]
        m.res = m.load_state_dict(bad, strict=False)
    assert (e.res.missing_keys, e.res.unexpected_keys) == (
        t.res.missing_keys,
        t.res.unexpected_keys,
    )
    assert repr(e.load_state_dict(sd_e)) == repr(t.load_state_dict(sd_t))
    # strict errors, including size mismatch
    msgs = []
    for m, lib, sd in ((t, torch, sd_t), (e, ember, sd_e)):
        bad = OrderedDict(sd)
        del bad["fc.bias"]
        bad["extra.w"] = bad["fc.weight"]
        bad["heads.a.weight"] = lib.zeros(3, 3)
        bad["scale"] = 3
        with pytest.raises(RuntimeError) as exc:
            m.load_state_dict(bad)
        msgs.append(str(exc.value))
    assert msgs[0].replace("torch.Tensor", "ember.Tensor") == msgs[1].replace(
        "ember.Tensor", "torch.Tensor"
    ).replace("torch.Tensor", "ember.Tensor")
    for m in (t, e):
        with pytest.raises(TypeError) as exc:
            m.load_state_dict([1])
    assert "Net" in msgs[1]


def test_load_state_dict_assign_and_scalar():
    e = ember.nn.Linear(2, 3)
    w = ember.ones(3, 2)
    e.load_state_dict({"weight": w, "bias": ember.zeros(3)}, assign=True)
    assert type(e.weight) is ember.nn.Parameter and e.weight.requires_grad
    assert e.weight._data is w._data
    m = ember.nn.Module()
    m.s = ember.nn.Parameter(ember.tensor(1.0))
    m.load_state_dict({"s": ember.tensor([5.0])})
    assert float(m.s) == 5.0


def test_extra_state_and_hooks():
    def build(lib):
        class WithExtra(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(1, 1)
                self.extra = 0

            def get_extra_state(self):
                return {"n": self.extra}

            def set_extra_state(self, state):
                self.extra = state["n"] + 1

        return WithExtra()

    t, e = build(torch), build(ember)
    assert list(t.state_dict()) == list(e.state_dict())
    e.load_state_dict(e.state_dict())
    assert e.extra == 1
    seen = []
    e.register_state_dict_pre_hook(lambda m, prefix, keep_vars: seen.append(("pre", prefix)))
    e.register_state_dict_post_hook(lambda m, sd, prefix, meta: seen.append(("post", len(sd))))
    e.register_load_state_dict_post_hook(lambda m, keys: seen.append(("load", keys)))
    e.register_load_state_dict_pre_hook(lambda m, sd, prefix, *a: seen.append(("lpre", prefix)))
    e.load_state_dict(e.state_dict())
    assert [s[0] for s in seen] == ["pre", "post", "lpre", "load"]


def test_save_in_ember_load_in_torch_and_back():
    t, e = pair(make_net)
    with torch.no_grad():
        for p in t.parameters():
            p.add_(1.0)
    buf = io.BytesIO()
    ember.save(e.state_dict(), buf)
    buf.seek(0)
    t2 = make_net(torch)
    t2.load_state_dict(torch.load(buf))
    for (k, a), b in zip(t2.state_dict().items(), e.state_dict().values()):
        np.testing.assert_array_equal(to_np(a), b._data, err_msg=k)
    buf = io.BytesIO()
    torch.save(t.state_dict(), buf)
    buf.seek(0)
    sd = ember.load(buf)
    assert list(sd) == list(t.state_dict()) and sd._metadata == t.state_dict()._metadata
    e.load_state_dict(sd)
    for (k, a), b in zip(t.state_dict().items(), e.state_dict().values()):
        np.testing.assert_array_equal(to_np(a), b._data, err_msg=k)


# ------------------------------------------------------------------------------ forward/grads
def test_forward_and_gradients_match():
    t, e = pair(make_net)
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    tx = torch.from_numpy(x.copy()).requires_grad_()
    ex = ember.from_numpy(x.copy()).requires_grad_()
    ty, ey = t(tx), e(ex)
    np.testing.assert_allclose(ey._data, to_np(ty), rtol=1e-5, atol=1e-6)
    g = np.random.default_rng(2).standard_normal(ty.shape).astype(np.float32)
    ty.backward(torch.from_numpy(g))
    ey.backward(ember.from_numpy(g))
    np.testing.assert_allclose(ex.grad._data, to_np(tx.grad), rtol=1e-5, atol=1e-6)
    for (n, tp), ep in zip(t.named_parameters(), e.parameters()):
        np.testing.assert_allclose(ep.grad._data, to_np(tp.grad), rtol=1e-5, atol=1e-5, err_msg=n)
    e.zero_grad()
    assert all(p.grad is None for p in e.parameters())


def test_modes_requires_grad_apply():
    e = make_net(ember)
    assert e.training and e.fc.training
    assert e.eval() is e and not e.blocks[0].training
    e.train()
    assert e.heads.b.training
    e.requires_grad_(False)
    assert not any(p.requires_grad for p in e.parameters())
    names = []
    e.apply(lambda m: names.append(type(m).__name__))
    t = make_net(torch)
    tnames = []
    t.apply(lambda m: tnames.append(type(m).__name__))
    assert names == tnames
    e.requires_grad_(True)
    (e(ember.ones(2, 3)).sum()).backward()
    e.zero_grad(set_to_none=False)
    assert float(e.fc.weight.grad.abs().sum()) == 0.0


def test_casting():
    e = make_net(ember)
    w = e.fc.weight
    e(ember.ones(1, 3)).sum().backward()
    g = w.grad
    e.double()
    assert e.fc.weight is w and w.dtype == ember.float64 and e.steps.dtype == ember.float64
    assert w.grad is g and g.dtype == ember.float64
    e.to(ember.float32)
    assert w.dtype == ember.float32
    e.half()
    assert e.scale.dtype == ember.float16
    e.float().to("cpu").cpu()
    assert e.fc.bias.dtype == ember.float32
    m = ember.nn.Module()
    m.register_buffer("i", ember.zeros(2, dtype=ember.int64))
    m.double()
    assert m.i.dtype == ember.int64
    with pytest.raises(TypeError):
        e.to(ember.int64)


def test_deepcopy_and_pickle_module():
    t, e = pair(make_net)
    e2 = copy.deepcopy(e)
    assert e2.fc.weight is not e.fc.weight
    np.testing.assert_array_equal(e2.fc.weight._data, e.fc.weight._data)
    assert list(e2.state_dict()) == list(e.state_dict())
    lin = ember.nn.Linear(2, 2)
    lin2 = pickle.loads(pickle.dumps(lin))
    assert type(lin2.weight) is ember.nn.Parameter
    np.testing.assert_array_equal(lin2.weight._data, lin.weight._data)
    y = lin2(ember.ones(1, 2))
    assert y.shape == (1, 2)


# ------------------------------------------------------------------------------ printing
def nested(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.seq = nn.Sequential(OrderedDict(a=nn.Linear(4, 2), b=nn.Identity()))

    m = nn.Sequential(
        Block(),
        nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.Flatten(0)]),
        nn.ModuleList(),
        nn.ModuleDict({"x": nn.Bilinear(2, 3, 4), "y": nn.Unflatten(1, (2, 2))}),
        nn.Linear(3, 3, bias=False),
    )
    return m


def test_repr_matches_torch():
    assert repr(nested(ember)) == repr(nested(torch))
    assert repr(make_net(ember)) == repr(make_net(torch))
    assert repr(ember.nn.Module()) == repr(torch.nn.Module())

    class WithExtra(ember.nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"

    class TWithExtra(torch.nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(WithExtra()) == repr(TWithExtra()).replace("TWithExtra", "WithExtra")


# ------------------------------------------------------------------------------ misc
def test_uninitialized_parameter_and_lazy_load():
    p = ember.nn.UninitializedParameter()
    assert ember.nn.parameter.is_lazy(p) and repr(p) == "<UninitializedParameter>"
    m = ember.nn.Module()
    m.w = p
    m.load_state_dict({"w": ember.ones(2, 3)})
    assert type(m.w) is ember.nn.Parameter and m.w.shape == (2, 3) and m.w.requires_grad
    assert float(m.w.sum()) == 6.0


def test_set_submodule_register_module_share_memory():
    for lib in (torch, ember):
        m = lib.nn.Sequential(lib.nn.Sequential(lib.nn.Linear(1, 1)))
        m.set_submodule("0.0", lib.nn.Identity())
        m.register_module("extra", lib.nn.Flatten())
        assert type(m[0][0]).__name__ == "Identity" and "extra" in m._modules
        assert m.share_memory() is m
        with pytest.raises(ValueError, match="Cannot set the submodule without a target name!"):
            m.set_submodule("", lib.nn.Identity())


class SaveNet(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(2, 3)
        self.register_buffer("steps", ember.zeros(2))


def test_whole_module_save_load():
    e = SaveNet()
    buf = io.BytesIO()
    ember.save(e, buf)
    buf.seek(0)
    e2 = ember.load(buf, weights_only=False)
    assert repr(e2) == repr(e) and list(e2.state_dict()) == list(e.state_dict())
    np.testing.assert_array_equal(e2.fc.weight._data, e.fc.weight._data)
    assert type(e2.fc.weight) is ember.nn.Parameter


def test_call_fast_path_has_no_hook_overhead():
    m = ember.nn.Identity()
    assert m.__dict__["_has_hooks"] is False
    h = m.register_forward_hook(lambda *a: None)
    assert m._has_hooks
    h.remove()
    x = ember.ones(1)
    assert m(x) is x


def test_state_dict_positional_args_deprecated():
    for lib in (torch, ember):
        m = lib.nn.Linear(1, 1)
        dest = OrderedDict()
        with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
            out = m.state_dict(dest, "p.", True)
        assert out is dest and list(dest) == ["p.weight", "p.bias"]
        assert dest["p.weight"] is m.weight

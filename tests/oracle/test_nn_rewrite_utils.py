"""``nn.utils`` and ``nn.init`` rewritten in ember's terms (issue 21): the hook-based
spectral_norm from a seeded start over several steps, parametrize's caching and
registration, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _seeded_layer(lib, kind):
    lib.manual_seed(7)
    if kind == "linear":
        return lib.nn.Linear(6, 4)
    if kind == "conv1d":
        return lib.nn.Conv1d(3, 5, 3)
    return lib.nn.ConvTranspose2d(3, 2, 2)


@pytest.mark.parametrize(
    ("kind", "kw"),
    [
        ("linear", {}),
        ("linear", {"n_power_iterations": 4, "eps": 1e-4}),
        ("conv1d", {"dim": 2}),
        ("conv1d", {"dim": 1, "n_power_iterations": 2}),
        ("convt", {}),
    ],
)
def test_spectral_norm_from_seeded_start_matches_torch(kind, kw):
    # no state copied across: the layer's init and u, v's draws come from the same seed
    def run(lib):
        m = _seeded_layer(lib, kind)
        lib.manual_seed(3)
        lib.nn.utils.spectral_norm(m, **kw)
        start = (m.weight_u.numpy().copy(), m.weight_v.numpy().copy())
        shape = (2, 6) if kind == "linear" else (2, 3, 5) if kind == "conv1d" else (1, 3, 3, 3)
        steps = []
        for step in range(3):
            x = lib.tensor(np.cos(np.arange(np.prod(shape)) + step).reshape(shape))
            out = m(x.float())
            out.pow(2).sum().backward()
            steps.append(
                (
                    out.detach().numpy().copy(),
                    m.weight.detach().numpy().copy(),
                    m.weight_u.numpy().copy(),
                    m.weight_orig.grad.numpy().copy(),
                )
            )
        m.eval()
        frozen = m(x.float()).detach().numpy().copy()
        return start, steps, frozen

    (es, esteps, ef), (ts, tsteps, tf) = run(ember), run(torch)
    for a, b in zip(es, ts):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for e_step, t_step in zip(esteps, tsteps):
        for a, b in zip(e_step, t_step):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ef, tf, rtol=1e-4, atol=1e-5)


def test_spectral_norm_negative_dim_counts_from_the_end():
    # torch's permute fails on a negative dim; ember counts it from the end
    def run(lib, dim):
        m = _seeded_layer(lib, "conv1d")
        lib.manual_seed(3)
        lib.nn.utils.spectral_norm(m, dim=dim)
        return m(lib.ones(1, 3, 5)).detach().numpy()

    np.testing.assert_allclose(run(ember, -1), run(torch, 2), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError):
        run(torch, -1)


def test_spectral_norm_version0_conversion_matches_torch():
    # a version-0 checkpoint stored the normalised weight and no v: v is solved for (a
    # tall float64 weight, so W^T W is well conditioned and the solution unique)
    def layer(lib):
        lib.manual_seed(7)
        return lib.nn.utils.spectral_norm(lib.nn.Linear(4, 6).double())

    def run(lib):
        m = layer(lib)
        m(lib.ones(1, 4).double())
        sd = m.state_dict()
        sd._metadata[""]["spectral_norm"]["weight.version"] = 0
        sd["weight"] = m.weight.detach().clone()
        del sd["weight_v"]
        fresh = layer(lib)
        keys = fresh.load_state_dict(sd, strict=False)
        solved = fresh.weight_v.numpy().copy()
        del sd["weight_u"]
        partial = layer(lib).load_state_dict(sd, strict=False)
        try:
            layer(lib).load_state_dict(sd)
        except RuntimeError as exc:
            message = str(exc)
        return solved, repr(keys), partial.missing_keys, message

    (ev, *erest), (tv, *trest) = run(ember), run(torch)
    np.testing.assert_allclose(ev, tv, rtol=1e-10, atol=1e-12)
    assert erest == trest


def test_spectral_norm_hooks_remove_and_errors_match_torch():
    def run(lib):
        sn = lib.nn.utils.spectral_norm
        m = _seeded_layer(lib, "linear")
        sn(m)
        sn(m, name="bias")
        # torch wraps load pre-hooks in a private class: count those, name the others
        tables = [
            [type(h).__name__ for h in m._forward_pre_hooks.values()],
            [type(h).__name__ for h in m._state_dict_hooks.values()],
            len(m._load_state_dict_pre_hooks),
        ]
        lib.nn.utils.remove_spectral_norm(m)
        # (the load pre-hook count after removal differs: see the test below)
        after = [
            [type(h).__name__ for h in m._forward_pre_hooks.values()],
            [type(h).__name__ for h in m._state_dict_hooks.values()],
        ]
        names = [n for n, _ in m.named_parameters()] + [n for n, _ in m.named_buffers()]
        errs = []
        for call in (
            lambda: sn(m, name="bias"),
            lambda: lib.nn.utils.remove_spectral_norm(m, "weight"),
            lambda: sn(lib.nn.Linear(2, 2, bias=False), name="bias"),
            lambda: sn(lib.nn.Linear(2, 2), n_power_iterations=0),
        ):
            try:
                call()
            except Exception as exc:  # noqa: BLE001
                errs.append((type(exc).__name__, str(exc)))
        return tables, after, names, errs

    assert run(ember) == run(torch)


def test_remove_spectral_norm_drops_its_load_hook():
    # torch leaves the load pre-hook behind (its wrapper hides the class from the lookup), so a
    # plain checkpoint then fails to load with "Missing key(s) ... weight_orig"; ember drops it
    m = ember.nn.utils.spectral_norm(ember.nn.Linear(2, 2))
    ember.nn.utils.remove_spectral_norm(m)
    assert len(m._load_state_dict_pre_hooks) == 0
    assert repr(m.load_state_dict(ember.nn.Linear(2, 2).state_dict())) == (
        "<All keys matched successfully>"
    )
    t = torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2))
    torch.nn.utils.remove_spectral_norm(t)
    with pytest.raises(RuntimeError, match="weight_orig"):
        t.load_state_dict(torch.nn.Linear(2, 2).state_dict())


# ------------------------------------------------------------------------------ parametrize
def _parametrizations(lib):
    nn = lib.nn

    class Counted(nn.Module):
        calls = 0

        def forward(self, x):
            type(self).calls += 1
            return x.triu()

        def right_inverse(self, x):
            return x.triu()

    class Double(nn.Module):
        def forward(self, x):
            return x.double()

        def right_inverse(self, x):
            return x

    class Wide(nn.Module):
        def forward(self, x):
            return lib.cat([x, x], 0)

    class Split(nn.Module):
        def forward(self, a, b):
            return a + b

        def right_inverse(self, x):
            return x / 2, x / 2

    class BadInverse(nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, x):
            return x.double()

    return Counted, Double, Wide, Split, BadInverse


def test_parametrize_caching_matches_torch():
    def run(lib):
        P = lib.nn.utils.parametrize
        Counted, *_ = _parametrizations(lib)
        Counted.calls = 0
        m = lib.nn.Linear(3, 3)
        P.register_parametrization(m, "weight", Counted())
        after_register = Counted.calls
        with P.cached():
            a, b = m.weight, m.weight
            same = a is b
            with P.cached():  # nested: still the same cache
                c = m.weight
            inner_same = c is a
        outside = m.weight is m.weight
        return after_register, Counted.calls, same, inner_same, outside

    assert run(ember) == run(torch)


def test_parametrize_registration_matches_torch():
    def run(lib):
        P = lib.nn.utils.parametrize
        Counted, Double, Wide, Split, BadInverse = _parametrizations(lib)
        out = []
        m = lib.nn.Linear(3, 3)
        P.register_parametrization(m, "weight", Counted())
        for extra in (Double(), Wide(), BadInverse()):
            try:
                P.register_parametrization(m, "weight", extra)
                out.append("ok")
            except ValueError as exc:
                out.append(str(exc).replace("torch.", "").replace("ember.", ""))
        P.register_parametrization(m, "weight", Double(), unsafe=True)
        out.append((type(m).__name__, P.type_before_parametrizations(m).__name__))
        out.append((list(m.state_dict()), str(m.weight.dtype).split(".")[-1]))
        out.append(P.is_parametrized(m) and P.is_parametrized(m, "weight"))
        out.append(P.is_parametrized(m, "bias"))
        try:
            P.register_parametrization(m, "nothing", Counted())
        except ValueError as exc:
            out.append(type(exc).__name__)
        s = lib.nn.Linear(2, 2)
        P.register_parametrization(s, "weight", Split())
        out.append(list(s.state_dict()))
        for leave in (False, True):
            try:
                P.remove_parametrizations(s, "weight", leave_parametrized=leave)
                out.append((leave, type(s).__name__, list(s.state_dict())))
            except ValueError as exc:
                out.append((leave, str(exc)))
        return out

    assert run(ember) == run(torch)


# ------------------------------------------------------------------------------ nn.init
INITS = {
    "uniform": lambda ni, t: ni.uniform_(t, -0.5, 2.0),
    "normal": lambda ni, t: ni.normal_(t, 1.0, 0.3),
    "trunc_inside": lambda ni, t: ni.trunc_normal_(t, 0.0, 1.0, -1.0, 1.5),
    "trunc_tail": lambda ni, t: ni.trunc_normal_(t, 0.0, 1.0, 1.0, 3.0),  # mass < 0.3: uniform
    "trunc_shifted": lambda ni, t: ni.trunc_normal_(t, 2.0, 0.5, 1.0, 2.2),
    "xavier_uniform": lambda ni, t: ni.xavier_uniform_(t, gain=1.7),
    "xavier_normal": lambda ni, t: ni.xavier_normal_(t),
    "kaiming_uniform": lambda ni, t: ni.kaiming_uniform_(t, a=5**0.5),
    "kaiming_uniform_out_relu": lambda ni, t: ni.kaiming_uniform_(
        t, mode="fan_out", nonlinearity="relu"
    ),
    "kaiming_normal": lambda ni, t: ni.kaiming_normal_(t, a=0.2, mode="FAN_IN"),
    "kaiming_normal_tanh": lambda ni, t: ni.kaiming_normal_(t, nonlinearity="tanh"),
    "orthogonal": lambda ni, t: ni.orthogonal_(t, gain=0.5),
    "constant": lambda ni, t: ni.constant_(t, 0.25),
    "dirac": lambda ni, t: ni.dirac_(t, groups=2) if t.dim() >= 3 else ni.eye_(t),
}


@pytest.mark.parametrize("name", sorted(INITS))
@pytest.mark.parametrize("shape", [(6, 4), (4, 3, 3, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_generator", [False, True])
def test_init_numbers_for_a_seed_match_torch(name, shape, dtype, with_generator):
    def run(lib):
        lib.manual_seed(123)
        t = lib.empty(*shape, dtype=getattr(lib, dtype))
        fn = INITS[name]
        if with_generator and name not in ("constant", "dirac"):
            g = lib.Generator().manual_seed(9)
            fn = {
                "uniform": lambda ni, t: ni.uniform_(t, -0.5, 2.0, generator=g),
                "normal": lambda ni, t: ni.normal_(t, 1.0, 0.3, generator=g),
                "xavier_uniform": lambda ni, t: ni.xavier_uniform_(t, generator=g),
                "kaiming_normal": lambda ni, t: ni.kaiming_normal_(t, generator=g),
                "orthogonal": lambda ni, t: ni.orthogonal_(t, generator=g),
            }.get(name, fn)
        out = fn(lib.nn.init, t)
        return out is t, t.numpy().copy()

    (e_same, e), (t_same, t) = run(ember), run(torch)
    assert e_same == t_same is True
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(e, t, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "call",
    [
        lambda ni, L: ni.calculate_gain("leaky_relu"),
        lambda ni, L: ni.calculate_gain("leaky_relu", 0.3),
        lambda ni, L: ni.calculate_gain("leaky_relu", 2),
        lambda ni, L: ni.calculate_gain("leaky_relu", True),
        lambda ni, L: ni.calculate_gain("conv_transpose2d"),
        lambda ni, L: ni.calculate_gain("selu"),
        lambda ni, L: ni.calculate_gain("softmax"),
        lambda ni, L: ni._calculate_fan_in_and_fan_out(L.empty(3)),
        lambda ni, L: ni._calculate_fan_in_and_fan_out(L.empty(5, 3, 0)),
        lambda ni, L: ni.kaiming_uniform_(L.empty(3, 3), mode="fan"),
        lambda ni, L: ni.xavier_uniform_(L.empty(0, 3)),
    ],
)
def test_init_gains_fans_and_errors_match_torch(call):
    def outcome(lib):
        try:
            value = call(lib.nn.init, lib)
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__, str(exc)
        return value if not hasattr(value, "shape") else tuple(value.shape)

    assert outcome(ember) == outcome(torch)


# ------------------------------------------------------------------------------ accessor
def test_named_member_accessor_matches_torch():
    def run(lib):
        if lib is torch:
            from torch.nn.utils._named_member_accessor import NamedMemberAccessor
        else:
            from ember.nn.utils._named_member_accessor import NamedMemberAccessor
        nn = lib.nn
        lib.manual_seed(0)
        m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
        acc = NamedMemberAccessor(m)
        out = [acc.check_keys(["0.weight", "extra", "1.running_mean"])]
        old, missing = acc.swap_tensors_dict({"0.bias": lib.zeros(3), "1.new": lib.ones(1)}, True)
        out.append((sorted(old), missing, m[0].bias.tolist(), m[1].new.tolist()))
        acc.swap_tensors_dict(old, allow_missing=True)
        out.append(hasattr(m[1], "new"))
        for call in (
            lambda: acc.swap_tensors_dict({"0.weight": lib.ones(3, 2), "0.nope": lib.ones(1)}),
            lambda: acc.get_tensor("0.missing"),
            lambda: acc.get_submodule("0.weight"),
            lambda: acc.set_tensor("0.weight", 3),
            lambda: acc.swap_tensors(["0.weight"], []),
            lambda: acc.swap_submodule("1", nn.ReLU()).__class__.__name__,
            lambda: acc.swap_submodule("0.x", nn.ReLU()),
        ):
            try:
                out.append(("ok", call()))
            except Exception as exc:  # noqa: BLE001
                out.append((type(exc).__name__, str(exc).replace("torch", "LIB")))
        out.append(m[0].weight.sum().item() != 3.0 * 2)  # the failed swap was undone
        out.append([n for n, _ in acc.named_tensors()])
        return out

    assert run(ember) == run(torch)


# ------------------------------------------------------------------------------ fusion, weight_norm
@pytest.mark.parametrize("kind", ["conv", "convt", "linear", "linear_bn1"])
def test_fuse_eval_matches_torch(kind):
    def run(lib):
        nn = lib.nn
        lib.manual_seed(4)
        if kind == "conv":
            layer, bn, x = nn.Conv2d(3, 4, 2), nn.BatchNorm2d(4), lib.randn(2, 3, 5, 5)
        elif kind == "convt":
            layer, bn, x = nn.ConvTranspose2d(3, 4, 2), nn.BatchNorm2d(4), lib.randn(2, 3, 4, 4)
        elif kind == "linear":
            layer, bn, x = nn.Linear(3, 4), nn.BatchNorm1d(4), lib.randn(5, 3)
        else:
            layer, bn, x = nn.Linear(3, 4), nn.BatchNorm1d(1), lib.randn(5, 3)
        with lib.no_grad():
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-1, 1)
        layer.eval(), bn.eval()
        fuse = (
            nn.utils.fuse_conv_bn_eval if kind.startswith("conv") else nn.utils.fuse_linear_bn_eval
        )
        kw = {"transpose": True} if kind == "convt" else {}
        fused = fuse(layer, bn, **kw)
        expected = None if kind == "linear_bn1" else bn(layer(x)).detach().numpy()
        errors = []
        for call in (
            lambda: fuse(layer.train(), bn, **kw),
            lambda: fuse(layer.eval(), bn.train(), **kw),
        ):
            try:
                call()
            except AssertionError as exc:
                errors.append(str(exc))
        return fused(x).detach().numpy(), expected, errors

    (ef, ee, eerr), (tf, te, terr) = run(ember), run(torch)
    np.testing.assert_allclose(ef, tf, rtol=1e-5, atol=1e-6)
    if te is not None:
        np.testing.assert_allclose(ef, ee, rtol=1e-4, atol=1e-5)
    assert eerr == terr


@pytest.mark.parametrize("dim", [0, 1, None])
def test_hook_weight_norm_matches_torch(dim):
    def run(lib):
        import warnings as w

        lib.manual_seed(2)
        m = lib.nn.Conv1d(2, 3, 2)
        with w.catch_warnings():
            w.simplefilter("ignore")
            lib.nn.utils.weight_norm(m, dim=dim)
        names = [n for n, _ in m.named_parameters()]
        out = m(lib.ones(1, 2, 4))
        out.sum().backward()
        grads = (m.weight_g.grad.numpy().copy(), m.weight_v.grad.numpy().copy())
        lib.nn.utils.remove_weight_norm(m)
        try:
            lib.nn.utils.remove_weight_norm(m)
        except ValueError as exc:
            err = str(exc)
        return names, out.detach().numpy(), grads, [n for n, _ in m.named_parameters()], err

    (en, eo, eg, er, ee), (tn, to, tg, tr, te) = run(ember), run(torch)
    assert (en, er, ee) == (tn, tr, te)
    np.testing.assert_allclose(eo, to, rtol=1e-5, atol=1e-6)
    for a, b in zip(eg, tg):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

"""Oracle tests: nn.MultiheadAttention and F.multi_head_attention_forward against torch.

Each case builds the module in both libraries, copies torch's (randomised) state_dict into
ember, and compares outputs (values, dtype, shape, strides, grad_fn names), attention weights,
and the gradients of the inputs and of every parameter under a random upstream gradient.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from tests.oracle.helper import _flat, assert_same, check_double_backward, rand, torch

pytestmark = pytest.mark.filterwarnings(
    "ignore:Support for mismatched",
    "ignore:enable_nested_tensor",
    "ignore:The PyTorch API of nested",
    "ignore:invalid value encountered",
)
F = {torch: torch.nn.functional, ember: ember.nn.functional}


# ------------------------------------------------------------------------------ helpers


def pair(ctor, dtype="float64", seed=0):
    """Return ``(torch_module, ember_module)`` built by ``ctor(lib)`` with torch's parameters
    (randomised, so zero-initialised biases take part) loaded into ember."""
    torch.manual_seed(seed)
    tm = ctor(torch).to(getattr(torch, dtype))
    em = ctor(ember).to(getattr(ember, dtype))
    with torch.no_grad():
        for p in tm.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    state = {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}
    em.load_state_dict(state)
    return tm, em


def compare(tm, em, fn, inputs, *, grad=True, atol=None, rtol=None, strides=True, seed=1):
    """Run ``fn(module, lib, *tensors)`` in both libraries; compare outputs and gradients of the
    inputs (float arrays require grad) and of every parameter."""
    tin = [torch.from_numpy(a.copy()).requires_grad_(grad) for a in inputs]
    ein = [ember.from_numpy(a.copy()).requires_grad_(grad) for a in inputs]
    tout, eout = _flat(fn(tm, torch, *tin)), _flat(fn(em, ember, *ein))
    assert len(tout) == len(eout)
    for i, (e, t) in enumerate(zip(eout, tout)):
        if t is None:
            assert e is None, f"output {i}: torch None"
            continue
        assert_same(e, t, atol=atol, rtol=rtol, what=f"output {i}", strides=strides)
        tn = type(t.grad_fn).__name__ if t.grad_fn is not None else None
        en = e.grad_fn.name() if e.grad_fn is not None else None
        assert en == tn, f"output {i}: grad_fn {en} != {tn}"
    if not grad:
        return eout, tout
    rng = np.random.default_rng(seed)
    pairs = [(e, t) for e, t in zip(eout, tout) if t is not None and t.requires_grad]
    gs = [rng.standard_normal(tuple(t.shape)) for _, t in pairs]
    tnamed = list(tm.named_parameters()) if tm is not None else []
    tparams = [p for _, p in tnamed]
    eparams = list(em.parameters()) if em is not None else []
    names = [f"input {i}" for i in range(len(inputs))] + [n for n, _ in tnamed]
    tg = torch.autograd.grad(
        [t for _, t in pairs],
        tin + tparams,
        [torch.from_numpy(g).to(t.dtype) for g, (_, t) in zip(gs, pairs)],
        allow_unused=True,
    )
    eg = ember.autograd.grad(
        [e for e, _ in pairs],
        ein + eparams,
        [ember.from_numpy(g).to(e.dtype) for g, (e, _) in zip(gs, pairs)],
        allow_unused=True,
    )
    for name, a, b in zip(names, eg, tg):
        if b is None:
            assert a is None or not np.any(a.numpy()), f"grad of {name}: torch None"
            continue
        assert a is not None, f"grad of {name}: ember None"
        assert_same(a, b, atol=atol, rtol=rtol, what=f"grad of {name}", strides=False)
    return eout, tout


def mha(**kw):
    return lambda lib: lib.nn.MultiheadAttention(**kw)


# ------------------------------------------------------------------------------ structure


@pytest.mark.parametrize(
    "kw",
    [
        {"embed_dim": 8, "num_heads": 2},
        {"embed_dim": 8, "num_heads": 2, "bias": False},
        {"embed_dim": 8, "num_heads": 4, "add_bias_kv": True, "add_zero_attn": True},
        {"embed_dim": 8, "num_heads": 2, "kdim": 3, "vdim": 5, "batch_first": True},
    ],
)
def test_structure(kw):
    tm, em = pair(mha(**kw))
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    for n, p in tm.named_parameters():
        assert tuple(em.get_parameter(n).shape) == tuple(p.shape), n
    assert type(em.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    for a in ("embed_dim", "kdim", "vdim", "num_heads", "head_dim", "batch_first"):
        assert getattr(em, a) == getattr(tm, a), a
    assert em._qkv_same_embed_dim == tm._qkv_same_embed_dim


def test_init_distribution():
    m = ember.nn.MultiheadAttention(64, 4, add_bias_kv=True)
    bound = np.sqrt(6 / (64 + 192))  # xavier-uniform of the packed (3E, E) weight
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not m.in_proj_bias.detach().numpy().any()
    assert not m.out_proj.bias.detach().numpy().any()
    assert m.bias_k.detach().numpy().std() > 0
    m2 = ember.nn.MultiheadAttention(8, 2, kdim=3)
    assert m2.in_proj_weight is None and tuple(m2.k_proj_weight.shape) == (8, 3)


# ------------------------------------------------------------------------------ forward/backward

L, S, N, E = 4, 5, 3, 8


def _call(mask=None, kpm=None, **fw):
    """A forward calling ``m(q, k, v, ...)`` with masks made from NumPy arrays."""

    def fn(m, lib, q, k, v):
        am = None if mask is None else lib.from_numpy(mask.copy())
        pm = None if kpm is None else lib.from_numpy(kpm.copy())
        return m(q, k, v, key_padding_mask=pm, attn_mask=am, **fw)

    return fn


def _self(**fw):
    def fn(m, lib, x):
        return m(x, x, x, **fw)

    return fn


_bool_mask = np.triu(np.ones((L, S), dtype=bool), 2)
_kpm = np.zeros((N, S), dtype=bool)
_kpm[0, -1] = _kpm[2, -2:] = True


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(
    "fw",
    [
        {},
        {"need_weights": False},
        {"average_attn_weights": False},
        {"mask": _bool_mask},
        {"mask": rand(L, S, dtype="float64")},
        {"mask": rand(N * 2, L, S, dtype="float64")},
        {"kpm": _kpm},
        {"kpm": np.where(_kpm, -1e9, 0.0)},
        {"mask": _bool_mask, "kpm": _kpm, "need_weights": False},
        {"mask": _bool_mask, "kpm": _kpm, "average_attn_weights": False},
    ],
    ids=lambda d: "-".join(sorted(d)) or "plain",
)
def test_mha_cross(batch_first, fw):
    fw = dict(fw)
    tm, em = pair(mha(embed_dim=E, num_heads=2, batch_first=batch_first))
    shape = (lambda n, s: (n, s, E)) if batch_first else (lambda n, s: (s, n, E))
    q, k, v = rand(*shape(N, L), dtype="float64"), rand(*shape(N, S), dtype="float64"), None
    v = rand(*shape(N, S), dtype="float64")
    compare(tm, em, _call(fw.pop("mask", None), fw.pop("kpm", None), **fw), [q, k, v])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_self_attention(batch_first, need_weights):
    tm, em = pair(mha(embed_dim=E, num_heads=4, batch_first=batch_first))
    x = rand(N, L, E, dtype="float64")
    compare(tm, em, _self(need_weights=need_weights), [x])


def test_mha_key_is_value():
    tm, em = pair(mha(embed_dim=E, num_heads=2))

    def fn(m, lib, q, kv):
        return m(q, kv, kv)

    compare(tm, em, fn, [rand(L, N, E, dtype="float64"), rand(S, N, E, dtype="float64")])


@pytest.mark.parametrize(
    "kw",
    [
        {"bias": False},
        {"add_bias_kv": True},
        {"add_zero_attn": True},
        {"add_bias_kv": True, "add_zero_attn": True},
        {"kdim": 3, "vdim": 6},
        {"kdim": 3, "vdim": 6, "bias": False, "batch_first": True},
    ],
)
@pytest.mark.parametrize("masked", [False, True])
def test_mha_options(kw, masked):
    tm, em = pair(mha(embed_dim=E, num_heads=2, **kw))
    bf = kw.get("batch_first", False)
    kd, vd = kw.get("kdim", E), kw.get("vdim", E)
    dims = (lambda s, d: (N, s, d)) if bf else (lambda s, d: (s, N, d))
    q = rand(*dims(L, E), dtype="float64")
    k, v = rand(*dims(S, kd), dtype="float64"), rand(*dims(S, vd), dtype="float64")
    fn = _call(_bool_mask, _kpm) if masked else _call()
    compare(tm, em, fn, [q, k, v])


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("masked", [False, True])
def test_mha_unbatched(need_weights, masked):
    tm, em = pair(mha(embed_dim=E, num_heads=2, batch_first=True))
    mask = rand(2, L, S, dtype="float64") if masked else None
    kpm = np.array([False, False, True, False, True]) if masked else None
    q, k, v = rand(L, E, dtype="float64"), rand(S, E, dtype="float64"), rand(S, E, dtype="float64")
    compare(tm, em, _call(mask, kpm, need_weights=need_weights), [q, k, v])


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("with_kpm", [False, True])
def test_mha_is_causal(need_weights, with_kpm):
    tm, em = pair(mha(embed_dim=E, num_heads=2, batch_first=True))
    causal = np.triu(np.full((L, L), -np.inf), 1)
    kpm = np.zeros((N, L), dtype=bool)
    kpm[1, -1] = True

    def fn(m, lib, x):
        am = lib.from_numpy(causal.copy())
        pm = lib.from_numpy(kpm.copy()) if with_kpm else None
        return m(
            x, x, x, attn_mask=am, key_padding_mask=pm, need_weights=need_weights, is_causal=True
        )

    compare(tm, em, fn, [rand(N, L, E, dtype="float64")])


def test_mha_float32_and_eval_layout():
    tm, em = pair(mha(embed_dim=16, num_heads=4, batch_first=True), dtype="float32")
    x = rand(2, 6, 16)
    compare(tm, em, _self(), [x])
    tm.eval()
    em.eval()
    # inference without grad: torch's fused kernel returns a contiguous (N, L, E) output
    with torch.no_grad(), ember.no_grad():
        compare(tm, em, _self(), [x], grad=False)
        compare(tm, em, _self(need_weights=False), [x], grad=False)
        compare(tm, em, _call(), [x, x, x], grad=False)  # not the same tensor: the slow path
        # a float mask also keeps torch on its slow path (a transposed output); a bool one not
        mask = np.triu(np.ones((6, 6), dtype=bool), 1)
        compare(tm, em, lambda m, lib, a: _call(mask)(m, lib, a, a, a), [x], grad=False)
        fmask = np.where(mask, -np.inf, 0.0).astype(np.float32)
        compare(tm, em, lambda m, lib, a: _call(fmask)(m, lib, a, a, a), [x], grad=False)
    compare(tm, em, _self(average_attn_weights=False), [x])


def test_mha_dropout():
    em = ember.nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True).double()
    x = ember.from_numpy(rand(2, 6, 8, dtype="float64"))
    ember.manual_seed(0)
    a, wa = em(x, x, x)
    b, wb = em(x, x, x)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    w = wa.detach().numpy() * 2  # average over 2 heads of weights scaled by 1/(1-p) = 2
    assert np.isclose(w.mean() * 6, 2.0, atol=0.5)
    em.eval()
    c, _ = em(x, x, x)
    d, _ = em(x, x, x)
    np.testing.assert_array_equal(c.detach().numpy(), d.detach().numpy())
    tm = torch.nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True).double().eval()
    tm.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in em.state_dict().items()})
    with torch.no_grad():
        ref = tm(*(torch.from_numpy(x.numpy()),) * 3)[0]
    np.testing.assert_allclose(c.detach().numpy(), ref.numpy(), atol=1e-10)


# ------------------------------------------------------------------------------ functional


def _weights(seed=3):
    r = np.random.default_rng(seed)
    return {
        "in_w": r.standard_normal((3 * E, E)) * 0.3,
        "in_b": r.standard_normal(3 * E) * 0.3,
        "out_w": r.standard_normal((E, E)) * 0.3,
        "out_b": r.standard_normal(E) * 0.3,
    }


def test_functional_mha_static_kv():
    w = _weights()
    sk, sv = rand(N * 2, S, E // 2, dtype="float64"), rand(N * 2, S, E // 2, dtype="float64")

    def fn(lib, q, ik, iv, in_w, in_b, out_w, out_b):
        return F[lib].multi_head_attention_forward(
            q, ik, ik, E, 2, in_w, in_b, None, None, False, 0.0, out_w, out_b,
            static_k=lib.from_numpy(sk.copy()), static_v=lib.from_numpy(sv.copy()),
        )  # fmt: skip

    arrays = [rand(L, N, E, dtype="float64"), rand(S, N, E, dtype="float64"), None]
    arrays += [w["in_w"], w["in_b"], w["out_w"], w["out_b"]]
    _compare_fn(fn, arrays)


@pytest.mark.parametrize("given", ["bias_k", "bias_v", "both+static_k", "both+static_v"])
def test_functional_mha_bias_kv_errors(given):
    w = _weights()
    bias = rand(1, 1, E, dtype="float64")
    static = rand(N * 2, S, E // 2, dtype="float64")
    errors = []
    for lib in (torch, ember):
        t = lib.from_numpy
        q = t(rand(L, N, E, dtype="float64"))
        bk = t(bias.copy()) if given != "bias_v" else None
        bv = t(bias.copy()) if given != "bias_k" else None
        extra = {given.split("+")[1]: t(static.copy())} if "+" in given else {}
        with pytest.raises(AssertionError) as info:
            lib.nn.functional.multi_head_attention_forward(
                q, q, q, E, 2, t(w["in_w"]), t(w["in_b"]), bk, bv, False, 0.0,
                t(w["out_w"]), t(w["out_b"]), **extra,
            )  # fmt: skip
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_functional_mha_separate_weights_and_training_flag():
    w = _weights()
    r = np.random.default_rng(5)
    qw, kw_, vw = (r.standard_normal((E, d)) * 0.3 for d in (E, 3, 6))

    def fn(lib, q, k, v, in_b, out_w, out_b, qw_, kw2, vw_):
        return F[lib].multi_head_attention_forward(
            q, k, v, E, 4, None, in_b, None, None, False, 0.7, out_w, out_b, training=False,
            use_separate_proj_weight=True, q_proj_weight=qw_, k_proj_weight=kw2,
            v_proj_weight=vw_, average_attn_weights=False,
        )  # fmt: skip

    arrays = [rand(L, N, E, dtype="float64"), rand(S, N, 3, dtype="float64")]
    arrays += [rand(S, N, 6, dtype="float64"), w["in_b"], w["out_w"], w["out_b"], qw, kw_, vw]
    _compare_fn(fn, arrays)


def _compare_fn(fn, arrays):
    keep = [a for a in arrays if a is not None]

    def wrapped(lib, *ts):
        it = iter(ts)
        args = [next(it) if a is not None else None for a in arrays]
        # a None input stands for "the previous tensor again" (key is value)
        args = [args[i - 1] if a is None else a for i, a in enumerate(args)]
        return fn(lib, *args)

    compare(None, None, lambda m, lib, *ts: wrapped(lib, *ts), keep)


def test_sdpa_fully_masked_row_and_causal_rectangular():
    q, k, v = rand(2, 3, 8, dtype="float64"), rand(2, 5, 8, dtype="float64"), rand(2, 5, 8)
    v = v.astype("float64")

    def fn(m, lib, a, b, c):
        return F[lib].scaled_dot_product_attention(a, b, c, is_causal=True)

    compare(None, None, fn, [q, k, v])


def test_fully_masked_rows():
    """torch's attention gives 0 for a query with every key masked (nan when the weights are
    computed), and a zero gradient through it."""
    mask = np.zeros((2, 3, 3), dtype=bool)
    mask[0, 1] = True
    q = rand(2, 3, 4, dtype="float64")

    def sdpa(m, lib, a):
        return F[lib].scaled_dot_product_attention(a, a, a, attn_mask=lib.from_numpy(~mask))

    eout, _ = compare(None, None, sdpa, [q])
    assert not eout[0].detach().numpy()[0, 1].any()
    fmask = np.where(mask[:1], -np.inf, 0.0)
    compare(None, None, lambda m, lib, a: F[lib].scaled_dot_product_attention(
        a, a, a, attn_mask=lib.from_numpy(fmask)), [q])  # fmt: skip
    tm, em = pair(mha(embed_dim=4, num_heads=2, batch_first=True))
    kpm = np.array([[True, True, True], [False, False, True]])
    compare(tm, em, _call(kpm=kpm, need_weights=False), [q, q, q])
    compare(tm, em, _call(kpm=kpm), [q, q, q], grad=False)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    batch_first=st.booleans(),
    batched=st.booleans(),
    bias=st.booleans(),
    bias_kv=st.booleans(),
    zero_attn=st.booleans(),
    kvdim=st.sampled_from([None, (3, 5)]),
    mask=st.sampled_from([None, "bool", "float", "3d"]),
    kpm=st.sampled_from([None, "bool", "float"]),
    need_weights=st.booleans(),
    average=st.booleans(),
)
def test_mha_option_combinations(
    batch_first, batched, bias, bias_kv, zero_attn, kvdim, mask, kpm, need_weights, average
):
    kw = {"bias": bias, "add_bias_kv": bias_kv, "add_zero_attn": zero_attn}
    if kvdim:
        kw.update(kdim=kvdim[0], vdim=kvdim[1])
    tm, em = pair(mha(embed_dim=E, num_heads=2, batch_first=batch_first, **kw))
    n = N if batched else None
    kd, vd = kvdim or (E, E)

    def shape(s, d):
        if n is None:
            return (s, d)
        return (n, s, d) if batch_first else (s, n, d)

    q = rand(*shape(L, E), dtype="float64")
    k, v = rand(*shape(S, kd), dtype="float64"), rand(*shape(S, vd), dtype="float64")
    am = {
        None: None,
        "bool": _bool_mask,
        "float": rand(L, S, dtype="float64"),
        "3d": rand((n or 1) * 2, L, S, dtype="float64"),
    }[mask]
    pm = None
    if kpm is not None:
        pm = _kpm if batched else _kpm[2]
        pm = pm if kpm == "bool" else np.where(pm, -1e9, 0.0)
    fn = _call(am, pm, need_weights=need_weights, average_attn_weights=average)
    compare(tm, em, fn, [q, k, v])


def test_double_backward_mha():
    tm, em = pair(mha(embed_dim=4, num_heads=2, batch_first=True))
    mask = np.array([[False, True, False], [False, False, True], [False, False, False]])
    mods = {torch: tm, ember: em}

    def fn(lib, x, y):
        out, w = mods[lib](x, y, y, attn_mask=lib.from_numpy(mask.copy()))
        return out, w

    check_double_backward(fn, [rand(2, 3, 4, dtype="float64"), rand(2, 3, 4, dtype="float64")])


def test_double_backward_wrt_parameters():
    w = _weights()

    def fn(lib, x, in_w, out_w):
        return F[lib].multi_head_attention_forward(
            x, x, x, E, 2, in_w, None, None, None, False, 0.0, out_w, None
        )  # need_weights: torch's flash-attention path has no double backward

    check_double_backward(fn, [rand(3, 2, E, dtype="float64"), w["in_w"], w["out_w"]])


# ------------------------------------------------------------------------------ errors


def _raises(fn, *arrays, message=True):
    outs = {}
    for lib in (torch, ember):
        ts = [lib.from_numpy(a.copy()) for a in arrays]
        with pytest.raises(Exception) as exc:
            fn(lib, *ts)
        outs[lib] = exc.value
    assert type(outs[ember]) is type(outs[torch]), (outs[ember], outs[torch])
    if message:
        assert str(outs[ember]) == str(outs[torch])


def _m(lib, **kw):
    torch.manual_seed(0)
    return lib.nn.MultiheadAttention(E, 2, **kw).double()


def test_errors():
    x3, x2 = rand(L, N, E, dtype="float64"), rand(L, E, dtype="float64")
    x4 = rand(1, L, N, E, dtype="float64")
    _raises(lambda lib, a, b: _m(lib)(a, b, b), x3, x2)
    _raises(lambda lib, a, b: _m(lib)(a, b, b), x2, x3)
    _raises(lambda lib, a: _m(lib)(a, a, a), x4)
    _raises(lambda lib, a, m: _m(lib)(a, a, a, key_padding_mask=m), x3, np.zeros(S, bool))
    _raises(lambda lib, a, m: _m(lib)(a, a, a, attn_mask=m), x3, np.zeros(S, bool))
    _raises(lambda lib, a, m: _m(lib)(a, a, a, attn_mask=m), x3, np.zeros((L, L + 1), bool))
    _raises(lambda lib, a, m: _m(lib)(a, a, a, attn_mask=m), x3, np.zeros((2, L, L), bool))
    _raises(lambda lib, a, m: _m(lib)(a, a, a, attn_mask=m), x2, np.zeros((3, L, L), bool))
    _raises(lambda lib, a, m: _m(lib)(a, a, a, key_padding_mask=m), x3, np.zeros((N, L + 1)))
    _raises(lambda lib, a, m: _m(lib)(a, a, a, key_padding_mask=m), x3, np.zeros((N + 1, L)))
    _raises(lambda lib, a, m: _m(lib)(a, a, a, attn_mask=m), x3, np.zeros((L, L), np.int64))
    _raises(lambda lib, a: _m(lib)(a, a, a, is_causal=True), x3)
    xs = rand(L, N, E + 2, dtype="float64")
    _raises(lambda lib, a: _m(lib)(a, a, a), xs)
    _raises(lambda lib, a, b: _m(lib)(a, a, b), x3, rand(S, N, E, dtype="float64"))
    for kw in ({"embed_dim": 0, "num_heads": 2}, {"embed_dim": 6, "num_heads": 4}):
        with pytest.raises(Exception) as te:
            torch.nn.MultiheadAttention(**kw)
        with pytest.raises(type(te.value), match=str(te.value)):
            ember.nn.MultiheadAttention(**kw)


def test_mismatched_mask_types_warn():
    x = rand(L, N, E, dtype="float64")
    kpm, am = np.zeros((N, L), bool), np.zeros((L, L))
    for lib in (torch, ember):
        t = lib.from_numpy(x)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            _m(lib)(t, t, t, key_padding_mask=lib.from_numpy(kpm), attn_mask=lib.from_numpy(am))
        msgs = [str(w.message) for w in rec if "mismatched" in str(w.message)]
        assert msgs == [
            "Support for mismatched key_padding_mask and attn_mask is deprecated. "
            "Use same type for both instead."
        ], lib


def test_merge_masks_and_pickle():
    import pickle

    tm, em = pair(mha(embed_dim=E, num_heads=2, batch_first=True))
    x = rand(N, L, E, dtype="float64")
    am, kpm = rand(L, L, dtype="float64"), np.where(_kpm[:, :L], -np.inf, 0.0)
    am3 = rand(N * 2, L, L, dtype="float64")
    for a, k in ((None, None), (None, kpm), (am, None), (am, kpm), (am3, kpm)):
        args = {}
        for lib in (torch, ember):
            cv = lambda t, lib=lib: None if t is None else lib.from_numpy(t.copy())  # noqa: E731
            m = tm if lib is torch else em
            args[lib] = m.merge_masks(cv(a), cv(k), lib.from_numpy(x))
        (tmask, ttype), (emask, etype) = args[torch], args[ember]
        assert etype == ttype
        assert (emask is None) == (tmask is None)
        if tmask is not None:
            assert_same(emask, tmask, strides=False)
    em2 = pickle.loads(pickle.dumps(em))
    xe = ember.from_numpy(x)
    np.testing.assert_array_equal(
        em2(xe, xe, xe)[0].detach().numpy(), em(xe, xe, xe)[0].detach().numpy()
    )

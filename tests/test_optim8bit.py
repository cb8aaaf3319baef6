"""8-bit optimizers (ember.optim.optim8bit) and block-wise quantization (ember.optim._quant8),
checked against a float64 implementation of the published algorithm (Dettmers et al., 2022)."""

from __future__ import annotations

import copy
import io
import warnings

import numpy as np
import pytest

import ember
import ember.contrib.bitsandbytes as bnb
from ember.optim import _quant8 as Q
from ember.optim.optim8bit import BLOCKSIZE, dequantize_state_dict

F = bnb.functional


# -- the quantization map and functions ----------------------------------------------------------
def test_dynamic_map_shape_and_values():
    s = F.create_dynamic_map(True).numpy()
    u = F.create_dynamic_map(False).numpy()
    for m in (s, u):
        assert m.shape == (256,) and m.dtype == np.float32
        assert np.all(np.diff(m) > 0)  # 256 distinct sorted values
        assert m[-1] == 1.0 and 0.0 in m
    assert s[0] < -0.99 and u.min() == 0.0
    # decades 1e-6 .. 1: the smallest non-zero magnitude is 1e-6 * 0.55
    assert np.isclose(np.abs(s[s != 0]).min(), 0.55e-6, rtol=1e-5)
    assert np.isclose(u[u > 0].min(), 1e-6 * (0.1 + 0.45 / 2), rtol=1e-5)


@pytest.mark.parametrize("signed", [True, False])
def test_encoder_is_nearest_value(signed):
    code = Q.SIGNED if signed else Q.UNSIGNED
    c = Q.coder(code)
    assert c.fast
    rng = np.random.default_rng(0)
    x = rng.standard_normal(50_000).astype(np.float32)
    x /= np.abs(x).max()
    if not signed:
        x = np.abs(x)
    x = np.concatenate([x, code, c.mid, np.nextafter(c.mid, np.float32(-2)), x * 1e-5])
    out = np.empty(x.size, np.uint8)
    c.encode(x, out)
    np.testing.assert_array_equal(out, c.exact(x))
    err = np.abs(code[out].astype(np.float64) - x)
    best = np.abs(code[None, :].astype(np.float64) - x[:2000, None]).min(1)
    np.testing.assert_allclose(err[:2000], best, atol=1e-7)


@pytest.mark.parametrize("n", [1, 2047, 2048, 4096 * 3 + 5])
@pytest.mark.parametrize("blocksize", [2048, 4096, 256])
def test_quantize_blockwise_round_trip(n, blocksize):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * rng.choice([1e-4, 1.0, 30.0], n)).astype(np.float32)
    codes, st = F.quantize_blockwise(ember.tensor(a), blocksize=blocksize)
    q = codes.numpy()
    assert q.dtype == np.uint8 and q.shape == a.shape
    assert 0 <= q.min() and q.max() <= 255
    nb = -(-n // blocksize)
    am = st.absmax.numpy()
    assert am.shape == (nb,) and am.dtype == np.float32
    pad = np.concatenate([np.abs(a), np.zeros(nb * blocksize - n, np.float32)])
    np.testing.assert_array_equal(am, pad.reshape(nb, blocksize).max(1))  # exact absmax
    back = F.dequantize_blockwise(codes, st).numpy()
    code = Q.SIGNED.astype(np.float64)
    half_gap = np.concatenate([[0], np.diff(code) / 2, [0]])
    # per element: within half the gap between the two map values around x / absmax
    scale = np.repeat(am.astype(np.float64), blocksize)[:n]
    i = np.searchsorted(code, a / scale)
    bound = np.maximum(half_gap[np.clip(i, 0, 256)], half_gap[np.clip(i + 1, 0, 256)])
    assert np.all(np.abs(back - a) <= bound * scale * (1 + 1e-3) + 1e-30)  # -1 sits at a gap's end
    # the largest element of each block comes back exactly (its code is +-1 or the map's end)
    k = np.abs(a).argmax()
    assert abs(back[k]) == pytest.approx(abs(a[k]), rel=8e-3)
    # the same with absmax= and code= passed explicitly
    back2 = F.dequantize_blockwise(codes, absmax=st.absmax, code=st.code, blocksize=blocksize)
    np.testing.assert_array_equal(back2.numpy(), back)


def test_quantize_blockwise_unsigned_map_and_errors():
    a = np.abs(np.random.default_rng(1).standard_normal(5000)).astype(np.float32)
    code = F.create_dynamic_map(False)
    q, st = F.quantize_blockwise(ember.tensor(a), code=code, blocksize=2048)
    back = F.dequantize_blockwise(q, st).numpy()
    assert np.abs(back - a).max() <= 0.01 * np.abs(a).max()
    with pytest.raises(ValueError, match="Blocksize 100 is not supported"):
        F.quantize_blockwise(ember.tensor(a), blocksize=100)
    with pytest.raises(ValueError, match="Either quant_state or absmax must be provided"):
        F.dequantize_blockwise(q)


# -- a float64 reference of the published algorithm ---------------------------------------------
def _ref_quant(x, code):
    """Nearest-value block-wise quantization in float64: (codes, absmax)."""
    n = x.size
    nb = -(-n // BLOCKSIZE)
    pad = np.concatenate([x, np.zeros(nb * BLOCKSIZE - n)]).reshape(nb, BLOCKSIZE)
    am = np.abs(pad).max(1)
    am32 = am.astype(np.float32).astype(np.float64)
    safe = np.where(am32 == 0, 1, am32)
    y = (pad / safe[:, None]).reshape(-1)[:n]
    c = np.abs(code[None, :].astype(np.float64) - y[:, None]).argmin(1)
    return c.astype(np.uint8), am


def _ref_deq(q, am, code):
    return code.astype(np.float64)[q] * np.repeat(am.astype(np.float64), BLOCKSIZE)[: q.size]


def _ref_step(kind, p, g, s1, s2, step, lr, b1, b2, eps, wd):
    if kind == "adam":
        s1 = s1 * b1 + (1 - b1) * g
        s2 = s2 * b2 + (1 - b2) * g * g
        c1, c2 = 1 - b1**step, np.sqrt(1 - b2**step)
        if wd > 0:
            p = p * (1 - lr * wd)
        p = p - lr * c2 / c1 * s1 / (np.sqrt(s2) + eps * c2)
    elif kind == "momentum":
        g = g + wd * p
        s1 = g if step == 1 else s1 * b1 + g
        p = p - lr * s1
    elif kind == "rmsprop":
        g = g + wd * p
        s1 = s1 * b1 + (1 - b1) * g * g
        p = p - lr * g / (np.sqrt(s1) + eps)
    elif kind == "lion":
        if wd > 0:
            p = p * (1 - lr * wd)
        p = p - lr * np.sign(s1 * b1 + (1 - b1) * g)
        s1 = s1 * b2 + (1 - b2) * g
    return p, s1, s2


def _old_state(st0, n, eight, j):
    if not st0:
        return np.zeros(n)
    if eight:
        return _ref_deq(st0[f"state{j}"].reshape(-1), st0[f"absmax{j}"], st0[f"qmap{j}"])
    return st0[f"state{j}"].reshape(-1).astype(np.float64)


CASES = [
    ("adam", lambda ps: bnb.optim.Adam8bit(ps, lr=1e-2, weight_decay=0.1), (0.9, 0.999), 1e-8),
    ("adam", lambda ps: bnb.optim.AdamW8bit(ps, lr=1e-3), (0.9, 0.999), 1e-8),
    (
        "momentum",
        lambda ps: bnb.optim.SGD8bit(ps, lr=0.1, momentum=0.9, weight_decay=1e-3),
        (0.9, 0.0),
        0.0,
    ),
    ("rmsprop", lambda ps: bnb.optim.RMSprop8bit(ps, lr=1e-3, weight_decay=1e-2), (0.99, 0), 1e-8),
    ("lion", lambda ps: bnb.optim.Lion8bit(ps, lr=1e-3, weight_decay=0.1), (0.9, 0.99), 0.0),
]


@pytest.mark.parametrize("kind,make,betas,eps", CASES)
def test_update_matches_float64_reference(kind, make, betas, eps):
    rng = np.random.default_rng(3)
    shapes = [
        (70, 90),
        (5000,),
        (30,),
    ]  # two 8-bit tensors (one with a short last block), one small
    params = [
        ember.nn.Parameter(ember.tensor(rng.standard_normal(s).astype(np.float32))) for s in shapes
    ]
    opt = make(params)
    group = opt.param_groups[0]
    lr, wd = group["lr"], group["weight_decay"]
    two = kind == "adam"
    for step in range(1, 6):
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        before = []
        for p, g in zip(params, grads):
            p.grad = ember.tensor(g)
            st = opt.state.get(p, {})
            before.append(
                (
                    p.detach().numpy().astype(np.float64).copy(),
                    {k: v.numpy().copy() for k, v in st.items() if hasattr(v, "numpy")},
                )
            )
        opt.step()
        for p, g, (p0, st0) in zip(params, grads, before):
            st = opt.state[p]
            assert st["step"] == step
            eight = p.numel() >= 4096
            assert (st["state1"].dtype == ember.uint8) == eight

            s1 = _old_state(st0, p.numel(), eight, 1)
            s2 = _old_state(st0, p.numel(), eight, 2) if two else None
            if two and eight and st0:
                s1 = np.where(st0["state2"].reshape(-1) == 0, 0, s1)  # see the module's doc
            rp, r1, r2 = _ref_step(
                kind,
                p0.reshape(-1),
                g.reshape(-1).astype(np.float64),
                s1,
                s2,
                step,
                lr,
                betas[0],
                betas[1],
                eps,
                wd,
            )
            np.testing.assert_allclose(p.detach().numpy().reshape(-1), rp, rtol=1e-5, atol=1e-6)
            for j, r in ((1, r1), (2, r2)):
                if r is None:
                    continue
                if eight:
                    qmap = st[f"qmap{j}"].numpy()
                    rq, ram = _ref_quant(r, qmap)
                    np.testing.assert_allclose(st[f"absmax{j}"].numpy(), ram, rtol=1e-5)
                    q = st[f"state{j}"].numpy().reshape(-1)
                    assert np.mean(q == rq) > 0.999
                    assert np.all(np.abs(q.astype(int) - rq) <= 1)
                else:
                    np.testing.assert_allclose(
                        st[f"state{j}"].numpy().reshape(-1), r, rtol=1e-5, atol=1e-7
                    )
    q1 = opt.state[params[0]]["qmap1"].numpy().min()
    if kind == "rmsprop":
        assert q1 == 0  # the square average: the unsigned map
    else:
        assert q1 < 0  # first moments: the signed map
    if two:
        assert opt.state[params[0]]["qmap2"].numpy().min() == 0  # second: the unsigned map


def test_32bit_states_match_torch_adamw():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((20, 30)).astype(np.float32)
    pe = ember.nn.Parameter(ember.tensor(w))
    pt = torch.nn.Parameter(torch.tensor(w))
    oe = bnb.optim.AdamW8bit([pe], lr=1e-2, min_8bit_size=10**9)
    ot = torch.optim.AdamW([pt], lr=1e-2, weight_decay=1e-2)
    for _ in range(5):
        g = rng.standard_normal(w.shape).astype(np.float32)
        pe.grad, pt.grad = ember.tensor(g), torch.tensor(g)
        oe.step()
        ot.step()
    np.testing.assert_allclose(pe.detach().numpy(), pt.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_percentile_clipping():
    p = ember.nn.Parameter(ember.ones(10))
    opt = bnb.optim.Adam8bit([p], lr=0.1, percentile_clipping=5)
    p.grad = ember.ones(10)
    opt.step()  # 99 zero norms in the history: the 5th percentile is 0, the update is 0
    np.testing.assert_array_equal(p.detach().numpy(), np.ones(10))
    assert opt.state[p]["gnorm_vec"].numpy()[1] == pytest.approx(10.0)


def test_stable_embedding_keeps_32bit_state_and_trains():
    ember.manual_seed(0)
    emb = bnb.nn.StableEmbedding(1000, 16)
    assert isinstance(emb, ember.nn.Embedding) and isinstance(emb.norm, ember.nn.LayerNorm)
    lin = ember.nn.Linear(16, 300)
    opt = bnb.optim.Adam8bit(list(emb.parameters()) + list(lin.parameters()), lr=1e-2)
    x = ember.randint(0, 1000, (8, 5))
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = lin(emb(x)).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert opt.state[emb.weight]["state1"].dtype == ember.float32
    assert opt.state[lin.weight]["state1"].dtype == ember.uint8
    y = bnb.nn.StableEmbedding(1000, 16)(x)
    assert y.shape == (8, 5, 16)
    np.testing.assert_allclose(y.mean(-1).detach().numpy(), 0, atol=1e-5)  # layer-normed


def test_bf16_parameters():
    p = ember.nn.Parameter(ember.randn(5000, dtype=ember.bfloat16))
    opt = bnb.optim.Adam8bit([p], lr=1e-2)
    p.grad = ember.ones(5000, dtype=ember.bfloat16)
    before = p.detach().float().numpy().copy()
    opt.step()
    assert p.dtype == ember.bfloat16
    assert np.all(p.detach().float().numpy() < before)


# -- state dicts ----------------------------------------------------------------------------------
def _model():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(64, 100), ember.nn.ReLU(), ember.nn.Linear(100, 3))


def _train(model, opt, steps, seed):
    gen = np.random.default_rng(seed)
    for _ in range(steps):
        x = ember.tensor(gen.standard_normal((16, 64)).astype(np.float32))
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


@pytest.mark.parametrize("cls", [bnb.optim.Adam8bit, bnb.optim.Lion8bit, bnb.optim.SGD8bit])
def test_state_dict_resume_is_bit_identical(cls):
    kw = {"lr": 1e-2, "momentum": 0.9} if cls is bnb.optim.SGD8bit else {"lr": 1e-2}
    m = _model()
    opt = cls(m.parameters(), **kw)
    _train(m, opt, 3, 0)
    buf = io.BytesIO()
    ember.save({"model": m.state_dict(), "opt": opt.state_dict()}, buf)
    _train(m, opt, 3, 1)
    buf.seek(0)
    ck = ember.load(buf)
    m2 = _model()
    m2.load_state_dict(ck["model"])
    opt2 = cls(m2.parameters(), **kw)
    opt2.load_state_dict(ck["opt"])
    st = opt2.state[m2[0].weight]
    assert st["state1"].dtype == ember.uint8 and st["absmax1"].dtype == ember.float32
    _train(m2, opt2, 3, 1)
    for a, b in zip(m.parameters(), m2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    for a, b in zip(opt.state.values(), opt2.state.values()):
        for k in a:
            if hasattr(a[k], "numpy"):
                np.testing.assert_array_equal(a[k].numpy(), b[k].numpy())
            else:
                assert a[k] == b[k]


def test_cross_load_with_32bit_adam():
    m = _model()
    o8 = bnb.optim.Adam8bit(m.parameters(), lr=1e-2)
    _train(m, o8, 2, 0)
    sd8 = o8.state_dict()
    o32 = ember.optim.Adam(m.parameters(), lr=1e-2)
    with pytest.warns(UserWarning, match="dequantized to float32"):
        o32.load_state_dict(sd8)
    w = m[0].weight
    st32 = o32.state[w]
    assert set(st32) == {"step", "exp_avg", "exp_avg_sq"} and st32["step"].item() == 2.0
    deq = dequantize_state_dict(sd8)["state"][0]["exp_avg"].numpy()
    np.testing.assert_array_equal(st32["exp_avg"].numpy(), deq)
    _train(m, o32, 1, 1)  # the 32-bit optimizer steps from the loaded state
    back = bnb.optim.Adam8bit(m.parameters(), lr=1e-2)
    with pytest.warns(UserWarning, match="quantized to 8 bits"):
        back.load_state_dict(o32.state_dict())
    st8 = back.state[w]
    assert st8["step"] == 3 and st8["state2"].dtype == ember.uint8
    got = dequantize_state_dict(back.state_dict())["state"][0]["exp_avg"].numpy()
    ref = o32.state[w]["exp_avg"].numpy()
    assert np.abs(got - ref).max() <= 0.02 * np.abs(ref).max()
    _train(m, back, 1, 2)
    with pytest.raises(ValueError, match="only Adam, AdamW, SGD and RMSprop can load them"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ember.optim.Adagrad(m.parameters()).load_state_dict(copy.deepcopy(sd8))


def test_32bit_adam_state_dict_unchanged():
    # the 32-bit optimizers' own state dicts load as before
    m = _model()
    o = ember.optim.Adam(m.parameters())
    _train(m, o, 1, 0)
    o2 = ember.optim.Adam(m.parameters())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        o2.load_state_dict(o.state_dict())


# -- arguments --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make,exc,msg",
    [
        (lambda ps: bnb.optim.Adam8bit(ps, lr=-1), ValueError, "Invalid learning rate: -1"),
        (lambda ps: bnb.optim.Adam8bit(ps, eps=-1), ValueError, "Invalid epsilon value: -1"),
        (
            lambda ps: bnb.optim.Adam8bit(ps, betas=(1.0, 0.9)),
            ValueError,
            "Invalid beta parameter at index 0: 1.0",
        ),
        (
            lambda ps: bnb.optim.AdamW8bit(ps, betas=(0.9, -0.1)),
            ValueError,
            "Invalid beta parameter at index 1: -0.1",
        ),
        (
            lambda ps: bnb.optim.Adam8bit(ps, weight_decay=-1),
            ValueError,
            "Invalid weight_decay value: -1",
        ),
        (
            lambda ps: bnb.optim.Adam8bit(ps, amsgrad=True),
            ValueError,
            "Adam8bit does not support amsgrad=True",
        ),
        (
            lambda ps: bnb.optim.AdamW8bit(ps, amsgrad=True),
            ValueError,
            "AdamW8bit does not support amsgrad=True",
        ),
        (
            lambda ps: bnb.optim.Adam8bit(ps, optim_bits=8),
            ValueError,
            r"Adam8bit only supports optim_bits=32 \(default value for compatibility\)",
        ),
        (
            lambda ps: bnb.optim.SGD8bit(ps, lr=0.1),
            NotImplementedError,
            "SGD without momentum is not supported!",
        ),
        (
            lambda ps: bnb.optim.RMSprop8bit(ps, alpha=0.0),
            NotImplementedError,
            r"RMSprop with alpha==0.0 is not supported!",
        ),
        (
            lambda ps: bnb.optim.RMSprop8bit(ps, centered=True),
            NotImplementedError,
            "Centered RMSprop is not supported!",
        ),
        (
            lambda ps: bnb.optim.Adam8bit(ps, block_wise=False),
            NotImplementedError,
            "block_wise=False",
        ),
        (lambda ps: bnb.optim.Adam8bit([]), ValueError, "optimizer got an empty parameter list"),
    ],
)
def test_bad_arguments(make, exc, msg):
    params = [ember.nn.Parameter(ember.zeros(3))]
    with pytest.raises(exc, match=msg):
        make(params)


def test_module_shape_and_paged_alias():
    assert bnb.optim.PagedAdamW8bit.__mro__[1] is bnb.optim.AdamW8bit
    p = ember.nn.Parameter(ember.zeros(3))
    o = bnb.optim.PagedAdamW8bit([p], is_paged=True)
    assert o.is_paged and o.param_groups[0]["weight_decay"] == 1e-2
    assert callable(bnb.functional.quantize_blockwise)


# -- the compiled codecs and fused step (numba, optional) ------------------------------------------


@pytest.mark.parametrize("n", [1, 255, 256, 257, 5000])
@pytest.mark.parametrize("signed", [True, False])
def test_compiled_codecs_equal_numpy_bit_for_bit(n, signed):
    pytest.importorskip("numba")
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * rng.choice([1e-9, 1e-3, 1.0, 1e4], n)).astype(np.float32)
    if not signed:
        x = np.abs(x)
    x[: min(n, 2)] = 0.0
    if n > 300:
        x[299] = np.nan  # a NaN makes its block's absmax NaN on both paths
    cmap = Q.SIGNED if signed else Q.UNSIGNED
    c, nb = Q.coder(cmap), -(-n // BLOCKSIZE)
    out = {}
    saved = Q._JIT
    try:
        for mode in (False, None):
            Q._JIT = mode
            codes, absmax, back = (
                np.empty(n, np.uint8),
                np.empty(nb, np.float32),
                np.empty(n, np.float32),
            )
            Q.encode_into(x.copy(), absmax, codes, c, BLOCKSIZE)
            Q.decode_into(codes, absmax, cmap, back, BLOCKSIZE)
            out[mode] = codes, absmax.view(np.uint32), back.view(np.uint32)
        assert Q._jit() is not None
    finally:
        Q._JIT = saved
    for a, b in zip(out[False], out[None]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: bnb.optim.Adam8bit(ps, lr=1e-2),
        lambda ps: bnb.optim.AdamW8bit(ps, lr=1e-2),
        lambda ps: bnb.optim.Adam8bit(ps, lr=1e-2, weight_decay=0.1, percentile_clipping=5),
    ],
)
def test_fused_adam_step_equals_numpy_step_bit_for_bit(make):
    """The compiled 8-bit Adam step gives the NumPy step's parameters, codes and absmax."""
    pytest.importorskip("numba")

    def run(mode):
        saved = Q._JIT
        Q._JIT = mode
        try:
            ember.manual_seed(0)
            model = ember.nn.Sequential(ember.nn.Linear(300, 70), ember.nn.Linear(70, 100))
            opt = make(model.parameters())
            rng = np.random.default_rng(1)
            for _ in range(5):
                for p in model.parameters():
                    p.grad = ember.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
                opt.step()
            assert (Q._jit() is not None) == (mode is None)
        finally:
            Q._JIT = saved
        params = [p.detach().numpy().copy() for p in model.parameters()]
        states = [
            {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in st.items()}
            for st in opt.state.values()
        ]
        return params, states

    (pa, sa), (pb, sb) = run(False), run(None)
    assert any(st["state1"].dtype == np.uint8 for st in sa)  # both weights hold 8-bit states
    for x, y in zip(pa, pb):
        assert x.tobytes() == y.tobytes()
    for x, y in zip(sa, sb):
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])


def test_codecs_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("EMBER_NUMBA", "0")
    saved = Q._JIT
    Q._JIT = None
    try:
        assert Q._jit() is None
    finally:
        Q._JIT = saved


# -- memory: the step holds no float32 copy of parameters or gradients ---------------------------
def _traced_step_peak(opt) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        opt.step()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("cls", [bnb.optim.Adam8bit, bnb.optim.Lion8bit])
def test_step_memory_is_states_plus_chunk_scratch(cls):
    # what the 8-bit states save (6 of Adam's 8 bytes per parameter) a flat float32 copy of the
    # gradients or parameters (4 bytes) would take back; bench_optim8bit's rss part measures it
    # on a 124M-parameter model, this on one 2048x1024 weight (NumPy counts its arrays in
    # tracemalloc): the first step allocates the states, the next only chunk-sized scratch
    warm = ember.nn.Linear(64, 64)  # compile the kernels (numba) outside the measurement
    warm.weight.grad = ember.ones_like(warm.weight)
    cls([warm.weight], lr=1e-3).step()
    w = ember.nn.Parameter(ember.randn(2048, 1024))
    w.grad = ember.randn(2048, 1024)
    opt = cls([w], lr=1e-3)
    nbytes = w.numel() * 4
    first = _traced_step_peak(opt)
    second = _traced_step_peak(opt)
    states = sum(v._data.nbytes for v in opt.state[w].values() if hasattr(v, "_data"))
    assert states <= 0.27 * 2 * nbytes  # <= 2 bytes/param + absmax (Adam), 1 byte (Lion)
    assert first <= states + 0.15 * nbytes
    assert second <= 0.15 * nbytes

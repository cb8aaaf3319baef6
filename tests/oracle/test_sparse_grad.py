"""Sparse gradients against torch: ``embedding``/``embedding_bag`` with ``sparse=True`` and
``scale_grad_by_freq``, accumulation into ``.grad``, ``zero_grad``, the optimizers that take
sparse gradients (SGD, SparseAdam, Adagrad) and the errors of those that do not."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

LIBS = (torch, ember)


def _np(t):
    # a copy: torch cannot resize a storage that NumPy has borrowed (sparse .grad grows)
    return t.detach().clone().numpy()


def _structure(g):
    """Everything observable about a gradient: layout, raw indices/values, coalesced form."""
    if g is None:
        return None
    if not g.is_sparse:
        return ("dense", _np(g))
    c = g.coalesce()
    return (
        "sparse",
        tuple(g.shape),
        g._nnz(),
        g.is_coalesced(),
        _np(g._indices()).tolist(),
        _np(g._values()),
        _np(c.indices()).tolist(),
        _np(c.values()),
    )


def _same(a, b, rtol=1e-12, atol=1e-12):
    if a is None or b is None:
        assert a is None and b is None
        return
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype
            np.testing.assert_allclose(y, x, rtol=rtol, atol=atol)
        else:
            assert x == y


def _raises(fn):
    """Run ``fn(lib)`` with torch and ember; both must raise the same class and message."""
    errs = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            fn(lib)
        errs.append(info.value)
    t, e = errs
    assert type(e) is type(t), (t, e)
    assert str(t).startswith(str(e)), (str(t), str(e))


# ------------------------------------------------------------------------------ embedding


IDX = [[1, 2, 1, 4], [0, 5, 2, 2]]


@pytest.mark.parametrize("padding_idx", [None, 2, -1, 0])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("sgf", [False, True])
def test_embedding_grad(padding_idx, sparse, sgf):
    rng = np.random.default_rng(1)
    w0, g0 = rng.standard_normal((6, 3)), rng.standard_normal((2, 4, 3))
    res = []
    for lib in LIBS:
        w = lib.tensor(w0, requires_grad=True)
        out = lib.nn.functional.embedding(
            lib.tensor(IDX), w, padding_idx=padding_idx, scale_grad_by_freq=sgf, sparse=sparse
        )
        assert type(out.grad_fn).__name__ == "EmbeddingBackward0"
        if sparse and sgf:
            with pytest.raises(RuntimeError) as info:
                out.backward(lib.tensor(g0))
            res.append(str(info.value))
            continue
        out.backward(lib.tensor(g0))
        res.append(_structure(w.grad))
    if sparse and sgf:
        assert res[0] == res[1]
    else:
        _same(*res)


@pytest.mark.parametrize(
    "idx", [[2, 2, 2], [], 3, [[3]], [0, 1, 2, 3, 4, 5]], ids=["pad", "empty", "0d", "1x1", "all"]
)
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_sparse_edge_cases(idx, padding_idx):
    def run(lib):
        w = lib.zeros(6, 2, dtype=lib.float64, requires_grad=True)
        i = lib.tensor(idx, dtype=lib.int64)
        lib.nn.functional.embedding(i, w, padding_idx=padding_idx, sparse=True).sum().backward()
        return _structure(w.grad)

    if idx == 3 and padding_idx is not None:  # torch fails to mask a 0-d input
        _raises(run)
    else:
        _same(*(run(lib) for lib in LIBS))


def test_embedding_sparse_int32_indices_and_float32():
    res = []
    for lib in LIBS:
        w = lib.ones(5, 2, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor([1, 1, 4], dtype=lib.int32), w, sparse=True).mul(
            3
        ).sum().backward()
        res.append(_structure(w.grad))
    _same(*res)


def test_embedding_sparse_grad_printing():
    out = []
    for lib in LIBS:
        w = lib.tensor(np.arange(12.0).reshape(6, 2), requires_grad=True)
        lib.nn.functional.embedding(lib.tensor([3, 1, 3]), w, sparse=True).sum().backward()
        out.append(repr(w.grad))
    assert out[0] == out[1]


def test_autograd_grad_returns_sparse():
    res = []
    for lib in LIBS:
        w = lib.tensor(np.arange(12.0).reshape(6, 2), requires_grad=True)
        y = lib.nn.functional.embedding(lib.tensor([3, 1, 3]), w, sparse=True).pow(2).sum()
        (g,) = lib.autograd.grad(y, w)
        res.append(_structure(g))
        assert w.grad is None
    _same(*res)


# ------------------------------------------------------------------------------ embedding_bag


BAGS = [
    ([1, 2, 4, 5, 4, 3, 2, 3], [0, 4, 4]),
    ([1, 2, 4, 5, 4, 3, 2, 3], [0, 3, 5]),
    ([[1, 2, 2], [3, 3, 5]], None),
    ([[2, 1, 2], [5, 3, 3]], None),
]


@pytest.mark.parametrize("case", range(len(BAGS)))
@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("flags", [(True, False), (False, True)], ids=["sparse", "freq"])
@pytest.mark.parametrize("psw", [False, True])
def test_embedding_bag_grad(case, mode, padding_idx, flags, psw):
    if psw and mode != "sum":
        pytest.skip("per_sample_weights need mode='sum'")
    sparse, sgf = flags
    inp, off = BAGS[case]
    rng = np.random.default_rng(case)
    w0 = rng.standard_normal((6, 3))
    g0 = rng.standard_normal((3 if off is not None else 2, 3))
    p0 = rng.random(np.asarray(inp).shape)
    res = []
    for lib in LIBS:
        w = lib.tensor(w0, requires_grad=True)
        out = lib.nn.functional.embedding_bag(
            lib.tensor(inp),
            w,
            None if off is None else lib.tensor(off),
            mode=mode,
            sparse=sparse,
            scale_grad_by_freq=sgf,
            padding_idx=padding_idx,
            per_sample_weights=lib.tensor(p0) if psw else None,
        )
        out.backward(lib.tensor(g0))
        res.append(_structure(w.grad))
    _same(*res)


def test_embedding_bag_errors():
    inp, off = BAGS[0]

    def bag(**kw):
        return lambda lib: lib.nn.functional.embedding_bag(
            lib.tensor(inp), lib.ones(6, 2), lib.tensor(off), **kw
        )

    _raises(bag(mode="max", sparse=True))
    _raises(bag(mode="max", scale_grad_by_freq=True))

    def sparse_freq(lib):
        w = lib.ones(6, 2, requires_grad=True)
        lib.nn.functional.embedding_bag(
            lib.tensor(inp), w, lib.tensor(off), sparse=True, scale_grad_by_freq=True
        ).sum().backward()

    _raises(sparse_freq)


def test_embedding_bag_module_sparse():
    res = []
    for lib in LIBS:
        lib.manual_seed(0)
        m = lib.nn.EmbeddingBag(7, 3, mode="sum", sparse=True).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.arange(21.0).reshape(7, 3) / 10))
        m(lib.tensor([[1, 6], [6, 6]])).pow(2).sum().backward()
        res.append(_structure(m.weight.grad))
    _same(*res)


# ------------------------------------------------------------------------------ accumulation


def _emb(lib, w, idx, scale=1.0):
    i = lib.tensor(idx, dtype=lib.int64)
    return lib.nn.functional.embedding(i, w, sparse=True).sum() * scale


@pytest.mark.parametrize(
    "second",
    [[3, 1, 3, 0], [5, 3], [0, 1, 3, 3], [4], []],
    ids=["same", "tail", "sorted", "one", "empty"],
)
def test_accumulate_twice(second):
    res = []
    for lib in LIBS:
        w = lib.tensor(np.arange(12.0).reshape(6, 2), requires_grad=True)
        _emb(lib, w, [3, 1, 3, 0]).backward()
        first = w.grad
        _emb(lib, w, second, 2.0).backward()
        assert w.grad is first  # accumulated in place
        res.append(_structure(w.grad))
    _same(*res)


def test_accumulate_coalesced_grads():
    # a coalesced .grad (after an explicit coalesce) merges as a sorted union
    res = []
    for lib in LIBS:
        w = lib.tensor(np.arange(12.0).reshape(6, 2), requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor([[0, 4]]), lib.ones(2, 2, dtype=lib.float64), (6, 2))
        t = lib.sparse_coo_tensor(lib.tensor([[1, 4]]), lib.ones(2, 2, dtype=lib.float64), (6, 2))
        (s.coalesce() + t.coalesce()).to_dense()  # noqa: B018 (the sum itself is checked below)
        res.append(_structure(s.coalesce() + t.coalesce() * 2))
        _emb(lib, w, [3, 1]).backward()
        res.append(_structure(w.grad + w.grad))
    _same(res[0], res[2])
    _same(res[1], res[3])


def test_accumulate_dense_and_sparse():
    res = []
    for lib in LIBS:
        # dense .grad, then a sparse gradient: added in place into the dense .grad
        w = lib.tensor(np.arange(12.0).reshape(6, 2), requires_grad=True)
        (w * 2).sum().backward()
        g = w.grad
        _emb(lib, w, [3, 1, 3]).backward()
        assert w.grad is g
        res.append(_structure(w.grad))
        # sparse .grad, then a dense gradient: .grad becomes a new dense tensor
        w = lib.tensor(np.arange(12.0).reshape(6, 2), requires_grad=True)
        _emb(lib, w, [3, 1, 3]).backward()
        (w * 3).sum().backward()
        res.append(_structure(w.grad))
        # both in one graph (the engine's input buffer adds them)
        w = lib.tensor(np.arange(12.0).reshape(6, 2), requires_grad=True)
        ((w * 3).sum() + _emb(lib, w, [3, 1, 3])).backward()
        res.append(_structure(w.grad))
        # two sparse uses in one graph
        w = lib.tensor(np.arange(12.0).reshape(6, 2), requires_grad=True)
        (_emb(lib, w, [3, 1, 3, 0]) + _emb(lib, w, [5, 3], 2.0)).backward()
        res.append(_structure(w.grad))
    half = len(res) // 2
    for a, b in zip(res[:half], res[half:]):
        _same(a, b)


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("where", ["optimizer", "module"])
def test_zero_grad(set_to_none, where):
    res = []
    for lib in LIBS:
        m = lib.nn.Embedding(6, 2, sparse=True).double()
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        idx = lib.tensor([3, 1, 3])
        m(idx).sum().backward()
        zero = opt.zero_grad if where == "optimizer" else m.zero_grad
        zero(set_to_none=set_to_none)
        res.append(_structure(m.weight.grad))
        m(lib.tensor([5, 1])).mul(2).sum().backward()
        res.append(_structure(m.weight.grad))
    _same(res[0], res[2])
    _same(res[1], res[3])


def test_dense_add_sparse_inplace():
    res = []
    for lib in LIBS:
        s = lib.sparse_coo_tensor(
            lib.tensor([[3, 1, 3]]), lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), (5, 2)
        ).double()
        d = lib.zeros(5, 2, dtype=lib.float64)
        d.add_(s, alpha=-0.5)
        d.sub_(s)
        d += s
        res.append(_np(d))
        one = lib.ones(5, 2, dtype=lib.float64)
        res.append(_np(one + s))
        res.append(_np(one.add(s, alpha=2.5)))
        res.append(_np(one.sub(s)))
    half = len(res) // 2
    for a, b in zip(res[:half], res[half:]):
        np.testing.assert_allclose(b, a)


@pytest.mark.parametrize("seed", range(40))
def test_sparse_add_structure(seed):
    """``s + alpha * t`` and ``s.add_(t)``: torch's merge walk for contiguous values, the
    concatenation (coalesced past the dense size) for strided ones; nnz, order, flags."""
    rng = np.random.default_rng(seed)
    sd = int(rng.integers(1, 3))
    shape = tuple(int(n) for n in rng.integers(1, 4, sd)) + ((2,) if rng.random() < 0.5 else ())
    specs = []
    for _ in range(2):
        n = int(rng.integers(0, 6))
        idx = np.stack([rng.integers(0, shape[d], n) for d in range(sd)]).reshape(sd, n)
        vals = rng.standard_normal((n,) + shape[sd:])
        specs.append((idx, vals, rng.random() < 0.3, rng.random() < 0.3))
    alpha = (1, 2.5)[int(rng.integers(0, 2))]

    def make(lib, idx, vals, coalesce, strided):
        v = lib.tensor(vals)
        if strided and vals.shape[0]:
            v = v[:1].expand(*vals.shape)  # stride-0 values, as a sum's gradient
        t = lib.sparse_coo_tensor(lib.tensor(idx), v, shape)
        return t.coalesce() if coalesce else t

    def raw(t):
        return ("sparse", t._nnz(), t.is_coalesced(), _np(t._indices()).tolist(), _np(t._values()))

    res = []
    for lib in LIBS:
        a, b = make(lib, *specs[0]), make(lib, *specs[1])
        inplace = a.clone()
        inplace.add_(b)
        res.append((raw(a.add(b, alpha=alpha)), raw(inplace)))
    for x, y in zip(*res):
        _same(x, y)


# ------------------------------------------------------------------------------ training


SGD_CONFIGS = [
    {},
    {"momentum": 0.9},
    {"momentum": 0.9, "dampening": 0.3},
    {"momentum": 0.9, "nesterov": True},
    {"maximize": True},
    {"momentum": 0.5, "maximize": True},
    {"momentum": 0.9, "foreach": True},
    {"momentum": 0.9, "foreach": False},
]


def _batches(n, padding_idx, steps=4, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        idx = rng.integers(0, n, size=(3, 5))
        idx[0, :2] = idx[0, 2]  # repeated indices
        if padding_idx is not None:
            idx[1, 0] = padding_idx % n
        out.append(idx)
    return out


def _train(lib, opt_name, opt_kw, loss_kind, padding_idx, with_dense, zero=True):
    """A few steps of an embedding (sparse=True) model; return the parameters and gradients."""
    n, d = 10, 4
    rng = np.random.default_rng(7)
    emb = lib.nn.Embedding(n, d, padding_idx=padding_idx, sparse=True).double()
    lin = lib.nn.Linear(d, 1).double()
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(rng.standard_normal((n, d))))
        lin.weight.copy_(lib.tensor(rng.standard_normal((1, d))))
        lin.bias.zero_()
    params = list(emb.parameters()) + (list(lin.parameters()) if with_dense else [])
    opt = getattr(lib.optim, opt_name)(params, **opt_kw)
    target = lib.tensor(rng.standard_normal((3, 5, 1)))
    seen = []
    for idx in _batches(n, padding_idx):
        if zero:
            opt.zero_grad()
        out = lin(emb(lib.tensor(idx)))
        if loss_kind == "sum":
            loss = out.sum()
        elif loss_kind == "mean":
            loss = out.mean()
        else:
            loss = lib.nn.functional.mse_loss(out, target)
        loss.backward()
        seen.append(_structure(emb.weight.grad))
        opt.step()
        buf = opt.state[emb.weight].get("momentum_buffer")
        seen.append(None if buf is None else _structure(buf))  # SGD's (sparse) momentum
    return [_np(p) for p in params], seen


def _compare_training(*args, **kw):
    (pt, gt), (pe, ge) = (_train(lib, *args, **kw) for lib in LIBS)
    for a, b in zip(pt, pe):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    for a, b in zip(gt, ge):
        _same(a, b)


@pytest.mark.parametrize("cfg", range(len(SGD_CONFIGS)))
@pytest.mark.parametrize("loss_kind", ["sum", "mean", "mse"])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_train_sgd(cfg, loss_kind, padding_idx):
    kw = {"lr": 0.1, **SGD_CONFIGS[cfg]}
    _compare_training("SGD", kw, loss_kind, padding_idx, with_dense=True)


@pytest.mark.parametrize("kw", [{}, {"momentum": 0.9}], ids=["plain", "momentum"])
def test_train_sgd_accumulating(kw):
    # no zero_grad: the sparse .grad keeps growing (merged in place) between steps
    _compare_training("SGD", {"lr": 0.05, **kw}, "sum", 3, with_dense=False, zero=False)


@pytest.mark.parametrize("loss_kind", ["sum", "mean", "mse"])
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("kw", [{}, {"maximize": True}, {"betas": (0.5, 0.7), "eps": 1e-3}])
def test_train_sparse_adam(loss_kind, padding_idx, kw):
    _compare_training("SparseAdam", {"lr": 0.01, **kw}, loss_kind, padding_idx, with_dense=False)


@pytest.mark.parametrize("loss_kind", ["sum", "mean", "mse"])
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize(
    "kw",
    [{}, {"lr_decay": 0.1}, {"maximize": True}, {"initial_accumulator_value": 0.5, "eps": 1e-3}],
)
def test_train_adagrad(loss_kind, padding_idx, kw):
    _compare_training("Adagrad", {"lr": 0.1, **kw}, loss_kind, padding_idx, with_dense=True)


# ------------------------------------------------------------------------------ errors


def _sparse_grad_param(lib):
    w = lib.tensor(np.arange(12.0).reshape(6, 2), requires_grad=True)
    _emb(lib, w, [3, 1, 3]).backward()
    return w


@pytest.mark.parametrize(
    "name,kw",
    [
        ("SGD", {"weight_decay": 0.1}),
        ("SGD", {"momentum": 0.9, "weight_decay": 0.1}),
        ("SGD", {"fused": True}),
        ("Adagrad", {"weight_decay": 0.1}),
        ("Adagrad", {"fused": True}),
    ],
)
def test_optimizer_errors(name, kw):
    def step(lib):
        w = _sparse_grad_param(lib)
        getattr(lib.optim, name)([w], lr=0.1, **kw).step()

    _raises(step)


def test_sparse_adam_dense_grad_error():
    def step(lib):
        w = lib.ones(3, 2, requires_grad=True)
        w.sum().backward()
        lib.optim.SparseAdam([w]).step()

    _raises(step)


@pytest.mark.parametrize("foreach", [None, False])
def test_clip_grad_errors(foreach):
    _raises(lambda lib: lib.nn.utils.clip_grad_norm_([_sparse_grad_param(lib)], 1.0))
    _raises(
        lambda lib: lib.nn.utils.clip_grad_value_([_sparse_grad_param(lib)], 0.1, foreach=foreach)
    )


@pytest.mark.parametrize(
    "name", ["Adam", "AdamW", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD"]
)
def test_dense_only_optimizers_refuse_sparse_gradients(name):
    msgs = []
    for lib in (torch, ember):
        e = lib.nn.Embedding(5, 3, sparse=True)
        e(lib.tensor([1, 2])).sum().backward()
        before = e.weight.detach().clone()
        with pytest.raises(RuntimeError) as info:
            getattr(lib.optim, name)(e.parameters(), lr=0.1).step()
        assert lib.equal(e.weight.detach(), before)  # nothing written
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]

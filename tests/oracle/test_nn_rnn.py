"""RNN / LSTM / GRU and their cells against torch: values, states, every gradient, errors."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.oracle.helper import _flat, assert_same, check_double_backward

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.filterwarnings("ignore:LSTM with projections"),
    pytest.mark.filterwarnings("error::RuntimeWarning"),  # e.g. overflow in unwritten rows
]

_RNG = np.random.default_rng(0)


def _pair(cls_name, *args, dtype="float32", **kw):
    """An ember module and a torch module of class ``cls_name`` holding the same weights."""
    torch.manual_seed(0)
    t = getattr(torch.nn, cls_name)(*args, dtype=getattr(torch, dtype), **kw)
    e = getattr(ember.nn, cls_name)(*args, dtype=getattr(ember, dtype), **kw)
    e.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    return e, t


def _compare(e, t, call, inputs, *, tol=None):
    """Run ``call(lib, module, *tensors)`` on both; compare outputs, then the gradients of the
    inputs and of every parameter under a random upstream gradient."""
    atol, rtol = tol or (None, None)
    e.zero_grad()
    t.zero_grad()
    ein = [ember.from_numpy(a.copy()).requires_grad_() for a in inputs]
    tin = [torch.from_numpy(a.copy()).requires_grad_() for a in inputs]
    eo, to = _flat(call(ember, e, *ein)), _flat(call(torch, t, *tin))
    assert len(eo) == len(to)
    for i, (a, b) in enumerate(zip(eo, to)):
        assert_same(a, b, atol=atol, rtol=rtol, what=f"output {i}")
    rng = np.random.default_rng(1)
    gs = [rng.standard_normal(tuple(b.shape)).astype(str(b.dtype)[6:]) for b in to]
    sum((a * ember.from_numpy(g)).sum() for a, g in zip(eo, gs)).backward()
    sum((b * torch.from_numpy(g)).sum() for b, g in zip(to, gs)).backward()
    for i, (a, b) in enumerate(zip(ein, tin)):
        assert_same(a.grad, b.grad, atol=atol, rtol=rtol, what=f"grad of input {i}")
    tp = dict(t.named_parameters())
    for name, p in e.named_parameters():
        assert_same(p.grad, tp[name].grad, atol=atol, rtol=rtol, what=f"grad of {name}")


def _rand(*shape, dtype="float32"):
    return _RNG.uniform(-1, 1, shape).astype(dtype)


# ------------------------------------------------------------------------------ full layers

_LAYERS = [
    ("LSTM", {}),
    ("GRU", {}),
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu"}),
    ("LSTM", {"proj_size": 3}),
]


@pytest.mark.parametrize("cls,extra", _LAYERS)
@pytest.mark.parametrize(
    "num_layers,bidirectional,batch_first,bias",
    [
        (1, False, False, True),
        (2, True, True, True),
        (2, False, False, False),
        (1, True, False, True),
    ],
)
def test_layer_matches_torch(cls, extra, num_layers, bidirectional, batch_first, bias):
    kw = dict(num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first)
    e, t = _pair(cls, 4, 5, bias=bias, **kw, **extra)
    x = _rand(3, 6, 4) if batch_first else _rand(6, 3, 4)
    _compare(e, t, lambda lib, m, x: m(x), [x])


@pytest.mark.parametrize("cls,extra", _LAYERS)
def test_layer_with_initial_state(cls, extra):
    e, t = _pair(cls, 4, 5, num_layers=2, bidirectional=True, **extra)
    x = _rand(6, 3, 4)
    hsize = extra.get("proj_size", 5)
    if cls == "LSTM":
        ins = [x, _rand(4, 3, hsize), _rand(4, 3, 5)]
        _compare(e, t, lambda lib, m, x, h, c: m(x, (h, c)), ins)
    else:
        _compare(e, t, lambda lib, m, x, h: m(x, h), [x, _rand(4, 3, hsize)])


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_input(cls, batch_first):
    e, t = _pair(cls, 4, 5, num_layers=2, batch_first=batch_first)
    x = _rand(6, 4)
    _compare(e, t, lambda lib, m, x: m(x), [x])
    if cls == "LSTM":
        ins = [x, _rand(2, 5), _rand(2, 5)]
        _compare(e, t, lambda lib, m, x, h, c: m(x, (h, c)), ins)
    else:
        _compare(e, t, lambda lib, m, x, h: m(x, h), [x, _rand(2, 5)])


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_float64_and_empty_batch_of_one_step(cls):
    e, t = _pair(cls, 3, 4, dtype="float64", bidirectional=True)
    _compare(e, t, lambda lib, m, x: m(x), [_rand(1, 2, 3, dtype="float64")])
    _compare(e, t, lambda lib, m, x: m(x), [_rand(5, 1, 3, dtype="float64")])


def test_dropout_between_layers():
    # p = 1 zeroes the second layer's input: deterministic, so comparable with torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, t = _pair("LSTM", 4, 5, num_layers=2, dropout=1.0)
    _compare(e, t, lambda lib, m, x: m(x), [_rand(6, 3, 4)])
    e.eval()
    t.eval()
    _compare(e, t, lambda lib, m, x: m(x), [_rand(6, 3, 4)])
    e.train()
    e.dropout = 0.5
    x = ember.from_numpy(_rand(6, 3, 4))
    out_train = e(x)[0]
    e.eval()
    assert not np.allclose(out_train.detach().numpy(), e(x)[0].detach().numpy())


def test_repeated_calls_and_second_backward_errors():
    e, _ = _pair("GRU", 3, 4)
    x = ember.from_numpy(_rand(5, 2, 3)).requires_grad_()
    out, h = e(x)
    loss = out.sum() + h.sum()
    loss.backward(retain_graph=True)
    g1 = x.grad.clone()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1.numpy(), rtol=1e-6)
    out, _ = e(x)
    out.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        out.sum().backward()


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_frozen_parameters_and_input_without_grad(cls):
    e, t = _pair(cls, 3, 4, bidirectional=True)
    for m in (e, t):
        m.requires_grad_(False)
    x = _rand(5, 2, 3)
    ex, tx = ember.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
    eo, to = e(ex)[0], t(tx)[0]
    g = _rand(5, 2, 8)
    (eo * ember.from_numpy(g)).sum().backward()
    (to * torch.from_numpy(g)).sum().backward()
    assert_same(ex.grad, tx.grad)
    assert all(p.grad is None for p in e.parameters())
    # only the parameters require grad
    for m in (e, t):
        m.requires_grad_(True)
    _compare(e, t, lambda lib, m: m(lib.from_numpy(x))[0], [])


def test_no_grad_forward():
    e, t = _pair("LSTM", 3, 4)
    x = _rand(5, 2, 3)
    with ember.no_grad():
        out, (h, c) = e(ember.from_numpy(x))
    assert not out.requires_grad and out.grad_fn is None
    with torch.no_grad():
        tout = t(torch.from_numpy(x))[0]
    assert_same(out, tout, strides=False)


# ------------------------------------------------------------------------------ packed input


@pytest.mark.parametrize("cls,extra", _LAYERS)
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_input(cls, extra, enforce_sorted):
    e, t = _pair(cls, 4, 5, num_layers=2, bidirectional=True, **extra)
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    hsize = extra.get("proj_size", 5)

    def call(lib, m, x, *state):
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
        if cls == "LSTM":
            out, (h, c) = m(packed, tuple(state) or None)
            hidden = [h, c]
        else:
            out, h = m(packed, state[0] if state else None)
            hidden = [h]
        assert isinstance(out, lib.nn.utils.rnn.PackedSequence)
        padded, lens = lib.nn.utils.rnn.pad_packed_sequence(out)
        return [out.data, padded, *hidden]

    x = _rand(5, 4, 4)
    _compare(e, t, call, [x])
    state = [_rand(4, 4, hsize)] + ([_rand(4, 4, 5)] if cls == "LSTM" else [])
    _compare(e, t, call, [x, *state])


@settings(max_examples=12, deadline=None)
@given(
    cls=st.sampled_from(["LSTM", "GRU", "RNN"]),
    lengths=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    bidirectional=st.booleans(),
    batch_first=st.booleans(),
)
def test_packed_input_property(cls, lengths, bidirectional, batch_first):
    e, t = _pair(cls, 2, 3, bidirectional=bidirectional, batch_first=batch_first)
    T, B = max(lengths), len(lengths)

    def call(lib, m, x):
        rnn = lib.nn.utils.rnn
        packed = rnn.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=False)
        out, state = m(packed)
        padded, _ = rnn.pad_packed_sequence(out, batch_first=batch_first)
        return [padded, state]

    _compare(e, t, call, [_rand(B, T, 2) if batch_first else _rand(T, B, 2)])


def test_packed_output_indices_match_torch():
    e, t = _pair("GRU", 2, 3)
    outs = []
    for lib, m in ((ember, e), (torch, t)):
        x = lib.from_numpy(_rand(4, 3, 2))
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
        outs.append(m(packed)[0])
    for a, b in zip(outs[0][1:], outs[1][1:]):
        assert_same(a, b)


# ------------------------------------------------------------------------------ double backward


@pytest.mark.parametrize(
    "cls,extra",
    [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("LSTM", {"proj_size": 2})],
)
def test_double_backward_float64(cls, extra):
    names = list(_pair(cls, 2, 3, dtype="float64", **extra)[1].state_dict().keys())

    def fn(lib, x, h0, *weights):
        m = getattr(lib.nn, cls)(2, 3, dtype=lib.float64, **extra)
        for name, w in zip(names, weights):
            delattr(m, name)
            setattr(m, name, w)
        if cls == "LSTM":
            c0 = lib.ones(1, 2, 3, dtype=lib.float64) * 0.3
            out, (h, c) = m(x, (h0, c0))
            return out, h, c
        return m(x, h0)

    e, t = _pair(cls, 2, 3, dtype="float64", **extra)
    weights = [v.numpy().copy() for v in t.state_dict().values()]
    hsize = extra.get("proj_size", 3)
    check_double_backward(
        fn, [_rand(4, 2, 2, dtype="float64"), _rand(1, 2, hsize, dtype="float64"), *weights]
    )


def test_double_backward_packed_and_reverse():
    def fn(lib, x, w_ih, w_hh, w_ih_r, w_hh_r):
        m = lib.nn.GRU(2, 3, bias=False, bidirectional=True, dtype=lib.float64)
        for name, w in zip(
            ["weight_ih_l0", "weight_hh_l0", "weight_ih_l0_reverse", "weight_hh_l0_reverse"],
            [w_ih, w_hh, w_ih_r, w_hh_r],
        ):
            delattr(m, name)
            setattr(m, name, w)
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, [3, 1], enforce_sorted=False)
        out, h = m(packed)
        return out.data, h

    ws = [_rand(9, 2, dtype="float64"), _rand(9, 3, dtype="float64")] * 2
    check_double_backward(fn, [_rand(3, 2, 2, dtype="float64"), *ws])


# ------------------------------------------------------------------------------ module API


@pytest.mark.parametrize(
    "cls,args,kw",
    [
        ("LSTM", (10, 20), {}),
        ("LSTM", (10, 20, 2), {"bidirectional": True, "proj_size": 5, "batch_first": True}),
        ("GRU", (3, 4), {"bias": False, "num_layers": 3}),
        ("RNN", (3, 4, 2, "relu"), {}),
        ("RNN", (3, 4), {"nonlinearity": "tanh", "dropout": 0.5, "num_layers": 2}),
        ("LSTMCell", (3, 4), {}),
        ("GRUCell", (3, 4), {"bias": False}),
        ("RNNCell", (3, 4), {"nonlinearity": "relu"}),
    ],
)
def test_parameters_state_dict_and_repr(cls, args, kw):
    e = getattr(ember.nn, cls)(*args, **kw)
    t = getattr(torch.nn, cls)(*args, **kw)
    assert repr(e) == repr(t)
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    for k in ts:
        assert tuple(es[k].shape) == tuple(ts[k].shape), k
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    bound = 1 / np.sqrt(args[1])
    for p in e.parameters():
        assert np.abs(p.detach().numpy()).max() <= bound
    if not cls.endswith("Cell"):
        assert [[tuple(p.shape) for p in ws] for ws in e.all_weights] == [
            [tuple(p.shape) for p in ws] for ws in t.all_weights
        ]
        assert e._flat_weights_names == t._flat_weights_names
        assert all(a is b for a, b in zip(e._flat_weights, e.parameters()))
        e.flatten_parameters()


def test_flat_weights_follow_replaced_parameters():
    e, t = _pair("GRU", 2, 3)
    e.weight_hh_l0 = ember.nn.Parameter(ember.zeros(9, 3))
    t.weight_hh_l0 = torch.nn.Parameter(torch.zeros(9, 3))
    assert e._flat_weights[1] is e.weight_hh_l0
    _compare(e, t, lambda lib, m, x: m(x), [_rand(4, 2, 2)])
    e2 = e.double()
    assert e2._flat_weights[0].dtype is ember.float64


def test_deepcopy_and_pickle_keep_flat_weights():
    import copy
    import pickle

    e, t = _pair("LSTM", 3, 4, num_layers=2)
    for m in (copy.deepcopy(e), pickle.loads(pickle.dumps(e))):
        assert all(a is b for a, b in zip(m._flat_weights, m.parameters()))
        _compare(m, t, lambda lib, m, x: m(x), [_rand(5, 2, 3)])


def test_state_dict_round_trip_with_torch():
    e, t = _pair("LSTM", 3, 4, num_layers=2)
    t2 = torch.nn.LSTM(3, 4, num_layers=2)
    t2.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in e.state_dict().items()})
    x = _rand(5, 2, 3)
    assert_same(e(ember.from_numpy(x))[0], t2(torch.from_numpy(x))[0], strides=False)


# ------------------------------------------------------------------------------ cells


@pytest.mark.parametrize(
    "cls,extra",
    [
        ("LSTMCell", {}),
        ("GRUCell", {}),
        ("RNNCell", {}),
        ("RNNCell", {"nonlinearity": "relu"}),
        ("GRUCell", {"bias": False}),
    ],
)
@pytest.mark.parametrize("batched", [True, False])
def test_cells(cls, extra, batched):
    e, t = _pair(cls, 4, 5, **extra)
    shape = (3,) if batched else ()
    x = _rand(*shape, 4)
    _compare(e, t, lambda lib, m, x: m(x), [x])
    eo = _flat(e(ember.from_numpy(x).requires_grad_()))
    to = _flat(t(torch.from_numpy(x).requires_grad_()))
    assert [type(a.grad_fn).__name__ for a in eo] == [type(b.grad_fn).__name__ for b in to]
    if cls == "LSTMCell":
        ins = [x, _rand(*shape, 5), _rand(*shape, 5)]
        _compare(e, t, lambda lib, m, x, h, c: m(x, (h, c)), ins)
    else:
        _compare(e, t, lambda lib, m, x, h: m(x, h), [x, _rand(*shape, 5)])


def test_cell_loop_matches_layer():
    # unrolling an LSTMCell by hand gives the LSTM layer's output (the usual user pattern)
    e, t = _pair("LSTMCell", 3, 4)

    def call(lib, m, x):
        h = c = lib.zeros(2, 4)
        outs = []
        for step in x.unbind(0):
            h, c = m(step, (h, c))
            outs.append(h)
        return lib.stack(outs)

    _compare(e, t, call, [_rand(5, 2, 3)])


# ------------------------------------------------------------------------------ errors


def _raises(fn_e, fn_t, exc=RuntimeError):
    with pytest.raises(exc) as ee:
        fn_e()
    with pytest.raises(exc) as te:
        fn_t()
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize(
    "cls,x_shape,state",
    [
        ("LSTM", (5, 3, 4), [(1, 2, 5), (1, 3, 5)]),
        ("LSTM", (5, 3, 4), [(1, 3, 5), (1, 3, 6)]),
        ("LSTM", (5, 3, 4), [(3, 5), (3, 5)]),
        ("LSTM", (5, 4), [(1, 3, 5), (1, 3, 5)]),
        ("LSTM", (5, 3, 7), None),
        ("GRU", (5, 3, 4), [(2, 3, 5)]),
        ("GRU", (5, 3, 4), [(3, 5)]),
        ("GRU", (5, 4), [(1, 3, 5)]),
        ("RNN", (5, 3, 4), [(1, 3, 6)]),
        ("RNN", (5, 3, 2), None),
        ("RNN", (2, 5, 3, 4), None),
        ("LSTM", (4,), None),
    ],
)
def test_forward_errors(cls, x_shape, state):
    e, t = _pair(cls, 4, 5)
    x = _rand(*x_shape)
    st = [_rand(*s) for s in state] if state else None

    def run(lib, m):
        xs = lib.from_numpy(x)
        hs = None if st is None else [lib.from_numpy(s) for s in st]
        if hs is None:
            return m(xs)
        return m(xs, tuple(hs) if cls == "LSTM" else hs[0])

    exc = ValueError if len(x_shape) not in (2, 3) else RuntimeError
    _raises(lambda: run(ember, e), lambda: run(torch, t), exc)


def test_dtype_mismatch_error():
    e, t = _pair("GRU", 2, 3)
    _raises(
        lambda: e(ember.zeros(4, 1, 2, dtype=ember.float64)),
        lambda: t(torch.zeros(4, 1, 2, dtype=torch.float64)),
        ValueError,
    )


@pytest.mark.parametrize(
    "args,kw,exc",
    [
        ((4, 5), {"dropout": 2.0}, ValueError),
        ((4, 5), {"dropout": True}, ValueError),
        ((4, 5), {"bias": 1}, TypeError),
        ((4, 5), {"batch_first": None}, TypeError),
        ((4.0, 5), {}, TypeError),
        ((0, 5), {}, ValueError),
        ((4, 5.0), {}, TypeError),
        ((4, 0), {}, ValueError),
        ((4, 5, 0), {}, ValueError),
        ((4, 5), {"proj_size": -1}, ValueError),
        ((4, 5), {"proj_size": 5}, ValueError),
    ],
)
def test_constructor_errors(args, kw, exc):
    _raises(lambda: ember.nn.LSTM(*args, **kw), lambda: torch.nn.LSTM(*args, **kw), exc)


def test_constructor_errors_rnn_gru_and_warning():
    for kw in ({"proj_size": 2}, {"nonlinearity": "sigmoid"}):
        _raises(
            lambda kw=kw: ember.nn.RNN(4, 5, **kw),
            lambda kw=kw: torch.nn.RNN(4, 5, **kw),
            ValueError,
        )
    _raises(
        lambda: ember.nn.GRU(4, 5, proj_size=2), lambda: torch.nn.GRU(4, 5, proj_size=2), ValueError
    )
    with pytest.warns(UserWarning, match="dropout option adds dropout"):
        ember.nn.GRU(4, 5, dropout=0.5)


@pytest.mark.parametrize(
    "cls,x_shape,state",
    list(
        itertools.chain(
            [("LSTMCell", (2, 3, 4), None), ("LSTMCell", (3, 4), [(3, 5), (3, 5, 1)])],
            [("GRUCell", (3, 4), [(3, 5, 1)]), ("RNNCell", (2, 3, 4), None)],
        )
    ),
)
def test_cell_dim_errors(cls, x_shape, state):
    e, t = _pair(cls, 4, 5)

    def run(lib, m):
        hs = None if state is None else [lib.from_numpy(_rand(*s)) for s in state]
        x = lib.from_numpy(np.zeros(x_shape, np.float32))
        if hs is None:
            return m(x)
        return m(x, tuple(hs) if cls == "LSTMCell" else hs[0])

    _raises(lambda: run(ember, e), lambda: run(torch, t), ValueError)


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("x_shape,h_shape", [((3, 7), (3, 5)), ((3, 4), (2, 5)), ((3, 4), (3, 6))])
def test_cell_size_errors(cls, x_shape, h_shape):
    e, t = _pair(cls, 4, 5)

    def run(lib, m):
        x = lib.zeros(*x_shape)
        h = lib.zeros(*h_shape)
        return m(x, (h, lib.zeros(*h_shape)) if cls == "LSTMCell" else h)

    _raises(lambda: run(ember, e), lambda: run(torch, t))

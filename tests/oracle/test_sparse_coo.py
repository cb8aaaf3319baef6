"""Sparse COO tensors against torch: creation, printing, errors, arithmetic, sums, products,
softmax, gradients (dense operand, values, sparse leaves) and a GCN trained for 20 steps."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.filterwarnings("ignore:Sparse invariant checks"),
    pytest.mark.filterwarnings("ignore:torch.sparse.SparseTensor"),
]

_rng = np.random.default_rng(7)

IDX = np.array([[0, 1, 1, 2, 0], [2, 0, 2, 1, 2]])  # uncoalesced: (0, 2) twice, unsorted
VAL = np.array([3.0, 4.0, 5.0, 6.0, 1.0], dtype=np.float32)


def _t(lib, a, **kw):
    return lib.tensor(np.array(a), **kw)


def _sp(lib, idx=IDX, val=VAL, size=(3, 3), **kw):
    if size is None:
        return lib.sparse_coo_tensor(_t(lib, idx), _t(lib, val), **kw)
    return lib.sparse_coo_tensor(_t(lib, idx), _t(lib, val), size, **kw)


def _np(x):
    return np.asarray(x.detach().numpy())


def _same(e, t, tol=1e-5):
    """Assert ember result ``e`` matches torch result ``t`` (sparse, dense or Python)."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), type(e)
        assert str(e.layout) == str(t.layout)
        assert e.is_sparse == t.is_sparse
        assert str(e.dtype) == str(t.dtype)
        assert tuple(e.shape) == tuple(t.shape)
        if t.is_sparse:
            assert e._nnz() == t._nnz()
            assert e.is_coalesced() == t.is_coalesced()
            assert e.sparse_dim() == t.sparse_dim() and e.dense_dim() == t.dense_dim()
            np.testing.assert_array_equal(_np(e._indices()), t._indices().numpy())
            np.testing.assert_allclose(_np(e._values()), t._values().detach().numpy(), tol, tol)
            assert repr(e) == repr(t)
        else:
            np.testing.assert_allclose(_np(e), t.detach().numpy(), tol, tol)
        assert e.requires_grad == t.requires_grad
        tf = None if t.grad_fn is None else type(t.grad_fn).__name__
        ef = None if e.grad_fn is None else type(e.grad_fn).__name__
        if not t.is_sparse:
            assert ef == tf
    else:
        assert e == t


def check(fn, *args):
    _same(fn(ember, *args), fn(torch, *args))


def check_raises(fn):
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(Exception) as ee:
        fn(ember)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


# -------------------------------------------------------------------------------- creation


RAND45 = _rng.standard_normal((4, 5)).astype(np.float32)

CREATE = [
    lambda lib: _sp(lib),
    lambda lib: _sp(lib, size=None),
    lambda lib: _sp(lib, dtype=lib.float64),
    lambda lib: _sp(lib, val=np.arange(5)),
    lambda lib: _sp(lib, requires_grad=True),
    lambda lib: _sp(lib, idx=IDX[:, :1], val=VAL[:1]),
    lambda lib: _sp(lib, idx=np.zeros((2, 0), np.int64), val=np.zeros(0, np.float32)),
    lambda lib: _sp(lib, idx=[[0, 3, 1]], val=[1.0, 2.0, 3.0], size=(5,)),
    lambda lib: _sp(lib, idx=[[0, 2]], val=np.ones((2, 3), np.float32), size=(4, 3)),
    lambda lib: lib.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0]),
    lambda lib: lib.sparse_coo_tensor([[0, 1], [1, 0]], [1, 2]),
    lambda lib: _sp(lib, idx=IDX.astype(np.float32)),
    lambda lib: _sp(lib, check_invariants=True),
    lambda lib: lib.sparse.FloatTensor(_t(lib, IDX), _t(lib, VAL), lib.Size([3, 3])),
    lambda lib: lib.sparse.DoubleTensor(_t(lib, IDX), _t(lib, VAL).double(), lib.Size([3, 3])),
    lambda lib: lib.sparse.LongTensor(_t(lib, IDX), _t(lib, VAL).long(), lib.Size([3, 3])),
    lambda lib: _t(lib, [[0.0, 1.5], [2.0, 0.0]]).to_sparse(),
    lambda lib: _t(lib, [[0.0, 1.5], [2.0, 0.0]]).to_sparse_coo(),
    lambda lib: _t(lib, [[0.0, 0.0], [2.0, 0.0], [0.0, 0.0]]).to_sparse(1),
    lambda lib: lib.zeros(3, 3).to_sparse(),
    lambda lib: _t(lib, RAND45).to_sparse(),
    lambda lib: _t(lib, np.arange(6).reshape(2, 3)).to_sparse(),
    lambda lib: _t(lib, np.arange(24.0).reshape(2, 3, 4)).to_sparse(),
    lambda lib: _t(lib, np.arange(24.0).reshape(2, 3, 4)).to_sparse(2),
]


@pytest.mark.parametrize("case", range(len(CREATE)))
def test_create_and_print(case):
    check(CREATE[case])


def test_print_long_values_wrap():
    val = _rng.standard_normal(40).astype(np.float32)
    idx = np.stack([np.arange(40) % 7, np.arange(40) % 5])
    check(lambda lib: _sp(lib, idx=idx, val=val, size=(7, 5)))
    check(lambda lib: _sp(lib, idx=idx, val=val.astype(np.float64), size=(7, 5)) * 1e6)


def test_print_summarized():
    idx = np.stack([np.arange(1500) % 97, np.arange(1500) % 89])
    val = np.linspace(-3, 3, 1500).astype(np.float32)
    check(lambda lib: _sp(lib, idx=idx, val=val, size=(97, 89)))


ERRORS = [
    lambda lib: _sp(lib, idx=[0, 1], val=VAL[:2]),
    lambda lib: _sp(lib, idx=[[0, 1]], val=VAL[:2]),
    lambda lib: _sp(lib, val=VAL[:3]),
    lambda lib: _sp(lib, size=(2, 2), check_invariants=True),
    lambda lib: _sp(lib, idx=-IDX, check_invariants=True),
    lambda lib: _sp(lib, val=np.arange(5), requires_grad=True),
    lambda lib: _sp(lib).indices(),
    lambda lib: _sp(lib).values(),
    lambda lib: _sp(lib) + lib.ones(3, 3),
    lambda lib: _sp(lib) + _sp(lib, size=(3, 4)),
    lambda lib: lib.sparse.mm(_sp(lib), lib.ones(4, 2)),
    lambda lib: lib.mm(_sp(lib), lib.ones(4, 2)),
    lambda lib: _sp(lib) @ lib.ones(4, 2),
    lambda lib: lib.ones(2, 4) @ _sp(lib),
    lambda lib: lib.mm(_sp(lib), lib.ones(3, 2).double()),
    lambda lib: lib.sparse.mm(_sp(lib), lib.ones(3, 2).double()),
    lambda lib: _sp(lib).sum(dim=2),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    check_raises(ERRORS[case])


# -------------------------------------------------------------------------------- methods


def test_attributes():
    for lib in (ember, torch):
        S = _sp(lib)
        assert S.is_sparse and not lib.ones(2).is_sparse
        assert S.layout == lib.sparse_coo and lib.ones(2).layout == lib.strided
        assert str(S.layout) == "torch.sparse_coo" and str(lib.ones(2).layout) == "torch.strided"
        assert S.shape == lib.Size([3, 3]) and S.size() == (3, 3) and S.size(1) == 3
        assert S.dim() == 2 and S.ndim == 2 and S.sparse_dim() == 2 and S.dense_dim() == 0
        assert S._nnz() == 5 and not S.is_coalesced() and S.coalesce().is_coalesced()
        assert str(S.device) == "cpu" and S.is_leaf and not S.requires_grad
        assert S.type() == "torch.sparse.FloatTensor"
        assert isinstance(S, lib.Tensor)


METHODS = [
    lambda lib: _sp(lib).coalesce(),
    lambda lib: _sp(lib).coalesce().indices(),
    lambda lib: _sp(lib).coalesce().values(),
    lambda lib: _sp(lib)._indices(),
    lambda lib: _sp(lib)._values(),
    lambda lib: _sp(lib).to_dense(),
    lambda lib: _sp(lib).coalesce().to_dense(),
    lambda lib: _sp(lib).t(),
    lambda lib: _sp(lib).transpose(0, 1),
    lambda lib: _sp(lib).coalesce().t(),
    lambda lib: _sp(lib) * 2,
    lambda lib: 2.5 * _sp(lib),
    lambda lib: _sp(lib) / 4,
    lambda lib: _sp(lib).coalesce() * 2,
    lambda lib: _sp(lib) * _t(lib, np.arange(9.0, dtype=np.float32).reshape(3, 3)),
    lambda lib: _sp(lib) * _t(lib, np.arange(3.0, dtype=np.float32)),
    lambda lib: _sp(lib) * _t(lib, np.arange(3.0, dtype=np.float32))[:, None],
    lambda lib: -_sp(lib),
    lambda lib: _sp(lib).neg(),
    lambda lib: _sp(lib).coalesce() + _sp(lib).coalesce().t().coalesce(),
    lambda lib: _sp(lib).coalesce() - _sp(lib).coalesce().t().coalesce(),
    lambda lib: _sp(lib).coalesce().sub(_sp(lib).coalesce().t().coalesce(), alpha=2),
    lambda lib: _sp(lib).coalesce() + (_sp(lib).coalesce() * 2),
    lambda lib: (_sp(lib).coalesce() + _sp(lib).coalesce().t()).to_dense(),
    lambda lib: (lambda s: s + s)(_sp(lib)),
    lambda lib: (_sp(lib) + _sp(lib).t()).to_dense(),
    lambda lib: (_sp(lib) - _sp(lib).t()).to_dense(),
    lambda lib: lib.ones(3, 3) + _sp(lib),
    lambda lib: lib.sparse.sum(_sp(lib)),
    lambda lib: lib.sparse.sum(_sp(lib), dim=0),
    lambda lib: lib.sparse.sum(_sp(lib), dim=1),
    lambda lib: lib.sparse.sum(_sp(lib), dim=-1),
    lambda lib: lib.sparse.sum(_sp(lib), dim=(0, 1)),
    lambda lib: _sp(lib).sum(),
    lambda lib: _sp(lib).sum(dim=1),
    lambda lib: lib.sparse.sum(_sp(lib, idx=[[0, 2]], val=np.ones((2, 3)), size=(4, 3)), 1),
    lambda lib: lib.sparse.sum(_sp(lib, idx=[[0, 2]], val=np.ones((2, 3)), size=(4, 3)), 0),
    lambda lib: _sp(lib).double(),
    lambda lib: _sp(lib).float(),
    lambda lib: _sp(lib).to(lib.float64),
    lambda lib: _sp(lib).to(dtype=lib.float64),
    lambda lib: _sp(lib).clone(),
    lambda lib: _sp(lib).detach(),
    lambda lib: _sp(lib).requires_grad_(),
    lambda lib: _sp(lib, requires_grad=True).detach(),
    lambda lib: _sp(lib, requires_grad=True) * 2,
    lambda lib: lib.sparse.softmax(_sp(lib), 1),
    lambda lib: lib.sparse.softmax(_sp(lib), 0),
    lambda lib: lib.sparse.log_softmax(_sp(lib), 1),
    lambda lib: lib.sparse.log_softmax(_sp(lib), -2),
    lambda lib: lib.sparse.softmax(_sp(lib, dtype=lib.float64), 1),
]


@pytest.mark.parametrize("case", range(len(METHODS)))
def test_methods(case):
    check(METHODS[case])


def test_legacy_constructor_warns_as_torch():
    with pytest.warns(UserWarning, match=r"torch.sparse.SparseTensor\(indices, values, shape"):
        ember.sparse.FloatTensor(ember.tensor(IDX), ember.tensor(VAL), ember.Size([3, 3]))


def test_clone_detach_share():
    S = _sp(ember)
    assert S.clone()._values().numpy() is not S._values().numpy()
    assert np.shares_memory(S.detach()._values().numpy(), S._values().numpy())


# -------------------------------------------------------------------------------- products


A_IDX = np.array([[0, 1, 1, 2, 0, 3], [2, 0, 2, 1, 2, 3]])  # 4 x 5, a duplicate, unsorted
A_VAL = _rng.standard_normal(6)
DENSE = _rng.standard_normal((5, 3))
LEFT = _rng.standard_normal((2, 4))
BIAS = _rng.standard_normal((4, 3))


def _a(lib, dtype, grad=False):
    return lib.sparse_coo_tensor(
        _t(lib, A_IDX), _t(lib, A_VAL.astype(dtype)), (4, 5), requires_grad=grad
    )


PRODUCTS = {
    "sparse.mm": lambda lib, S, X: lib.sparse.mm(S, X),
    "mm": lambda lib, S, X: lib.mm(S, X),
    "matmul": lambda lib, S, X: lib.matmul(S, X),
    "spmm": lambda lib, S, X: lib.spmm(S, X),
    "at": lambda lib, S, X: S @ X,
    "method_mm": lambda lib, S, X: S.mm(X),
    "sparse.addmm": lambda lib, S, X: lib.sparse.addmm(_t(lib, BIAS.astype(_dt(X))), S, X),
    "addmm": lambda lib, S, X: lib.addmm(_t(lib, BIAS.astype(_dt(X))), S, X, beta=2, alpha=0.5),
    "coalesced": lambda lib, S, X: lib.sparse.mm(S.coalesce(), X),
    "transposed": lambda lib, S, X: lib.mm(S.t(), lib.ones(4, 2, dtype=S.dtype)),
    "scaled": lambda lib, S, X: lib.sparse.mm(S * 3, X),
    "vector": lambda lib, S, X: S @ X[:, 0],
}


def _dt(x):
    return "float64" if x.dtype in (torch.float64, ember.float64) else "float32"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products_grad_dense_and_values(name, dtype):
    """Gradients reach the dense operand and the tensor the sparse values came from."""
    fn = PRODUCTS[name]
    res = {}
    g = None
    for lib in (torch, ember):
        w = _t(lib, A_VAL.astype(dtype), requires_grad=True)
        S = lib.sparse_coo_tensor(_t(lib, A_IDX), w * 1, (4, 5))
        X = _t(lib, DENSE.astype(dtype), requires_grad=True)
        out = fn(lib, S, X)
        if g is None:
            g = _rng.standard_normal(tuple(out.shape)).astype(dtype)
        out.backward(_t(lib, g))
        res[lib] = (out, w.grad, X.grad)
    tol = 1e-5 if dtype == "float32" else 1e-10
    for e, t in zip(res[ember], res[torch]):
        _same(e, t, tol)


LEAF = ["sparse.mm", "mm", "matmul", "at", "spmm", "sparse.addmm", "addmm", "coalesced", "scaled"]


@pytest.mark.parametrize("name", LEAF)
def test_products_sparse_leaf_grad(name):
    """A sparse leaf gets torch's gradient: sparse after torch.sparse.mm, dense after mm."""
    fn = PRODUCTS[name]
    res = {}
    g = _rng.standard_normal((4, 3))
    for lib in (torch, ember):
        S = _a(lib, "float64", grad=True)
        X = _t(lib, DENSE, requires_grad=True)
        out = fn(lib, S, X)
        out.backward(_t(lib, g))
        res[lib] = (out, S.grad, X.grad)
    for e, t in zip(res[ember], res[torch]):
        _same(e, t, 1e-10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dense_at_sparse(dtype):
    res = {}
    g = _rng.standard_normal((2, 5)).astype(dtype)
    for lib in (torch, ember):
        w = _t(lib, A_VAL.astype(dtype), requires_grad=True)
        S = lib.sparse_coo_tensor(_t(lib, A_IDX), w * 1, (4, 5))
        X = _t(lib, LEFT.astype(dtype), requires_grad=True)
        for out in (X @ S, lib.mm(X, S), X.mm(S), lib.matmul(X, S)):
            out.backward(_t(lib, g), retain_graph=True)
        res[lib] = (out, w.grad, X.grad)
    for e, t in zip(res[ember], res[torch]):
        _same(e, t, 1e-4 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "sum0", "sum1", "to_dense"])
def test_sparse_results_backward(fn):
    g = _rng.standard_normal(6)
    res = {}
    for lib in (torch, ember):
        w = _t(lib, A_VAL, requires_grad=True)
        S = lib.sparse_coo_tensor(_t(lib, A_IDX), w * 1, (4, 5))
        if fn in ("softmax", "log_softmax"):
            out = getattr(lib.sparse, fn)(S, 1)
            loss = (out.to_dense() * _t(lib, np.arange(20.0).reshape(4, 5))).sum()
        elif fn == "to_dense":
            out = S.to_dense()
            loss = (out * _t(lib, np.arange(20.0).reshape(4, 5))).sum()
        else:
            out = lib.sparse.sum(S, dim=int(fn[-1]))
            loss = (out.to_dense() * _t(lib, g[: out.shape[0]])).sum()
        loss.backward()
        res[lib] = (loss, w.grad)
    for e, t in zip(res[ember], res[torch]):
        _same(e, t, 1e-10)


@pytest.mark.parametrize("fn", ["to_dense", "sum", "sum0", "softmax"])
def test_sparse_leaf_grad_of_reductions(fn):
    res = {}
    for lib in (torch, ember):
        S = _a(lib, "float64", grad=True)
        w = _t(lib, np.arange(20.0).reshape(4, 5))
        if fn == "to_dense":
            loss = (S.to_dense() * w).sum()
        elif fn == "sum":
            loss = lib.sparse.sum(S) * 3
        elif fn == "sum0":
            loss = (lib.sparse.sum(S, 0).to_dense() * w[0]).sum()
        else:
            loss = (lib.sparse.softmax(S, 1).to_dense() * w).sum()
        loss.backward()
        res[lib] = (loss.detach(), S.grad)
    for e, t in zip(res[ember], res[torch]):
        _same(e, t, 1e-10)


def test_mul_dense_backward():
    res = {}
    w20 = np.arange(20.0).reshape(4, 5)
    for lib in (torch, ember):
        w = _t(lib, A_VAL, requires_grad=True)
        S = lib.sparse_coo_tensor(_t(lib, A_IDX), w * 1, (4, 5))
        X = _t(lib, _rng_fixed((4, 5)), requires_grad=True)
        out = S * X
        loss = (out.to_dense() * _t(lib, w20)).sum()
        loss.backward()
        # torch gives the dense operand a sparse gradient; ember a dense one (same values)
        gx = X.grad.to_dense() if X.grad.is_sparse else X.grad
        res[lib] = (loss.detach(), w.grad, gx)
    for e, t in zip(res[ember], res[torch]):
        _same(e, t, 1e-10)


def _rng_fixed(shape):
    return np.random.default_rng(5).standard_normal(shape)


@pytest.mark.parametrize("side", ["left", "right"])
def test_double_backward(side):
    res = {}
    for lib in (torch, ember):
        w = _t(lib, A_VAL, requires_grad=True)
        S = lib.sparse_coo_tensor(_t(lib, A_IDX), w * 1, (4, 5))
        if side == "left":
            X = _t(lib, DENSE, requires_grad=True)
            out = lib.sparse.mm(S, X)
        else:
            X = _t(lib, LEFT, requires_grad=True)
            out = X @ S
        (gx,) = lib.autograd.grad((out**2).sum(), X, create_graph=True)
        (gx * _t(lib, np.cos(np.arange(gx.numel())).reshape(gx.shape))).sum().backward()
        res[lib] = (gx.detach(), w.grad, X.grad)
    for e, t in zip(res[ember], res[torch]):
        _same(e, t, 1e-10)


def test_grad_fn_names():
    for lib in (torch, ember):
        S = _sp(lib, requires_grad=True)
        names = [type(x.grad_fn).__name__ for x in (S.to_dense(), S.coalesce(), S * 2, -S)]
        assert names == ["ToDenseBackward0", "CoalesceBackward0", "MulBackward0", "NegBackward0"]
        assert str(S.coalesce()).endswith("grad_fn=<CoalesceBackward0>)")


def test_no_grad_product_records_nothing():
    S = _a(ember, "float64")
    X = _t(ember, DENSE, requires_grad=True)
    with ember.no_grad():
        out = ember.sparse.mm(S, X)
    assert out.grad_fn is None and not out.requires_grad


def test_save_load_roundtrip():
    S = _a(ember, "float32")
    buf = io.BytesIO()
    ember.save({"adj": S}, buf)
    buf.seek(0)
    back = ember.load(buf)["adj"]
    assert back.is_sparse and repr(back) == repr(S)


def test_save_load_interop_with_torch():
    """Files hold torch's ``_rebuild_sparse_tensor(layout, (indices, values, size,
    is_coalesced))``: each library reads what the other wrote."""
    for src, dst in ((ember, torch), (torch, ember)):
        buf = io.BytesIO()
        S = _sp(src)
        src.save({"a": S, "c": S.coalesce(), "layout": src.strided}, buf)
        buf.seek(0)
        back = dst.load(buf)
        assert repr(back["a"]) == repr(S) and repr(back["c"]) == repr(S.coalesce())
        assert back["c"].is_coalesced() and not back["a"].is_coalesced()
        assert back["layout"] == dst.strided


def test_dense_ops_unaffected():
    a = ember.ones(2, 3)
    b = ember.ones(3, 2)
    assert ember.mm(a, b).shape == (2, 2) and (a @ b).layout == ember.strided


# -------------------------------------------------------------------------------- GCN


def _random_graph(n=30, p=0.15, seed=3):
    rng = np.random.default_rng(seed)
    adj = (rng.random((n, n)) < p).astype(np.float32)
    adj = np.maximum(adj, adj.T) + np.eye(n, dtype=np.float32)
    deg = adj.sum(1)
    norm = adj / deg[:, None]  # pygcn's row normalisation
    rows, cols = np.nonzero(norm)
    return np.stack([rows, cols]), norm[rows, cols].astype(np.float32)


def _gcn(lib, idx, val, n, feats, labels, weights):
    nn, F = lib.nn, lib.nn.functional

    class GraphConvolution(nn.Module):
        def __init__(self, fin, fout):
            super().__init__()
            self.weight = nn.Parameter(lib.FloatTensor(fin, fout))
            self.bias = nn.Parameter(lib.FloatTensor(fout))

        def forward(self, x, adj):
            support = lib.mm(x, self.weight)
            return lib.spmm(adj, support) + self.bias

    class GCN(nn.Module):
        def __init__(self, nfeat, nhid, nclass):
            super().__init__()
            self.gc1 = GraphConvolution(nfeat, nhid)
            self.gc2 = GraphConvolution(nhid, nclass)

        def forward(self, x, adj):
            x = F.relu(self.gc1(x, adj))
            x = self.gc2(x, adj)
            return F.log_softmax(x, dim=1)

    adj = lib.sparse.FloatTensor(lib.LongTensor(idx), lib.FloatTensor(val), lib.Size([n, n]))
    model = GCN(feats.shape[1], 16, int(labels.max()) + 1)
    with lib.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(lib.tensor(w))
    opt = lib.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    x, y = lib.tensor(feats), lib.tensor(labels)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = F.nll_loss(model(x, adj), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


def test_gcn_training_matches_torch():
    n = 30
    idx, val = _random_graph(n)
    rng = np.random.default_rng(11)
    feats = rng.standard_normal((n, 8)).astype(np.float32)
    labels = rng.integers(0, 3, n)
    weights = [
        rng.uniform(-0.25, 0.25, s).astype(np.float32) for s in [(8, 16), (16,), (16, 3), (3,)]
    ]
    t_losses, t_params = _gcn(torch, idx, val, n, feats, labels, weights)
    e_losses, e_params = _gcn(ember, idx, val, n, feats, labels, weights)
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-5, atol=1e-6)
    for e, t in zip(e_params, t_params):
        np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-5)


def test_sparse_gradient_assignment():
    # a sparse tensor may be assigned as a dense parameter's gradient (SparseAdam's input)
    out = []
    for lib in (torch, ember):
        p = lib.zeros(3, 2, requires_grad=True)
        p.grad = lib.sparse_coo_tensor([[0, 2]], lib.ones(2, 2), (3, 2))
        out.append((p.grad.is_sparse, p.grad.to_dense().tolist()))
        with pytest.raises(RuntimeError):
            p.grad = lib.sparse_coo_tensor([[0]], lib.ones(1, 2), (4, 2))
    assert out[0] == out[1]

"""Oracle tests: ``grad_fn`` names and ``grad_fn._saved_<name>`` attributes, op by op.

What an op saves is declared once, by torch's argument names (``save=("mat1", "mat2")``), and
each op's grad_fn class gets one ``_saved_<name>`` per name. Two checks against torch:

- the table: for every op in ember's table whose grad_fn class torch has, every name ember
  shows is one torch's class shows (a tensor where torch saves a tensor, a number where torch
  saves a Scalar);
- calls: a broad list of ops run in both libraries; the grad_fn name, the set of tensor-valued
  ``_saved_*`` attributes (torch's minus the ones listed in ``NOT_SHOWN``, where ember's
  backward needs something else) and every value (value, dtype, shape, which input or output
  it is) must match.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import ember
from ember._ops.registry import OPS

torch = pytest.importorskip("torch")

_FUNCTIONS = torch._C._functions


def _torch_tensor_names(cls) -> set:
    return {a[len("_raw_saved_") :] for a in dir(cls) if a.startswith("_raw_saved_")}


def _torch_all_names(cls) -> set:
    return {a[len("_saved_") :] for a in dir(cls) if a.startswith("_saved_")}


def _table_rows():
    rows = {}
    for o in OPS:
        if o.node_cls is None or not hasattr(_FUNCTIONS, o.node_cls.__name__):
            continue
        rows.setdefault((o.node_cls.__name__, o.name, o.saved_names, o.scalar_args), o)
    return sorted(rows.values(), key=lambda o: (o.node_cls.__name__, o.name))


_ROWS = _table_rows()


def test_the_table_is_broad():
    # every op with a torch grad_fn is checked below; most of ember's table has one
    assert len(_ROWS) > 300


@pytest.mark.parametrize("o", _ROWS, ids=lambda o: f"{o.name}-{o.node_cls.__name__}")
def test_shown_names_are_torchs(o):
    cls = getattr(_FUNCTIONS, o.node_cls.__name__)
    tensors, every = _torch_tensor_names(cls), _torch_all_names(cls)
    post = tuple(n for n in o.post_save if not n.startswith("_"))
    shown = [n for n in o.saved_names + post if n is not None]
    for name in shown:
        if name in o.scalar_args:
            assert name in every - tensors, f"torch does not save {name} as a number"
        else:
            assert name in tensors, f"torch's {cls.__name__} saves no tensor {name}"
        assert hasattr(o.node_cls, "_saved_" + name)
    # the class shows exactly the declared names
    own = {a[len("_saved_") :] for a in vars(o.node_cls) if a.startswith("_saved_")}
    assert own == set(shown)


def test_no_global_alias_map():
    import ember._core.node as node

    assert not hasattr(node, "_SAVED_POSITION")
    assert "__getattr__" not in vars(node.Node)


# ---------------------------------------------------------------------------------------------
# calls

_rng = np.random.default_rng(7)


def _a(*shape, low=-2.0, high=2.0, dtype="float64"):
    return np.asarray(_rng.uniform(low, high, shape), dtype=dtype)


def _spd(n):
    m = _a(n, n)
    return m @ m.T + n * np.eye(n)


def _idx(high, *shape):
    return np.asarray(_rng.integers(0, high, shape), dtype=np.int64)


def _unary(name, lib, x):
    return getattr(lib, name)(x)


def _lib_F(lib):
    return lib.nn.functional


# (id, function of (lib, *inputs) -> output, inputs as arrays (float ones require grad) or
# other values passed through)
CASES = [
    # unary
    *[
        (n, functools.partial(_unary, n), [_a(3, 4, low=0.1, high=0.9)])
        for n in [
            "exp",
            "exp2",
            "expm1",
            "sin",
            "cos",
            "tan",
            "tanh",
            "sigmoid",
            "log",
            "log2",
            "log10",
            "log1p",
            "sqrt",
            "rsqrt",
            "abs",
            "relu",
            "erf",
            "erfc",
            "erfinv",
            "lgamma",
            "digamma",
            "sinc",
            "logit",
            "asin",
            "acos",
            "atan",
            "sinh",
            "cosh",
            "reciprocal",
            "sgn",
            "i0",
            "nan_to_num",
            "angle",
        ]
    ],
    ("special_i0e", lambda lib, x: lib.special.i0e(x), [_a(5)]),
    ("special_ndtri", lambda lib, x: lib.special.ndtri(x), [_a(5, low=0.1, high=0.9)]),
    ("special_log_ndtr", lambda lib, x: lib.special.log_ndtr(x), [_a(5)]),
    ("special_entr", lambda lib, x: lib.special.entr(x), [_a(5, low=0.1, high=2)]),
    ("polygamma", lambda lib, x: lib.polygamma(1, x), [_a(5, low=0.5, high=2)]),
    ("mvlgamma", lambda lib, x: lib.mvlgamma(x, 2), [_a(5, low=2, high=3)]),
    # binary
    ("mul", lambda lib, x, y: x * y, [_a(3, 4), _a(4)]),
    ("mul_scalar", lambda lib, x: x * 2, [_a(3)]),
    ("mul_const", lambda lib, x, y: x * y, [_a(3), _a(3)]),  # y given requires_grad=False below
    ("div", lambda lib, x, y: x / y, [_a(3, 4), _a(3, 4, low=1, high=2)]),
    ("div_scalar", lambda lib, x: x / 2.0, [_a(3)]),
    ("pow_scalar", lambda lib, x: x**2.5, [_a(3, low=0.5, high=2)]),
    ("pow_tensor", lambda lib, x, y: x**y, [_a(3, low=0.5, high=2), _a(3)]),
    ("pow_scalar_base", lambda lib, y: lib.pow(2.0, y), [_a(3)]),
    ("atan2", lambda lib, x, y: lib.atan2(x, y), [_a(3), _a(3)]),
    ("hypot", lambda lib, x, y: lib.hypot(x, y), [_a(3), _a(3)]),
    ("maximum", lambda lib, x, y: lib.maximum(x, y), [_a(3), _a(3)]),
    ("fmin", lambda lib, x, y: lib.fmin(x, y), [_a(3), _a(3)]),
    ("logaddexp", lambda lib, x, y: lib.logaddexp(x, y), [_a(3), _a(3)]),
    ("xlogy", lambda lib, x, y: lib.xlogy(x, y), [_a(3), _a(3, low=0.5, high=2)]),
    ("xlogy_scalar_self", lambda lib, y: lib.xlogy(2.0, y), [_a(3, low=0.5, high=2)]),
    ("xlogy_scalar_other", lambda lib, x: lib.xlogy(x, 3.0), [_a(3)]),
    ("ldexp", lambda lib, x, e: lib.ldexp(x, e), [_a(3), _a(3)]),
    ("copysign", lambda lib, x, y: lib.copysign(x, y), [_a(3), _a(3)]),
    ("fmod", lambda lib, x, y: lib.fmod(x, y), [_a(3), _a(3, low=1, high=2)]),
    ("remainder", lambda lib, x, y: lib.remainder(x, y), [_a(3), _a(3, low=1, high=2)]),
    (
        "igamma",
        lambda lib, x, y: lib.special.gammainc(x, y),
        [_a(3, low=1, high=2), _a(3, low=1, high=2)],
    ),
    (
        "zeta",
        lambda lib, x, q: lib.special.zeta(x, q),
        [_a(3, low=2, high=3), _a(3, low=1, high=2)],
    ),
    # matrix products
    ("mm", lambda lib, a, b: lib.mm(a, b), [_a(3, 4), _a(4, 2)]),
    ("matmul_2d", lambda lib, a, b: a @ b, [_a(3, 4), _a(4, 2)]),
    ("bmm", lambda lib, a, b: lib.bmm(a, b), [_a(2, 3, 4), _a(2, 4, 2)]),
    ("dot", lambda lib, a, b: lib.dot(a, b), [_a(4), _a(4)]),
    ("mv", lambda lib, a, b: lib.mv(a, b), [_a(3, 4), _a(4)]),
    ("vdot", lambda lib, a, b: lib.vdot(a, b), [_a(4), _a(4)]),
    ("addmm", lambda lib, c, a, b: lib.addmm(c, a, b), [_a(2), _a(3, 4), _a(4, 2)]),
    ("addmv", lambda lib, c, a, b: lib.addmv(c, a, b), [_a(3), _a(3, 4), _a(4)]),
    ("addr", lambda lib, c, a, b: lib.addr(c, a, b), [_a(3, 4), _a(3), _a(4)]),
    ("baddbmm", lambda lib, c, a, b: lib.baddbmm(c, a, b), [_a(3, 2), _a(2, 3, 4), _a(2, 4, 2)]),
    ("addbmm", lambda lib, c, a, b: lib.addbmm(c, a, b), [_a(3, 2), _a(2, 3, 4), _a(2, 4, 2)]),
    ("cross", lambda lib, a, b: lib.linalg.cross(a, b), [_a(2, 3), _a(2, 3)]),
    ("cdist", lambda lib, a, b: lib.cdist(a, b), [_a(3, 2), _a(4, 2)]),
    # ternary
    ("clamp_scalar", lambda lib, x: lib.clamp(x, -0.5, 0.5), [_a(5)]),
    (
        "clamp_tensor",
        lambda lib, x, lo, hi: lib.clamp(x, lo, hi),
        [_a(5), _a(5, high=-1), _a(5, low=1)],
    ),
    ("clamp_min", lambda lib, x: lib.clamp_min(x, 0.1), [_a(5)]),
    ("clamp_min_tensor", lambda lib, x, b: lib.clamp_min(x, b), [_a(5), _a(5)]),
    ("clamp_max_tensor", lambda lib, x, b: lib.clamp_max(x, b), [_a(5), _a(5)]),
    ("lerp_scalar", lambda lib, a, b: lib.lerp(a, b, 0.3), [_a(4), _a(4)]),
    ("lerp_tensor", lambda lib, a, b, w: lib.lerp(a, b, w), [_a(4), _a(4), _a(4)]),
    ("addcmul", lambda lib, x, a, b: lib.addcmul(x, a, b), [_a(4), _a(4), _a(4)]),
    ("addcdiv", lambda lib, x, a, b: lib.addcdiv(x, a, b), [_a(4), _a(4), _a(4, low=1, high=2)]),
    ("where", lambda lib, x, y: lib.where(x > 0, x, y), [_a(4), _a(4)]),
    # reductions and scans
    ("prod", lambda lib, x: x.prod(), [_a(4)]),
    ("prod_dim", lambda lib, x: x.prod(1), [_a(3, 4)]),
    ("logsumexp", lambda lib, x: lib.logsumexp(x, 1), [_a(3, 4)]),
    ("amax", lambda lib, x: lib.amax(x, 1), [_a(3, 4)]),
    ("max_all", lambda lib, x: x.max(), [_a(3, 4)]),
    ("norm", lambda lib, x: lib.linalg.vector_norm(x), [_a(3, 4)]),
    ("nansum", lambda lib, x: lib.nansum(x), [_a(3, 4)]),
    ("cumprod", lambda lib, x: lib.cumprod(x, 0), [_a(4)]),
    ("logcumsumexp", lambda lib, x: lib.logcumsumexp(x, 0), [_a(4)]),
    ("std", lambda lib, x: x.std(), [_a(3, 4)]),
    ("var", lambda lib, x: x.var(), [_a(3, 4)]),
    ("median", lambda lib, x: x.median(), [_a(5)]),
    # indexing
    ("gather", lambda lib, x, i: lib.gather(x, 1, i), [_a(3, 4), _idx(4, 3, 2)]),
    ("index_select", lambda lib, x, i: lib.index_select(x, 0, i), [_a(3, 4), _idx(3, 2)]),
    ("masked_fill", lambda lib, x: x.masked_fill(x > 0, 0.0), [_a(3, 4)]),
    ("masked_select", lambda lib, x: x.masked_select(x > 0), [_a(3, 4)]),
    ("take", lambda lib, x, i: lib.take(x, i), [_a(3, 4), _idx(12, 5)]),
    (
        "scatter_add",
        lambda lib, x, i, s: x.scatter_add(0, i, s),
        [_a(3, 4), _idx(3, 2, 4), _a(2, 4)],
    ),
    ("index_add", lambda lib, x, i, s: x.index_add(0, i, s), [_a(3, 4), _idx(3, 2), _a(2, 4)]),
    # nn
    ("softmax", lambda lib, x: _lib_F(lib).softmax(x, 1), [_a(3, 4)]),
    ("log_softmax", lambda lib, x: _lib_F(lib).log_softmax(x, 1), [_a(3, 4)]),
    ("gelu", lambda lib, x: _lib_F(lib).gelu(x), [_a(5)]),
    ("silu", lambda lib, x: _lib_F(lib).silu(x), [_a(5)]),
    ("elu", lambda lib, x: _lib_F(lib).elu(x), [_a(5)]),
    ("leaky_relu", lambda lib, x: _lib_F(lib).leaky_relu(x), [_a(5)]),
    ("hardtanh", lambda lib, x: _lib_F(lib).hardtanh(x), [_a(5)]),
    ("softplus", lambda lib, x: _lib_F(lib).softplus(x), [_a(5)]),
    ("mse_loss", lambda lib, x, y: _lib_F(lib).mse_loss(x, y), [_a(3, 4), _a(3, 4)]),
    ("nll_loss", lambda lib, x, t: _lib_F(lib).nll_loss(x, t), [_a(3, 4), _idx(4, 3)]),
    ("embedding", lambda lib, w, i: _lib_F(lib).embedding(i, w), [_a(5, 3), _idx(5, 4)]),
    ("conv2d", lambda lib, x, w: _lib_F(lib).conv2d(x, w), [_a(1, 2, 5, 5), _a(3, 2, 3, 3)]),
    ("max_pool2d", lambda lib, x: _lib_F(lib).max_pool2d(x, 2), [_a(1, 1, 4, 4)]),
    (
        "grid_sample",
        lambda lib, x, g: _lib_F(lib).grid_sample(x, g, align_corners=False),
        [_a(1, 1, 4, 4), _a(1, 2, 2, 2, low=-1, high=1)],
    ),
    # linear algebra
    ("inv", lambda lib, a: lib.linalg.inv(a), [_spd(3)]),
    ("det", lambda lib, a: lib.linalg.det(a), [_spd(3)]),
    ("cholesky", lambda lib, a: lib.linalg.cholesky(a), [_spd(3)]),
    (
        "solve_triangular",
        lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True),
        [np.triu(_spd(3)), _a(3, 2)],
    ),
    ("matrix_exp", lambda lib, a: lib.linalg.matrix_exp(a), [_a(3, 3)]),
    ("pinv", lambda lib, a: lib.linalg.pinv(a), [_a(3, 2)]),
    ("cholesky_inverse", lambda lib, a: lib.cholesky_inverse(a), [np.linalg.cholesky(_spd(3))]),
    # multi-output ops: what the public function saves after dispatch (``post_save``)
    ("max_dim", lambda lib, x: x.max(1), [_a(3, 4)]),
    ("median_dim", lambda lib, x: x.median(1), [_a(3, 5)]),
    ("mode", lambda lib, x: x.round().mode(1), [_a(3, 5)]),
    ("sort", lambda lib, x: x.sort(1), [_a(3, 4)]),
    ("topk", lambda lib, x: x.topk(2), [_a(3, 4)]),
    ("kthvalue", lambda lib, x: x.kthvalue(2), [_a(3, 4)]),
    ("cummax", lambda lib, x: x.cummax(0), [_a(5)]),
    ("aminmax", lambda lib, x: lib.aminmax(x), [_a(3, 4)]),
    ("std_mean", lambda lib, x: lib.std_mean(x), [_a(3, 4)]),
    ("var_mean", lambda lib, x: lib.var_mean(x), [_a(3, 4)]),
    ("qr", lambda lib, a: lib.linalg.qr(a), [_a(4, 3)]),
    ("eigh", lambda lib, a: lib.linalg.eigh(a), [_spd(3)]),
    # (svd: the singular vectors' signs are LAPACK's choice and differ; the table test covers it)
    ("lu", lambda lib, a: lib.linalg.lu(a), [_a(3, 3)]),
    ("slogdet", lambda lib, a: lib.linalg.slogdet(a), [_spd(3)]),
    ("lu_factor", lambda lib, a: lib.linalg.lu_factor(a), [_a(3, 3)]),
    ("lstsq", lambda lib, a, b: lib.linalg.lstsq(a, b), [_a(4, 3), _a(4, 2)]),
]

# torch's tensor saves that ember's grad_fn does not show: ember's backward needs something
# else (an input instead of the output, a value recomputed instead of saved, or a torch-internal
# buffer). Checked both ways: the set shown is exactly torch's minus these.
NOT_SHOWN = {
    "ErfinvBackward0": {"self"},  # ember saves the result
    "LdexpBackward0": {"result"},  # ember saves self
    "LinalgDetBackward0": {"LU", "pivots"},  # ember refactors in backward
    "LinalgSlogdetBackward0": {"LU", "pivots"},
    "CummaxBackward0": {"self"},  # (ember keeps the shape)
    "NllLossBackward0": {"total_weight", "weight"},  # ember's weight is a param
    "MaxPool2DWithIndicesBackward0": {"self"},
    # torch saves the input for its shape (and sparse gradients); ember keeps the shape
    "GatherBackward0": {"self"},
    "MaskedSelectBackward0": {"self"},
    "TakeBackward0": {"self"},
    "IndexAddBackward0": {"source"},  # (ember's backward does not read it)
}

CONSTANT = {"mul_const": (1,)}  # inputs that do not require grad


def _make(lib, arrays, case_id):
    out = []
    for k, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            out.append(a)
            continue
        t = torch.from_numpy(a.copy()) if lib is torch else ember.from_numpy(a.copy())
        if t.dtype.is_floating_point and k not in CONSTANT.get(case_id, ()):
            t.requires_grad_(True)
        out.append(t)
    return out


def _describe(value, inputs, out):
    """What a saved value is: which input (by identity), the output, or its contents."""
    if value is None:
        return ("None",)
    lib_tensor = (torch.Tensor, ember.Tensor)
    if not isinstance(value, lib_tensor):
        return ("number", value)
    for k, x in enumerate(inputs):
        if value is x:
            return ("input", k)
    arr = value.detach().numpy() if isinstance(value, torch.Tensor) else value.detach().numpy()
    o = out[0] if isinstance(out, tuple) else out
    tag = "output" if o is not None and arr.shape == tuple(o.shape) else "tensor"
    return (tag, str(value.dtype).split(".")[-1], tuple(value.shape), arr)


def _same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] in ("output", "tensor"):
        return a[1] == b[1] and a[2] == b[2] and np.allclose(a[3], b[3], rtol=1e-6, atol=1e-8)
    return a == b


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_saved_tensors_match_torch(case):
    case_id, fn, arrays = case
    ti = _make(torch, arrays, case_id)
    ei = _make(ember, arrays, case_id)
    to, eo = fn(torch, *ti), fn(ember, *ei)
    tfn = (to[0] if isinstance(to, tuple) else to).grad_fn
    efn = (eo[0] if isinstance(eo, tuple) else eo).grad_fn
    assert type(efn).__name__ == type(tfn).__name__
    name = type(tfn).__name__
    torch_names = _torch_tensor_names(type(tfn))
    ember_names = {a[len("_saved_") :] for a in dir(efn) if a.startswith("_saved_")}
    scalars = _torch_all_names(type(tfn)) - torch_names
    assert ember_names - scalars == torch_names - NOT_SHOWN.get(name, set())
    for n in sorted(ember_names):
        tv = getattr(tfn, "_saved_" + n)
        ev = getattr(efn, "_saved_" + n)
        assert _same(_describe(ev, ei, eo), _describe(tv, ti, to)), n


def test_addmm_saves_mat1_and_mat2_by_name():
    x = ember.randn(3, 4, requires_grad=True)
    w = ember.randn(4, 2, requires_grad=True)
    b = ember.randn(2, requires_grad=True)
    fn = ember.addmm(b, x, w).grad_fn
    assert fn._saved_mat1 is x and fn._saved_mat2 is w
    assert not hasattr(fn, "_saved_self") and not hasattr(fn, "_saved_other")


def test_saved_attribute_after_backward_raises_as_torch():
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True)
        y = x.exp()
        y.sum().backward()
        with pytest.raises(RuntimeError, match="after they have already been freed"):
            y.grad_fn._saved_result  # noqa: B018

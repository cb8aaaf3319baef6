"""Oracle tests: products (vdot, inner, outer, the add* family, tensordot, multi_dot, vecdot,
cross, matrix_power) and einsum, against torch: values, dtypes, shapes, strides, grad_fn,
gradients under a random upstream gradient, float64 second order, errors."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.linalg  # noqa: F401  (the submodule, until ember/__init__ imports it)
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

F64 = "float64"

# ------------------------------------------------------------------------------ simple products


@pytest.mark.parametrize("dtype", ["float32", F64])
def test_vdot_inner_outer(dtype):
    check(lambda lib, a, b: lib.vdot(a, b), [rand(4, dtype=dtype), rand(4, dtype=dtype)])
    check(lambda lib, a, b: a.vdot(b), [rand(4, dtype=dtype), rand(4, dtype=dtype)])
    check(lambda lib, a, b: lib.outer(a, b), [rand(3, dtype=dtype), rand(4, dtype=dtype)])
    check(lambda lib, a, b: lib.ger(a, b), [rand(3, dtype=dtype), rand(4, dtype=dtype)])
    check(lambda lib, a, b: a.outer(b), [rand(3, dtype=dtype), rand(0, dtype=dtype)])
    for sa, sb in [((3,), (3,)), ((2, 3), (4, 3)), ((2, 5, 3), (3,)), ((), (2, 3)), ((2, 3), ())]:
        check(lambda lib, a, b: lib.inner(a, b), [rand(*sa, dtype=dtype), rand(*sb, dtype=dtype)])


def test_vdot_complex():
    check(
        lambda lib, a, b: lib.vdot(a, b), [rand(4, dtype="complex128"), rand(4, dtype="complex128")]
    )


def test_outer_promotes():
    check(lambda lib, a, b: lib.outer(a, b), [rand(3), rand(2, dtype=F64)])
    check(lambda lib, a, b: lib.outer(a, b), [rand(3, dtype="int64"), rand(2)])


ADD_PRODUCTS = [
    ("addmm", (3, 4), (3, 2), (2, 4)),
    ("addmm", (4,), (3, 2), (2, 4)),
    ("addmm", (), (3, 2), (2, 4)),
    ("addmv", (3,), (3, 2), (2,)),
    ("addmv", (), (3, 2), (2,)),
    ("addbmm", (3, 4), (5, 3, 2), (5, 2, 4)),
    ("addbmm", (1, 4), (5, 3, 2), (5, 2, 4)),
    ("baddbmm", (5, 3, 4), (5, 3, 2), (5, 2, 4)),
    ("baddbmm", (3, 4), (5, 3, 2), (5, 2, 4)),
    ("addr", (3, 4), (3,), (4,)),
    ("addr", (4,), (3,), (4,)),
]


@pytest.mark.parametrize("name,si,sa,sb", ADD_PRODUCTS)
@pytest.mark.parametrize("scal", [{}, {"beta": 0.5, "alpha": -2.0}, {"beta": 0}])
def test_add_products(name, si, sa, sb, scal):
    ins = [rand(*si, dtype=F64), rand(*sa, dtype=F64), rand(*sb, dtype=F64)]
    check(lambda lib, i, a, b: getattr(lib, name)(i, a, b, **scal), ins)
    check(lambda lib, i, a, b: getattr(i, name)(a, b, **scal), ins)


def test_add_products_beta0_ignores_nan():
    i = np.full((3, 4), np.nan)
    check(
        lambda lib, i, a, b: lib.addmm(i, a, b, beta=0),
        [i, rand(3, 2, dtype=F64), rand(2, 4, dtype=F64)],
    )


@pytest.mark.parametrize(
    "name,si,sa,sb",
    [c for c in ADD_PRODUCTS if len(c[1]) == len(c[2]) or c[0] in ("addmv", "addr", "addbmm")],
)
def test_add_products_inplace(name, si, sa, sb):
    out_shape = {
        "addmm": (3, 4),
        "addmv": (3,),
        "addbmm": (3, 4),
        "baddbmm": (5, 3, 4),
        "addr": (3, 4),
    }[name]
    ins = [rand(*out_shape, dtype=F64), rand(*sa, dtype=F64), rand(*sb, dtype=F64)]
    check(lambda lib, i, a, b: getattr(i.clone(), name + "_")(a, b, alpha=0.5), ins)
    check(lambda lib, i, a, b: getattr(i, name + "_")(a, b), ins, grad=False)


def test_add_products_float32():
    check(lambda lib, i, a, b: lib.addmm(i, a, b), [rand(3, 4), rand(3, 2), rand(2, 4)])
    check(
        lambda lib, i, a, b: lib.baddbmm(i, a, b, beta=2),
        [rand(2, 3, 4), rand(2, 3, 2), rand(2, 2, 4)],
    )


@pytest.mark.parametrize("rows", [1, 2, 32, 33])
def test_small_batch_times_transposed_weight(rows):
    # float32 x @ w.T with few rows is computed as (w @ x.T).T (a faster BLAS shape); the
    # result is still row-major, with torch's values, strides and gradients
    check(lambda lib, x, w: x @ w.t(), [rand(rows, 64), rand(256, 64)], atol=1e-5)
    check(lambda lib, b, x, w: lib.addmm(b, x, w.t()), [rand(256), rand(rows, 64), rand(256, 64)])
    check(lambda lib, x, w: lib.nn.functional.linear(x, w), [rand(rows, 96), rand(300, 96)])


# ------------------------------------------------------------------------------ contractions


TENSORDOT = [
    ((3, 4, 5), (4, 5, 2), 2),
    ((3, 4), (4, 2), 1),
    ((3, 4), (2, 5), 0),
    ((3, 4, 5), (5, 3), ([0, 2], [1, 0])),
    ((3, 4, 5), (2, 4), ([1], [1])),
    ((3, 1, 5), (4, 5), ([1, 2], [0, 1])),
    ((3, 4), (1, 2), ([1], [0])),
]


@pytest.mark.parametrize("sa,sb,dims", TENSORDOT)
def test_tensordot(sa, sb, dims):
    check(
        lambda lib, a, b: lib.tensordot(a, b, dims=dims),
        [rand(*sa, dtype=F64), rand(*sb, dtype=F64)],
    )


@pytest.mark.parametrize(
    "shapes",
    [
        [(3,), (3, 4)],
        [(2, 3), (3, 4), (4,)],
        [(2, 3), (3, 4), (4, 5), (5, 2)],
        [(3,), (3,)],
        [(5, 2), (2, 30), (30, 1), (1, 40)],
    ],
)
def test_multi_dot(shapes):
    check(lambda lib, *ts: lib.linalg.multi_dot(ts), [rand(*s, dtype=F64) for s in shapes])


def test_chain_matmul():
    ins = [rand(2, 3, dtype=F64), rand(3, 4, dtype=F64), rand(4, 2, dtype=F64)]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        check(lambda lib, *ts: lib.chain_matmul(*ts), ins)
    assert any("chain_matmul is deprecated" in str(x.message) for x in w)


@pytest.mark.parametrize(
    "sa,sb,dim",
    [((3,), (3,), -1), ((2, 3), (3,), -1), ((4, 2), (4, 1), 0), ((2, 1, 3), (4, 3), -1)],
)
def test_vecdot(sa, sb, dim):
    check(
        lambda lib, a, b: lib.linalg.vecdot(a, b, dim=dim),
        [rand(*sa, dtype=F64), rand(*sb, dtype=F64)],
    )
    check(
        lambda lib, a, b: lib.linalg.vecdot(a, b),
        [rand(3, dtype="complex128"), rand(3, dtype="complex128")],
        grad=False,
    )


@pytest.mark.parametrize(
    "sa,sb,dim",
    [((3,), (3,), -1), ((4, 3), (4, 3), -1), ((3, 5), (3, 5), 0), ((2, 1, 3), (1, 4, 3), -1)],
)
def test_cross(sa, sb, dim):
    check(
        lambda lib, a, b: lib.linalg.cross(a, b, dim=dim),
        [rand(*sa, dtype=F64), rand(*sb, dtype=F64)],
    )
    check(lambda lib, a, b: lib.cross(a, b, dim=dim), [rand(*sa), rand(*sb)])
    check(lambda lib, a, b: a.cross(b, dim=dim), [rand(*sa), rand(*sb)])


def test_cross_default_dim_warns():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda lib, a, b: lib.cross(a, b), [rand(2, 3, 4), rand(2, 3, 4)])


@pytest.mark.parametrize("n", [-3, -2, -1, 1, 2, 3, 4, 7])
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
def test_matrix_power(n, shape):
    a = rand(*shape, dtype=F64) + 3 * np.eye(shape[-1])
    check(lambda lib, a: lib.linalg.matrix_power(a, n), [a])
    check(lambda lib, a: a.matrix_power(n), [a], grad=False)


def test_matrix_power_zero():
    check(lambda lib, a: lib.linalg.matrix_power(a, 0), [rand(2, 3, 3, dtype=F64)], grad=False)


def test_matrix_power_zero_grad():
    check(lambda lib, a: lib.linalg.matrix_power(a, 0), [rand(3, 3, dtype=F64)])


# ------------------------------------------------------------------------------ einsum

EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,jk->ki", [(2, 3), (3, 4)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(5, 1, 3, 4), (2, 4, 5)]),
    ("ij,ij->i", [(2, 3), (2, 3)]),
    ("ij,ij->", [(2, 3), (2, 3)]),
    ("ij,kl->ijkl", [(2, 3), (4, 5)]),
    ("ij,j->i", [(2, 3), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,i,i->i", [(3,), (3,), (3,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ii,jj->", [(2, 2), (3, 3)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
    ("ij,jk->ik", [(1, 3), (3, 4)]),
    ("i,i->i", [(3,), (1,)]),
    ("ij,k->ik", [(2, 3), (4,)]),
    ("Ba,aB", [(2, 3), (3, 2)]),
    ("b i d, b j d -> b i j", [(2, 3, 4), (2, 5, 4)]),
    ("...,...", [(2, 3), (3,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    (",ij->ij", [(), (2, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM)
def test_einsum(eq, shapes):
    ins = [rand(*s, dtype=F64) for s in shapes]
    # torch's result of several operands may be a permuted bmm output: layout not matched
    check(lambda lib, *ts: lib.einsum(eq, *ts), ins, strides=False)


@pytest.mark.parametrize(
    "eq,shape",
    [
        ("ii->i", (3, 3)),
        ("ij->j", (2, 3)),
        ("ij->ij", (2, 3)),
        ("ii", (3, 3)),
        ("...", (2, 3)),
        ("i->", (3,)),
        ("ij->ji", (2, 3)),
        ("bii->bi", (2, 3, 3)),
        ("...ii->...i", (2, 3, 3)),
        ("iii->i", (2, 2, 2)),
        ("ij", (2, 3)),
        ("ji", (2, 3)),
        ("ijk->", (2, 3, 4)),
    ],
)
def test_einsum_one_operand(eq, shape):
    check(lambda lib, t: lib.einsum(eq, t), [rand(*shape, dtype=F64)], view=True)


def test_einsum_forms():
    a, b = rand(2, 3, dtype=F64), rand(3, 4, dtype=F64)
    check(lambda lib, a, b: lib.einsum("ij,jk", [a, b]), [a, b], strides=False)
    check(lambda lib, a, b: lib.einsum(a, [0, 1], b, [1, 2], [0, 2]), [a, b], strides=False)
    check(lambda lib, a, b: lib.einsum(a, [0, Ellipsis], b, [Ellipsis, 2]), [a, b], strides=False)
    check(lambda lib, a, b: lib.einsum("ij,jk", a, b), [rand(2, 3), rand(3, 4)], strides=False)
    check(
        lambda lib, a, b: lib.einsum("ij,jk", a, b),
        [rand(2, 3, dtype="complex128"), rand(3, 4, dtype="complex128")],
        strides=False,
    )


_LABELS = "abcd"


@st.composite
def _einsum_cases(draw):
    sizes = {c: draw(st.integers(1, 3)) for c in _LABELS}
    n_ops = draw(st.integers(1, 3))
    terms = [draw(st.lists(st.sampled_from(_LABELS), min_size=0, max_size=3)) for _ in range(n_ops)]
    used = sorted({c for t in terms for c in t})
    out = draw(st.permutations(used))
    out = out[: draw(st.integers(0, len(out)))]
    eq = ",".join("".join(t) for t in terms) + "->" + "".join(out)
    shapes = [tuple(sizes[c] for c in t) for t in terms]
    return eq, shapes


@settings(max_examples=60, deadline=None)
@given(_einsum_cases())
def test_einsum_hypothesis(case):
    eq, shapes = case
    check(
        lambda lib, *ts: lib.einsum(eq, *ts), [rand(*s, dtype=F64) for s in shapes], strides=False
    )


# ------------------------------------------------------------------------------ second order


def test_double_backward_products():
    a, b, c = rand(3, 4, dtype=F64), rand(4, 2, dtype=F64), rand(3, 2, dtype=F64)
    v = rand(4, dtype=F64)
    check_double_backward(lambda lib, a, b: (a @ b).sin(), [a, b])
    check_double_backward(lambda lib, a, v: (a @ v).exp(), [a, v])
    check_double_backward(lambda lib, v, w: lib.dot(v, w) ** 2, [v, rand(4, dtype=F64)])
    check_double_backward(
        lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2) ** 2, [c, a, b]
    )
    check_double_backward(
        lambda lib, x, a, b: lib.baddbmm(x, a, b) ** 2,
        [rand(2, 3, 2, dtype=F64), rand(2, 3, 4, dtype=F64), rand(2, 4, 2, dtype=F64)],
    )
    check_double_backward(
        lambda lib, x, a, b: lib.addbmm(x, a, b) ** 2,
        [rand(3, 2, dtype=F64), rand(2, 3, 4, dtype=F64), rand(2, 4, 2, dtype=F64)],
    )
    check_double_backward(lambda lib, x, a, b: lib.addmv(x, a, b) ** 2, [rand(3, dtype=F64), a, v])
    check_double_backward(
        lambda lib, x, a, b: lib.addr(x, a, b) ** 2, [rand(3, 4, dtype=F64), rand(3, dtype=F64), v]
    )
    check_double_backward(lambda lib, a, b: lib.tensordot(a, b, 1) ** 2, [a, b])
    check_double_backward(
        lambda lib, a, b: lib.linalg.cross(a, b) ** 2,
        [rand(2, 3, dtype=F64), rand(2, 3, dtype=F64)],
    )
    check_double_backward(
        lambda lib, a: lib.linalg.matrix_power(a, 3).sin(), [rand(3, 3, dtype=F64)]
    )


@pytest.mark.parametrize(
    "eq,shapes",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("ii,i->i", [(3, 3), (3,)]),
        ("ij,k->ik", [(2, 3), (4,)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ],
)
def test_einsum_double_backward(eq, shapes):
    check_double_backward(
        lambda lib, *ts: lib.einsum(eq, *ts) ** 2, [rand(*s, dtype=F64) for s in shapes]
    )


# ------------------------------------------------------------------------------ errors

ERRORS = [
    (lambda lib, a, b: lib.vdot(a, b), [rand(2, 2), rand(2, 2)]),
    (lambda lib, a, b: lib.vdot(a, b), [rand(3), rand(3, dtype=F64)]),
    (lambda lib, a, b: lib.outer(a, b), [rand(2, 2), rand(2)]),
    (lambda lib, a, b: lib.inner(a, b), [rand(2, 3), rand(2, 4)]),
    (lambda lib, a, b: lib.inner(a, b), [rand(3), rand(3, dtype=F64)]),
    (lambda lib, i, a, b: lib.addmm(i, a, b), [rand(2, 2), rand(2, 3), rand(2, 3)]),
    (lambda lib, i, a, b: lib.addmm(i, a, b), [rand(3, 3), rand(3, 2), rand(2, 4)]),
    (lambda lib, i, a, b: lib.addmm(i, a, b), [rand(2, 2, dtype=F64), rand(2, 2), rand(2, 2)]),
    (lambda lib, i, a, b: lib.addmv(i, a, b), [rand(2), rand(2, 3), rand(4)]),
    (lambda lib, i, a, b: lib.baddbmm(i, a, b), [rand(2, 2, 2), rand(2, 2, 2), rand(3, 2, 2)]),
    (lambda lib, i, a, b: lib.addbmm(i, a, b), [rand(2, 2), rand(2, 2, 3), rand(2, 2, 2)]),
    (lambda lib, i, a, b: lib.addr(i, a, b), [rand(2, 2), rand(2, 2), rand(2)]),
    (lambda lib, a, b: lib.tensordot(a, b, 1), [rand(2, 3), rand(2, 3)]),
    (lambda lib, a, b: lib.tensordot(a, b, ([0], [0, 1])), [rand(2, 3), rand(2, 3)]),
    (lambda lib, a, b: lib.linalg.multi_dot([a]), [rand(2, 2), rand(2)]),
    (lambda lib, a, b: lib.linalg.multi_dot([a, b]), [rand(2, 3), rand(2, 3)]),
    (lambda lib, a, b: lib.linalg.multi_dot([a, b]), [rand(2, 3, 3), rand(3, 3)]),
    (lambda lib, a, b: lib.linalg.multi_dot([a, b]), [rand(2, 3), rand(3, 3, dtype=F64)]),
    (lambda lib, a, b: lib.linalg.vecdot(a, b), [rand(3), rand(4)]),
    (lambda lib, a, b: lib.linalg.vecdot(a, b), [rand(3), rand(3, dtype=F64)]),
    (lambda lib, a, b: lib.linalg.cross(a, b), [rand(2, 4), rand(2, 4)]),
    (lambda lib, a, b: lib.cross(a, b, dim=1), [rand(3, 2), rand(3, 2)]),
    (lambda lib, a, b: lib.linalg.cross(a, b), [rand(2, 3, 3), rand(3, 3)]),
    (lambda lib, a, b: lib.mm(a, b), [rand(2, 3), rand(3, 2, dtype=F64)]),
    (lambda lib, a, b: lib.bmm(a, b), [rand(1, 2, 3), rand(1, 3, 2, dtype=F64)]),
    (lambda lib, a, b: a @ b, [rand(2, 3), rand(3, 2, dtype=F64)]),
    (lambda lib, a: lib.linalg.matrix_power(a, 2), [rand(2, 3), rand(2)]),
    (lambda lib, a: lib.linalg.matrix_power(a, 2.0), [rand(2, 2)]),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    fn, ins = ERRORS[case]
    check_raises(fn, ins[: fn.__code__.co_argcount - 1])


EINSUM_ERRORS = [
    ("ij,jk->ik", [(2, 3), (2, 3)]),
    ("ij,jk->ik", [(2, 3)]),
    ("ij->k", [(2, 3)]),
    ("ijk", [(2, 3)]),
    ("i1", [(2, 3)]),
    ("ij->ii", [(2, 3)]),
    ("ii->i", [(3, 2)]),
    ("i.j", [(2, 3)]),
    ("......", [(2, 3)]),
    ("i,j", [(2,), (3,), (3,)]),
    ("bij,bjk", [(2, 2, 3), (3, 3, 4)]),
    ("ijk...", [(2, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_ERRORS)
def test_einsum_errors(eq, shapes):
    ins = [rand(*s) for s in shapes]
    check_raises(lambda lib, *ts: lib.einsum(eq, *ts), ins, match_message=True)


def check_linalg_error(fn, inputs):
    """Assert both raise their LinAlgError (a RuntimeError) with the same message."""
    with pytest.raises(torch.linalg.LinAlgError) as t:
        fn(torch, *[torch.from_numpy(a) for a in inputs])
    with pytest.raises(ember.linalg.LinAlgError) as e:
        fn(ember, *[ember.from_numpy(a) for a in inputs])
    assert isinstance(e.value, RuntimeError)
    assert str(e.value) == str(t.value)


def test_matrix_power_singular():
    check_linalg_error(lambda lib, a: lib.linalg.matrix_power(a, -1), [np.zeros((3, 3))])


def test_einsum_dtype_error():
    check_raises(lambda lib, a, b: lib.einsum("ij,jk", a, b), [rand(2, 3), rand(3, 2, dtype=F64)])


MESSAGES = [
    (lambda lib, a, b: lib.outer(a, b), [rand(2, 2), rand(2)]),
    (lambda lib, a, b: lib.vdot(a, b), [rand(2, 2), rand(2, 2)]),
    (lambda lib, a, b: lib.linalg.cross(a, b), [rand(2, 4), rand(2, 4)]),
    (lambda lib, a, b: lib.linalg.multi_dot([a, b]), [rand(2, 3), rand(2, 3)]),
    (lambda lib, a, b: lib.linalg.multi_dot([a, b]), [rand(2, 3), rand(3, 3, dtype=F64)]),
    (lambda lib, a, b: lib.tensordot(a, b, 1), [rand(2, 3), rand(2, 3)]),
    (lambda lib, a, b: lib.mm(a, b), [rand(2, 3), rand(3, 2, dtype=F64)]),
    (lambda lib, a, b: a @ b, [rand(2, 3), rand(3, 2, dtype=F64)]),
    (lambda lib, i, a, b: lib.addmm(i, a, b), [rand(2, 2), rand(2, 3), rand(2, 3)]),
]


@pytest.mark.parametrize("case", range(len(MESSAGES)))
def test_error_messages(case):
    fn, ins = MESSAGES[case]
    check_raises(fn, ins, match_message=True)


def test_ember_namespace():
    assert ember.einsum is not None and ember.tensordot is not None
    for name in (
        "vdot",
        "inner",
        "outer",
        "ger",
        "addmm",
        "addmv",
        "addbmm",
        "baddbmm",
        "addr",
        "addmm_",
        "addr_",
        "cross",
        "matrix_power",
        "matrix_exp",
        "det",
        "logdet",
        "slogdet",
        "inverse",
        "pinverse",
    ):
        assert hasattr(ember.Tensor, name), name


def test_addmm_bfloat16_scaled_stays_bfloat16():
    out = []
    for lib in (torch, ember):
        a = lib.ones(2, 2, dtype=lib.bfloat16)
        r = lib.addmm(a, a, a, alpha=0.5, beta=2.0)
        out.append((str(r.dtype), r.tolist()))
    assert out[0] == out[1]

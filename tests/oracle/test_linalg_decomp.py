"""Oracle tests: ember.linalg inverses, determinants, solvers, decompositions and norms against
torch.linalg: values, dtypes, shapes, strides (LAPACK's column-major results), grad_fn, named
result tuples, gradients under a random upstream gradient, float64 second order, errors
(LinAlgError with torch's messages).

Eigenvectors and singular vectors are defined up to sign; their cases compare sign-invariant
functions of them (abs, projections), as torch's own gradient tests do.
"""

import numpy as np
import pytest

import ember
import ember.linalg  # noqa: F401  (the submodule, until ember/__init__ imports it)
from ember.overrides import _unwrap
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

F64 = "float64"
_rng = np.random.default_rng(3)


def well(*shape, dtype=F64):
    """Return a well-conditioned (batch of) square matrix."""
    n = shape[-1]
    return (rand(*shape, dtype=dtype) + 3 * np.eye(n)).astype(dtype)


def spd(*shape, dtype=F64):
    """Return a symmetric positive-definite (batch of) matrix."""
    x = rand(*shape, dtype=dtype)
    return (x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def sym(*shape, dtype=F64):
    """Return a symmetric matrix with well separated eigenvalues."""
    n = shape[-1]
    q, _ = np.linalg.qr(_rng.standard_normal(shape))
    w = np.arange(1, n + 1) * 1.5 - n / 2
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


def check_linalg_error(fn, inputs, message=True):
    """Assert both raise their LinAlgError (a RuntimeError) with the same message."""
    with pytest.raises(torch.linalg.LinAlgError) as t:
        fn(torch, *[torch.from_numpy(a) for a in inputs])
    with pytest.raises(ember.linalg.LinAlgError) as e:
        fn(ember, *[ember.from_numpy(a) for a in inputs])
    assert isinstance(e.value, RuntimeError)
    if message:
        assert str(e.value) == str(t.value)


def same_type(e, t):
    assert type(e).__name__ == type(t).__name__
    assert e._fields == t._fields if hasattr(t, "_fields") else True


# ------------------------------------------------------------------------------ inv, det


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 3, 3), (0, 0), (2, 0, 0)])
def test_inv(shape):
    a = well(*shape)
    check(lambda lib, a: lib.linalg.inv(a), [a])
    check(lambda lib, a: lib.inverse(a), [a])
    check(lambda lib, a: a.inverse(), [a])
    e, t = check(lambda lib, a: lib.linalg.inv_ex(a), [a])
    same_type(e, t)


def test_inv_float32_complex():
    check(lambda lib, a: lib.linalg.inv(a), [well(4, 4, dtype="float32")], atol=1e-4)
    z = rand(3, 3, dtype="complex128") + 3 * np.eye(3)
    check(lambda lib, a: lib.linalg.inv(a), [z])
    check(lambda lib, a: lib.linalg.inv(a).abs(), [z])


def test_inv_singular():
    check_linalg_error(lambda lib, a: lib.linalg.inv(a), [np.zeros((3, 3))])
    check_linalg_error(lambda lib, a: lib.linalg.inv(a), [np.array([[1.0, 2], [2, 4]])])
    b = np.stack([np.eye(3), np.zeros((3, 3))])
    check_linalg_error(lambda lib, a: lib.linalg.inv(a), [b])
    e, t = ember.linalg.inv_ex(ember.from_numpy(b)), torch.linalg.inv_ex(torch.from_numpy(b))
    np.testing.assert_array_equal(e.info.numpy(), t.info.numpy())
    np.testing.assert_allclose(e.inverse.numpy()[0], t.inverse.numpy()[0])


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1), (0, 0), (2, 0, 0)])
def test_det_slogdet(shape):
    a = well(*shape) if shape[-1] else np.zeros(shape)
    check(lambda lib, a: lib.linalg.det(a), [a])
    check(lambda lib, a: lib.det(a), [a])
    check(lambda lib, a: a.det(), [a])
    e, t = check(lambda lib, a: lib.linalg.slogdet(a), [a])
    same_type(e, t)
    e, t = check(lambda lib, a: lib.slogdet(a), [a])
    same_type(e, t)
    n = shape[-1]
    check(lambda lib, a: lib.logdet(a), [spd(*shape) if n else a])
    check(lambda lib, a: a.logdet(), [-spd(*shape) if n else a])


def test_det_negative_and_singular():
    neg = np.diag([-1.0, 2.0, 3.0])
    check(lambda lib, a: lib.logdet(a), [neg])
    check(lambda lib, a: lib.linalg.slogdet(a), [neg])
    # a rank-deficient matrix: det's gradient is the cofactor matrix (the adjugate's transpose).
    # torch's own answer here depends on the CPU (zeros when LU finds an exact zero pivot), so
    # the first-order gradient is checked against the analytic value
    sing = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    check(lambda lib, a: lib.linalg.det(a), [sing], grad=False)
    a = ember.tensor(sing, requires_grad=True)
    ember.linalg.det(a).backward()
    cof = np.array([[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(a.grad.numpy(), cof, atol=1e-12)
    check(lambda lib, a: lib.linalg.det(a), [np.zeros((2, 3, 3))])
    check_double_backward(lambda lib, a: lib.linalg.det(a), [sing])


def test_det_complex():
    z = rand(2, 3, 3, dtype="complex128")
    check(lambda lib, a: lib.linalg.det(a), [z])
    check(lambda lib, a: lib.linalg.det(a).abs(), [z])
    check(lambda lib, a: lib.linalg.slogdet(a)[1], [z])
    check(lambda lib, a: lib.linalg.slogdet(a)[0].abs(), [z])


# ------------------------------------------------------------------------------ solve

SOLVE = [
    ((3, 3), (3, 2), True),
    ((3, 3), (3,), True),
    ((2, 3, 3), (3, 2), True),
    ((3, 3), (2, 3, 4), True),
    ((2, 1, 3, 3), (4, 3, 4), True),
    ((2, 3, 3), (2, 3), True),
    ((3, 3), (2, 3), False),
    ((2, 3, 3), (4, 3), False),
]


@pytest.mark.parametrize("sa,sb,left", SOLVE)
def test_solve(sa, sb, left):
    a, b = well(*sa), rand(*sb, dtype=F64)
    # torch lays out a batched vector solution oddly (strides (1, n)); values are what matter
    strides = not (len(sb) == len(sa) - 1 and len(sa) > 2)
    check(lambda lib, a, b, left=left: lib.linalg.solve(a, b, left=left), [a, b], strides=strides)
    e, t = check(lambda lib, a, b: lib.linalg.solve_ex(a, b, left=left), [a, b], strides=strides)
    same_type(e, t)


def test_solve_errors():
    check_linalg_error(lambda lib, a, b: lib.linalg.solve(a, b), [np.zeros((3, 3)), np.ones(3)])
    check_linalg_error(
        lambda lib, a, b: lib.linalg.solve(a, b),
        [np.stack([np.zeros((3, 3)), np.eye(3)]), np.ones((2, 3))],
    )
    for sa, sb, left in [
        ((3, 3), (4,), True),
        ((3, 3), (4, 2), True),
        ((3, 3), (3, 2), False),
        ((2, 3), (2,), True),
    ]:
        check_raises(
            lambda lib, a, b, left=left: lib.linalg.solve(a, b, left=left),
            [rand(*sa), rand(*sb)],
            match_message=True,
        )
    check_raises(
        lambda lib, a, b: lib.linalg.solve(a, b),
        [rand(3, 3), rand(3, dtype=F64)],
        match_message=True,
    )
    check_raises(
        lambda lib, a, b: lib.linalg.solve(a, b),
        [rand(3, 3, dtype="int64"), rand(3, dtype="int64")],
    )


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_solve_triangular(upper, left, unitriangular):
    a = well(2, 4, 4)
    b = rand(2, 4, 3, dtype=F64) if left else rand(2, 3, 4, dtype=F64)
    check(
        lambda lib, a, b: lib.linalg.solve_triangular(
            a, b, upper=upper, left=left, unitriangular=unitriangular
        ),
        [a, b],
    )


def test_solve_triangular_broadcast_and_errors():
    check(
        lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=False),
        [well(3, 3), rand(2, 3, 2, dtype=F64)],
    )
    check_raises(
        lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True),
        [rand(3, 3), rand(3)],
        match_message=True,
    )


# ------------------------------------------------------------------------------ LU


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (3, 5), (5, 3), (40, 40)])
def test_lu_factor(shape):
    a = rand(*shape, dtype=F64)
    square = shape[-1] == shape[-2]
    e, t = check(lambda lib, a: lib.linalg.lu_factor(a), [a], grad=square)
    same_type(e, t)
    e, t = check(lambda lib, a: lib.linalg.lu_factor_ex(a), [a], grad=square)
    same_type(e, t)


def test_lu_factor_singular():
    z = np.zeros((2, 3, 3))
    check_raises(lambda lib, a: lib.linalg.lu_factor(a), [z], match_message=True)
    check(lambda lib, a: lib.linalg.lu_factor_ex(a).info, [z], grad=False)
    check(lambda lib, a: lib.linalg.lu_factor_ex(a).info, [np.diag([1.0, 0, 2])], grad=False)
    check_raises(
        lambda lib, a: lib.linalg.lu_factor(a, pivot=False), [rand(3, 3)], match_message=True
    )


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve(left, adjoint):
    a = rand(2, 3, 3, dtype=F64)
    b = rand(2, 3, 4, dtype=F64) if left else rand(2, 4, 3, dtype=F64)
    check(
        lambda lib, a, b: lib.linalg.lu_solve(
            *lib.linalg.lu_factor(a), b, left=left, adjoint=adjoint
        ),
        [a, b],
    )


# ------------------------------------------------------------------------------ lstsq


@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
@pytest.mark.parametrize(
    "sa,sb", [((5, 3), (5, 2)), ((2, 5, 3), (2, 5, 2)), ((3, 3), (3, 2)), ((5, 3), (5,))]
)
def test_lstsq(driver, sa, sb):
    e, t = check(
        lambda lib, a, b: lib.linalg.lstsq(a, b, driver=driver),
        [rand(*sa, dtype=F64), rand(*sb, dtype=F64)],
    )
    same_type(e, t)


def test_lstsq_wide_and_rank():
    check(
        lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gelsd"),
        [rand(3, 5, dtype=F64), rand(3, 2, dtype=F64)],
    )
    low = rand(5, 2, dtype=F64) @ rand(2, 4, dtype=F64)
    check(
        lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gelsd")[2:],
        [low, rand(5, 2, dtype=F64)],
        grad=False,
    )
    check_raises(
        lambda lib, a, b: lib.linalg.lstsq(a, b, driver="foo"),
        [rand(3, 2), rand(3, 1)],
        match_message=True,
    )
    check_raises(
        lambda lib, a, b: lib.linalg.lstsq(a, b), [rand(3, 2), rand(4, 1)], match_message=True
    )


# ------------------------------------------------------------------------------ cholesky


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 0)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(shape, upper):
    a = spd(*shape)
    check(lambda lib, a: lib.linalg.cholesky(a, upper=upper), [a])
    e, t = check(lambda lib, a: lib.linalg.cholesky_ex(a, upper=upper), [a])
    same_type(e, t)


def test_cholesky_errors():
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    check_linalg_error(lambda lib, a: lib.linalg.cholesky(a), [bad])
    check_linalg_error(lambda lib, a: lib.linalg.cholesky(a), [np.stack([np.eye(2), bad])])
    check_linalg_error(lambda lib, a: lib.linalg.cholesky(a), [np.diag([1.0, 2.0, -1.0, 4.0])])
    check(lambda lib, a: lib.linalg.cholesky_ex(a).info, [np.stack([bad, np.eye(2)])], grad=False)
    check_raises(lambda lib, a: lib.linalg.cholesky(a), [rand(2, 3)], match_message=True)


# ------------------------------------------------------------------------------ qr


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(shape, mode):
    a = rand(*shape, dtype=F64)
    differentiable = mode != "r" and not (mode == "complete" and shape[-2] > shape[-1])
    e, t = check(lambda lib, a: lib.linalg.qr(a, mode=mode), [a], grad=differentiable)
    same_type(e, t)


def test_qr_not_differentiable():
    for mode, shape in [("r", (3, 3)), ("complete", (4, 3))]:
        check_raises(
            lambda lib, a, mode=mode: lib.linalg.qr(a, mode=mode)[1].sum().backward(),
            [rand(*shape, dtype=F64)],
            grad=True,
            match_message=True,
        )
    check_raises(lambda lib, a: lib.linalg.qr(a, mode="x"), [rand(3, 3)], match_message=True)


# ------------------------------------------------------------------------------ eigh, svd


def _eigh_invariant(lib, a, uplo="L"):
    w, v = lib.linalg.eigh(a, UPLO=uplo)
    return w, v.abs(), (v * w.unsqueeze(-2).exp()) @ v.mT


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(shape, uplo):
    a = sym(*shape)
    check(lambda lib, a: _eigh_invariant(lib, a, uplo), [a])
    check(lambda lib, a: lib.linalg.eigh(a, UPLO=uplo).eigenvalues, [a])
    check(lambda lib, a: lib.linalg.eigvalsh(a, UPLO=uplo), [a])
    check(lambda lib, a: lib.linalg.eigvalsh(a), [a], grad=False)
    e, t = check(
        lambda lib, a: lib.linalg.eigh(a), [a], grad=False, strides=True, atol=1e300
    )  # signs of eigenvectors may differ: shapes, dtypes, layout
    same_type(e, t)


def test_eigh_complex_values():
    z = rand(3, 3, dtype="complex128")
    z = z + z.conj().T
    check(lambda lib, a: lib.linalg.eigvalsh(a), [z], grad=False)
    check(lambda lib, a: lib.linalg.eigh(a)[1].abs(), [z], grad=False)


def _svd_invariant(lib, a, full):
    u, s, vh = lib.linalg.svd(a, full_matrices=full)
    k = s.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    return s, u.abs(), vh.abs(), (u * s.sqrt().unsqueeze(-2)) @ vh


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(shape, full):
    a = rand(*shape, dtype=F64)
    check(lambda lib, a: _svd_invariant(lib, a, full), [a])
    check(lambda lib, a: lib.linalg.svd(a, full_matrices=full).S, [a])
    check(lambda lib, a: lib.linalg.svdvals(a), [a])
    check(lambda lib, a: lib.linalg.svdvals(a), [a], grad=False)
    e, t = check(lambda lib, a: lib.linalg.svd(a, full_matrices=full), [a], grad=False, atol=1e300)
    same_type(e, t)


def test_svd_nonfinite():
    check_linalg_error(lambda lib, a: lib.linalg.svd(a), [np.full((2, 2), np.nan)])


# ------------------------------------------------------------------------------ pinv, rank, exp


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_pinv(shape):
    a = rand(*shape, dtype=F64)
    check(lambda lib, a: lib.linalg.pinv(a), [a])
    check(lambda lib, a: lib.pinverse(a), [a])
    check(lambda lib, a: a.pinverse(), [a])


def test_pinv_options():
    low = rand(4, 2, dtype=F64) @ rand(2, 4, dtype=F64)
    check(lambda lib, a: lib.linalg.pinv(a), [low], grad=False)
    check(lambda lib, a: lib.linalg.pinv(a, atol=0.5), [rand(4, 4, dtype=F64)], grad=False)
    check(lambda lib, a: lib.linalg.pinv(a, hermitian=True), [sym(4, 4)])
    check_raises(lambda lib, a: lib.linalg.pinv(a), [rand(3, 3, dtype="int64")], match_message=True)


def test_matrix_rank():
    low = rand(2, 5, 2, dtype=F64) @ rand(2, 2, 4, dtype=F64)
    for kw in [{}, {"atol": 1.0}, {"rtol": 0.5}, {"hermitian": True}]:
        a = low if not kw.get("hermitian") else sym(4, 4)
        check(lambda lib, a, kw=kw: lib.linalg.matrix_rank(a, **kw), [a], grad=False)
    check(lambda lib, a: lib.linalg.matrix_rank(a), [rand(3, 3)], grad=False)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1), (0, 0)])
@pytest.mark.parametrize("scale", [0.1, 1.0, 8.0])
def test_matrix_exp(shape, scale):
    a = rand(*shape, dtype=F64) * scale
    check(lambda lib, a: lib.linalg.matrix_exp(a), [a], rtol=1e-9)
    check(lambda lib, a: lib.matrix_exp(a), [a], rtol=1e-9)
    check(
        lambda lib, a: a.matrix_exp(),
        [rand(*shape) * scale],
        rtol=1e-4,
        atol=1e-4,
        grad_rtol=1e-3,  # float32 with entries near 1e3: both libraries round differently
        grad_atol=1e-3,
    )


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, float("inf"), -float("inf")])
def test_cond(p):
    a = well(2, 3, 3)
    # torch's cond in an inverse-based norm modifies inv's output in place: not differentiable
    grad = p in (None, 2, -2)
    check(lambda lib, a: lib.linalg.cond(a, p), [a], grad=grad, grad_fn=p is None)


def test_cond_singular():
    check(lambda lib, a: lib.linalg.cond(a), [np.zeros((3, 3))], grad=False)
    check(lambda lib, a: lib.linalg.cond(a, "fro"), [np.zeros((3, 3))], grad=False, grad_fn=False)


# ------------------------------------------------------------------------------ norms

INF = float("inf")


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, INF, -INF, 0, -1, 1.5])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (-1, False), ((0, 2), True), (1, True)])
def test_vector_norm(ord, dim, keepdim):
    check(lambda lib, x: lib.linalg.vector_norm(x, ord, dim, keepdim), [rand(2, 3, 4, dtype=F64)])


def test_vector_norm_special():
    x = rand(3, 4, dtype=F64)
    x[0] = 0
    check(lambda lib, x: lib.linalg.vector_norm(x, dim=1), [x])
    check(lambda lib, x: lib.linalg.vector_norm(x, 3, dim=1), [x])
    check(lambda lib, x: lib.linalg.vector_norm(x, INF, dim=1), [np.array([[1.0, -3, 3]])])
    check(lambda lib, x: lib.linalg.vector_norm(x), [rand(4)])
    check(lambda lib, x: lib.linalg.vector_norm(x), [rand()])
    check(lambda lib, x: lib.linalg.vector_norm(x, dtype=lib.float64), [rand(4)])
    check(lambda lib, x: lib.linalg.vector_norm(x), [rand(2, 3, dtype="complex128")])
    check(lambda lib, x: lib.linalg.vector_norm(x), [rand(0, 3)])
    check_raises(
        lambda lib, x: lib.linalg.vector_norm(x), [rand(3, dtype="int64")], match_message=True
    )
    check_raises(lambda lib, x: lib.linalg.vector_norm(x, INF), [rand(0, 3)], match_message=True)
    check_raises(lambda lib, x: lib.linalg.vector_norm(x, "fro"), [rand(3)], match_message=True)


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, INF, -INF])
@pytest.mark.parametrize("dim,keepdim", [((-2, -1), False), ((0, 2), False), ((-1, -2), True)])
def test_matrix_norm(ord, dim, keepdim):
    x = rand(3, 2, 4, dtype=F64)
    check(
        lambda lib, x: lib.linalg.matrix_norm(x, ord, dim, keepdim),
        [x],
        grad_fn=not keepdim or ord in ("fro", 1, -1, INF, -INF),
    )


@pytest.mark.parametrize(
    "ord,dim,shape",
    [
        (None, None, (2, 3, 4)),
        (None, 1, (2, 3)),
        (None, (0, 1), (2, 3)),
        (2, None, (4,)),
        (2, None, (3, 3)),
        ("fro", None, (3, 3)),
        ("nuc", (1, 2), (2, 3, 3)),
        (INF, -1, (2, 3)),
        (1, None, (2, 3)),
    ],
)
def test_norm(ord, dim, shape):
    check(lambda lib, x: lib.linalg.norm(x, ord, dim), [rand(*shape, dtype=F64)])


def test_norm_errors():
    for fn, ins in [
        (lambda lib, x: lib.linalg.norm(x, 2), [rand(2, 2, 2)]),
        (lambda lib, x: lib.linalg.norm(x, "fro"), [rand(3)]),
        (lambda lib, x: lib.linalg.matrix_norm(x, 3), [rand(2, 3)]),
        (lambda lib, x: lib.linalg.matrix_norm(x), [rand(3)]),
    ]:
        check_raises(fn, ins, match_message=True)


def test_vector_norm_shared_with_norm():
    # ember.norm and ember.linalg.vector_norm run one op: same node, same rules
    check(lambda lib, x: lib.linalg.vector_norm(x, 3, 1) + lib.norm(x, 3, 1), [rand(2, 3)])
    # (the public function may wear a __torch_function__ wrapper: see ember.overrides)
    assert _unwrap(ember.linalg.vector_norm) is ember._ops.reduce.vector_norm
    # half types reduce in float32, as torch (no overflow of 300 ** 2 in float16)
    check(lambda lib, x: lib.linalg.vector_norm(x * 300), [rand(2, 3, dtype="float16")], rtol=2e-3)
    check(lambda lib, x: lib.linalg.vector_norm(x, 3), [rand(4, dtype="bfloat16")], rtol=1e-2)
    check(lambda lib, x: lib.linalg.vector_norm(x, dim=()), [rand(2, 3)])
    check(lambda lib, x: lib.linalg.vector_norm(x, dim=0), [rand()])
    check(lambda lib, x: lib.linalg.vector_norm(x, INF, dim=1), [rand(0, 3)])
    check(lambda lib, x: lib.linalg.matrix_norm(x, dtype=lib.float64), [rand(2, 3)])


def test_vector_norm_errors_and_out():
    for fn, ins in [
        (lambda lib, x: lib.linalg.vector_norm(x, dtype=lib.int64), [rand(3)]),
        (lambda lib, x: lib.linalg.vector_norm(x, dtype=lib.complex128), [rand(3)]),
        (lambda lib, x: lib.linalg.vector_norm(x, dtype=lib.float32), [rand(3, dtype=C128)]),
        (lambda lib, x: lib.linalg.vector_norm(x, dim=(0, 0)), [rand(2, 3)]),
        (lambda lib, x: lib.linalg.vector_norm(x, dim=(1, -1)), [rand(2, 3)]),
        (lambda lib, x: lib.linalg.vector_norm(x, dim=3), [rand(2, 3)]),
        (lambda lib, x: lib.linalg.vector_norm(x, -1.0), [rand(0, 3)]),
        (lambda lib, x: lib.linalg.vector_norm(x, -0.5), [rand(0, 3)]),
        (lambda lib, x: lib.linalg.vector_norm(x.tolist()), [rand(3)]),
        (
            lambda lib, x: lib.linalg.vector_norm(x, dim=0, out=lib.empty(3, dtype=lib.float64)),
            [rand(2, 3)],
        ),
    ]:
        check_raises(fn, ins, match_message=True)
    check_raises(
        lambda lib, x: lib.linalg.vector_norm(x, dim=0, out=lib.empty(3)), [rand(2, 3)], grad=True
    )
    check(
        lambda lib, x: lib.linalg.vector_norm(x, dim=0, out=lib.empty(3)), [rand(2, 3)], grad=False
    )


# ------------------------------------------------------------------------------ second order


def test_double_backward_inverse_family():
    a, b = well(3, 3), rand(3, 2, dtype=F64)
    check_double_backward(lambda lib, a: lib.linalg.inv(a), [a])
    check_double_backward(lambda lib, a: lib.linalg.inv(a), [well(2, 3, 3)])
    check_double_backward(lambda lib, a: lib.linalg.det(a), [a])
    check_double_backward(lambda lib, a: lib.linalg.det(a), [well(2, 3, 3)])
    check_double_backward(lambda lib, a: lib.linalg.slogdet(a)[1], [a])
    check_double_backward(lambda lib, a: lib.logdet(a), [spd(3, 3)])
    check_double_backward(lambda lib, a, b: lib.linalg.solve(a, b), [a, b])
    check_double_backward(lambda lib, a, b: lib.linalg.solve(a, b, left=False), [a, b.T.copy()])
    check_double_backward(lambda lib, a, b: lib.linalg.solve(a, b), [a, rand(3, dtype=F64)])
    check_double_backward(lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True), [a, b])


def test_double_backward_decompositions():
    check_double_backward(lambda lib, a: lib.linalg.cholesky(a), [spd(3, 3)])
    check_double_backward(lambda lib, a: lib.linalg.cholesky(a, upper=True), [spd(2, 3, 3)])
    check_double_backward(lambda lib, a: lib.linalg.qr(a), [rand(4, 3, dtype=F64)])
    check_double_backward(lambda lib, a: lib.linalg.qr(a), [rand(3, 4, dtype=F64)])
    check_double_backward(lambda lib, a: lib.linalg.eigvalsh(a), [sym(3, 3)])
    check_double_backward(lambda lib, a: _eigh_invariant(lib, a)[2], [sym(3, 3)])
    check_double_backward(lambda lib, a: lib.linalg.svdvals(a), [rand(4, 3, dtype=F64)])
    check_double_backward(lambda lib, a: _svd_invariant(lib, a, False)[3], [rand(3, 4, dtype=F64)])
    check_double_backward(lambda lib, a: lib.linalg.pinv(a), [rand(4, 3, dtype=F64)])
    check_double_backward(lambda lib, a: lib.linalg.matrix_exp(a), [rand(3, 3, dtype=F64)])
    check_double_backward(
        lambda lib, a, b: lib.linalg.lstsq(a, b).solution,
        [rand(5, 3, dtype=F64), rand(5, 2, dtype=F64)],
    )
    check_double_backward(lambda lib, a: lib.linalg.lu_factor(a).LU, [rand(3, 3, dtype=F64)])
    check_double_backward(lambda lib, x: lib.linalg.vector_norm(x, dim=1), [rand(3, 4, dtype=F64)])
    check_double_backward(
        lambda lib, x: lib.linalg.vector_norm(x, 3, dim=1), [rand(3, 4, dtype=F64)]
    )


# ------------------------------------------------------------------------------ errors

ERRORS = [
    ("inv", (2, 3), F64),
    ("inv", (3, 3), "int64"),
    ("inv", (3,), F64),
    ("inv", (3, 3), "float16"),
    ("det", (2, 3), F64),
    ("det", (3, 3), "int64"),
    ("slogdet", (3,), F64),
    ("cholesky", (2, 3), F64),
    ("eigh", (2, 3), F64),
    ("svd", (3, 3), "int64"),
    ("svd", (3,), F64),
    ("matrix_exp", (2, 3), F64),
    ("matrix_power", (2, 3), F64),
    ("qr", (3,), F64),
    ("eigvalsh", (3, 3), "int64"),
    ("svdvals", (3,), F64),
    ("cond", (3,), F64),
    ("det", (3, 3), "float16"),
    ("eigh", (3, 3), "float16"),
    ("lu_factor", (3, 3), "int64"),
    ("cholesky", (3, 3), "int64"),
    ("cond", (3, 3), "int64"),
    ("slogdet", (3, 3), "int64"),
]


@pytest.mark.parametrize("name,shape,dtype", ERRORS)
def test_errors(name, shape, dtype):
    args = (2,) if name == "matrix_power" else ()
    check_raises(
        lambda lib, a: getattr(lib.linalg, name)(a, *args),
        [rand(*shape, dtype=dtype)],
        match_message=name not in ("qr", "cond"),
    )


def test_eigh_uplo_error():
    check_raises(lambda lib, a: lib.linalg.eigh(a, UPLO="X"), [rand(2, 2)], match_message=True)


def test_linalg_error_class():
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    assert ember.linalg.LinAlgError.__name__ == "LinAlgError"


# ------------------------------------------------------------------------------ complex

C128 = "complex128"


def _herm(n):
    z = rand(n, n, dtype=C128)
    return z @ z.conj().T + n * np.eye(n)


COMPLEX = {
    "solve": (
        lambda lib, a, b: lib.linalg.solve(a, b).abs(),
        [rand(3, 3, dtype=C128) + 3 * np.eye(3), rand(3, 2, dtype=C128)],
    ),
    "inv": (lambda lib, a: lib.linalg.inv(a).abs(), [rand(3, 3, dtype=C128) + 3 * np.eye(3)]),
    "det": (lambda lib, a: lib.linalg.det(a).abs(), [rand(3, 3, dtype=C128)]),
    "slogdet": (lambda lib, a: lib.linalg.slogdet(a)[1], [rand(3, 3, dtype=C128)]),
    "slogdet_sign": (lambda lib, a: lib.linalg.slogdet(a)[0].abs(), [rand(3, 3, dtype=C128)]),
    "cholesky": (lambda lib, a: lib.linalg.cholesky(a).abs(), [_herm(3)]),
    "eigvalsh": (lambda lib, a: lib.linalg.eigvalsh(a), [_herm(3)]),
    "eigh": (
        lambda lib, a: (lambda r: (r[1] * r[0].unsqueeze(-2)) @ r[1].mH)(lib.linalg.eigh(a)).abs(),
        [_herm(3)],
    ),
    "svdvals": (lambda lib, a: lib.linalg.svdvals(a), [rand(4, 3, dtype=C128)]),
    "svd": (
        lambda lib, a: (lambda r: r[0] @ r[2])(lib.linalg.svd(a, full_matrices=False)).abs(),
        [rand(4, 3, dtype=C128)],
    ),
    "qr": (
        lambda lib, a: (lambda r: (r[0].abs(), r[1].abs()))(lib.linalg.qr(a)),
        [rand(4, 3, dtype=C128)],
    ),
    "qr_wide": (
        lambda lib, a: (lambda r: (r[0].abs(), r[1].abs()))(lib.linalg.qr(a)),
        [rand(3, 4, dtype=C128)],
    ),
    "matrix_exp": (lambda lib, a: lib.linalg.matrix_exp(a).abs(), [rand(3, 3, dtype=C128)]),
    "pinv": (lambda lib, a: lib.linalg.pinv(a).abs(), [rand(4, 3, dtype=C128)]),
    "vector_norm": (lambda lib, a: lib.linalg.vector_norm(a, 3, dim=1), [rand(4, 3, dtype=C128)]),
    "nuclear": (lambda lib, a: lib.linalg.matrix_norm(a, "nuc"), [rand(4, 3, dtype=C128)]),
    "lstsq": (
        lambda lib, a, b: lib.linalg.lstsq(a, b).solution.abs(),
        [rand(4, 3, dtype=C128), rand(4, 2, dtype=C128)],
    ),
    "solve_triangular": (
        lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True).abs(),
        [rand(3, 3, dtype=C128) + 3 * np.eye(3), rand(3, 2, dtype=C128)],
    ),
    "lu_solve": (
        lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b).abs(),
        [rand(3, 3, dtype=C128) + 3 * np.eye(3), rand(3, 2, dtype=C128)],
    ),
}


@pytest.mark.parametrize("name", list(COMPLEX))
def test_complex_gradients(name):
    fn, ins = COMPLEX[name]
    check(fn, ins)


# ------------------------------------------------------------------------------ out=


def test_out():
    for lib in (torch, ember):
        a = lib.from_numpy(well(3, 3))
        out = lib.empty(0, dtype=lib.float64)
        r = lib.linalg.inv(a, out=out)
        assert r is out and tuple(out.shape) == (3, 3)
        out = lib.empty(3, 3, dtype=lib.float64)
        lib.linalg.solve(a, a, out=out)
        np.testing.assert_allclose(out.numpy(), np.eye(3), atol=1e-12)
        out = lib.empty((), dtype=lib.float64)
        lib.linalg.det(a, out=out)
        np.testing.assert_allclose(out.numpy(), np.linalg.det(a.numpy()))
        out = lib.empty(3, 3, dtype=lib.float64)
        lib.mm(a, a, out=out)
        np.testing.assert_allclose(out.numpy(), a.numpy() @ a.numpy())


def test_out_tuples():
    for lib in (torch, ember):
        a = lib.from_numpy(sym(3, 3))
        w, v = lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.float64)
        r = lib.linalg.eigh(a, out=(w, v))
        assert r.eigenvalues is w and r.eigenvectors is v and type(r).__name__ == "linalg_eigh_out"
        q, rr = lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.float64)
        res = lib.linalg.qr(a, out=(q, rr))
        np.testing.assert_allclose((q @ rr).numpy(), a.numpy(), atol=1e-12)
        assert res.Q is q


def test_linalg_diagonal():
    check(lambda lib, a: lib.linalg.diagonal(a), [rand(2, 3, 4, dtype=F64)], view=True)
    check(
        lambda lib, a: lib.linalg.diagonal(a, offset=1, dim1=0, dim2=2),
        [rand(2, 3, 4, dtype=F64)],
        view=True,
    )


def test_complex_lu_pivots_as_lapack():
    # LAPACK pivots on the largest |re| + |im| (icamax), not on the modulus
    rng = np.random.default_rng(0)
    a = rng.standard_normal((50, 4, 4)) + 1j * rng.standard_normal((50, 4, 4))
    t = torch.linalg.lu_factor(torch.from_numpy(a))
    e = ember.linalg.lu_factor(ember.from_numpy(a))
    np.testing.assert_array_equal(e[1].numpy(), t[1].numpy())
    np.testing.assert_allclose(e[0].numpy(), t[0].numpy(), rtol=1e-10, atol=1e-12)

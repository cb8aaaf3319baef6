"""Oracle tests for the deprecated ``torch.*`` linear algebra names (``linalg_compat.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, check_double_backward, check_raises, rand

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:torch\\.")


def _spd(*shape):
    a = rand(*shape, dtype="float64")
    n = shape[-1]
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tri(*shape, upper=False):
    a = rand(*shape, dtype="float64")
    n = shape[-1]
    a = np.triu(a) if upper else np.tril(a)
    return a + 3 * np.eye(n) * np.sign(np.diagonal(a, 0, -2, -1))[..., None]


def _sym(x):
    # keep the input symmetric so torch's and ember's gradients agree on the same function
    return (x + x.mT) / 2


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(shape, upper):
    check(lambda lib, a: lib.cholesky(_sym(a), upper=upper), [_spd(*shape)], grad_fn=False)
    check(lambda lib, a: _sym(a).cholesky(upper), [_spd(*shape)], grad_fn=False)


def test_cholesky_warns():
    ember._ops.linalg_compat._WARNED.discard("cholesky")
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        ember.cholesky(ember.eye(2))


@pytest.mark.parametrize(
    "bshape,lshape", [((3, 2), (3, 3)), ((2, 3, 1), (3, 3)), ((4, 2), (2, 4, 4))]
)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve(bshape, lshape, upper):
    b, L = rand(*bshape, dtype="float64"), _tri(*lshape, upper=upper)
    check(lambda lib, b, L: lib.cholesky_solve(b, L, upper), [b, L])
    check(lambda lib, b, L: b.cholesky_solve(L, upper=upper), [b, L], grad_fn=False)


def test_cholesky_solve_double_backward():
    check_double_backward(
        lambda lib, b, L: lib.cholesky_solve(b, L), [rand(3, 2, dtype="float64"), _tri(3, 3)]
    )


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_inverse(shape, upper):
    L = _tri(*shape, upper=upper)
    check(lambda lib, L: lib.cholesky_inverse(L, upper), [L])
    check(lambda lib, L: L.cholesky_inverse(upper=upper), [L], grad_fn=False)


def test_cholesky_raises():
    check_raises(lambda lib, b, L: lib.cholesky_solve(b, L), [rand(3), rand(3, 3)])
    check_raises(lambda lib, L: lib.cholesky_inverse(L), [rand(3)])
    # torch raises its private _LinAlgError; ember its LinAlgError: both RuntimeErrors
    with pytest.raises(RuntimeError, match="not positive-definite"):
        ember.cholesky(ember.from_numpy(-np.eye(3)))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("some", [True, False])
def test_qr(shape, some):
    a = rand(*shape, dtype="float64")
    grad = some or shape[-2] <= shape[-1]  # torch: no gradient for complete mode when m > n
    check(lambda lib, a: lib.qr(a, some=some), [a], grad=grad)
    check(lambda lib, a: a.qr(some), [a], grad=grad)
    assert type(ember.qr(ember.from_numpy(a))).__name__ == "qr"


def _fix_signs(lib, out):
    # singular vectors are defined up to sign: make each column of U's first row positive
    U, S, V = out
    s = lib.sign(U[..., :1, :])
    k = S.shape[-1]
    return U[..., :k] * s[..., :k], S, V[..., :k] * s[..., :k]


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("some", [True, False])
def test_svd(shape, some):
    a = rand(*shape, dtype="float64")
    # singular vectors differ in sign between LAPACK drivers: compare layouts here, values
    # (sign-fixed) below
    e, t = ember.svd(ember.from_numpy(a), some), torch.svd(torch.from_numpy(a), some)
    assert type(e).__name__ == type(t).__name__ == "svd"
    assert [x.stride() for x in e] == [x.stride() for x in t]
    assert [tuple(x.shape) for x in e] == [tuple(x.shape) for x in t]
    check(lambda lib, a: _fix_signs(lib, lib.svd(a, some)), [a], grad_fn=False, strides=False)


def test_svd_no_uv():
    a = rand(5, 3, dtype="float64")
    check(lambda lib, a: lib.svd(a, compute_uv=False), [a])
    check(lambda lib, a: a.svd(compute_uv=False, some=False), [rand(2, 3, 4, dtype="float64")])


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (3, 5), (2, 2, 4)])
def test_lu_and_lu_solve(shape):
    a = rand(*shape, dtype="float64")
    square = shape[-1] == shape[-2]  # wide: ember composes the factors (other grad_fn)
    check(lambda lib, a: lib.lu(a), [a], grad_fn=square)
    check(lambda lib, a: a.lu(get_infos=True), [a], grad_fn=square)
    if shape[-1] == shape[-2]:
        b = rand(*shape[:-1], 2, dtype="float64")
        check(lambda lib, a, b: lib.lu_solve(b, *lib.lu(a)), [a, b])
        check(lambda lib, a, b: b.lu_solve(*a.lu()), [a, b])


@pytest.mark.filterwarnings("ignore:invalid value")
def test_lu_infos_singular():
    check(lambda lib, a: lib.lu(a, get_infos=True), [np.zeros((2, 3, 3))])


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unitriangular", [False, True])
@pytest.mark.parametrize(
    "bshape,ashape", [((3, 2), (3, 3)), ((2, 3, 4), (3, 3)), ((3, 1), (2, 3, 3))]
)
def test_triangular_solve(upper, transpose, unitriangular, bshape, ashape):
    b, A = rand(*bshape, dtype="float64"), _tri(*ashape, upper=upper)
    e, t = check(
        lambda lib, b, A: lib.triangular_solve(b, A, upper, transpose, unitriangular),
        [b, A],
        grad_fn=False,
    )
    assert type(e).__name__ == type(t).__name__ == "triangular_solve"
    check(lambda lib, b, A: b.triangular_solve(A, upper=upper).solution, [b, A], grad_fn=False)


def test_triangular_solve_double_backward():
    check_double_backward(
        lambda lib, b, A: lib.triangular_solve(b, A, False).solution,
        [rand(3, 2, dtype="float64"), _tri(3, 3)],
    )


def test_triangular_solve_raises():
    check_raises(lambda lib, b, A: lib.triangular_solve(b, A), [rand(3), rand(3, 3)])


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, a: lib.matrix_rank(a),
        lambda lib, a: lib.lstsq(a, a),
        lambda lib, a: a.lstsq(a),
        lambda lib, a: lib.solve(a, a),
        lambda lib, a: a.solve(a),
        lambda lib, a: lib.symeig(a),
        lambda lib, a: a.symeig(eigenvectors=True),
        lambda lib, a: lib.eig(a),
        lambda lib, a: a.eig(),
    ],
)
def test_removed(fn):
    check_raises(fn, [rand(3, 3)], match_message=True)


def test_matrix_rank_not_a_method():
    assert hasattr(torch.Tensor, "matrix_rank") == hasattr(ember.Tensor, "matrix_rank")


def test_cholesky_inverse_double_backward():
    check_double_backward(lambda lib, L: lib.cholesky_inverse(L, True), [_tri(3, 3, upper=True)])


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 3), (3, 5), (2, 2, 4, 4), (1, 1)])
def test_lu_unpack(shape):
    a = rand(*shape, dtype="float64")
    LU, piv = torch.linalg.lu_factor(torch.from_numpy(a))
    lu, piv = LU.numpy(), piv.numpy()
    check(lambda lib, lu, p: lib.lu_unpack(lu, p), [lu, piv], grad_fn=False)
    # torch cannot backpropagate through the empty L and U of unpack_data=False
    check(lambda lib, lu, p: lib.lu_unpack(lu, p, unpack_data=False), [lu, piv], grad=False)
    check(lambda lib, lu, p: lib.lu_unpack(lu, p, unpack_pivots=False), [lu, piv], grad_fn=False)
    e = ember.lu_unpack(ember.from_numpy(lu), ember.from_numpy(piv))
    assert type(e).__name__ == "lu_unpack" and np.allclose((e.P @ e.L @ e.U).numpy(), a)


def test_lu_unpack_double_backward():
    LU, piv = torch.linalg.lu_factor(torch.from_numpy(rand(3, 3, dtype="float64")))
    check_double_backward(
        lambda lib, lu: [t**2 for t in lib.lu_unpack(lu, lib.from_numpy(piv.numpy()))[1:]],
        [LU.numpy()],
    )


def test_lu_wide_double_backward():
    check_double_backward(lambda lib, a: lib.lu(a)[0], [rand(2, 4, dtype="float64")])


def test_lu_wide_singular_infos():
    a = rand(3, 5, dtype="float64")
    a[:, 0] = 0
    check(lambda lib, a: lib.lu(a, get_infos=True)[2], [a])

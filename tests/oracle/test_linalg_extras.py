"""Oracle tests: linalg.lu, geqrf, householder_product/orgqr, ormqr, tensorinv, tensorsolve,
vander, ldl_factor(_ex)/ldl_solve."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, check_double_backward, check_raises

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(11)


def _r(*shape, dtype=np.float64):
    a = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * _rng.standard_normal(shape)
    return a.astype(dtype)


# ------------------------------------------------------------------------------ lu


# complex: ember's getrf pivots on |z|, LAPACK's on |re| + |im| (linalg_util, shared with
# lu_factor): the factors agree when those choose the same rows (here: dominant diagonals)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (5, 3), (3, 5), (2, 4, 2), (1, 1), (0, 3)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lu(shape, dtype):
    check(lambda lib, a: lib.linalg.lu(a), [_r(*shape, dtype=dtype)], strides=False)


def test_lu_complex():
    a = _r(3, 3, dtype=np.complex128) + 10 * np.eye(3)
    check(lambda lib, a: lib.linalg.lu(a), [a])


def test_lu_grads_and_errors():
    check(lambda lib, a: lib.linalg.lu(a).L, [_r(3, 3)])
    check(lambda lib, a: lib.linalg.lu(a).U, [_r(4, 2)])
    check(lambda lib, a: lib.linalg.lu(a).L, [_r(2, 5)])
    check_double_backward(lambda lib, a: lib.linalg.lu(a)[1:], [_r(3, 3)])
    a = ember.tensor(_r(3, 4), requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: ember.linalg.lu(a)[1:], (a,))
    check_raises(lambda lib, a: lib.linalg.lu(a, pivot=False), [_r(3, 3)], match_message=True)
    check_raises(lambda lib, a: lib.linalg.lu(a), [_r(3)], match_message=True)
    check_raises(lambda lib, a: lib.linalg.lu(a), [np.ones((2, 2), np.int32)], match_message=True)
    out = (ember.empty(0), ember.empty(0), ember.empty(0))
    P, L, U = ember.linalg.lu(ember.tensor(_r(3, 3).astype(np.float32)), out=out)
    assert P is out[0] and type(ember.linalg.lu(ember.ones(2, 2))).__name__ == "linalg_lu"


# ------------------------------------------------------------------------------ QR pieces


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 2), (0, 2), (2, 0)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_geqrf(shape, dtype):
    check(lambda lib, a: lib.geqrf(a), [_r(*shape, dtype=dtype)], grad=False)
    check(lambda lib, a: a.geqrf(), [_r(*shape, dtype=dtype)], grad=False)


def test_geqrf_errors():
    a = ember.tensor(_r(3, 3), requires_grad=True)
    h, tau = ember.geqrf(a)
    assert type(h.grad_fn).__name__ == "GeqrfBackward0"
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        h.sum().backward()
    check_raises(lambda lib, a: lib.geqrf(a), [_r(3)], match_message=True)


def _qr_inputs(shape, dtype=np.float64, k=None):
    a = torch.geqrf(torch.from_numpy(_r(*shape, dtype=dtype)))
    h, tau = a.a.numpy().copy(), a.tau.numpy().copy()
    if k is not None:
        tau = tau[..., :k].copy()
    return h, tau


@pytest.mark.parametrize("shape,k", [((4, 3), None), ((3, 3), None), ((2, 5, 3), 2), ((4, 2), 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_householder_product(shape, k, dtype):
    h, tau = _qr_inputs(shape, dtype, k)
    check(lambda lib, a, t: lib.linalg.householder_product(a, t), [h, tau])
    check(lambda lib, a, t: lib.orgqr(a, t), [h, tau])
    check(lambda lib, a, t: a.orgqr(t), [h, tau])


def test_householder_product_double_backward_and_errors():
    h, tau = _qr_inputs((4, 3))
    check_double_backward(lambda lib, a, t: lib.linalg.householder_product(a, t), [h, tau])
    f = lambda lib, a, t: lib.linalg.householder_product(a, t)  # noqa: E731
    check_raises(f, [h.T.copy(), tau[:2]], match_message=True)
    check_raises(f, [h, _r(4)], match_message=True)
    check_raises(f, [h, tau.astype(np.float32)], match_message=True)
    check_raises(f, [h[0], tau], match_message=True)
    check_raises(f, [np.stack([h, h]), np.stack([tau] * 3)], match_message=True)
    check(f, [h.astype(np.float32), tau.astype(np.float32)])


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_ormqr(left, transpose, dtype):
    h, tau = _qr_inputs((2, 4, 3), dtype)
    c = _r(2, 4, 2, dtype=dtype) if left else _r(2, 3, 4, dtype=dtype)
    check(lambda lib, a, t, c: lib.ormqr(a, t, c, left, transpose), [h, tau, c])
    check(lambda lib, a, t, c: a.ormqr(t, c, left=left, transpose=transpose), [h, tau, c])


def test_ormqr_double_backward_and_errors():
    h, tau = _qr_inputs((4, 3))
    c = _r(4, 2)
    f = lambda lib, a, t, c: lib.ormqr(a, t, c)  # noqa: E731
    check_double_backward(f, [h, tau, c])
    check_raises(f, [h, tau, _r(3, 2)], match_message=True)
    check_raises(lambda lib, a, t, c: lib.ormqr(a, t, c, left=False), [h, tau, _r(4, 2)])
    check_raises(f, [h, _r(5), c], match_message=True)


# ------------------------------------------------------------------------------ tensorinv/solve


def test_tensorinv():
    a = _r(4, 6, 8, 3)
    check(lambda lib, a: lib.linalg.tensorinv(a, ind=2), [a], grad_fn=False)
    check(lambda lib, a: lib.linalg.tensorinv(a, 1), [_r(6, 2, 3)], grad_fn=False)
    check_raises(lambda lib, a: lib.linalg.tensorinv(a, ind=0), [a], match_message=True)
    check_raises(lambda lib, a: lib.linalg.tensorinv(a), [_r(4, 6, 8, 2)], match_message=True)
    out = lambda lib, a: lib.linalg.tensorinv(a, out=lib.empty(0, dtype=lib.float64))  # noqa
    check(out, [a], grad=False)


def test_tensorsolve():
    check(lambda lib, a, b: lib.linalg.tensorsolve(a, b), [_r(2, 3, 6), _r(2, 3)], grad_fn=False)
    f = lambda lib, a, b: lib.linalg.tensorsolve(a, b, dims=(0, 1))  # noqa: E731
    check(f, [_r(2, 3, 6), _r(6)], grad_fn=False)
    check_raises(lambda lib, a, b: lib.linalg.tensorsolve(a, b), [_r(2, 3, 5), _r(2, 3)])


def test_vander():
    f = lambda lib, x: lib.linalg.vander(x)  # noqa: E731
    check(f, [np.array([1.0, 2.0, 3.0])])
    check(f, [np.array([1, 2, 3])], grad=False)
    check(f, [_r(2, 3)])
    check(lambda lib, x: lib.linalg.vander(x, N=5), [_r(3, dtype=np.complex128)])
    check_double_backward(lambda lib, x: lib.linalg.vander(x, N=4), [_r(3)])
    for x, n in ((np.array([1.0, 2.0]), 1), (np.array([1.0, 2.0]), 0), (np.array(2.0), None)):
        check_raises(lambda lib, x: lib.linalg.vander(x, N=n), [x], match_message=True)  # noqa
    check_raises(f, [np.array([True, False])], match_message=True)


# ------------------------------------------------------------------------------ LDL


def _sym(n, dtype, herm, batch=(2,)):
    a = _r(*batch, n, n, dtype=dtype)
    at = np.swapaxes(a, -1, -2)
    return a + (np.conj(at) if herm else at)


@pytest.mark.parametrize("n", [1, 2, 3, 6, 20])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("herm", [False, True])
def test_ldl_factor_and_solve(n, dtype, herm):
    a = _sym(n, dtype, herm)
    b = _r(2, n, 3, dtype=dtype)
    check(lambda lib, a: lib.linalg.ldl_factor(a, hermitian=herm), [a], grad=False)
    check(lambda lib, a: lib.linalg.ldl_factor_ex(a, hermitian=herm), [a], grad=False)

    def solve(lib, a, b):
        LD, piv = lib.linalg.ldl_factor(a, hermitian=herm)
        return lib.linalg.ldl_solve(LD, piv, b, hermitian=herm)

    tol = 1e-4 if dtype == np.float32 else 1e-9
    check(solve, [a, b], grad=False, rtol=tol, atol=tol)


def test_ldl_singular_grad_and_errors():
    z = np.zeros((3, 3))
    check(lambda lib, a: lib.linalg.ldl_factor_ex(a), [z], grad=False)
    check_raises(lambda lib, a: lib.linalg.ldl_factor_ex(a, check_errors=True), [z])
    check_raises(lambda lib, a: lib.linalg.ldl_factor(a), [z])
    for bad in (_r(3, 4), _r(3), np.ones((3, 3), np.int64)):
        check_raises(lambda lib, a: lib.linalg.ldl_factor(a), [bad], match_message=True)  # noqa
    a = ember.tensor(_sym(3, np.float64, False, ()), requires_grad=True)
    LD, piv = ember.linalg.ldl_factor(a)
    assert type(LD.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex"):
        LD.sum().backward()
    b = ember.ones(3, 2, dtype=ember.float64, requires_grad=True)
    x = ember.linalg.ldl_solve(LD.detach(), piv, b)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve"):
        x.sum().backward()
    LDn, pn = LD.detach().numpy(), piv.numpy()

    def solve(lib, b):
        return lib.linalg.ldl_solve(lib.from_numpy(LDn), lib.from_numpy(pn), b)

    check(solve, [_r(3, 2)], grad=False)
    check(
        lambda lib, b: lib.linalg.ldl_solve(lib.from_numpy(LDn), lib.from_numpy(pn).long(), b),
        [_r(3, 2)],
        grad=False,
    )
    check_raises(solve, [_r(4, 2)], match_message=True)
    check_raises(solve, [_r(3, 2).astype(np.float32)], match_message=True)
    check_raises(solve, [_r(3)])

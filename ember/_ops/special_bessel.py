"""The ops of ``torch.special``'s Bessel, Airy and orthogonal-polynomial functions, Hurwitz's
zeta and the regularized incomplete gamma functions (``torch.igamma`` / ``igammac``).

Kernels in ``special_bessel_math.py`` and ``special_igamma_math.py``. As in torch, the Bessel,
Airy and polynomial functions have no derivative (their results never require grad), zeta is
differentiable in ``q`` only and igamma/igammac in ``other`` only.
"""

from __future__ import annotations

import numpy as np

from ember._core.tensor import Tensor
from ember._ops import special_bessel_math as B
from ember._ops import special_igamma_math as G
from ember._ops import special_math as S
from ember._ops.pointwise import dkind, keep_layout, need_tensor, not_implemented, with_out
from ember._ops.registry import _EMPTY, FLOAT, SAME, dispatch, dispatch_inplace, op, publish
from ember._ops.special import lgamma
from ember._ops.special_single import blocked

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _check(kernel: str, a: np.ndarray) -> None:
    if a.dtype not in _FLOATS:
        raise not_implemented(kernel, a)


# ------------------------------------------------------------------------------ unary functions


def _unary(name: str, kernel, doc: str):
    kname = f"{name}_cpu"

    def forward(x):
        _check(kname, x)
        return keep_layout(blocked(kernel, x, x.dtype, 16384), x)

    uop = op(name, promote=FLOAT, differentiable=False)(forward)

    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        need_tensor(name, input)
        if out is None:
            return dispatch(uop, (input,))
        return with_out(name, uop, (input,), _EMPTY, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


bessel_j0 = _unary("bessel_j0", B.bessel_j0, "Return the Bessel function of the first kind J0.")
bessel_j1 = _unary("bessel_j1", B.bessel_j1, "Return the Bessel function of the first kind J1.")
bessel_y0 = _unary("bessel_y0", B.bessel_y0, "Return the Bessel function of the second kind Y0.")
bessel_y1 = _unary("bessel_y1", B.bessel_y1, "Return the Bessel function of the second kind Y1.")
modified_bessel_i0 = _unary(
    "modified_bessel_i0", B.modified_bessel_i0, "Return the modified Bessel function I0."
)
modified_bessel_i1 = _unary(
    "modified_bessel_i1", B.modified_bessel_i1, "Return the modified Bessel function I1."
)
modified_bessel_k0 = _unary(
    "modified_bessel_k0", B.modified_bessel_k0, "Return the modified Bessel function K0."
)
modified_bessel_k1 = _unary(
    "modified_bessel_k1", B.modified_bessel_k1, "Return the modified Bessel function K1."
)
scaled_modified_bessel_k0 = _unary(
    "scaled_modified_bessel_k0",
    B.scaled_modified_bessel_k0,
    "Return the scaled modified Bessel function ``exp(x) * K0(x)``.",
)
scaled_modified_bessel_k1 = _unary(
    "scaled_modified_bessel_k1",
    B.scaled_modified_bessel_k1,
    "Return the scaled modified Bessel function ``exp(x) * K1(x)``.",
)
spherical_bessel_j0 = _unary(
    "spherical_bessel_j0", B.spherical_bessel_j0, "Return the spherical Bessel function j0."
)
airy_ai = _unary("airy_ai", B.airy_ai, "Return the Airy function Ai.")


# ------------------------------------------------------------------------------ polynomials


def _binary_arrays(x, n):
    """Return (x, n) as arrays of the promoted dtype (a Python number takes the other's)."""
    dt = x.dtype if isinstance(x, np.ndarray) else n.dtype
    return np.asarray(x, dtype=dt), np.asarray(n, dtype=dt)


def _call_error(name: str, x, n) -> TypeError:
    return TypeError(
        f"special_{name}() received an invalid combination of arguments - got "
        f"({type(x).__name__}, {type(n).__name__}), but expected one of:\n"
        " * (Tensor x, Tensor n, *, Tensor out = None)\n"
        " * (Number x, Tensor n, *, Tensor out = None)\n"
        " * (Tensor x, Number n, *, Tensor out = None)\n"
    )


def _polynomial(name: str, kernel, doc: str):
    kname = f"{name}_cpu"

    def forward(x, n):
        x, n = _binary_arrays(x, n)
        _check(kname, x)
        return kernel(x, n)

    pop = op(name, promote=FLOAT, differentiable=False)(forward)

    def fn(x: Tensor | float, n: Tensor | float, *, out: Tensor | None = None) -> Tensor:
        if not isinstance(x, Tensor) and not isinstance(n, Tensor):
            raise _call_error(name, x, n)
        if out is None:
            return dispatch(pop, (x, n))
        return with_out(name, pop, (x, n), _EMPTY, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _cheb(kind, shifted):
    return lambda x, n: B.chebyshev(x, n, kind, shifted)


_CHEB_DOC = "Return the {}Chebyshev polynomial of the {} kind of degree ``n`` at ``x``."
chebyshev_polynomial_t = _polynomial(
    "chebyshev_polynomial_t", _cheb("t", False), _CHEB_DOC.format("", "first")
)
chebyshev_polynomial_u = _polynomial(
    "chebyshev_polynomial_u", _cheb("u", False), _CHEB_DOC.format("", "second")
)
chebyshev_polynomial_v = _polynomial(
    "chebyshev_polynomial_v", _cheb("v", False), _CHEB_DOC.format("", "third")
)
chebyshev_polynomial_w = _polynomial(
    "chebyshev_polynomial_w", _cheb("w", False), _CHEB_DOC.format("", "fourth")
)
shifted_chebyshev_polynomial_t = _polynomial(
    "shifted_chebyshev_polynomial_t", _cheb("t", True), _CHEB_DOC.format("shifted ", "first")
)
shifted_chebyshev_polynomial_u = _polynomial(
    "shifted_chebyshev_polynomial_u", _cheb("u", True), _CHEB_DOC.format("shifted ", "second")
)
shifted_chebyshev_polynomial_v = _polynomial(
    "shifted_chebyshev_polynomial_v", _cheb("v", True), _CHEB_DOC.format("shifted ", "third")
)
shifted_chebyshev_polynomial_w = _polynomial(
    "shifted_chebyshev_polynomial_w", _cheb("w", True), _CHEB_DOC.format("shifted ", "fourth")
)
hermite_polynomial_h = _polynomial(
    "hermite_polynomial_h",
    lambda x, n: B.hermite(x, n, True),
    "Return the physicists' Hermite polynomial H_n at ``x``.",
)
hermite_polynomial_he = _polynomial(
    "hermite_polynomial_he",
    lambda x, n: B.hermite(x, n, False),
    "Return the probabilists' Hermite polynomial He_n at ``x``.",
)
laguerre_polynomial_l = _polynomial(
    "laguerre_polynomial_l", B.laguerre, "Return the Laguerre polynomial L_n at ``x``."
)
legendre_polynomial_p = _polynomial(
    "legendre_polynomial_p", B.legendre, "Return the Legendre polynomial P_n at ``x``."
)


# ------------------------------------------------------------------------------ zeta


def _np_zeta(x, q):
    x, q = _binary_arrays(x, q)
    _check("zeta_cpu", x)
    return S.zeta(x, q)


# 0: two tensors; 1: a number ``self``; 2: a number ``other`` (torch saves no number here)
_zeta_ops = tuple(
    op("zeta", grad_fn=f"SpecialZetaBackward{i}", save=s, promote=FLOAT)(_np_zeta)
    for i, s in enumerate((("self", "other"), ("_self", "other"), ("_self", "_other")))
)


def _zeta_backward(ctx, g):
    x, q = ctx.saved_tensors
    if ctx.needs_input_grad[0]:
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")
    return None, g * -x * zeta(x + 1.0, q)


for _o in _zeta_ops:
    _o.backward(_zeta_backward)


def zeta(input: Tensor | float, other: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """Return the Hurwitz zeta function ``zeta(input, other)`` elementwise."""
    if not isinstance(input, Tensor):
        need_tensor("special_zeta", other, "other", 2)
        zop = _zeta_ops[1]
    else:
        zop = _zeta_ops[0] if isinstance(other, Tensor) else _zeta_ops[2]
    if out is None:
        return dispatch(zop, (input, other))
    return with_out("zeta", zop, (input, other), _EMPTY, out)


# ------------------------------------------------------------------------------ igamma, igammac


def _gamma_op(name: str, kernel, grad_fn: str, sign: float):
    def forward(a, x):
        if dkind(a) != "f":
            raise not_implemented("igamma_cpu" if name == "igamma" else "igammac_cpu", a)
        return kernel(a, x)

    gop = op(name, grad_fn=grad_fn, save=("self", "other"), promote=SAME)(forward)

    @gop.backward
    def _(ctx, g):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        d = ((a - 1) * x.log() - x - lgamma(a)).exp()
        return None, g * d if sign > 0 else g * -d

    return gop


_igamma = _gamma_op("igamma", G.igamma, "IgammaBackward0", 1.0)
_igammac = _gamma_op("igammac", G.igammac, "IgammacBackward0", -1.0)


def _gamma_fn(name: str, gop, doc: str, fname: str | None = None):
    fname = fname or name

    def fn(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
        need_tensor(fname, input)
        need_tensor(fname, other, "other", 2)
        if out is None:
            return dispatch(gop, (input, other))
        return with_out(name, gop, (input, other), _EMPTY, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


_IGAMMA_DOC = "Return the regularized lower incomplete gamma function P(input, other)."
_IGAMMAC_DOC = "Return the regularized upper incomplete gamma function Q(input, other)."
igamma = _gamma_fn("igamma", _igamma, _IGAMMA_DOC)
igammac = _gamma_fn("igammac", _igammac, _IGAMMAC_DOC)
gammainc = _gamma_fn("gammainc", _igamma, _IGAMMA_DOC, "special_gammainc")
gammaincc = _gamma_fn("gammaincc", _igammac, _IGAMMAC_DOC, "special_gammaincc")


def _igamma_(self: Tensor, other: Tensor) -> Tensor:
    need_tensor("igamma_", other, "other", 1)
    return dispatch_inplace(_igamma, self, (self, other))


def _igammac_(self: Tensor, other: Tensor) -> Tensor:
    need_tensor("igammac_", other, "other", 1)
    return dispatch_inplace(_igammac, self, (self, other))


_igamma_.__name__ = "igamma_"
_igammac_.__name__ = "igammac_"
publish(_igamma, igamma, inplace=_igamma_)
publish(_igammac, igammac, inplace=_igammac_)

"""Oracle tests: higher-order gradients (the WGAN gradient penalty), ``autograd.functional``
and ``gradcheck``/``gradgradcheck`` compared with torch."""

import warnings

import numpy as np
import pytest

from tests.oracle.test_autograd_oracle import X34, case, leaf, same

pytestmark = pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")

_rng = np.random.default_rng(21)
REAL = _rng.uniform(-1, 1, (6, 4))
FAKE = _rng.uniform(-1, 1, (6, 4))
ALPHA = _rng.uniform(0, 1, (6, 1))
W1 = _rng.uniform(-0.7, 0.7, (4, 16))
B1 = _rng.uniform(-0.1, 0.1, 16)
W2 = _rng.uniform(-0.7, 0.7, (16, 1))
B2 = _rng.uniform(-0.1, 0.1, 1)


def _critic(lib):
    w1, b1, w2, b2 = (leaf(lib, a) for a in (W1, B1, W2, B2))

    def critic(x):
        return (x @ w1 + b1).tanh() @ w2 + b2

    return critic, (w1, b1, w2, b2)


def _wgan_gp(lib, use_norm):
    """The WGAN-GP critic loss of the tutorials, on a small MLP of raw tensors."""
    critic, ps = _critic(lib)
    real, fake, alpha = lib.tensor(REAL), lib.tensor(FAKE), lib.tensor(ALPHA)
    interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    d_interp = critic(interpolates)
    (gradients,) = lib.autograd.grad(
        outputs=d_interp,
        inputs=interpolates,
        grad_outputs=lib.ones_like(d_interp),
        create_graph=True,
        retain_graph=True,
    )
    norms = gradients.norm(2, dim=1) if use_norm else (gradients * gradients).sum(1).sqrt()
    penalty = ((norms - 1).pow(2)).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
    loss.backward()
    return loss, penalty, gradients, interpolates.grad, *(p.grad for p in ps)


def test_wgan_gradient_penalty():
    same(lambda lib: _wgan_gp(lib, use_norm=True))


def test_wgan_gradient_penalty_sqrt_of_sum():
    same(lambda lib: _wgan_gp(lib, use_norm=False))


def _hessian_of_mlp(lib):
    critic, ps = _critic(lib)
    x = leaf(lib, REAL[:2])
    y = critic(x).sum()
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    rows = [lib.autograd.grad(g.reshape(-1)[i], x, retain_graph=True)[0] for i in range(8)]
    return lib.stack(rows)


def test_mlp_hessian_rows():
    same(_hessian_of_mlp)


def _third_order_through_mlp(lib):
    critic, (w1, b1, w2, b2) = _critic(lib)
    x = leaf(lib, REAL[:3])
    (g,) = lib.autograd.grad(critic(x).sum(), x, create_graph=True)
    (gg,) = lib.autograd.grad((g * g).sum(), x, create_graph=True)
    ggg = lib.autograd.grad(gg.sum(), (x, w1, w2))
    return g, gg, ggg


def test_third_order_through_mlp():
    same(_third_order_through_mlp)


# ------------------------------------------------------------------------------ functional

FUNCTIONAL: list = []


def _f_pair(lib):
    def f(x, y):
        return (x * y.exp()).sum(1), (x @ y.t()).tanh()

    return f


X23 = _rng.uniform(-1, 1, (2, 3))
Y23 = _rng.uniform(-1, 1, (2, 3))
V2 = _rng.standard_normal(2)
V22 = _rng.standard_normal((2, 2))
V23 = _rng.standard_normal((2, 3))


@case(FUNCTIONAL)
def _jacobian_single(lib):
    return lib.autograd.functional.jacobian(lambda x: (x**2).sum(0) * x[0], leaf(lib, X23))


@case(FUNCTIONAL)
def _jacobian_tuples(lib):
    f = _f_pair(lib)
    return lib.autograd.functional.jacobian(f, (leaf(lib, X23), leaf(lib, Y23)))


@case(FUNCTIONAL)
def _jacobian_vectorize(lib):
    f = _f_pair(lib)
    return lib.autograd.functional.jacobian(f, (leaf(lib, X23), leaf(lib, Y23)), vectorize=True)


@case(FUNCTIONAL)
def _jacobian_create_graph(lib):
    x = leaf(lib, X23)
    jac = lib.autograd.functional.jacobian(lambda t: t.exp() * t.sum(), x, create_graph=True)
    (g,) = lib.autograd.grad(jac.sum(), x)
    return jac, g


@case(FUNCTIONAL)
def _jacobian_unused_input(lib):
    return lib.autograd.functional.jacobian(lambda a, b: a * 2, (leaf(lib, X23), leaf(lib, Y23)))


@case(FUNCTIONAL)
def _jacobian_strict_unused(lib):
    lib.autograd.functional.jacobian(
        lambda a, b: a * 2, (leaf(lib, X23), leaf(lib, Y23)), strict=True
    )


@case(FUNCTIONAL)
def _jacobian_strict_no_grad_output(lib):
    lib.autograd.functional.jacobian(lambda a: a.detach() * 2, leaf(lib, X23), strict=True)


@case(FUNCTIONAL)
def _jacobian_bad_input(lib):
    lib.autograd.functional.jacobian(lambda a: a, [leaf(lib, X23)])


@case(FUNCTIONAL)
def _jacobian_bad_output(lib):
    lib.autograd.functional.jacobian(lambda a: 3.0, leaf(lib, X23))


@case(FUNCTIONAL)
def _hessian_single(lib):
    return lib.autograd.functional.hessian(lambda x: (x.exp() * x).sum(), leaf(lib, X23))


@case(FUNCTIONAL)
def _hessian_tuples(lib):
    return lib.autograd.functional.hessian(
        lambda x, y: (x * y.tanh()).sum() + (x**3).sum(), (leaf(lib, X23), leaf(lib, Y23))
    )


@case(FUNCTIONAL)
def _hessian_non_scalar(lib):
    lib.autograd.functional.hessian(lambda x: x * 2, leaf(lib, X23))


@case(FUNCTIONAL)
def _hessian_strict_linear(lib):
    lib.autograd.functional.hessian(lambda x: (x * 2).sum(), leaf(lib, X23), strict=True)


@case(FUNCTIONAL)
def _vjp(lib):
    f = _f_pair(lib)
    v = (lib.tensor(V2), lib.tensor(V22))
    return lib.autograd.functional.vjp(f, (leaf(lib, X23), leaf(lib, Y23)), v)


@case(FUNCTIONAL)
def _vjp_scalar_default_v(lib):
    return lib.autograd.functional.vjp(lambda x: (x**2).sum(), leaf(lib, X23))


@case(FUNCTIONAL)
def _vjp_v_required(lib):
    lib.autograd.functional.vjp(lambda x: x**2, leaf(lib, X23))


@case(FUNCTIONAL)
def _vjp_v_wrong_size(lib):
    lib.autograd.functional.vjp(lambda x: x**2, leaf(lib, X23), lib.tensor(V22))


@case(FUNCTIONAL)
def _vjp_create_graph(lib):
    x = leaf(lib, X23)
    out, g = lib.autograd.functional.vjp(lambda t: t.tanh(), x, lib.tensor(V23), create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x)
    return out, g, gg


@case(FUNCTIONAL)
def _jvp(lib):
    f = _f_pair(lib)
    v = (lib.tensor(V23), lib.tensor(V23[::-1].copy()))
    return lib.autograd.functional.jvp(f, (leaf(lib, X23), leaf(lib, Y23)), v)


@case(FUNCTIONAL)
def _jvp_v_wrong_length(lib):
    f = _f_pair(lib)
    lib.autograd.functional.jvp(f, (leaf(lib, X23), leaf(lib, Y23)), (lib.tensor(V23),))


@case(FUNCTIONAL)
def _hvp(lib):
    return lib.autograd.functional.hvp(
        lambda x, y: (x * y.exp()).sum() * x.sum(),
        (leaf(lib, X23), leaf(lib, Y23)),
        (lib.tensor(V23), lib.tensor(V23 * 2)),
    )


@case(FUNCTIONAL)
def _vhp(lib):
    return lib.autograd.functional.vhp(
        lambda x, y: (x * y.exp()).sum() * x.sum(),
        (leaf(lib, X23), leaf(lib, Y23)),
        (lib.tensor(V23), lib.tensor(V23 * 2)),
    )


@case(FUNCTIONAL)
def _hvp_non_scalar(lib):
    lib.autograd.functional.hvp(lambda x: x * x, leaf(lib, X23), lib.tensor(V23))


@case(FUNCTIONAL)
def _hvp_create_graph(lib):
    x = leaf(lib, X23)
    _, hv = lib.autograd.functional.hvp(
        lambda t: (t**4).sum(), x, lib.tensor(V23), create_graph=True
    )
    (g,) = lib.autograd.grad(hv.sum(), x)
    return hv, g


@pytest.mark.parametrize("fn", FUNCTIONAL, ids=lambda f: f.__name__.strip("_"))
def test_functional(fn):
    same(fn)


# ------------------------------------------------------------------------------ gradcheck

GRADCHECK: list = []


def _error_cls(lib):
    mod = __import__(lib.__name__ + ".autograd.gradcheck", fromlist=["GradcheckError"])
    return mod.GradcheckError


def _scale_fn(lib, k_fwd, k_bwd, materialize=True):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * k_fwd

        @staticmethod
        def backward(ctx, g):
            return g * k_bwd

    return Scale


def _run(lib, check, *args, **kwargs):
    """Return (result, message of GradcheckError) of a gradcheck call."""
    try:
        return check(*args, **kwargs), None
    except _error_cls(lib) as e:
        return None, str(e)


@case(GRADCHECK)
def _gradcheck_passes(lib):
    x, w = leaf(lib, X34), leaf(lib, X34[:, :2].copy())
    f = lambda a, b: (a.t() @ b).tanh() * a.sum()  # noqa: E731
    return (
        lib.autograd.gradcheck(f, (x, w)),
        lib.autograd.gradcheck(f, (x, w), fast_mode=True),
        lib.autograd.gradgradcheck(f, (x, w)),
        lib.autograd.gradgradcheck(f, (x, w), fast_mode=True),
    )


@case(GRADCHECK)
def _gradcheck_wrong_backward(lib):
    Scale = _scale_fn(lib, 2, 3)
    return _run(lib, lib.autograd.gradcheck, Scale.apply, (leaf(lib, X23),))


@case(GRADCHECK)
def _gradcheck_no_raise(lib):
    Scale = _scale_fn(lib, 2, 3)
    return lib.autograd.gradcheck(Scale.apply, (leaf(lib, X23),), raise_exception=False)


@case(GRADCHECK)
def _gradcheck_fast_wrong_backward(lib):
    Scale = _scale_fn(lib, 2, 3)
    res, msg = _run(lib, lib.autograd.gradcheck, Scale.apply, (leaf(lib, X23),), fast_mode=True)
    # the vectors u, v are random (different streams): compare the message's structure
    return res, msg.split("numerical:")[0], msg.split("Below, we recompute")[1]


@case(GRADCHECK)
def _gradcheck_tolerances(lib):
    f = lambda a: a.exp()  # noqa: E731
    x = leaf(lib, X23)
    return (
        lib.autograd.gradcheck(f, (x,), eps=1e-3, atol=1e-2, rtol=1e-2),
        lib.autograd.gradcheck(f, (x,), eps=1e-1, atol=1e-9, rtol=1e-9, raise_exception=False),
    )


@case(GRADCHECK)
def _gradcheck_float32_warns(lib):
    x = lib.tensor(X23, dtype=lib.float32, requires_grad=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ok = lib.autograd.gradcheck(lambda a: a * 2, (x,), eps=1e-3, atol=1e-3)
    return ok, [str(w.message) for w in seen]


@case(GRADCHECK)
def _gradcheck_nothing_requires_grad(lib):
    lib.autograd.gradcheck(lambda a: a * 2, (lib.tensor(X23),))


@case(GRADCHECK)
def _gradcheck_stride_zero_input(lib):
    x = lib.tensor(X23[0], requires_grad=True)
    lib.autograd.gradcheck(lambda a: a * 2, (x.expand(2, 3),))


@case(GRADCHECK)
def _gradcheck_non_tensor_args_and_outputs(lib):
    def f(a, k, b):
        return a * k + b, 7, (a > 0).sum()

    x, y = leaf(lib, X23), leaf(lib, Y23, requires_grad=False)
    return lib.autograd.gradcheck(f, (x, 3.0, y))


@case(GRADCHECK)
def _gradcheck_no_differentiable_output(lib):
    return lib.autograd.gradcheck(lambda a: (a > 0).double(), (leaf(lib, X23),))


@case(GRADCHECK)
def _gradcheck_not_multiplied_by_grad_output(lib):
    class AddOne(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + 0.0 * g.sum() + (g == 0).all().double()

    # the Jacobian is right for unit output gradients, wrong for zero ones
    return _run(lib, lib.autograd.gradcheck, AddOne.apply, (leaf(lib, X23),))


@case(GRADCHECK)
def _gradcheck_undefined_grad_not_zero(lib):
    class Ones(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.n = x.shape
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return lib.ones(ctx.n, dtype=lib.float64) if g is None else g * 2

    x = leaf(lib, X23)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = _run(lib, lib.autograd.gradcheck, Ones.apply, (x,))
    ok = lib.autograd.gradcheck(Ones.apply, (x,), check_undefined_grad=False)
    return res, [str(w.message) for w in seen], ok


@case(GRADCHECK)
def _gradcheck_backward_fails_on_none(lib):
    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2 + gb * 3  # fails when one gradient is undefined (None)

    x = leaf(lib, X23)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = _run(lib, lib.autograd.gradcheck, Two.apply, (x,))
    ok = lib.autograd.gradcheck(Two.apply, (x,), check_undefined_grad=False)
    return res, [str(w.message) for w in seen], ok


@case(GRADCHECK)
def _gradgradcheck_wrong_double_backward(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x.detach() ** 2 * g  # right value, wrong graph

    x = leaf(lib, X23)
    ok = lib.autograd.gradcheck(Cube.apply, (x,))
    grad_out = lib.tensor(V23, requires_grad=True)
    return ok, _run(lib, lib.autograd.gradgradcheck, Cube.apply, (x,), (grad_out,))


@case(GRADCHECK)
def _gradgradcheck_custom_function(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x**2 * g

    return lib.autograd.gradgradcheck(Cube.apply, (leaf(lib, X23),))


@pytest.mark.parametrize("fn", GRADCHECK, ids=lambda f: f.__name__.strip("_"))
def test_gradcheck(fn):
    same(fn)

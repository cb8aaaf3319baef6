"""Oracle tests for ember.distributions (Exponential, Laplace, Independent, OneHotCategorical,
Beta, Dirichlet, MultivariateNormal, ExponentialFamily): values, gradients, reprs, errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, check_raises, rand

torch = pytest.importorskip("torch")

_r = np.random.default_rng(7)


def pos(*shape, dtype="float32"):
    return rand(*shape, dtype=dtype, low=0.3, high=2.0)


def probs(*shape, dtype="float32"):
    return rand(*shape, dtype=dtype, low=0.05, high=0.95)


def simplex(*shape, dtype="float32"):
    p = _r.uniform(0.05, 1.0, shape)
    return np.asarray(p / p.sum(-1, keepdims=True), dtype=dtype)


# ---------------------------------------------------------------- Exponential, Laplace


@pytest.mark.parametrize("meth", ["log_prob", "cdf"])
def test_exponential_values(meth):
    check(
        lambda lib, r, x: getattr(lib.distributions.Exponential(r), meth)(x),
        [pos(3, dtype="float64"), pos(2, 3, dtype="float64")],
    )


def test_exponential_moments_icdf_sample():
    r = pos(4)
    check(lambda lib, r, u: lib.distributions.Exponential(r).icdf(u), [r, probs(4)])
    for attr in ["entropy", "mean", "mode", "stddev", "variance"]:

        def fn(lib, r, attr=attr):
            out = getattr(lib.distributions.Exponential(r), attr)
            return out() if callable(out) else out

        check(fn, [r])
    ember.manual_seed(0)
    rate = ember.tensor([0.5, 4.0], requires_grad=True)
    d = ember.distributions.Exponential(rate)
    s = d.sample((20000,))
    assert s.shape == (20000, 2) and bool((s >= 0).all())
    np.testing.assert_allclose(s.mean(0).numpy(), [2.0, 0.25], rtol=0.05)
    r = d.rsample((5,))
    (g,) = ember.autograd.grad(r.sum(), [rate])
    np.testing.assert_allclose(g.numpy(), (-r / rate).sum(0).detach().numpy(), rtol=1e-5)
    check_raises(
        lambda lib: lib.distributions.Exponential(1.0).log_prob(lib.tensor(-1.0)),
        [],
        match_message=True,
    )
    assert repr(ember.distributions.Exponential(ember.ones(3))) == repr(
        torch.distributions.Exponential(torch.ones(3))
    )


@pytest.mark.parametrize("meth", ["log_prob", "cdf"])
def test_laplace_values(meth):
    check(
        lambda lib, m, s, x: getattr(lib.distributions.Laplace(m, s), meth)(x),
        [rand(3, dtype="float64"), pos(3, dtype="float64"), rand(2, 3, dtype="float64")],
    )


def test_laplace_moments_icdf_sample():
    m, s = rand(4), pos(4)
    check(lambda lib, m, s, u: lib.distributions.Laplace(m, s).icdf(u), [m, s, probs(4)])
    for attr in ["entropy", "mean", "mode", "stddev", "variance"]:

        def fn(lib, m, s, attr=attr):
            out = getattr(lib.distributions.Laplace(m, s), attr)
            return out() if callable(out) else out

        check(fn, [m, s])
    ember.manual_seed(0)
    loc = ember.tensor([1.0, -1.0], requires_grad=True)
    d = ember.distributions.Laplace(loc, ember.tensor([0.5, 2.0]))
    x = d.sample((20000,))
    np.testing.assert_allclose(x.mean(0).numpy(), [1.0, -1.0], atol=0.1)
    np.testing.assert_allclose(x.std(0).numpy(), [0.5 * 2**0.5, 2 * 2**0.5], rtol=0.05)
    (g,) = ember.autograd.grad(d.rsample((3,)).sum(), [loc])
    np.testing.assert_allclose(g.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("cls", ["Exponential", "Laplace"])
def test_kl_exponential_laplace(cls):
    if cls == "Exponential":
        ins = [pos(3, dtype="float64"), pos(3, dtype="float64")]

        def fn(lib, a, b):
            D = lib.distributions
            return D.kl_divergence(D.Exponential(a), D.Exponential(b))

    else:
        ins = [rand(3, dtype="float64"), pos(3, dtype="float64")] * 2
        ins[2] = rand(3, dtype="float64")

        def fn(lib, a, b, c, d):
            D = lib.distributions
            return D.kl_divergence(D.Laplace(a, b), D.Laplace(c, d))

    check(fn, ins)


# ---------------------------------------------------------------- Independent


def test_independent():
    def fn(lib, m, s, x):
        base = lib.distributions.Normal(m, s)
        d = lib.distributions.Independent(base, 1)
        assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (3,)
        assert d.has_rsample and not d.has_enumerate_support
        assert tuple(d.sample((4,)).shape) == (4, 2, 3)
        assert tuple(d.expand([5, 2]).batch_shape) == (5, 2)
        return d.log_prob(x), d.entropy(), d.mean, d.variance

    check(fn, [rand(2, 3), pos(2, 3), rand(2, 3)])
    e = ember.distributions.Independent(ember.distributions.Normal(ember.zeros(2, 3), 1.0), 2)
    t = torch.distributions.Independent(torch.distributions.Normal(torch.zeros(2, 3), 1.0), 2)
    assert repr(e) == repr(t) and repr(e.support) == repr(t.support)
    check_raises(
        lambda lib: lib.distributions.Independent(lib.distributions.Normal(0.0, 1.0), 1),
        [],
        match_message=True,
    )
    check(
        lambda lib, a, b: lib.distributions.kl_divergence(
            lib.distributions.Independent(lib.distributions.Normal(a, 1.0), 1),
            lib.distributions.Independent(lib.distributions.Normal(b, 2.0), 1),
        ),
        [rand(2, 3), rand(2, 3)],
    )


# ---------------------------------------------------------------- OneHotCategorical


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_one_hot_categorical(param):
    p = simplex(2, 4) if param == "probs" else rand(2, 4)
    x = np.eye(4, dtype="float32")[[[0, 3], [2, 2], [1, 0]]]

    def fn(lib, p):
        d = lib.distributions.OneHotCategorical(**{param: p})
        assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (4,)
        s = d.sample((5,))
        assert tuple(s.shape) == (5, 2, 4) and s.dtype == p.dtype
        assert bool((s.sum(-1) == 1).all())
        return d.log_prob(lib.tensor(x)), d.entropy(), d.mean, d.variance, d.mode, d.probs

    check(fn, [p])
    check(
        lambda lib, a, b: lib.distributions.kl_divergence(
            lib.distributions.OneHotCategorical(a), lib.distributions.OneHotCategorical(logits=b)
        ),
        [simplex(3), rand(3)],
    )
    e = ember.distributions.OneHotCategorical(ember.tensor(simplex(2, 4)))
    t = torch.distributions.OneHotCategorical(torch.tensor(simplex(2, 4)))
    assert repr(e) == repr(t) and repr(e.support) == repr(t.support)
    assert e.enumerate_support().shape == t.enumerate_support().shape
    check_raises(
        lambda lib, p: lib.distributions.OneHotCategorical(p).log_prob(lib.tensor([0.5, 0.5])),
        [np.array([0.5, 0.5], "float32")],
        match_message=True,
    )


# ---------------------------------------------------------------- Beta, Dirichlet


def test_beta_values():
    a, b = pos(2, 3, dtype="float64"), pos(2, 3, dtype="float64")
    x = probs(4, 2, 3, dtype="float64")
    for attr in ["log_prob", "entropy", "mean", "variance", "concentration1", "concentration0"]:

        def fn(lib, a, b, x, attr=attr):
            out = getattr(lib.distributions.Beta(a, b), attr)
            return out(x) if attr == "log_prob" else out() if callable(out) else out

        check(fn, [a, b, x])
    check(
        lambda lib, a, b: lib.distributions.Beta(a, b).mode,
        [np.array([2.0, 0.5, 3.0], "float32"), np.array([3.0, 0.7, 1.0], "float32")],
    )
    check(
        lambda lib, a, b, c, d: lib.distributions.kl_divergence(
            lib.distributions.Beta(a, b), lib.distributions.Beta(c, d)
        ),
        [pos(3, dtype="float64") for _ in range(4)],
    )
    check(lambda lib, x: lib.distributions.Beta(2.0, 3.0).log_prob(x), [probs(5)])
    check_raises(lambda lib: lib.distributions.Beta(-1.0, 1.0), [], match_message=False)
    check_raises(
        lambda lib: lib.distributions.Beta(1.0, 1.0).log_prob(lib.tensor(1.5)),
        [],
        match_message=True,
    )


def test_beta_dirichlet_sample():
    ember.manual_seed(0)
    d = ember.distributions.Beta(ember.tensor([2.0, 0.5]), ember.tensor([3.0, 0.5]))
    s = d.sample((20000,))
    assert s.shape == (20000, 2) and s.dtype == ember.float32
    assert bool(((s > 0) & (s <= 1)).all())
    np.testing.assert_allclose(s.mean(0).numpy(), [0.4, 0.5], atol=0.02)
    np.testing.assert_allclose(s.var(0).numpy(), d.variance.numpy(), rtol=0.1)
    conc = ember.tensor([[1.0, 2.0, 3.0]], dtype=ember.float64)
    s = ember.distributions.Dirichlet(conc).sample((10000,))
    assert s.shape == (10000, 1, 3) and s.dtype == ember.float64
    np.testing.assert_allclose(s.sum(-1).numpy(), 1.0)
    np.testing.assert_allclose(s.mean(0).numpy(), [[1 / 6, 2 / 6, 3 / 6]], atol=0.02)
    # reparameterized: values in (0, 1) with a gradient for the concentrations
    c1 = ember.tensor(1.0, requires_grad=True)
    r = ember.distributions.Beta(c1, 2.0).rsample()
    r.backward()
    assert 0 < r.item() < 1 and c1.grad is not None


def test_dirichlet_values():
    c = pos(2, 4, dtype="float64")
    x = simplex(3, 2, 4, dtype="float64")
    for attr in ["log_prob", "entropy", "mean", "variance"]:

        def fn(lib, c, x, attr=attr):
            out = getattr(lib.distributions.Dirichlet(c), attr)
            return out(x) if attr == "log_prob" else out() if callable(out) else out

        check(fn, [c, x])
    check(
        lambda lib, c: lib.distributions.Dirichlet(c).mode,
        [np.array([[2.0, 3.0, 1.5], [0.5, 0.7, 0.2]], "float32")],
    )
    check(
        lambda lib, a, b: lib.distributions.kl_divergence(
            lib.distributions.Dirichlet(a), lib.distributions.Dirichlet(b)
        ),
        [pos(2, 3, dtype="float64"), pos(2, 3, dtype="float64")],
    )
    e = ember.distributions.Dirichlet(ember.ones(2, 3))
    t = torch.distributions.Dirichlet(torch.ones(2, 3))
    assert repr(e) == repr(t) and repr(e.support) == repr(t.support)
    assert e.batch_shape == t.batch_shape and e.event_shape == t.event_shape
    assert e.expand([4, 2]).batch_shape == (4, 2)
    check_raises(lambda lib: lib.distributions.Dirichlet(lib.tensor(1.0)), [], match_message=True)
    check_raises(
        lambda lib: lib.distributions.Dirichlet(lib.tensor([1.0, -1.0])), [], match_message=True
    )


# ---------------------------------------------------------------- MultivariateNormal


def spd(*batch, n=3, dtype="float64"):
    a = _r.standard_normal(batch + (n, n))
    return np.asarray(a @ np.swapaxes(a, -1, -2) + n * np.eye(n), dtype=dtype)


def tril(*batch, n=3, dtype="float64"):
    a = np.tril(_r.standard_normal(batch + (n, n)), -1)
    d = np.eye(n) * _r.uniform(0.5, 2.0, batch + (1, n))
    return np.asarray(a + d, dtype=dtype)


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_mvn_values(param):
    mat = tril(2) if param == "scale_tril" else spd(2)
    loc = rand(3, dtype="float64")
    x = rand(4, 2, 3, dtype="float64")

    def fn(lib, m, c, x):
        d = lib.distributions.MultivariateNormal(m, **{param: c})
        assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (3,)
        return (
            d.log_prob(x),
            d.entropy(),
            d.mean,
            d.variance,
            d.scale_tril,
            d.covariance_matrix,
            d.precision_matrix,
        )

    check(fn, [loc, mat, x], strides=False)


def test_mvn_unbatched_and_kl():
    check(
        lambda lib, m, L, x: lib.distributions.MultivariateNormal(m, scale_tril=L).log_prob(x),
        [rand(2, dtype="float64"), tril(n=2), rand(5, 2, dtype="float64")],
    )
    check(
        lambda lib, m, C: lib.distributions.MultivariateNormal(m, C).entropy(),
        [rand(2, dtype="float64"), spd(n=2)],
    )
    check(
        lambda lib, a, A, b, B: lib.distributions.kl_divergence(
            lib.distributions.MultivariateNormal(a, A),
            lib.distributions.MultivariateNormal(b, scale_tril=B),
        ),
        [rand(2, 3, dtype="float64"), spd(2), rand(3, dtype="float64"), tril()],
    )


def test_mvn_sample_rsample_repr_errors():
    ember.manual_seed(0)
    C = np.array([[2.0, 0.6], [0.6, 1.0]])
    loc = ember.tensor([1.0, -1.0], requires_grad=True)
    d = ember.distributions.MultivariateNormal(loc, ember.tensor(C, dtype=ember.float32))
    s = d.sample((20000,))
    assert s.shape == (20000, 2) and s.dtype == ember.float32 and not s.requires_grad
    np.testing.assert_allclose(s.mean(0).numpy(), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(np.cov(s.numpy().T), C, atol=0.08)
    (g,) = ember.autograd.grad(d.rsample((3,)).sum(), [loc])
    np.testing.assert_allclose(g.numpy(), [3.0, 3.0])
    assert d.expand([4]).sample((2,)).shape == (2, 4, 2)
    e = ember.distributions.MultivariateNormal(ember.zeros(2), ember.eye(2))
    t = torch.distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
    assert repr(e) == repr(t) and repr(e.support) == repr(t.support)
    assert {k: repr(v) for k, v in e.arg_constraints.items()} == {
        k: repr(v) for k, v in t.arg_constraints.items()
    }
    for fn in [
        lambda lib: lib.distributions.MultivariateNormal(lib.tensor(0.0), lib.eye(2)),
        lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2)),
        lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), lib.eye(2), lib.eye(2)),
        lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), lib.ones(2)),
        lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), -lib.eye(2)),
        lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), scale_tril=lib.ones(2, 2)),
    ]:
        check_raises(fn, [], match_message=True)


def test_constraints_check():
    C = ember.distributions.constraints
    T = torch.distributions.constraints
    x = np.array([[-1.0, 0.0, 0.5], [1.0, 2.0, np.nan]], "float32")
    for name in ["real", "positive", "nonnegative", "unit_interval", "boolean", "simplex"]:
        e = getattr(C, name).check(ember.tensor(x))
        t = getattr(T, name).check(torch.tensor(x))
        np.testing.assert_array_equal(e.numpy(), t.numpy(), err_msg=name)
        assert repr(getattr(C, name)) == repr(getattr(T, name))
    e = C.integer_interval(0, 1).check(ember.tensor(x))
    np.testing.assert_array_equal(e.numpy(), T.integer_interval(0, 1).check(torch.tensor(x)))
    assert repr(C.integer_interval(0, 2)) == repr(T.integer_interval(0, 2))
    assert repr(C.real_vector) == repr(T.real_vector)
    assert C.real_vector.event_dim == 1 and C.simplex.event_dim == 1


# ---------------------------------------------------------------- ExponentialFamily, misc


@pytest.mark.parametrize("cls", ["Normal", "Bernoulli", "Exponential"])
def test_exp_family_generic_entropy(cls):
    def fn(lib, *params):
        d = getattr(lib.distributions, cls)(*params)
        assert isinstance(d, lib.distributions.ExponentialFamily)
        return lib.distributions.ExponentialFamily.entropy(d)

    params = {
        "Normal": [rand(3, dtype="float64"), pos(3, dtype="float64")],
        "Bernoulli": [probs(3, dtype="float64")],
        "Exponential": [pos(3, dtype="float64")],
    }[cls]
    check(fn, params, grad_fn=False)


def test_exp_family_no_carrier_measure():
    check_raises(
        lambda lib, c: lib.distributions.ExponentialFamily.entropy(lib.distributions.Dirichlet(c)),
        [pos(3)],
    )


def test_kl_exp_family_cross_error():
    check_raises(
        lambda lib: lib.distributions.kl_divergence(
            lib.distributions.Bernoulli(0.5), lib.distributions.Exponential(1.0)
        ),
        [],
        match_message=True,
    )


def test_set_default_validate_args():
    D = ember.distributions.Distribution
    try:
        D.set_default_validate_args(False)
        ember.distributions.Normal(ember.zeros(1), -ember.ones(1))
    finally:
        D.set_default_validate_args(True)
    with pytest.raises(ValueError):
        ember.distributions.Normal(ember.zeros(1), -ember.ones(1))
    with pytest.raises(ValueError):
        D.set_default_validate_args(3)


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, m, s, x: lib.distributions.Normal(m, s).log_prob(x),
        lambda lib, m, s, x: lib.distributions.kl_divergence(
            lib.distributions.Normal(m, s), lib.distributions.Normal(x, s * 2)
        ),
        lambda lib, m, s, x: lib.distributions.Laplace(m, s).cdf(x),
    ],
)
def test_double_backward(fn):
    from tests.oracle.helper import check_double_backward

    check_double_backward(
        fn, [rand(3, dtype="float64"), pos(3, dtype="float64"), rand(3, dtype="float64")]
    )


def test_float64_params_and_samples():
    for lib in (torch, ember):
        D = lib.distributions
        p = lib.tensor([0.2, 0.7], dtype=lib.float64)
        assert D.Bernoulli(p).sample((3,)).dtype == lib.float64
        assert D.Normal(p, 1.0).rsample().dtype == lib.float64
        assert D.Normal(p, 1.0).scale.dtype == lib.float64
        assert D.Uniform(0.0, p).sample().dtype == lib.float64
        assert D.Categorical(p).sample().dtype == lib.int64
        assert D.OneHotCategorical(p).sample().dtype == lib.float64


# ---------------------------------------------------------------- Gamma


def test_gamma_values():
    c, r = pos(2, 3, dtype="float64"), pos(2, 3, dtype="float64")
    x = pos(4, 2, 3, dtype="float64")
    for attr in ["log_prob", "entropy", "mean", "mode", "variance", "stddev"]:

        def fn(lib, c, r, x, attr=attr):
            out = getattr(lib.distributions.Gamma(c, r), attr)
            return out(x) if attr == "log_prob" else out() if callable(out) else out

        check(fn, [c, r, x])
    check(
        lambda lib, a, b, c, d: lib.distributions.kl_divergence(
            lib.distributions.Gamma(a, b), lib.distributions.Gamma(c, d)
        ),
        [pos(3, dtype="float64") for _ in range(4)],
    )
    check(
        lambda lib, c, r: lib.distributions.ExponentialFamily.entropy(
            lib.distributions.Gamma(c, r)
        ),
        [pos(3, dtype="float64"), pos(3, dtype="float64")],
        grad_fn=False,
    )
    e, t = (
        ember.distributions.Gamma(ember.ones(2), 2.0),
        torch.distributions.Gamma(torch.ones(2), 2.0),
    )
    assert repr(e) == repr(t) and repr(e.support) == repr(t.support)
    check_raises(lambda lib: lib.distributions.Gamma(1.0, 0.0), [], match_message=True)
    check_raises(
        lambda lib: lib.distributions.Gamma(1.0, 1.0).log_prob(lib.tensor(-1.0)),
        [],
        match_message=True,
    )


def test_gamma_sample():
    ember.manual_seed(0)
    d = ember.distributions.Gamma(ember.tensor([0.5, 3.0]), ember.tensor([1.0, 2.0]))
    s = d.sample((20000,))
    assert s.shape == (20000, 2) and s.dtype == ember.float32 and bool((s > 0).all())
    np.testing.assert_allclose(s.mean(0).numpy(), [0.5, 1.5], rtol=0.05)
    np.testing.assert_allclose(s.var(0).numpy(), [0.5, 0.75], rtol=0.1)
    assert d.expand([3, 2]).sample().shape == (3, 2)
    # rsample: torch's samples and its implicit reparameterization gradients
    out = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        a = lib.tensor([0.5, 3.0], requires_grad=True)
        r = lib.tensor([1.0, 2.0], requires_grad=True)
        x = lib.distributions.Gamma(a, r).rsample((2,))
        x.sum().backward()
        out.append((x.detach().numpy(), a.grad.numpy(), r.grad.numpy()))
    for e, t in zip(*out):
        np.testing.assert_allclose(e, t, rtol=1e-5)


# ---------------------------------------------------------------- Poisson


def test_poisson():
    r = pos(2, 3, dtype="float64")
    x = np.floor(rand(4, 2, 3, dtype="float64", low=0, high=6))
    for attr in ["log_prob", "mean", "mode", "variance"]:

        def fn(lib, r, attr=attr):
            out = getattr(lib.distributions.Poisson(r), attr)
            return out(lib.tensor(x)) if attr == "log_prob" else out

        check(fn, [r])
    check(
        lambda lib, a, b: lib.distributions.kl_divergence(
            lib.distributions.Poisson(a), lib.distributions.Poisson(b)
        ),
        [pos(3, dtype="float64"), pos(3, dtype="float64")],
    )
    check(
        lambda lib, a, b: lib.distributions.kl_divergence(
            lib.distributions.Bernoulli(a), lib.distributions.Poisson(b)
        ),
        [probs(3, dtype="float64"), pos(3, dtype="float64")],
    )
    check_raises(
        lambda lib: lib.distributions.Poisson(2.0).log_prob(lib.tensor(1.5)),
        [],
        match_message=True,
    )
    check_raises(lambda lib: lib.distributions.Poisson(-1.0), [], match_message=True)
    ember.manual_seed(0)
    s = ember.distributions.Poisson(ember.tensor([0.5, 7.0])).sample((20000,))
    assert s.shape == (20000, 2) and s.dtype == ember.float32
    assert bool((s == s.floor()).all())
    np.testing.assert_allclose(s.mean(0).numpy(), [0.5, 7.0], rtol=0.05)
    assert not ember.distributions.Poisson(1.0).has_rsample

"""Oracle tests written with the rewrite of ember.distributions in ember's own terms (issue 21):
the KL table beyond the pairs test_distributions_families2.py covers (edge values, supports,
broadcasting, the families it leaves out), register_kl's argument check, the transforms'
forward / inverse / log_abs_det_jacobian, and constraints' check() results."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, check_raises

torch = pytest.importorskip("torch")

_r = np.random.default_rng(21)


def pos(*shape, low=0.5, high=2.5):
    return np.asarray(_r.uniform(low, high, shape))


def unit(*shape):
    return np.asarray(_r.uniform(0.1, 0.9, shape))


def real(*shape):
    return np.asarray(_r.normal(size=shape))


def simplex(*shape):
    p = _r.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def _spd(n=3, batch=()):
    a = _r.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _kl(lib, p_name, p_args, q_name, q_args):
    D = lib.distributions
    return D.kl_divergence(getattr(D, p_name)(*p_args), getattr(D, q_name)(*q_args))


# ------------------------------------------------------------------------- register_kl


def test_register_kl_argument_check():
    """torch accepts any class (``register_kl(int, Normal)`` passes silently, nothing is
    registered until the decorator is applied) and raises issubclass's TypeError otherwise."""
    for lib in (torch, ember):
        D = lib.distributions
        decorator = D.register_kl(int, D.Normal)
        assert callable(decorator)
        assert (int, D.Normal) not in D.kl._KL_REGISTRY
    for args in [(3, "Normal"), ("Normal", 3), ("x", "Normal")]:

        def fn(lib, args=args):
            D = lib.distributions
            a = [getattr(D, x) if x == "Normal" else x for x in args]
            return D.register_kl(*a)

        check_raises(fn, [], match_message=True)


def test_register_kl_ambiguous_warns():
    def fn(lib):
        D = lib.distributions

        class P(D.Normal):
            pass

        class Q(D.Normal):
            pass

        D.register_kl(P, D.Normal)(lambda p, q: "left")
        D.register_kl(D.Normal, Q)(lambda p, q: "right")
        try:
            with pytest.warns(RuntimeWarning, match="Ambiguous"):
                out = D.kl_divergence(P(0.0, 1.0), Q(0.0, 1.0))
        finally:
            del D.kl._KL_REGISTRY[P, D.Normal]
            del D.kl._KL_REGISTRY[D.Normal, Q]
            D.kl._KL_MEMOIZE.clear()
        return out

    assert fn(ember) == fn(torch) == "left"


def test_registered_function_chosen_for_subclass():
    for lib in (torch, ember):
        D = lib.distributions

        class MyGamma(D.Gamma):
            pass

        a, b = MyGamma(lib.tensor(2.0), lib.tensor(3.0)), D.Gamma(lib.tensor(1.5), lib.tensor(1.0))
        assert float(D.kl_divergence(a, b)) == pytest.approx(
            float(D.kl_divergence(D.Gamma(lib.tensor(2.0), lib.tensor(3.0)), b))
        )


# ------------------------------------------------------------------------- KL values and grads
# The families test_distributions_families2.py::test_kl_divergence leaves out, with batch shapes
# that broadcast between p and q.

_PAIRS = {
    "Categorical": lambda: ((simplex(2, 4),), (simplex(4),)),
    "OneHotCategorical": lambda: ((simplex(2, 4),), (simplex(2, 4),)),
    "Dirichlet": lambda: ((pos(2, 4),), (pos(4),)),
    "Geometric": lambda: ((unit(3),), (unit(2, 1),)),
    "Cauchy": lambda: ((real(3), pos(3)), (real(2, 1), pos(1))),
    "HalfNormal": lambda: ((pos(3),), (pos(2, 1),)),
    "Binomial": lambda: ((10, unit(3)), (10, unit(2, 1))),
    "Bernoulli": lambda: ((unit(2, 3),), (unit(2, 3),)),
    "Normal": lambda: ((real(3), pos(3)), (real(2, 1), pos(1))),
    "Poisson": lambda: ((pos(3),), (pos(2, 1),)),
}


@pytest.mark.parametrize("name", sorted(_PAIRS))
def test_kl_same_family(name):
    pa, qa = _PAIRS[name]()
    n = len(pa)

    def fn(lib, *a):
        return _kl(lib, name, a[:n], name, a[n:])

    check(fn, [*pa, *qa], grad_fn=False, version=False, strides=False, atol=1e-9)


def test_kl_bernoulli_broadcast_raises():
    """torch masks Bernoulli's terms in place, so batch shapes that broadcast raise IndexError."""
    check_raises(
        lambda lib, a, b: _kl(lib, "Bernoulli", (a,), "Bernoulli", (b,)), [unit(3), unit(2, 1)]
    )


def test_kl_mvn_broadcast_batches():
    loc_p, cov_p = real(2, 1, 3), _spd(3, (2, 1))
    loc_q, factor_q, diag_q = real(4, 3), real(4, 3, 2), pos(4, 3)

    def fn(lib, a, A, b, W, d):
        D = lib.distributions
        p = D.MultivariateNormal(a, A)
        q = D.LowRankMultivariateNormal(b, W, d)
        return D.kl_divergence(p, q), D.kl_divergence(q, p)

    check(fn, [loc_p, cov_p, loc_q, factor_q, diag_q], grad_fn=False, version=False, atol=1e-9)


def test_kl_mvn_event_shape_errors():
    for kinds in [("mvn", "mvn"), ("mvn", "low"), ("low", "mvn"), ("low", "low")]:

        def fn(lib, kinds=kinds):
            D = lib.distributions

            def make(kind, n):
                if kind == "mvn":
                    return D.MultivariateNormal(lib.zeros(n), lib.eye(n))
                return D.LowRankMultivariateNormal(lib.zeros(n), lib.ones(n, 1), lib.ones(n))

            return D.kl_divergence(make(kinds[0], 2), make(kinds[1], 3))

        check_raises(fn, [], match_message=True)


def test_kl_independent_and_transformed():
    def fn(lib, a, b, c, d):
        D = lib.distributions
        p = D.Independent(D.Normal(a, b), 1)
        q = D.Independent(D.Normal(c, d), 1)
        ln_p, ln_q = D.LogNormal(a, b), D.LogNormal(c, d)
        return D.kl_divergence(p, q), D.kl_divergence(ln_p, ln_q)

    check(fn, [real(2, 3), pos(2, 3), real(3), pos(3)], grad_fn=False, version=False, atol=1e-9)
    check_raises(
        lambda lib: lib.distributions.kl_divergence(
            lib.distributions.Independent(lib.distributions.Normal(lib.zeros(2, 3), 1.0), 1),
            lib.distributions.Independent(lib.distributions.Normal(lib.zeros(2, 3), 1.0), 2),
        ),
        [],
    )


def test_kl_expfamily_bregman():
    """A family without its own pair (Weibull is not one; Bernoulli subclass is) falls back to
    the Bregman divergence of ExponentialFamily."""

    def fn(lib, a, b):
        D = lib.distributions

        class MyPoisson(D.Poisson):
            pass

        D.register_kl(MyPoisson, MyPoisson)(
            D.kl._KL_REGISTRY[D.ExponentialFamily, D.ExponentialFamily]
        )
        try:
            return D.kl_divergence(MyPoisson(a), MyPoisson(b))
        finally:
            del D.kl._KL_REGISTRY[MyPoisson, MyPoisson]
            D.kl._KL_MEMOIZE.clear()

    check(fn, [pos(3), pos(3)], grad_fn=False, version=False, atol=1e-9)


# Edge values: masses at 0 / 1, supports that do or do not nest, Pareto tails without moments.

_EDGES = [
    ("Bernoulli", [np.array([0.0, 1.0, 0.3, 0.0])], "Bernoulli", [np.array([0.0, 0.5, 0.0, 1.0])]),
    (
        "Categorical",
        [np.array([[0.0, 0.5, 0.5], [0.2, 0.8, 0.0]])],
        "Categorical",
        [np.array([[0.5, 0.5, 0.0], [0.3, 0.7, 0.0]])],
    ),
    (
        "Uniform",
        [np.array([0.0, -1.0, 0.5, 0.2]), np.array([1.0, 2.0, 3.0, 0.4])],
        "Uniform",
        [np.array([0.0, -0.5, 0.0, -1.0]), np.array([1.0, 2.0, 4.0, 1.0])],
    ),
    (
        "Uniform",
        [np.array([0.0, -1.0, 0.1, 0.2]), np.array([1.0, 0.5, 0.9, 1.5])],
        "Beta",
        [np.array([2.0, 2.0, 1.5, 3.0]), np.array([1.0, 2.0, 3.0, 0.5])],
    ),
    (
        "Beta",
        [np.array([2.0, 2.0, 1.5]), np.array([1.0, 2.0, 3.0])],
        "Uniform",
        [np.array([0.0, -1.0, 0.1]), np.array([1.0, 2.0, 1.0])],
    ),
    (
        "Uniform",
        [np.array([0.0, 0.1, 0.0, -0.5]), np.array([1.0, 0.9, 0.5, 2.0])],
        "ContinuousBernoulli",
        [np.array([0.3, 0.3, 0.7, 0.4])],
    ),
    (
        "ContinuousBernoulli",
        [np.array([0.3, 0.3, 0.7])],
        "Uniform",
        [np.array([0.0, -0.1, -1.0]), np.array([1.0, 1.1, 0.9])],
    ),
    (
        "Uniform",
        [np.array([-1.0, 0.0, 0.5]), np.array([1.0, 2.0, 3.0])],
        "Exponential",
        [np.array([1.0, 2.0, 0.5])],
    ),
    (
        "Uniform",
        [np.array([-1.0, 0.0, 0.5]), np.array([1.0, 2.0, 3.0])],
        "Gamma",
        [np.array([1.0, 2.0, 0.5]), np.array([1.5, 0.5, 2.0])],
    ),
    (
        "Uniform",
        [np.array([0.5, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])],
        "Pareto",
        [np.array([1.0, 1.0, 1.0]), np.array([1.5, 0.5, 2.0])],
    ),
    (
        "Pareto",
        [np.array([1.0, 2.0, 0.5]), np.array([1.5, 0.5, 2.0])],
        "Pareto",
        [np.array([1.5, 1.0, 0.5]), np.array([1.0, 2.0, 3.0])],
    ),
    (
        "Pareto",
        [np.array([1.0, 2.0, 0.5]), np.array([0.5, 1.5, 2.5])],
        "Exponential",
        [np.array([1.0, 2.0, 0.5])],
    ),
    (
        "Pareto",
        [np.array([1.0, 2.0, 0.5]), np.array([1.0, 1.5, 2.5])],
        "Gamma",
        [np.array([1.0, 2.0, 0.5]), np.array([1.5, 0.5, 2.0])],
    ),
    (
        "Pareto",
        [np.array([1.0, 2.0, 0.5]), np.array([1.5, 2.0, 3.5])],
        "Normal",
        [np.array([1.0, 2.0, 0.5]), np.array([1.5, 0.5, 2.0])],
    ),
    (
        "Binomial",
        [np.array([10.0, 12.0]), np.array([0.3, 0.6])],
        "Binomial",
        [10, np.array([0.4, 0.5])],
    ),
]


@pytest.mark.parametrize("case", range(len(_EDGES)), ids=lambda i: f"{_EDGES[i][0]}-{_EDGES[i][2]}")
def test_kl_edge_values(case):
    p_name, p_args, q_name, q_args = _EDGES[case]
    n = len(p_args)

    def fn(lib, *a):
        return _kl(lib, p_name, a[:n], q_name, a[n:])

    check(fn, [*p_args, *q_args], grad=False, version=False, strides=False, atol=1e-9)


def test_kl_binomial_larger_q_count_raises():
    check_raises(
        lambda lib: _kl(lib, "Binomial", (5, lib.tensor(0.3)), "Binomial", (10, lib.tensor(0.3))),
        [],
        match_message=True,
    )


_INFINITE = [
    ("Normal", (real(3), pos(3)), "Uniform", (-pos(3), pos(3))),
    ("Gumbel", (real(3), pos(3)), "Gamma", (pos(3), pos(3))),
    ("Poisson", (pos(3),), "Binomial", (10, unit(3))),
    ("Beta", (pos(2, 3), pos(2, 3)), "Pareto", (pos(3), pos(3))),
]


@pytest.mark.parametrize("case", range(len(_INFINITE)), ids=lambda i: _INFINITE[i][0])
def test_kl_infinite_pairs_shape_dtype(case):
    p_name, p_args, q_name, q_args = _INFINITE[case]
    n = len(p_args)

    def fn(lib, *a):
        return _kl(lib, p_name, a[:n], q_name, a[n:])

    check(fn, [*p_args, *q_args], grad=False, version=False, atol=0)


# ------------------------------------------------------------------------- transforms

_ELEMENTWISE = {
    "ExpTransform": (lambda T: T.ExpTransform(), lambda: real(2, 3)),
    "PowerTransform": (lambda T: T.PowerTransform(2.5), lambda: pos(2, 3)),
    "SigmoidTransform": (lambda T: T.SigmoidTransform(), lambda: real(2, 3)),
    "TanhTransform": (lambda T: T.TanhTransform(), lambda: real(2, 3)),
    "AffineTransform": (lambda T: T.AffineTransform(0.5, -2.0), lambda: real(2, 3)),
    "AffineTransform_event": (
        lambda T: T.AffineTransform(0.5, 3.0, event_dim=1),
        lambda: real(2, 3),
    ),
    "SoftplusTransform": (lambda T: T.SoftplusTransform(), lambda: real(2, 3)),
    "Compose": (
        lambda T: T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.ExpTransform()]),
        lambda: real(2, 3),
    ),
    "Compose_event": (
        lambda T: T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform()]),
        lambda: real(2, 3),
    ),
    "Inverse": (lambda T: T.ExpTransform().inv, lambda: pos(2, 3)),
    "Identity": (lambda T: T.identity_transform, lambda: real(2, 3)),
}


@pytest.mark.parametrize("name", sorted(_ELEMENTWISE))
def test_elementwise_transforms(name):
    make, x = _ELEMENTWISE[name]
    x = x()

    def fwd(lib, x):
        t = make(lib.distributions.transforms)
        y = t(x)
        return y, t.log_abs_det_jacobian(x, y)

    check(fwd, [x], grad_fn=False, version=False, strides=False, atol=1e-9)

    def inv(lib, x):
        t = make(lib.distributions.transforms)
        with lib.no_grad():
            y = t(x)
        return t.inv(y), t.inv.log_abs_det_jacobian(y, x)

    check(inv, [x], grad=False, grad_fn=False, version=False, strides=False, atol=1e-9)
    et, tt = make(ember.distributions.transforms), make(torch.distributions.transforms)
    assert repr(et) == repr(tt)
    assert repr(et.domain) == repr(tt.domain) and repr(et.codomain) == repr(tt.codomain)
    assert et.bijective == tt.bijective
    assert tuple(et.forward_shape((2, 3))) == tuple(tt.forward_shape((2, 3)))
    try:
        want = tt.sign
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            et.sign  # noqa: B018
        return
    np.testing.assert_array_equal(np.asarray(et.sign), np.asarray(want))


def test_transform_cache_equality_hash():
    for lib in (torch, ember):
        T = lib.distributions.transforms
        t = T.ExpTransform(cache_size=1)
        x = lib.tensor([0.5, 1.0])
        y = t(x)
        assert t(x) is y and t.inv(y) is x
        assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.TanhTransform()
        assert T.ExpTransform().inv == T.ExpTransform().inv
        assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
        assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
        assert T.StickBreakingTransform() == T.StickBreakingTransform()
        for made in (T.ExpTransform(), T.StickBreakingTransform(), T.AffineTransform(0.0, 1.0)):
            with pytest.raises(TypeError):
                hash(made)  # __eq__ without __hash__, as torch's
        for made in (
            T.AffineTransform(1.0, 2.0, event_dim=1),
            T.PowerTransform(2.0),
            T.ComposeTransform([T.ExpTransform()]),
            T.ReshapeTransform((6,), (2, 3)),
            T.CatTransform([T.ExpTransform(), T.ExpTransform()], 0, [1, 1]),
            T.StackTransform([T.ExpTransform()], 0),
            T.IndependentTransform(T.ExpTransform(), 1),
            T.ExpTransform().inv,
            T.SigmoidTransform(),
        ):
            cached = made.with_cache(1)
            assert cached._cache_size == 1 and type(cached) is type(made)
            assert made.with_cache(0) is made
        with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
            T.ExpTransform(cache_size=2)
        assert T.ComposeTransform([T.AffineTransform(0.0, -1.0), T.ExpTransform()]).sign == -1
        assert T.AffineTransform(0.0, -2.0).sign == -1

    class Custom(ember.distributions.transforms.Transform):
        def __init__(self, k):
            super().__init__()

    with pytest.raises(NotImplementedError):
        Custom(1).with_cache(1)


def test_functor_errors():
    for lib in (torch, ember):
        T = lib.distributions.transforms
        cat = T.CatTransform([T.ExpTransform(), T.ExpTransform()], 0, [1, 2])
        with pytest.raises(AssertionError):
            cat(lib.zeros(4))
        with pytest.raises(AssertionError):
            T.StackTransform([T.ExpTransform()], 0)(lib.zeros(2, 2))
        with pytest.raises(AssertionError):
            T.CatTransform([T.ExpTransform()], 3)(lib.zeros(1))


# ------------------------------------------------------------------------- counting families


def test_binomial_values_grads():
    def fn(lib, n, p, logits, k):
        D = lib.distributions
        a = D.Binomial(n, probs=p)
        b = D.Binomial(n, logits=logits)
        return a.log_prob(k), b.log_prob(k), a.mean, a.variance, a.mode, b.entropy()

    logits = np.array([0.0, -3.0, 25.0, 1.5])  # 0: the derivative of log(1 + e^x) is 1/2
    n = np.array([4.0, 4.0, 4.0, 4.0])
    check(
        fn,
        [n, np.array([0.5, 0.1, 0.9, 0.3]), logits, np.array([0.0, 1.0, 4.0, 2.0])],
        grad_fn=False,
        version=False,
        strides=False,
    )
    check_raises(
        lambda lib: lib.distributions.Binomial(lib.tensor([2.0, 3.0]), lib.tensor(0.5)).entropy(),
        [],
        match_message=True,
    )
    check_raises(lambda lib: lib.distributions.Binomial(3, None, None), [], match_message=True)


def test_binomial_expand_and_support():
    for lib in (torch, ember):
        d = lib.distributions.Binomial(3, logits=lib.tensor([0.2, -1.0])).expand((4, 2))
        assert tuple(d.batch_shape) == (4, 2) and tuple(d.param_shape) == (4, 2)
        assert tuple(d.enumerate_support().shape) == (4, 4, 2)
        assert tuple(d.enumerate_support(False).shape) == (4, 1, 1)
        assert "logits" in d.__dict__ and "probs" not in d.__dict__


def test_geometric_values_grads():
    def fn(lib, p, logits, k):
        D = lib.distributions
        a, b = D.Geometric(probs=p), D.Geometric(logits=logits)
        return a.log_prob(k), b.log_prob(k), a.entropy(), b.entropy(), a.mean, a.variance

    check(
        fn,
        [np.array([0.2, 0.5, 0.9]), np.array([0.0, -2.0, 3.0]), np.array([[0.0], [3.0]])],
        grad_fn=False,
        version=False,
        strides=False,
    )

    def certain(lib, k):
        return lib.distributions.Geometric(probs=lib.tensor([1.0, 1.0])).log_prob(k)

    check(certain, [np.array([0.0, 2.0])], grad=False, grad_fn=False, version=False)


def test_multinomial_values():
    def fn(lib, p, x):
        d = lib.distributions.Multinomial(5, probs=p)
        return d.log_prob(x), d.entropy(), d.mean, d.variance

    p = np.array([[0.2, 0.3, 0.5], [0.0, 0.4, 0.6]])
    x = np.array([[1.0, 1.0, 3.0], [0.0, 2.0, 3.0]])
    check(fn, [p, x], grad_fn=False, version=False, strides=False)


def test_multinomial_expanded_entropy():
    # torch's expanded Multinomial has no per-category Binomial and its entropy raises
    # AttributeError; ember's is the entropy of the unexpanded one, broadcast
    p = np.array([0.2, 0.3, 0.5])
    tm = torch.distributions.Multinomial(4, probs=torch.tensor(p))
    with pytest.raises(AttributeError):
        tm.expand((2,)).entropy()
    em = ember.distributions.Multinomial(4, probs=ember.tensor(p)).expand((2,))
    np.testing.assert_allclose(em.entropy().numpy(), tm.entropy().expand(2).numpy(), rtol=1e-12)


# ------------------------------------------------------------------------- Gaussian families


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_mvn_parameterizations(param):
    def fn(lib, loc, m, x):
        D = lib.distributions
        d = D.MultivariateNormal(loc, **{param: m})
        e = d.expand((4, 2))
        return (
            d.log_prob(x),
            d.entropy(),
            d.variance,
            d.scale_tril,
            d.covariance_matrix,
            d.precision_matrix,
            e.log_prob(x),
        )

    m = _spd(3, (2,))
    if param == "scale_tril":
        m = np.linalg.cholesky(m)
    check(fn, [real(3), m, real(4, 1, 3)], grad_fn=False, version=False, strides=False)


def test_lowrank_matrices():
    def fn(lib, loc, w, d, x):
        dist = lib.distributions.LowRankMultivariateNormal(loc, w, d)
        e = dist.expand((3, 2))
        return (
            dist.scale_tril,
            dist.covariance_matrix,
            dist.precision_matrix,
            dist.variance,
            dist.log_prob(x),
            dist.entropy(),
            e.log_prob(x),
        )

    check(fn, [real(3), real(2, 3, 2), pos(3), real(3, 1, 3)], grad_fn=False, version=False)


def test_gaussian_seeded_samples():
    def fn(lib, loc, m, w, d):
        lib.manual_seed(5)
        D = lib.distributions
        a = D.MultivariateNormal(loc, precision_matrix=m).rsample((2,))
        b = D.LowRankMultivariateNormal(loc, w, d).rsample((2,))
        return a, b

    check(fn, [real(3), _spd(3), real(3, 2), pos(3)], grad_fn=False, version=False)


def test_wishart_singular_retry_and_stream():
    """torch flags positive definite first draws as singular: every rsample warns and redraws
    once, so the returned matrices are the second Bartlett draw (ember keeps the stream)."""
    outs = []
    for lib in (torch, ember):
        lib.manual_seed(3)
        w = lib.distributions.Wishart(lib.tensor([4.0, 5.0]), lib.eye(3, dtype=lib.float64) * 2)
        with pytest.warns(UserWarning, match="Singular sample detected"):
            s = w.rsample((2,))
        outs.append((s.numpy(), lib.randn(2).numpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-12)
    np.testing.assert_array_equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_values(param):
    def fn(lib, df, m, x):
        d = lib.distributions.Wishart(df, **{param: m})
        e = d.expand((3, 2))
        return d.log_prob(x), d.entropy(), d.mean, d.mode, d.variance, e.log_prob(x)

    m = _spd(3)
    if param == "scale_tril":
        m = np.linalg.cholesky(m)
    df = np.array([3.5, 5.0])
    check(fn, [df, m, _spd(3)], grad_fn=False, version=False, strides=False)
    check_raises(lambda lib: lib.distributions.Wishart(lib.tensor(4.0), lib.eye(2), lib.eye(2)), [])


def test_validate_sample_errors():
    for value in [np.zeros((2, 4)), np.zeros((3, 3))]:
        check_raises(
            lambda lib, v: lib.distributions.MultivariateNormal(
                lib.zeros(2, 3, dtype=lib.float64), lib.eye(3, dtype=lib.float64)
            ).log_prob(v),
            [value],
            match_message=True,
        )
    for lib in (torch, ember):
        d = lib.distributions.Normal(lib.tensor([0.0, 1.0]), 1.0)
        assert repr(d) == "Normal(loc: torch.Size([2]), scale: torch.Size([2]))"
        assert repr(lib.distributions.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"


# ------------------------------------------------------------------------- constraints


def _constraint_cases(C):
    return {
        "boolean": C.boolean,
        "one_hot": C.one_hot,
        "nonnegative_integer": C.nonnegative_integer,
        "positive_integer": C.positive_integer,
        "integer_interval": C.integer_interval(0, 3),
        "real": C.real,
        "real_vector": C.real_vector,
        "positive": C.positive,
        "nonnegative": C.nonnegative,
        "greater_than": C.greater_than(0.5),
        "greater_than_eq": C.greater_than_eq(0.5),
        "less_than": C.less_than(0.5),
        "unit_interval": C.unit_interval,
        "interval": C.interval(-1.0, 0.5),
        "half_open_interval": C.half_open_interval(-1.0, 0.5),
        "simplex": C.simplex,
        "lower_cholesky": C.lower_cholesky,
        "lower_triangular": C.lower_triangular,
        "corr_cholesky": C.corr_cholesky,
        "square": C.square,
        "symmetric": C.symmetric,
        "positive_definite": C.positive_definite,
        "positive_semidefinite": C.positive_semidefinite,
        "independent": C.independent(C.positive, 2),
        "multinomial": C.multinomial(4),
        "cat": C.cat([C.positive, C.interval(0.0, 1.0)], -1, [1, 2]),
        "stack": C.stack([C.positive, C.real, C.unit_interval], -1),
        "stack_vector": C.stack([C.simplex, C.simplex], -2),
        "mixture": C.MixtureSameFamilyConstraint(C.real_vector),
    }


def _constraint_values():
    v = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0, np.nan, 1.5])
    mats = [np.eye(3), np.tril(real(3, 3)), _spd(3), real(3, 3), -_spd(3), np.zeros((3, 3))]
    chol = np.linalg.cholesky(_spd(3))
    corr = chol / np.linalg.norm(chol, axis=-1, keepdims=True)
    mats.append(corr)
    return [
        v.reshape(3, 3),
        np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 1.0, 1.0]]),
        np.stack(mats),
        np.stack(mats)[:, :, :2],
        np.array([[[0.2, 0.8, 0.0], [0.5, 0.5, 0.0]], [[0.3, 0.3, 0.4], [1.0, 0.1, 0.0]]]),
    ]


@pytest.mark.parametrize("name", sorted(_constraint_cases(torch.distributions.constraints)))
def test_constraint_check(name):
    ec = _constraint_cases(ember.distributions.constraints)[name]
    tc = _constraint_cases(torch.distributions.constraints)[name]
    assert repr(ec) == repr(tc)
    assert ec.event_dim == tc.event_dim and ec.is_discrete == tc.is_discrete
    # the hierarchy among torch's class names (ember adds private helper bases)
    torch_names = [k.__name__ for k in type(tc).__mro__[:-1]]
    ember_names = [k.__name__ for k in type(ec).__mro__[:-1]]
    assert [n for n in ember_names if hasattr(torch.distributions.constraints, n)] == torch_names
    for v in _constraint_values():
        try:
            want = tc.check(torch.tensor(v))
        except Exception as exc:  # noqa: BLE001 - the class is what is compared
            with pytest.raises(type(exc)):
                ec.check(ember.tensor(v))
            continue
        got = ec.check(ember.tensor(v))
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f"{name} {v.shape}")


def test_dependent_constraints():
    for lib in (torch, ember):
        C = lib.distributions.constraints
        assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
        with pytest.raises(NotImplementedError):
            C.dependent.event_dim  # noqa: B018
        d = C.dependent(is_discrete=True, event_dim=1)
        assert d.is_discrete and d.event_dim == 1
        with pytest.raises(ValueError, match="Cannot determine validity"):
            d.check(lib.zeros(1))
        assert lib.distributions.Binomial.support.is_discrete
        assert lib.distributions.Uniform.support.event_dim == 0


# ------------------------------------------------------------------------- ContinuousBernoulli


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_continuous_bernoulli_regions(dtype):
    """Both sides of the band around 1/2 where the closed forms give way to Taylor series, and
    the tails; values and gradients of every closed form."""
    p = np.array([1e-4, 0.2, 0.4995, 0.5, 0.5005, 0.7, 0.9999], dtype=dtype)
    x = np.array([0.0, 0.3, 0.5, 0.7, 1.0, 0.25, 0.999], dtype=dtype)

    def fn(lib, p, x):
        d = lib.distributions.ContinuousBernoulli(probs=p)
        lib.manual_seed(2)
        return (
            d.log_prob(x),
            d.cdf(x),
            d.icdf(x),
            d.mean,
            d.variance,
            d.entropy(),
            d.rsample(),
            d._log_normalizer(d.logits),
        )

    # float32 just outside the band is ill-conditioned (1 - 2p cancels): ember writes
    # log|1 - 2p| as log1p(-2 min(p, 1 - p)), torch splits at 1/2; gradients agree to ~1e-3
    tol = {"atol": 1e-4, "rtol": 1e-4, "grad_rtol": 2e-3} if dtype == "float32" else {}
    check(fn, [p, x], grad_fn=False, version=False, strides=False, **tol)


def test_continuous_bernoulli_logits_and_expand():
    def fn(lib, logits, x):
        d = lib.distributions.ContinuousBernoulli(logits=logits).expand((3, 4))
        return d.log_prob(x), d.mean, d.probs

    check(fn, [real(4), unit(3, 4)], grad_fn=False, version=False, strides=False)
    check_raises(
        lambda lib: lib.distributions.ContinuousBernoulli(
            probs=lib.tensor([1.5]), validate_args=False
        ),
        [],
        match_message=True,
    )


def test_generalized_pareto_branches():
    """xi = 0 (exponential limit), xi = -1 (uniform), negative (bounded) and positive shapes."""
    xi = np.array([0.0, -1.0, -0.3, 0.4, 0.7, 1.2], dtype="float32")
    loc = np.array([0.0, 0.5, -1.0, 0.2, 0.0, 1.0], dtype="float32")
    scale = np.array([1.0, 2.0, 0.5, 1.5, 1.0, 0.7], dtype="float32")
    x = np.array([0.3, 1.0, -0.5, 1.0, 2.0, 3.0], dtype="float32")
    u = np.array([0.1, 0.5, 0.9, 0.3, 0.7, 0.2], dtype="float32")

    def fn(lib, loc, scale, xi, x, u):
        d = lib.distributions.GeneralizedPareto(loc, scale, xi, validate_args=False)
        lib.manual_seed(4)
        return (
            d.log_prob(x),
            d.log_survival_function(x),
            d.cdf(x),
            d.icdf(u),
            d.mean,
            d.variance,
            d.entropy(),
            d.rsample((2,)),
            d.support.upper_bound,
        )

    check(fn, [loc, scale, xi, x, u], grad_fn=False, version=False, strides=False, atol=1e-5)


# ------------------------------------------------------------------------- smaller families


def test_studentt_moment_regions():
    def fn(lib, df, loc, scale):
        d = lib.distributions.StudentT(df, loc, scale)
        return d.mean, d.variance, d.entropy(), d.log_prob(loc + 0.5)

    df = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 7.0])
    check(fn, [df, real(6), pos(6)], grad_fn=False, version=False, strides=False)


def test_folded_families():
    def fn(lib, s, x):
        D = lib.distributions
        out = []
        for d in (D.HalfNormal(s, validate_args=False), D.HalfCauchy(s, validate_args=False)):
            out += [d.log_prob(x), d.cdf(x.abs()), d.icdf(lib.full_like(s, 0.3)), d.entropy()]
            out += [d.mode, d.variance]
        return out

    check(fn, [pos(3), np.array([-0.5, 0.0, 1.5])], grad_fn=False, version=False, strides=False)
    for lib in (torch, ember):
        d = lib.distributions.HalfCauchy(lib.tensor([1.0, 2.0]), validate_args=False)
        assert d.log_prob(1.0).shape == (2,)
        with pytest.raises(ValueError, match="must be a Tensor"):
            lib.distributions.HalfCauchy(lib.tensor([1.0]), validate_args=True).log_prob(1.0)


def test_kumaraswamy_mode_as_torch():
    """torch's Kumaraswamy.mode is nan wherever concentration0 > 1 (its log1p(-b)); kept."""

    def fn(lib, a, b):
        d = lib.distributions.Kumaraswamy(a, b)
        return d.mode, d.mean, d.variance, d.entropy()

    a = np.array([2.0, 0.5, 3.0, 1.5])
    b = np.array([3.0, 2.0, 0.8, 0.9])
    check(fn, [a, b], grad_fn=False, version=False, strides=False)


def test_mixture_same_family_event_and_batch():
    def fn(lib, w, loc, scale, x):
        D = lib.distributions
        comps = D.Independent(D.Normal(loc, scale), 1)
        m = D.MixtureSameFamily(D.Categorical(probs=w), comps)
        e = m.expand((3, 2))
        return m.log_prob(x), m.mean, m.variance, e.log_prob(x)

    w = simplex(2, 4)
    check(
        fn,
        [w, real(2, 4, 3), pos(2, 4, 3), real(3, 2, 3)],
        grad_fn=False,
        version=False,
        strides=False,
    )

    def sample(lib, w, loc, scale):
        lib.manual_seed(8)
        D = lib.distributions
        comps = D.Independent(D.Normal(loc, scale), 1)
        return D.MixtureSameFamily(D.Categorical(probs=w), comps).sample((5,))

    check(sample, [simplex(4), real(4, 3), pos(4, 3)], grad=False, grad_fn=False, version=False)


def test_von_mises_values_and_samples():
    def fn(lib, loc, k, x):
        d = lib.distributions.VonMises(loc, k)
        lib.manual_seed(9)
        return d.log_prob(x), d.variance, d.sample((4,))

    k = np.array([1e-6, 0.5, 3.7, 3.8, 20.0])
    check(fn, [real(5), k, real(5)], grad_fn=False, version=False, strides=False)


def test_tril_vector_round_trip():
    """Valid sizes match torch; sizes that fit no triangle raise. (torch raises RuntimeError
    instead of ValueError for some of those, e.g. 2 entries at diag=1: its closed-form size
    rounds down and the fill fails; ember counts the triangle and raises the ValueError.)"""
    from ember.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix

    tu = torch.distributions.utils
    for m, d in [(6, 0), (3, -1), (6, -1), (10, 0), (1, 0), (0, 0), (8, 1), (1, -2), (3, -2)]:
        v = np.arange(float(m))
        t = tu.vec_to_tril_matrix(torch.tensor(v), d)
        e = vec_to_tril_matrix(ember.tensor(v), d)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
        if m:  # (a 0 x 0 matrix has no valid diag for the way back)
            back = tril_matrix_to_vec(e, d)
            np.testing.assert_array_equal(back.numpy(), tu.tril_matrix_to_vec(t, d).numpy())
    for m, d in [(5, 0), (12, 2), (2, 1)]:
        with pytest.raises(Exception):  # noqa: B017 - torch's class varies, see above
            tu.vec_to_tril_matrix(torch.zeros(m), d)
        with pytest.raises(ValueError, match="cannot be expressed"):
            vec_to_tril_matrix(ember.zeros(m), d)


def test_distribution_base_checks():
    """The base class's argument validation, expand guard and sample-shape checks."""
    for lib in (torch, ember):
        D = lib.distributions

        class NoTable(D.Distribution):
            pass

        with pytest.warns(UserWarning, match="does not define `arg_constraints`"):
            NoTable(validate_args=True)

        class MyNormal(D.Normal):
            def __init__(self, loc):
                super().__init__(loc, 1.0)

        with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
            MyNormal(lib.zeros(2)).expand((3, 2))
        with pytest.raises(ValueError, match="to satisfy the constraint GreaterThan"):
            D.Normal(lib.zeros(2), -lib.ones(2), validate_args=True)
        # a lazily derived parameter is not computed for validation
        d = D.Bernoulli(logits=lib.zeros(2), validate_args=True)
        assert "probs" not in d.__dict__
        e = D.Normal(lib.zeros(2), lib.ones(2)).expand((3, 2))
        assert tuple(e.loc.shape) == (3, 2) and e._validate_args == D.Normal._validate_args


@pytest.mark.parametrize(
    "make,good,bad",
    [
        (lambda D, t: D.Bernoulli(logits=t([0.3, -1.0])), [1.0, 0.0], [0.5, 1.0]),
        (lambda D, t: D.Binomial(5, logits=t([0.3, -1.0])), [2.0, 5.0], [6.0, 1.0]),
        (lambda D, t: D.ContinuousBernoulli(logits=t([0.3, -1.0])), [0.2, 0.9], [1.5, 0.1]),
        (
            lambda D, t: D.RelaxedBernoulli(t(0.5), logits=t([0.3, -1.0])),
            [0.2, 0.9],
            [-0.5, 0.1],
        ),
        (  # (its support is every real vector: nothing to reject)
            lambda D, t: D.relaxed_categorical.ExpRelaxedCategorical(
                t(0.5), logits=t([0.3, -1.0, 0.2])
            ),
            [-1.0, -0.7, -1.6],
            None,
        ),
    ],
)
def test_logits_families_log_prob_and_validation_as_torch(make, good, bad):
    # log_prob of the logits-parameterized families: values broadcast with the logits, and a
    # value outside the support raises torch's error when validating
    import torch
    import torch.distributions as TD

    import ember.distributions as ED

    for lib, D in ((ember, ED), (torch, TD)):
        d = make(D, lambda v, lib=lib: lib.tensor(v, dtype=lib.float64))
        lp = d.log_prob(lib.tensor(good, dtype=lib.float64)).numpy()
        if lib is ember:
            want = lp
        else:
            np.testing.assert_allclose(want, lp, rtol=1e-12)
        if bad is not None:
            with pytest.raises(ValueError, match="support"):
                d.log_prob(lib.tensor(bad, dtype=lib.float64))

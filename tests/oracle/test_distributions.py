"""Oracle tests for ember.distributions: values, gradients, shapes, reprs, errors vs torch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ---------------------------------------------------------------- Normal


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("meth", ["log_prob", "cdf"])
def test_normal_log_prob_cdf(dtype, meth):
    check(
        lambda lib, loc, scale, x: getattr(lib.distributions.Normal(loc, scale), meth)(x),
        [rand(4, 3, dtype=dtype), pos(4, 3, dtype=dtype), rand(2, 4, 3, dtype=dtype)],
    )


def test_normal_icdf_entropy_moments():
    loc, scale, u = rand(3), pos(3), probs(5, 3)
    check(lambda lib, m, s, v: lib.distributions.Normal(m, s).icdf(v), [loc, scale, u])
    for attr in ["entropy", "mean", "mode", "stddev", "variance"]:

        def fn(lib, m, s, attr=attr):
            out = getattr(lib.distributions.Normal(m, s), attr)
            return out() if callable(out) else out

        check(fn, [loc, scale])


def test_normal_scalar_params():
    for lib in (torch, ember):
        d = lib.distributions.Normal(0.0, 1.0)
        assert d.batch_shape == () and d.event_shape == ()
        assert tuple(d.sample().shape) == ()
        assert tuple(d.sample((2, 3)).shape) == (2, 3)
        assert d.loc.dtype == lib.float32
    assert repr(ember.distributions.Normal(0.0, 1.0)) == repr(torch.distributions.Normal(0.0, 1.0))
    check(lambda lib, x: lib.distributions.Normal(1.0, 2.0).log_prob(x), [rand(5)])


def test_normal_broadcast_and_repr():
    for lib in (torch, ember):
        d = lib.distributions.Normal(lib.zeros(3), 1.0)
        assert tuple(d.batch_shape) == (3,)
    e = ember.distributions.Normal(ember.zeros(2, 3), ember.ones(3))
    t = torch.distributions.Normal(torch.zeros(2, 3), torch.ones(3))
    assert repr(e) == repr(t)
    assert repr(e.support) == repr(t.support)
    assert {k: repr(v) for k, v in e.arg_constraints.items()} == {
        k: repr(v) for k, v in t.arg_constraints.items()
    }


def test_normal_sample_stats_and_rsample_grad():
    ember.manual_seed(0)
    loc = ember.tensor([1.0, -2.0], requires_grad=True)
    scale = ember.tensor([0.5, 3.0], requires_grad=True)
    d = ember.distributions.Normal(loc, scale)
    s = d.sample((20000,))
    assert s.shape == (20000, 2) and s.dtype == ember.float32 and not s.requires_grad
    np.testing.assert_allclose(s.mean(0).numpy(), [1.0, -2.0], atol=0.1)
    np.testing.assert_allclose(s.std(0).numpy(), [0.5, 3.0], rtol=0.05)
    r = d.rsample((7,))
    assert r.requires_grad and r.shape == (7, 2)
    eps = ((r - loc) / scale).detach()
    gl, gs = ember.autograd.grad(r.sum(), [loc, scale])
    np.testing.assert_allclose(gl.numpy(), [7.0, 7.0])
    np.testing.assert_allclose(gs.numpy(), eps.sum(0).numpy(), rtol=1e-5)
    assert d.has_rsample


def test_normal_expand():
    def fn(lib, m, s, x):
        d = lib.distributions.Normal(m, s).expand([4, 3])
        assert tuple(d.batch_shape) == (4, 3)
        assert tuple(d.sample((2,)).shape) == (2, 4, 3)
        return d.log_prob(x)

    check(fn, [rand(3), pos(3), rand(4, 3)])


def test_normal_validate_args_errors():
    check_raises(
        lambda lib, m, s: lib.distributions.Normal(m, s),
        [np.zeros(1, "float32"), -np.ones(1, "float32")],
        match_message=True,
    )
    check_raises(
        lambda lib, m, s: lib.distributions.Normal(m, s),
        [np.array([np.nan], "float32"), np.ones(1, "float32")],
        match_message=True,
    )
    # validate_args=False skips the check
    ember.distributions.Normal(ember.zeros(1), -ember.ones(1), validate_args=False)
    # value shape not broadcastable
    check_raises(
        lambda lib, m, s, x: lib.distributions.Normal(m, s).log_prob(x),
        [np.zeros(3, "float32"), np.ones(3, "float32"), np.zeros(2, "float32")],
        match_message=True,
    )
    check_raises(
        lambda lib: lib.distributions.Normal(lib.zeros(2), 1.0).log_prob(0.5),
        [],
        match_message=True,
    )


# ---------------------------------------------------------------- Bernoulli


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_bernoulli_values(param):
    p = probs(3, 4) if param == "probs" else rand(3, 4)
    x = (rand(2, 3, 4, dtype="bool")).astype("float32")
    check(
        lambda lib, p, x: lib.distributions.Bernoulli(**{param: p}).log_prob(x), [p, x], grad=True
    )
    for attr in ["entropy", "mean", "variance", "probs", "logits", "stddev"]:

        def fn(lib, p, attr=attr):
            out = getattr(lib.distributions.Bernoulli(**{param: p}), attr)
            return out() if callable(out) else out

        check(fn, [p])


def test_bernoulli_mode_support_sample_repr():
    p = np.array([0.2, 0.5, 0.8], "float32")
    check(lambda lib, p: lib.distributions.Bernoulli(p).mode, [p], grad=False)
    check(lambda lib, p: lib.distributions.Bernoulli(p).enumerate_support(), [p], grad=False)
    e = ember.distributions.Bernoulli(logits=ember.zeros(2))
    t = torch.distributions.Bernoulli(logits=torch.zeros(2))
    assert repr(e) == repr(t)
    assert repr(e.support) == repr(t.support)
    ember.manual_seed(0)
    s = ember.distributions.Bernoulli(ember.tensor([0.1, 0.9])).sample((20000,))
    assert s.shape == (20000, 2) and s.dtype == ember.float32
    np.testing.assert_allclose(s.mean(0).numpy(), [0.1, 0.9], atol=0.02)
    assert not ember.distributions.Bernoulli(0.3).has_rsample
    assert ember.distributions.Bernoulli(0.3).batch_shape == ()


def test_bernoulli_errors():
    check_raises(lambda lib: lib.distributions.Bernoulli(), [], match_message=True)
    check_raises(
        lambda lib: lib.distributions.Bernoulli(probs=0.5, logits=0.0), [], match_message=True
    )
    check_raises(
        lambda lib, p: lib.distributions.Bernoulli(p),
        [np.array([1.5], "float32")],
        match_message=True,
    )
    check_raises(
        lambda lib, p, x: lib.distributions.Bernoulli(p).log_prob(x),
        [np.array([0.5], "float32"), np.array([0.5], "float32")],
        match_message=True,
    )


# ---------------------------------------------------------------- Categorical


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_categorical_values(param):
    p = simplex(2, 5) if param == "probs" else rand(2, 5)
    x = np.array([[0, 4], [3, 1], [2, 2]], "int64")
    check(lambda lib, p: lib.distributions.Categorical(**{param: p}).log_prob(lib.tensor(x)), [p])
    for attr in ["entropy", "probs", "logits", "mean", "variance", "mode"]:

        def fn(lib, p, attr=attr):
            out = getattr(lib.distributions.Categorical(**{param: p}), attr)
            return out() if callable(out) else out

        check(fn, [p])


def test_categorical_shapes_sample_repr():
    e = ember.distributions.Categorical(probs=ember.tensor(simplex(4, 3)))
    t = torch.distributions.Categorical(probs=torch.tensor(simplex(4, 3)))
    assert repr(e) == repr(t)
    assert e.batch_shape == t.batch_shape and e.event_shape == t.event_shape
    assert repr(e.support) == repr(t.support)
    assert e.param_shape == t.param_shape
    assert e.enumerate_support().shape == t.enumerate_support().shape
    assert e.enumerate_support(expand=False).shape == t.enumerate_support(expand=False).shape
    ember.manual_seed(0)
    p = np.array([0.1, 0.2, 0.7], "float32")
    s = ember.distributions.Categorical(ember.tensor(p)).sample((30000,))
    assert s.shape == (30000,) and s.dtype == ember.int64
    np.testing.assert_allclose(np.bincount(s.numpy(), minlength=3) / 30000, p, atol=0.02)
    assert e.sample((5, 2)).shape == (5, 2, 4)
    assert e.expand([2, 4]).sample().shape == (2, 4)


def test_categorical_errors():
    check_raises(lambda lib: lib.distributions.Categorical(), [], match_message=True)
    check_raises(
        lambda lib, p: lib.distributions.Categorical(p),
        [np.float32(0.5) * np.ones((), "float32")],
        match_message=True,
    )
    check_raises(
        lambda lib, p: lib.distributions.Categorical(logits=p),
        [np.ones((), "float32")],
        match_message=True,
    )
    check_raises(
        lambda lib, p: lib.distributions.Categorical(p),
        [np.array([0.5, -0.5, 1.0], "float32")],
        match_message=True,
    )
    check_raises(
        lambda lib, p: lib.distributions.Categorical(p).log_prob(lib.tensor([3])),
        [np.array([0.5, 0.5, 0.0], "float32")],
        match_message=True,
    )


# ---------------------------------------------------------------- Uniform


def test_uniform_values():
    low = rand(4, low=-2, high=-1.8)
    high = rand(4, low=0.5, high=2)
    x = rand(3, 4, low=-1.7, high=0.4)
    for meth in ["log_prob", "cdf"]:
        check(
            lambda lib, lo, hi, v, meth=meth: getattr(lib.distributions.Uniform(lo, hi), meth)(v),
            [low, high, x],
        )
    check(lambda lib, lo, hi, v: lib.distributions.Uniform(lo, hi).icdf(v), [low, high, probs(4)])
    for attr in ["entropy", "mean", "mode", "stddev", "variance"]:

        def fn(lib, lo, hi, attr=attr):
            out = getattr(lib.distributions.Uniform(lo, hi), attr)
            return out() if callable(out) else out

        check(fn, [low, high])


def test_uniform_outside_support_no_validation():
    check(
        lambda lib, lo, hi, v: lib.distributions.Uniform(lo, hi, validate_args=False).log_prob(v),
        [np.zeros(3, "float32"), np.ones(3, "float32"), np.array([-1.0, 0.5, 1.0], "float32")],
    )


def test_uniform_sample_rsample_repr_errors():
    ember.manual_seed(0)
    lo = ember.tensor([0.0, -3.0], requires_grad=True)
    hi = ember.tensor([1.0, 5.0], requires_grad=True)
    d = ember.distributions.Uniform(lo, hi)
    s = d.sample((20000,))
    assert s.shape == (20000, 2) and not s.requires_grad
    assert bool(((s >= lo) & (s < hi)).all())
    np.testing.assert_allclose(s.mean(0).numpy(), [0.5, 1.0], atol=0.1)
    r = d.rsample((5,))
    u = ((r - lo) / (hi - lo)).detach()
    glo, ghi = ember.autograd.grad(r.sum(), [lo, hi])
    np.testing.assert_allclose(ghi.numpy(), u.sum(0).numpy(), rtol=1e-5)
    np.testing.assert_allclose(glo.numpy(), (1 - u).sum(0).numpy(), rtol=1e-5)
    assert repr(ember.distributions.Uniform(0.0, 2.0)) == repr(
        torch.distributions.Uniform(0.0, 2.0)
    )
    check_raises(lambda lib: lib.distributions.Uniform(1.0, 0.0), [], match_message=True)
    check_raises(
        lambda lib: lib.distributions.Uniform(0.0, 1.0).log_prob(lib.tensor(2.0)),
        [],
        match_message=True,
    )


# ---------------------------------------------------------------- KL


def test_kl_normal_normal():
    check(
        lambda lib, a, b, c, d: lib.distributions.kl_divergence(
            lib.distributions.Normal(a, b), lib.distributions.Normal(c, d)
        ),
        [
            rand(3, dtype="float64"),
            pos(3, dtype="float64"),
            rand(3, dtype="float64"),
            pos(3, dtype="float64"),
        ],
    )


@pytest.mark.parametrize("cls", ["Bernoulli", "Categorical"])
def test_kl_discrete(cls):
    mk = probs if cls == "Bernoulli" else simplex
    check(
        lambda lib, p, q: lib.distributions.kl_divergence(
            getattr(lib.distributions, cls)(p), getattr(lib.distributions, cls)(logits=q)
        ),
        [mk(2, 3), rand(2, 3)],
    )
    # zeros and ones give 0 and inf as torch
    z = (
        np.array([0.0, 1.0, 0.5], "float32")
        if cls == "Bernoulli"
        else np.array([[0.0, 1.0], [0.5, 0.5]], "float32")
    )
    w = (
        np.array([0.5, 1.0, 0.0], "float32")
        if cls == "Bernoulli"
        else np.array([[0.5, 0.5], [1.0, 0.0]], "float32")
    )
    check(
        lambda lib, p, q: lib.distributions.kl_divergence(
            getattr(lib.distributions, cls)(p), getattr(lib.distributions, cls)(q)
        ),
        [z, w],
        grad=False,
    )


def test_kl_uniform_uniform():
    check(
        lambda lib, a, b, c, d: lib.distributions.kl_divergence(
            lib.distributions.Uniform(a, b), lib.distributions.Uniform(c, d)
        ),
        [
            np.array([0.0, 0.0], "float32"),
            np.array([1.0, 1.0], "float32"),
            np.array([-1.0, 0.5], "float32"),
            np.array([2.0, 3.0], "float32"),
        ],
    )


def test_kl_registry():
    D = ember.distributions
    check_raises(
        lambda lib: lib.distributions.kl_divergence(
            lib.distributions.Categorical(lib.ones(2)), lib.distributions.Uniform(0.0, 1.0)
        ),
        [],
        match_message=True,
    )

    class MyNormal(D.Normal):
        pass

    # subclasses dispatch to the parent's KL, then to a newly registered one
    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)
    assert float(D.kl_divergence(p, q)) == pytest.approx(0.5)

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return ember.tensor(42.0)

    try:
        assert float(D.kl_divergence(p, q)) == 42.0
        assert float(D.kl_divergence(q, p)) == pytest.approx(0.5)
    finally:
        del D.kl._KL_REGISTRY[MyNormal, D.Normal]
        D.kl._KL_MEMOIZE.clear()


def test_distribution_base():
    D = ember.distributions
    assert issubclass(D.Normal, D.Distribution)
    d = D.Normal(ember.zeros(2), ember.ones(2))
    np.testing.assert_allclose(
        d.perplexity().numpy(),
        torch.distributions.Normal(0.0, 1.0).perplexity().item(),
        rtol=1e-6,
    )
    with pytest.raises(NotImplementedError):
        D.Distribution(validate_args=False).sample()
    assert D.constraints.is_dependent(D.Uniform.support)


# ---------------------------------------------------------------- broadcasting (hypothesis)

_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@settings(max_examples=15, deadline=None)
@given(loc_shape=_shapes, scale_shape=_shapes, sample_shape=_shapes)
def test_normal_laplace_broadcast_shapes(loc_shape, scale_shape, sample_shape):
    try:
        batch = np.broadcast_shapes(loc_shape, scale_shape)
    except ValueError:
        return
    loc, scale = rand(*loc_shape), pos(*scale_shape)
    x = rand(*(sample_shape + batch))
    for cls in ["Normal", "Laplace"]:
        check(
            lambda lib, m, s, v, cls=cls: getattr(lib.distributions, cls)(m, s).log_prob(v),
            [loc, scale, x],
        )
        d = getattr(ember.distributions, cls)(ember.tensor(loc), ember.tensor(scale))
        assert d.batch_shape == batch
        assert d.sample(sample_shape).shape == sample_shape + batch

# ruff: noqa: E501  (user code quoted verbatim)
"""User code found broken by probing with realistic programs (tutorial, recipe and forum
idioms), each fixed in ember: the op-level cases compare with torch through the oracle helper,
the snippets compare what a program prints under torch and ember."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oracle._user_code import check_snippet
from tests.oracle.helper import check, rand

# ------------------------------------------------------------------------------ embedding_bag

_W = rand(10, 3)
_IDX1 = np.array([1, 2, 4, 5, 4, 3, 2, 9, 7])
_OFF = np.array([0, 4, 4, 7])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_offsets(mode, padding_idx):
    # offsets with an empty bag; the grad_fn is EmbeddingBagBackward0 in every mode
    check(
        lambda lib, w, i, o: lib.nn.functional.embedding_bag(
            i, w, o, mode=mode, padding_idx=padding_idx
        ),
        [_W, _IDX1, _OFF],
    )


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_and_last_offset(mode):
    check(
        lambda lib, w, i: lib.nn.functional.embedding_bag(i, w, mode=mode),
        [_W, np.array([[1, 2, 3], [3, 3, 0]])],
    )
    check(
        lambda lib, w, i, o: lib.nn.functional.embedding_bag(
            i, w, o, mode=mode, include_last_offset=True
        ),
        [_W, _IDX1, np.array([0, 3, 5, 9])],
    )


def test_embedding_bag_per_sample_weights():
    check(
        lambda lib, w, i, o, p: lib.nn.functional.embedding_bag(
            i, w, o, mode="sum", per_sample_weights=p, padding_idx=4
        ),
        [_W, _IDX1, _OFF, rand(9)],
    )
    check(
        lambda lib, w, i, p: lib.nn.functional.embedding_bag(
            i, w, mode="sum", per_sample_weights=p
        ),
        [_W, np.array([[1, 2], [3, 4]]), rand(2, 2)],
    )


# ------------------------------------------------------------------------------ bfloat16 products

_BF16_PRODUCTS = {
    "mm": (lambda lib, a, b: lib.mm(a, b), [(3, 4), (4, 5)]),
    "matmul_batched": (lambda lib, a, b: a @ b, [(2, 3, 4), (4, 5)]),
    "matmul_mv": (lambda lib, a, b: lib.matmul(a, b), [(3, 4), (4,)]),
    "dot": (lambda lib, a, b: lib.dot(a, b), [(4,), (4,)]),
    "bmm": (lambda lib, a, b: lib.bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    "addmm": (lambda lib, c, a, b: lib.addmm(c, a, b), [(5,), (3, 4), (4, 5)]),
    "baddbmm": (lambda lib, c, a, b: lib.baddbmm(c, a, b), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    "addmv": (lambda lib, c, a, b: lib.addmv(c, a, b), [(3,), (3, 4), (4,)]),
    "einsum": (lambda lib, a, b: lib.einsum("bij,jk->bik", a, b), [(2, 3, 4), (4, 5)]),
    "linear": (lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [(2, 5, 4), (3, 4), (3,)]),
}


@pytest.mark.parametrize("name", sorted(_BF16_PRODUCTS))
def test_bfloat16_products_stay_bfloat16(name):
    # NumPy (ml_dtypes >= 0.5) multiplies bfloat16 matrices in float32; torch returns bfloat16
    fn, shapes = _BF16_PRODUCTS[name]
    check(fn, [rand(*s, dtype="bfloat16", low=-1, high=1) for s in shapes], strides=False)


# ------------------------------------------------------------------------------ distributions


def _tanh_normal(lib, loc, scale, a):
    # SAC's squashed Gaussian policy
    D = lib.distributions
    d = D.TransformedDistribution(D.Normal(loc, scale), [D.transforms.TanhTransform(cache_size=1)])
    return d.log_prob(a)


def _affine_sigmoid(lib, loc, scale, y):
    D = lib.distributions
    t = D.transforms
    d = D.TransformedDistribution(
        D.Normal(loc, scale), [t.AffineTransform(1.0, 2.0), t.SigmoidTransform()]
    )
    return d.log_prob(y), d.cdf(y), d.icdf(y), d.batch_shape, d.event_shape


def _affine_event(lib, loc, scale, y):
    D = lib.distributions
    d = D.TransformedDistribution(
        D.Normal(loc, scale), D.AffineTransform(loc * 0, scale, event_dim=1)
    )
    return d.log_prob(y), d.batch_shape, d.event_shape


def _lognormal(lib, loc, scale, x):
    d = lib.distributions.LogNormal(loc, scale)
    return d.log_prob(x), d.mean, d.variance, d.entropy(), d.mode, d.cdf(x), d.icdf(x * 0 + 0.3)


def _mixture(lib, logits, loc, scale, x):
    D = lib.distributions
    d = D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(loc, scale))
    return d.log_prob(x), d.mean, d.variance, d.cdf(x), d.batch_shape


def _mixture_mvn(lib, logits, loc, scale, x):
    D = lib.distributions
    d = D.MixtureSameFamily(D.Categorical(logits=logits), D.Independent(D.Normal(loc, scale), 1))
    return d.log_prob(x), d.mean, d.variance, d.event_shape, d.sample((4,)).shape


_DISTS = {
    "tanh_normal": (
        _tanh_normal,
        [rand(3, 2), rand(3, 2, low=0.5, high=2), rand(3, 2, low=-0.9, high=0.9)],
    ),
    "affine_sigmoid": (
        _affine_sigmoid,
        [rand(4), rand(4, low=0.5, high=2), rand(4, low=0.1, high=0.9)],
    ),
    "affine_event": (_affine_event, [rand(2, 3), rand(2, 3, low=0.5, high=2), rand(2, 3)]),
    "lognormal": (_lognormal, [rand(3), rand(3, low=0.5, high=2), rand(3, low=0.1, high=3)]),
    "mixture": (_mixture, [rand(5, 3), rand(5, 3), rand(5, 3, low=0.5, high=2), rand(5)]),
    "mixture_mvn": (_mixture_mvn, [rand(3), rand(3, 2), rand(3, 2, low=0.5, high=2), rand(4, 2)]),
}


def _binomial(lib, p, k):
    d = lib.distributions.Binomial(5, probs=p)
    return d.log_prob(k), d.mean, d.variance, d.mode, d.entropy(), d.sample((3,)).shape


def _binomial_logits(lib, logits, k):
    d = lib.distributions.Binomial(lib.tensor([3.0, 4.0, 5.0]), logits=logits)
    return d.log_prob(k), d.probs, d.batch_shape


def _geometric(lib, p, k):
    d = lib.distributions.Geometric(probs=p)
    return d.log_prob(k), d.mean, d.variance, d.entropy(), d.logits


def _multinomial(lib, logits, counts):
    d = lib.distributions.Multinomial(6, logits=logits)
    return d.log_prob(counts), d.mean, d.variance, d.entropy(), d.sample((2,)).sum(-1)


def _gumbel(lib, loc, scale, x):
    d = lib.distributions.Gumbel(loc, scale)
    return d.log_prob(x), d.mean, d.variance, d.entropy(), d.cdf(x), d.icdf(x.detach().sigmoid())


def _half_normal(lib, scale, x):
    d = lib.distributions.HalfNormal(scale)
    return d.log_prob(x), d.mean, d.variance, d.entropy(), d.cdf(x), d.icdf(x.detach().sigmoid())


def _cauchy(lib, loc, scale, x):
    d = lib.distributions.Cauchy(loc, scale)
    return d.log_prob(x), d.mean, d.variance, d.entropy(), d.cdf(x), d.icdf(x.detach().sigmoid())


def _kl_pairs(lib, a, b):
    D = lib.distributions
    kl = D.kl_divergence
    pa, pb = a.sigmoid(), b.sigmoid()
    return (
        kl(D.Binomial(5, probs=pa), D.Binomial(5, probs=pb)),
        kl(D.Binomial(lib.tensor([6.0, 5, 5]), probs=pa), D.Binomial(5, probs=pb)),
        kl(D.Geometric(pa), D.Geometric(pb)),
        kl(D.Gumbel(a, pb + 0.5), D.Gumbel(b, pa + 0.5)),
        kl(D.HalfNormal(pa + 0.5), D.HalfNormal(pb + 0.5)),
        kl(D.Cauchy(a, pa), D.Cauchy(b, pb)),
        kl(D.LogNormal(a, pa), D.LogNormal(b, pb)),
    )


_K = np.array([0.0, 1.0, 3.0, 5.0], dtype=np.float32)
_DISTS.update(
    {
        "binomial": (_binomial, [rand(4, low=0.1, high=0.9), _K]),
        "binomial_logits": (_binomial_logits, [rand(3), np.array([0.0, 2.0, 5.0], np.float32)]),
        "geometric": (_geometric, [rand(4, low=0.1, high=0.9), _K]),
        "multinomial": (
            _multinomial,
            [rand(2, 3), np.array([[1.0, 2.0, 3.0], [6.0, 0.0, 0.0]], np.float32)],
        ),
        "gumbel": (_gumbel, [rand(3), rand(3, low=0.5, high=2), rand(3)]),
        "half_normal": (_half_normal, [rand(3, low=0.5, high=2), rand(3, low=0.1, high=2)]),
        "cauchy": (_cauchy, [rand(3), rand(3, low=0.5, high=2), rand(3)]),
        "kl_pairs": (_kl_pairs, [rand(3), rand(3)]),
    }
)


@pytest.mark.parametrize("name", sorted(_DISTS))
def test_added_distributions(name):
    # TransformedDistribution and its transforms, LogNormal, MixtureSameFamily, Binomial,
    # Geometric, Multinomial, Gumbel, HalfNormal, Cauchy: missing from ember before
    fn, inputs = _DISTS[name]
    check(fn, inputs, grad_fn=False, strides=False)


# ------------------------------------------------------------------------------ linalg.eig


def _eig_phase_free(lib, a):
    # eigenvectors are defined up to a phase: compare their moduli
    L, V = lib.linalg.eig(a)
    return L, V.abs(), lib.linalg.eigvals(a)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_linalg_eig(dtype):
    check(_eig_phase_free, [rand(2, 3, 3, dtype=dtype)], strides=False)
    rot = np.array([[0.0, -2.0, 0.5], [1.0, 0.0, 0.0], [0.0, 0.3, 1.0]], dtype=dtype)
    check(_eig_phase_free, [rot], strides=False)


# ------------------------------------------------------------------------------ _foreach_*


def _foreach_ops(lib, a, b, c):
    xs, ys = [a, b], [b * 2, a + 1]
    out = [
        *lib._foreach_add(xs, ys, alpha=0.5),
        *lib._foreach_add(xs, 1.5),
        *lib._foreach_mul(xs, [2.0, 3.0]),
        *lib._foreach_sub(xs, ys),
        *lib._foreach_mul(xs, c.detach()),
        *lib._foreach_div(xs, ys),
        *lib._foreach_maximum(xs, 0.0),
        *lib._foreach_minimum(xs, ys),
        *lib._foreach_clamp_max(xs, 0.5),
        *lib._foreach_pow(xs, 2),
        *lib._foreach_sqrt(lib._foreach_abs(xs)),
        *lib._foreach_exp(xs),
        *lib._foreach_neg(xs),
        *lib._foreach_sigmoid(xs),
        *lib._foreach_addcmul(xs, ys, xs, value=0.3),
        *lib._foreach_addcdiv(xs, ys, lib._foreach_add(lib._foreach_abs(xs), 1), [1.0, 2.0]),
        *lib._foreach_lerp(xs, ys, 0.25),
        *lib._foreach_lerp(xs, ys, [0.1, 0.9]),
        *lib._foreach_norm(xs),
        *lib._foreach_norm(xs, 1),
        *lib._foreach_max(xs),
    ]
    return out


def test_foreach_out_of_place():
    check(_foreach_ops, [rand(3), rand(3), np.array(0.7, dtype=np.float32)], grad_fn=False)


# ------------------------------------------------------------------------------ torch.* additions


def test_spmm_and_deprecated_norms():
    check(lambda lib, a, b: lib.spmm(a, b), [rand(3, 4), rand(4, 2)])
    check(lambda lib, a: lib.frobenius_norm(a, (0, 1)), [rand(3, 4)], grad_fn=False)
    check(lambda lib, a: lib.nuclear_norm(a), [rand(3, 3, dtype="float64")], grad_fn=False)


def _pca_reconstruction(lib, a):
    # the estimates are randomized: the same seed draws the same test matrix in both
    lib.manual_seed(0)
    return (
        *_sign_free(*lib.pca_lowrank(a, q=3, niter=8)),
        *_sign_free(*lib.svd_lowrank(a, q=2, niter=8)),
        lib.pca_lowrank(a)[1].shape,
    )


def _sign_free(U, S, V):
    # singular vectors are defined up to the sign of each pair, which LAPACK builds choose
    return S, (U * S.unsqueeze(-2)) @ V.mT, U.abs(), V.abs()


def test_pca_and_svd_lowrank():
    check(_pca_reconstruction, [rand(8, 3, dtype="float64")], grad=False, grad_fn=False)


@pytest.mark.parametrize("shape", [(8, 3), (3, 8), (2, 5, 7)])
@pytest.mark.parametrize("q,niter", [(2, 2), (4, 0), (None, None)])
def test_svd_lowrank_draws_as_torch(shape, q, niter):
    def estimate(lib, a, m):
        lib.manual_seed(1)
        return (
            *_sign_free(*lib.svd_lowrank(a, q=q, niter=niter)),
            *_sign_free(*lib.svd_lowrank(a, q=2, M=m)),
        )

    data = [rand(*shape, dtype="float64"), rand(*shape, dtype="float64")]
    check(estimate, data, grad=False, grad_fn=False, atol=1e-9)


# ------------------------------------------------------------------------------ negative padding


@pytest.mark.parametrize(
    "pads", [(-1, -2), (-1, 2), (2, -3), (-1, 0, 1, -2), (0, 0, -1, -1), (-3, -3)]
)
def test_pad_negative_crops(pads):
    check(lambda lib, x: lib.nn.functional.pad(x, pads, value=0.5), [rand(3, 6)])


def test_pad_negative_too_large():
    from tests.oracle.helper import check_raises

    for pads in [(-7, 1), (-4, -3)]:
        check_raises(
            lambda lib, x, pads=pads: lib.nn.functional.pad(x, pads),
            [rand(1, 6)],
            match_message=True,
        )


SNIPPETS = {
    "compiler_and_backend_switches": """
        import torch._dynamo
        torch._dynamo.config.suppress_errors = True
        torch._dynamo.reset()
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        print(torch.compiler.is_compiling(), torch._dynamo.is_compiling(), torch.compiler.is_dynamo_compiling())

        @torch.compiler.disable
        def f(x):
            return x + 1

        @torch.compiler.disable(recursive=False)
        def g(x):
            return x * 2

        t = torch.ones(2)
        torch._dynamo.mark_dynamic(t, 0)
        print(f(t), g(t), torch.compiler.allow_in_graph(f) is f, torch._dynamo.config.suppress_errors)
        print(torch.backends.opt_einsum.is_available(), torch.backends.opt_einsum.enabled,
              torch.backends.opt_einsum.strategy, torch.backends.mkl.is_available() in (True, False))
        print(torch.cuda.get_arch_list(), type(torch.cuda.device(0)).__name__)
        try:
            with torch.cuda.device(0):
                pass
        except RuntimeError as e:
            print("RuntimeError", e)
        # global switches: put torch's back (allow_tf32 also sets its matmul precision)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch._dynamo.config.suppress_errors = False
        print(torch.get_float32_matmul_precision())
    """,
    "custom_function_node_repr": """
        class MyExp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, i):
                result = i.exp()
                ctx.save_for_backward(result)
                return result

            @staticmethod
            def backward(ctx, grad_output):
                (result,) = ctx.saved_tensors
                return grad_output * result

        y = MyExp.apply(torch.ones(2, requires_grad=True))
        print(y, y.grad_fn, y.grad_fn.next_functions, type(y.grad_fn).__name__)
    """,
    "module_to_empty": """
        m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
        w = m[0].weight
        r = m.to_empty(device="cpu")
        print(r is m, m[0].weight is w, m[0].weight.shape, m[1].running_mean.shape,
              type(m[0].weight).__name__, m[0].weight.requires_grad, m[1].num_batches_tracked.dtype)
        with torch.no_grad():
            for p in m.parameters():
                p.fill_(0.5)
        print(list(m.state_dict().keys()), m[0].weight)
    """,
    "copy_construct_warnings": """
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = torch.tensor(torch.ones(2))
            u = torch.ones(2).new_tensor(torch.ones(2))
        print([str(x.message).split(" (Triggered")[0] for x in w], t, u)
    """,
    "foreach_inplace_ema": """
        m = nn.Linear(3, 2)
        with torch.no_grad():
            for i, p in enumerate(m.parameters()):
                p.copy_(torch.arange(p.numel(), dtype=torch.float32).view_as(p) / 7 - i)
        ema = [p.detach().clone() for p in m.parameters()]
        params = [p.detach() for p in m.parameters()]
        with torch.no_grad():
            r = torch._foreach_mul_(ema, 0.9)
            torch._foreach_add_(ema, params, alpha=0.1)
            torch._foreach_lerp_(ema, params, 0.5)
            torch._foreach_addcmul_(ema, params, params, value=0.01)
            torch._foreach_sqrt_(torch._foreach_abs(ema))
            torch._foreach_clamp_min_(ema, -0.5)
        print(ema, r is ema, type(torch._foreach_add(ema, 1)).__name__)
        torch._foreach_zero_(ema)
        torch._foreach_copy_(ema, params)
        print(ema, torch._foreach_norm(params, 2))
        try:
            torch._foreach_mul_(list(m.parameters()), 2)
        except RuntimeError as e:
            print("RuntimeError", e)
    """,
    "stack_of_numpy_arrays": """
        for f in [lambda: torch.stack([np.ones(2), np.ones(2)]),
                  lambda: torch.cat([torch.ones(2), np.ones(2)]),
                  lambda: torch.stack([torch.ones(2), [1, 2]]),
                  lambda: torch.stack(torch.ones(2, 2)),
                  lambda: torch.cat(torch.ones(2, 2))]:
            try:
                f()
            except TypeError as e:
                print("TypeError", e)
        print(torch.stack([torch.from_numpy(a) for a in [np.ones(2), np.zeros(2)]]))
    """,
    "linalg_eig_api": """
        A = torch.tensor([[2.0, 1.0], [0.5, 3.0]])
        L, V = torch.linalg.eig(A)
        print(L, V.abs(), L.dtype, V.stride())
        L, V = torch.linalg.eig(torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=torch.float64))
        print(L, V.abs(), type(torch.linalg.eig(A)).__name__)
        print(torch.linalg.eigvals(torch.eye(3)), torch.linalg.eig(torch.eye(2)).eigenvalues.dtype)
        for bad in [torch.ones(2, 3), torch.ones(2, 2, dtype=torch.long), torch.ones(2, 2).half()]:
            try:
                torch.linalg.eig(bad)
            except (RuntimeError, NotImplementedError) as e:
                print(type(e).__name__, e)
    """,
    "deprecated_scalar_first_overloads": """
        # pre-1.5 optimizer code (BertAdam, old SGD/Adam copies) passes the scale first
        import warnings
        p = torch.ones(3)
        g = torch.tensor([0.5, -1.0, 2.0])
        exp_avg, exp_avg_sq = torch.zeros(3), torch.zeros(3)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for step in range(1, 3):
                exp_avg.mul_(0.9).add_(1 - 0.9, g)
                exp_avg_sq.mul_(0.999).addcmul_(1 - 0.999, g, g)
                denom = exp_avg_sq.sqrt().add_(1e-8)
                p.addcdiv_(-0.1, exp_avg, denom)
                p.data.add_(-0.01, g)
        print(p, exp_avg, exp_avg_sq, len(w), str(w[0].message).splitlines()[:2])
        print(torch.add(p, 2, g), p.sub(0.5, g), p.sub_(1, g), torch.addcmul(p, 0.5, g, g), p.addcdiv(2, g, g + 3))
        print(torch.ones(2).add_(torch.tensor(2.0), torch.ones(2)))
        for f in [lambda: torch.ones(2).add_(torch.ones(2), torch.ones(2)),
                  lambda: torch.ones(2).addcmul_(torch.ones(2), torch.ones(2), torch.ones(2))]:
            try:
                f()
            except TypeError:
                print("TypeError")
    """,
    "distribution_transforms_api": """
        from torch.distributions import Normal, TransformedDistribution
        from torch.distributions.transforms import ExpTransform, AffineTransform, ComposeTransform, TanhTransform, PowerTransform, AbsTransform, SoftmaxTransform
        t = ComposeTransform([AffineTransform(0.0, 2.0), ExpTransform()])
        x = torch.tensor([0.5, -1.0])
        y = t(x)
        print(y, t.inv(y), t.log_abs_det_jacobian(x, y), t.sign, t.bijective)
        print(t, t.inv, ExpTransform().inv.inv == ExpTransform(), t.domain, t.codomain)
        print(PowerTransform(torch.tensor(2.0))(torch.tensor([3.0])), AbsTransform()(x), SoftmaxTransform()(x))
        d = TransformedDistribution(Normal(torch.zeros(2), torch.ones(2)), [TanhTransform()])
        print(d.batch_shape, d.event_shape, d.support, d.has_rsample, d.rsample((5,)).shape, d.sample().abs().max() < 1)
        ln = torch.distributions.LogNormal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5]))
        print(ln, ln.support, ln.expand((3, 2)).batch_shape, ln.sample((4,)).min() > 0)
        mix = torch.distributions.MixtureSameFamily(torch.distributions.Categorical(torch.tensor([0.3, 0.7])), Normal(torch.tensor([-1.0, 1.0]), torch.tensor([0.5, 0.5])))
        print(mix, mix.sample((6,)).shape, mix.expand((2,)).batch_shape, mix.support)
        try:
            TransformedDistribution(Normal(0.0, 1.0), "exp")
        except ValueError as e:
            print("ValueError", e)
    """,
    "bfloat16_model": """
        m = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2)).to(torch.bfloat16)
        x = torch.ones(3, 4, dtype=torch.bfloat16)
        out = m(x)
        print(out.dtype, m[0].weight.dtype, out.shape)
        out.float().sum().backward()
        print(m[0].weight.grad.dtype)
        mha = nn.MultiheadAttention(4, 2, batch_first=True).to(torch.bfloat16)
        print(mha(x[None], x[None], x[None])[0].dtype)
    """,
    "numpy_functions_on_tensors": """
        t = torch.tensor([1.0, 2.0])
        for r in [np.exp(t), np.sqrt(t), np.add(t, 1), np.maximum(t, 1.5), np.argmax(t),
                  np.isnan(t), np.exp(torch.tensor(1.0)), np.log(torch.tensor([1, 2])),
                  np.clip(t, 0, 1.5), np.round(t, 1)]:
            print(type(r).__name__, r)
        r = np.exp(t)
        print(r.dtype, r.shape, r + 1)
    """,
    "embedding_bag_module_grad_fn": """
        eb = nn.EmbeddingBag(10, 3, mode="max")
        with torch.no_grad():
            eb.weight.copy_(torch.arange(30.).view(10, 3).sin())
        print(eb(torch.tensor([[1, 2], [3, 4]])))
        eb2 = nn.EmbeddingBag.from_pretrained(torch.arange(30.).view(10, 3).cos(), freeze=False, mode="sum")
        out = eb2(torch.tensor([0, 2, 3, 0]), torch.tensor([0, 2]), per_sample_weights=torch.tensor([1.0, 2.0, 0.5, 1.0]))
        print(out)
        out.sum().backward()
        print(eb2.weight.grad[:4])
    """,
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet(name):
    check_snippet(SNIPPETS[name])


# ------------------------------------------------------------------------------ jit warnings


def test_jit_deprecation_hidden_in_main_script(tmp_path):
    # torch warns from its own module, so Python's default filters hide the
    # DeprecationWarning from a user's script; ember's must be hidden the same way
    import subprocess
    import sys
    from pathlib import Path

    src = (
        "import {lib} as torch\n"
        "m = torch.jit.script(torch.nn.Linear(2, 2))\n"
        "t = torch.jit.trace(torch.nn.Linear(2, 2), torch.ones(1, 2))\n"
    )
    script = tmp_path / "s.py"
    root = str(Path(__file__).resolve().parents[2])
    for lib in ("torch", "ember"):
        script.write_text(src.replace("{lib}", lib))
        r = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, cwd=root, check=True
        )
        assert "DeprecationWarning" not in r.stderr, (lib, r.stderr)

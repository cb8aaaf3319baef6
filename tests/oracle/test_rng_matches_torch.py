"""torch's random streams: the same seed gives torch's numbers (ember/_torch_rng.py).

Integers, permutations, uniforms, Bernoulli masks and float32/half normals are bit for bit
torch's (torch's float32 normals come from its AVX2 kernel, emulated step by step); float64
normals of 16+ elements now and then differ in the last bit. Bernoulli masks (dropout) are
torch's on Intel CPUs too: torch 2.13 draws them from the same stream there, MKL or not.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle.helper import torch

pytestmark = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _np(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.detach().float().numpy()


def _enp(e):
    if e.dtype in (ember.float16, ember.bfloat16):
        e = e.float()
    return e.detach().numpy()


def _both(fn, seed=0):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    return _enp(fn(ember)), _np(fn(torch))


EXACT = {
    "rand": lambda L: L.rand(3, 5),
    "rand_f64": lambda L: L.rand(7, dtype=L.float64),
    "rand_f16": lambda L: L.rand(1000, dtype=L.float16),
    "rand_bf16": lambda L: L.rand(1000, dtype=L.bfloat16),
    "rand_complex": lambda L: L.view_as_real(L.rand(4, dtype=L.complex64)),
    "uniform_": lambda L: L.empty(100).uniform_(-0.3, 0.7),
    "uniform_f64": lambda L: L.empty(100, dtype=L.float64).uniform_(-2.5, 7.0),
    "uniform_f16_wraps_to_low": lambda L: L.empty(20000, dtype=L.float16).uniform_(2.0, 2.5),
    "randn_small": lambda L: L.randn(2, 5),
    "randn_small_twice_uses_the_cache": lambda L: L.cat([L.randn(3), L.randn(3), L.randn(1)]),
    "randn_f64": lambda L: L.randn(1000, dtype=L.float64)[:64],
    "normal_small": lambda L: L.empty(7).normal_(0.5, 2.0),
    "randn": lambda L: L.randn(64, 37),
    "randn_tail_redrawn": lambda L: L.randn(33),
    "randn_large": lambda L: L.randn(100_000),
    "normal_": lambda L: L.empty(100).normal_(0.5, 2.0),
    "normal_tensors": lambda L: L.normal(L.zeros(40), L.arange(1.0, 41.0)),
    "embedding_init": lambda L: L.nn.Embedding(10, 4).weight,
    "trunc_normal": lambda L: L.nn.init.trunc_normal_(L.empty(30, 40)),
    "trunc_normal_rejection": lambda L: L.nn.init.trunc_normal_(L.empty(30, 40), 0, 1, 2, 4),
    "randn_complex": lambda L: L.view_as_real(L.randn(20, dtype=L.complex64)),
    "randn_f16": lambda L: L.randn(100, dtype=L.float16),
    "randn_bf16": lambda L: L.randn(100, dtype=L.bfloat16),
    "randint": lambda L: L.randint(-5, 5, (4, 6)),
    "randint_wide": lambda L: L.randint(0, 2**40, (10,)),
    "randint_like": lambda L: L.randint_like(L.zeros(3, 3), 10),
    "randperm": lambda L: L.randperm(1000),
    "randperm_generator": lambda L: L.randperm(20, generator=L.Generator().manual_seed(7)),
    "random_int64": lambda L: L.empty(6, dtype=L.int64).random_(),
    "random_uint8": lambda L: L.empty(6, dtype=L.uint8).random_(),
    "random_float": lambda L: L.empty(6).random_(),
    "random_to": lambda L: L.empty(6, dtype=L.int32).random_(100),
    "bernoulli_p_tensor": lambda L: L.bernoulli(L.linspace(0, 1, 300)),
    "bernoulli_p_f64": lambda L: L.bernoulli(L.full((300,), 0.3, dtype=L.float64)),
    "multinomial": lambda L: L.multinomial(L.tensor([0.1, 0.2, 0.3, 0.4]), 3),
    "multinomial_rows": lambda L: L.multinomial(L.rand(5, 9), 4),
    "multinomial_replacement": lambda L: L.multinomial(L.rand(3, 6), 30, replacement=True),
    "categorical": lambda L: L.distributions.Categorical(probs=L.tensor([0.2, 0.3, 0.5])).sample(
        (20,)
    ),
    "exponential_": lambda L: L.empty(50).exponential_(3.0),
    "poisson": lambda L: L.poisson(L.tensor([0.0, 0.5, 4.0, 13.0, 100.0] * 4)),
    "poisson_distribution": lambda L: L.distributions.Poisson(L.tensor(4.0)).sample((8,)),
    "binomial": lambda L: L.binomial(
        L.tensor([0.0, 5.0, 20.0, 100.0, 1000.0, 1000.0, 37.0] * 3),
        L.tensor([0.3, 0.3, 0.6, 0.8, 0.01, 0.99, 0.27] * 3),
    ),
    "binomial_distribution": lambda L: L.distributions.Binomial(50, L.tensor(0.4)).sample((6,)),
    "standard_gamma_f64": lambda L: L.distributions.Gamma(
        L.tensor([0.3, 1.0, 4.0, 20.0], dtype=L.float64), L.tensor(1.0, dtype=L.float64)
    ).sample((5,)),
    "dirichlet": lambda L: L.distributions.Dirichlet(L.tensor([0.5, 1.0, 3.0])).sample((4,)),
    "beta": lambda L: L.distributions.Beta(L.tensor(2.0), L.tensor(3.0)).sample((6,)),
    "cauchy_": lambda L: L.empty(20).cauchy_(1.0, 2.0),
    "log_normal_": lambda L: L.empty(20).log_normal_(0.5, 0.7),
    "geometric_": lambda L: L.empty(20).geometric_(0.3),
    "rrelu": lambda L: L.nn.RReLU()(L.randn(300)),
    "sparse_init": lambda L: L.nn.init.sparse_(L.empty(10, 6), 0.3),
    # torch fills a permuted tensor in memory order; a non-contiguous one's normals one by one
    "uniform_transposed": lambda L: L.empty(6, 5).t().uniform_(),
    "normal_transposed": lambda L: L.empty(6, 5).t().normal_(),
    "normal_slice": lambda L: L.empty(60, 50)[:, :30].normal_(),
    "random_transposed": lambda L: L.empty(6, 5, dtype=L.int64).t().random_(0, 100),
    "kaiming_transposed": lambda L: L.nn.init.kaiming_uniform_(L.empty(6, 5).t()),
    "dropout_permuted": lambda L: L.nn.functional.dropout(L.ones(2, 3, 4).permute(2, 0, 1)),
    "linear_init": lambda L: L.nn.utils.parameters_to_vector(L.nn.Linear(20, 30).parameters()),
    "conv_init": lambda L: L.nn.utils.parameters_to_vector(L.nn.Conv2d(3, 8, 3).parameters()),
    "lstm_init": lambda L: L.nn.utils.parameters_to_vector(L.nn.LSTM(10, 20, 2).parameters()),
    "xavier_uniform": lambda L: L.nn.init.xavier_uniform_(L.empty(30, 40)),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_bit_for_bit(name):
    e, t = _both(EXACT[name])
    assert e.shape == t.shape
    np.testing.assert_array_equal(e, t)


CLOSE = {
    # QR in LAPACK's float32 (NumPy's and torch's LAPACK builds differ in the last bits)
    "orthogonal": lambda L: L.nn.init.orthogonal_(L.empty(6, 4)),
    # float64 normals of 16+ elements: torch calls the C library's log/sin/cos, ember NumPy's
    "kaiming_normal_f64": lambda L: L.nn.init.kaiming_normal_(L.empty(30, 40, dtype=L.float64)),
    "randn_f64_large": lambda L: L.randn(100_000, dtype=L.float64),
    # the same dropout masks; the layers' float arithmetic rounds a little differently
    "transformer_layer_training": lambda L: L.nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.5, batch_first=True
    )(L.randn(2, 3, 8)),
    "lstm_packed_dropout": lambda L: (
        L.nn.LSTM(4, 3, 2, dropout=0.5, bidirectional=True)(
            L.nn.utils.rnn.pack_padded_sequence(L.randn(5, 2, 4), L.tensor([5, 3]))
        )[0].data
    ),
}


@pytest.mark.parametrize("name", sorted(CLOSE))
def test_within_a_few_ulps(name):
    e, t = _both(CLOSE[name])
    assert e.shape == t.shape
    np.testing.assert_allclose(e, t, rtol=2e-6, atol=2e-6)


def test_dropout_masks_and_scalar_bernoulli():
    e, t = _both(lambda L: L.nn.functional.dropout(L.ones(1000), 0.3))
    np.testing.assert_array_equal(e, t)
    e, t = _both(lambda L: L.empty(1000).bernoulli_(0.25))
    np.testing.assert_array_equal(e, t)


def test_rng_state_is_torch_state():
    for seed in (0, 3, 2**40 + 5):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        ember.rand(5)
        torch.rand(5)
        ember.randn(3)  # leaves a cached Box-Muller sample
        torch.randn(3)
        e, t = ember.get_rng_state().numpy().tobytes(), torch.get_rng_state().numpy().tobytes()
        assert e == t
    # states travel both ways
    torch.manual_seed(11)
    torch.randn(1)
    ember.set_rng_state(ember.from_numpy(torch.get_rng_state().numpy()))
    np.testing.assert_array_equal(ember.randn(9).numpy(), torch.randn(9).numpy())
    ember.manual_seed(12)
    torch.set_rng_state(torch.from_numpy(ember.get_rng_state().numpy()))
    np.testing.assert_array_equal(ember.rand(9).numpy(), torch.rand(9).numpy())
    g, h = ember.Generator(), torch.Generator()
    assert g.get_state().numpy().tobytes() == h.get_state().numpy().tobytes()


def test_data_pipeline_orders_match():
    out = []
    for L in (ember, torch):
        L.manual_seed(0)
        ds = L.utils.data.TensorDataset(L.arange(20))
        loader = L.utils.data.DataLoader(ds, batch_size=6, shuffle=True)
        order = [b[0].tolist() for b in loader]
        parts = [list(p) for p in L.utils.data.random_split(range(10), [7, 3])]
        weighted = list(L.utils.data.WeightedRandomSampler([0.1, 0.9, 0.5], 8))
        out.append((order, parts, weighted))
    assert out[0] == out[1]


def test_a_seeded_training_run_matches():
    # same seed: same initial weights, same batches, same dropout masks
    losses = []
    for L in (ember, torch):
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Linear(8, 16), L.nn.Tanh(), L.nn.Linear(16, 3))
        opt = L.optim.SGD(model.parameters(), lr=0.1)
        x, y = L.rand(32, 8), L.randint(0, 3, (32,))
        run = []
        for _ in range(5):
            opt.zero_grad()
            loss = L.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.Linear(5, 3),
        lambda nn: nn.Linear(0, 3),  # fan_in 0: the bias still draws, from U(0, 0)
        lambda nn: nn.Linear(4, 2, bias=False),
        lambda nn: nn.Conv2d(2, 3, 3),
        lambda nn: nn.Conv1d(0, 2, 2),  # the same for convolutions (ember's skipped the draw)
        lambda nn: nn.ConvTranspose2d(3, 2, (2, 1), groups=1),
    ],
)
def test_layer_default_init_matches(make):
    torch.manual_seed(11)
    ember.manual_seed(11)
    t, e = make(torch.nn), make(ember.nn)
    after_t, after_e = torch.rand(2), ember.rand(2)  # the generators advanced alike
    np.testing.assert_array_equal(e.weight.detach().numpy(), t.weight.detach().numpy())
    if t.bias is not None:
        np.testing.assert_array_equal(e.bias.detach().numpy(), t.bias.detach().numpy())
    np.testing.assert_array_equal(after_e.numpy(), after_t.numpy())

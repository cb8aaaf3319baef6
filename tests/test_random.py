"""Tests for ember.random: generators, state round trips and the array-level samplers."""

import copy
import os
import pickle
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import ember.random as er
from ember.random import Generator

BF16 = np.dtype(ml_dtypes.bfloat16)


def gen(seed=0):
    return Generator().manual_seed(seed)


# Every sampler, as a function of a generator, returning an ndarray.
SAMPLERS = {
    "uniform_f32": lambda g: g._uniform((50,), -2.0, 3.0, np.float32),
    "uniform_f64": lambda g: g._uniform((50,), 0.0, 1.0, np.float64),
    "uniform_f16": lambda g: g._uniform((50,), 0.0, 1.0, np.float16),
    "uniform_bf16": lambda g: g._uniform((50,), 0.0, 1.0, BF16),
    "uniform_c64": lambda g: g._uniform((50,), 0.0, 1.0, np.complex64),
    "normal": lambda g: g._normal((50,), 1.0, 2.0, np.float32),
    "normal_arrays": lambda g: g._normal(None, np.arange(5.0), np.ones((3, 1)), np.float64),
    "normal_c128": lambda g: g._normal((50,), 0.0, 1.0, np.complex128),
    "randint": lambda g: g._randint(-5, 17, (50,), np.int64),
    "randint_u8": lambda g: g._randint(0, 256, (50,), np.uint8),
    "randperm": lambda g: g._randperm(50, np.int64),
    "bernoulli": lambda g: g._bernoulli(0.3, (50,), np.float32),
    "bernoulli_array": lambda g: g._bernoulli(np.linspace(0, 1, 50), None, np.int64),
    "multinomial": lambda g: g._multinomial(np.ones((4, 10)), 5, False),
    "multinomial_repl": lambda g: g._multinomial(np.ones((4, 10)), 30, True),
    "exponential": lambda g: g._exponential((50,), 2.0, np.float32),
    "geometric": lambda g: g._geometric((50,), 0.3, np.int64),
    "cauchy": lambda g: g._cauchy((50,), 0.0, 1.0, np.float64),
    "log_normal": lambda g: g._log_normal((50,), 0.0, 1.0, np.float32),
}


# ---------------------------------------------------------------------------
# seeding
# ---------------------------------------------------------------------------


def test_import_does_not_import_torch():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    code = "import sys, ember.random; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_same_seed_same_numbers(name):
    draw = SAMPLERS[name]
    a, b = draw(gen(1234)), draw(gen(1234))
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)
    # a second draw from the same generator continues the stream deterministically
    g1, g2 = gen(99), gen(99)
    draw(g1)
    draw(g2)
    np.testing.assert_array_equal(draw(g1), draw(g2))


@pytest.mark.parametrize("name", ["uniform_f64", "normal", "randint", "randperm", "multinomial"])
def test_different_seeds_differ(name):
    draw = SAMPLERS[name]
    assert not np.array_equal(draw(gen(1)), draw(gen(2)))


def test_manual_seed_returns_generator():
    g = Generator()
    assert g.manual_seed(5) is g
    assert er.manual_seed(5) is er.default_generator
    assert er.initial_seed() == 5
    assert isinstance(er.default_generator, Generator)


def test_fresh_generator_default_seed():
    g1, g2 = Generator(), Generator()
    assert g1.initial_seed() == 67280421310721
    np.testing.assert_array_equal(
        g1._uniform((10,), 0, 1, np.float64), g2._uniform((10,), 0, 1, np.float64)
    )
    np.testing.assert_array_equal(
        Generator()._normal((5,), 0, 1, np.float64),
        gen(67280421310721)._normal((5,), 0, 1, np.float64),
    )


@pytest.mark.parametrize(
    ("seed", "expected"),
    [(0, 0), (-1, 2**64 - 1), (-(2**63), 2**63), (2**63, 2**63), (2**64 - 1, 2**64 - 1)],
)
def test_seed_range_and_negative_mapping(seed, expected):
    g = gen(seed)
    assert g.initial_seed() == expected
    np.testing.assert_array_equal(
        g._uniform((5,), 0, 1, np.float64), gen(expected)._uniform((5,), 0, 1, np.float64)
    )


@pytest.mark.parametrize(
    ("seed", "exc", "match"),
    [
        (2**64, ValueError, "Overflow when unpacking long long"),
        (-(2**63) - 1, ValueError, "Overflow when unpacking long long"),
        (1.5, RuntimeError, "manual_seed expected a long, but got float"),
        ("a", RuntimeError, "manual_seed expected a long, but got str"),
        (True, RuntimeError, "manual_seed expected a long, but got bool"),
        (None, RuntimeError, "manual_seed expected a long, but got NoneType"),
        (np.int64(3), TypeError, "an integer is required"),
    ],
)
def test_bad_seed_errors(seed, exc, match):
    with pytest.raises(exc, match=match):
        Generator().manual_seed(seed)


BAD_SEEDS = [2**64, -(2**63) - 1, 2**70, 1.5, "a", "3", True, None, np.int64(3)]


@pytest.mark.parametrize("seed", BAD_SEEDS, ids=repr)
def test_bad_seed_errors_match_torch(seed):
    torch = pytest.importorskip("torch")

    def outcome(fn):
        try:
            return ("ok", fn().initial_seed())
        except Exception as e:  # noqa: BLE001 - comparing whatever is raised
            return (type(e), str(e))

    assert outcome(lambda: Generator().manual_seed(seed)) == outcome(
        lambda: torch.Generator().manual_seed(seed)
    )
    # module-level manual_seed converts with int() first, like torch.manual_seed
    saved = er.default_generator._get_state_bytes()
    t_saved = torch.get_rng_state()
    try:
        mine = outcome(lambda: er.manual_seed(seed))
        theirs = outcome(lambda: torch.manual_seed(seed))
    finally:
        er.default_generator._set_state_bytes(saved)
        torch.set_rng_state(t_saved)
    assert mine[0] == theirs[0]
    if mine[0] == "ok":
        assert mine == theirs


def test_default_seed_matches_torch():
    torch = pytest.importorskip("torch")
    assert Generator().initial_seed() == torch.Generator().initial_seed()


def test_seed_is_nondeterministic():
    g = Generator()
    s1 = g.seed()
    assert isinstance(s1, int)
    assert 0 <= s1 < 2**64
    assert g.initial_seed() == s1
    s2 = g.seed()
    assert s1 != s2
    a = g._uniform((4,), 0, 1, np.float64)
    np.testing.assert_array_equal(a, gen(s2)._uniform((4,), 0, 1, np.float64))
    saved = er.default_generator._get_state_bytes()
    try:
        s3 = er.seed()
        assert er.initial_seed() == s3
    finally:
        er.default_generator._set_state_bytes(saved)


def test_device():
    assert str(Generator().device) == "cpu"
    assert str(Generator("cpu:0").device) == "cpu"
    assert str(Generator(device="cpu").device) == "cpu"
    with pytest.raises(RuntimeError):
        Generator("cuda")
    with pytest.raises(RuntimeError):
        Generator("meta")


# ---------------------------------------------------------------------------
# state
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_state_round_trip(name):
    draw = SAMPLERS[name]
    g = gen(7)
    draw(g)
    state = g._get_state_bytes()
    a = draw(g)
    g._set_state_bytes(state)
    np.testing.assert_array_equal(draw(g), a)
    # and into another generator
    h = gen(12345)
    h._set_state_bytes(state)
    np.testing.assert_array_equal(draw(h), a)
    assert h.initial_seed() == 7


def test_state_layout():
    # torch's CPUGeneratorImplState: seed, left, seeded, next, 624 words as uint64, ...
    g = gen(-1)
    state = g._get_state_bytes()
    assert isinstance(state, bytes)
    assert len(state) == 5056
    seed, left, seeded, nxt = struct.unpack_from("<QiiQ", state, 0)
    assert (seed, left, seeded, nxt) == (2**64 - 1, 1, 1, 0)
    words = np.frombuffer(state, dtype="<u8", count=624, offset=24)
    np.testing.assert_array_equal(words, g._bitgen.state["state"]["key"])
    g._uniform((3,), 0, 1, np.float32)  # three words used
    assert struct.unpack_from("<QiiQ", g._get_state_bytes(), 0)[1:] == (622, 1, 3)
    # same seed, same bytes
    assert gen(-1)._get_state_bytes() == state
    # ndarray input (any shape) is accepted
    h = Generator()
    h._set_state_bytes(np.frombuffer(state, dtype=np.uint8).reshape(2, 2528))
    assert h._get_state_bytes() == state


def test_state_keeps_the_cached_normal():
    g = gen(3)
    g._normal((3,), 0, 1, np.float64)  # Box-Muller pairs: the fourth value waits in the cache
    state = g._get_state_bytes()
    a = g._normal((5,), 0, 1, np.float64)
    h = gen(0)
    h._set_state_bytes(state)
    np.testing.assert_array_equal(h._normal((5,), 0, 1, np.float64), a)


def test_bad_state_bytes():
    g = gen(1)
    good = g._get_state_bytes()
    with pytest.raises(
        RuntimeError,
        match="Expected a CPUGeneratorImplState of size 5056 but found the input RNG state "
        "size to be 3",
    ):
        g._set_state_bytes(b"abc")
    bad_left = bytearray(good)
    bad_left[8:12] = (0).to_bytes(4, "little")
    with pytest.raises(RuntimeError, match="left"):
        g._set_state_bytes(bytes(bad_left))
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g._set_state_bytes(np.zeros(5056, dtype=np.float32))
    # a failed set_state leaves the generator untouched
    assert g._get_state_bytes() == good


def test_pickle_and_deepcopy():
    g = gen(11)
    g._normal((3,), 0, 1, np.float64)
    for h in (copy.deepcopy(g), pickle.loads(pickle.dumps(g))):
        assert h is not g
        assert h.initial_seed() == 11
        np.testing.assert_array_equal(
            h._normal((5,), 0, 1, np.float64), copy.deepcopy(g)._normal((5,), 0, 1, np.float64)
        )


def test_fork_rng_restores():
    g = er.default_generator
    er.manual_seed(42)
    before = g._uniform((5,), 0, 1, np.float64)
    er.manual_seed(42)
    with er.fork_rng():
        inside = g._uniform((5,), 0, 1, np.float64)
        g._normal((100,), 0, 1, np.float64)
        er.manual_seed(1)
    np.testing.assert_array_equal(inside, before)
    assert er.initial_seed() == 42
    np.testing.assert_array_equal(g._uniform((5,), 0, 1, np.float64), before)


def test_fork_rng_restores_on_exception_and_disabled():
    g = er.default_generator
    er.manual_seed(8)
    state = g._get_state_bytes()
    with pytest.raises(ValueError, match="boom"), er.fork_rng(devices=[]):
        g._randint(0, 10, (10,), np.int64)
        raise ValueError("boom")
    assert g._get_state_bytes() == state
    with er.fork_rng(enabled=False):
        g._randint(0, 10, (10,), np.int64)
    assert g._get_state_bytes() != state


def test_get_set_state_tensor():
    tensor_mod = pytest.importorskip("ember._core.tensor")
    Tensor = tensor_mod.Tensor
    wrap = getattr(Tensor, "_wrap", None) or tensor_mod._wrap
    g = gen(5)
    st = g.get_state()
    assert isinstance(st, Tensor)
    assert st._data.dtype == np.uint8
    assert st._data.shape == (5056,)
    a = g._normal((4,), 0, 1, np.float64)
    g.manual_seed(6)
    assert g.set_state(st) is g
    assert g.initial_seed() == 5
    np.testing.assert_array_equal(g._normal((4,), 0, 1, np.float64), a)
    with pytest.raises(TypeError, match="expected a torch.ByteTensor, but got list"):
        g.set_state([1, 2])
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(wrap(np.zeros(5056, dtype=np.float32)))
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 5056"):
        g.set_state(wrap(np.zeros(3, dtype=np.uint8)))
    with pytest.raises(RuntimeError, match="left"):
        g.set_state(wrap(np.zeros(5056, dtype=np.uint8)))


def test_get_set_rng_state_tensor():
    pytest.importorskip("ember._core.tensor")
    er.manual_seed(9)
    st = er.get_rng_state()
    a = er.default_generator._uniform((3,), 0, 1, np.float64)
    er.set_rng_state(st)
    np.testing.assert_array_equal(er.default_generator._uniform((3,), 0, 1, np.float64), a)
    before = er.get_rng_state()._data.copy()
    with er.fork_rng():
        er.manual_seed(0)
        assert not np.array_equal(er.get_rng_state()._data, before)
    np.testing.assert_array_equal(er.get_rng_state()._data, before)


# ---------------------------------------------------------------------------
# uniform / normal
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32, np.float64])
@pytest.mark.parametrize(("low", "high"), [(0.0, 1.0), (-3.0, 0.1), (2.0, 2.5)])
def test_uniform_range(dt, low, high):
    x = gen(0)._uniform((200_000,), low, high, dt)
    assert x.dtype == np.dtype(dt)
    xf = x.astype(np.float64)
    assert xf.min() >= np.float64(np.asarray(low).astype(dt))
    assert xf.max() < high
    assert abs(xf.mean() - (low + high) / 2) < 0.01 * (high - low) + 0.01


@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32])
def test_uniform_never_returns_high(dt):
    # torch turns a value that rounds up to ``high`` into ``low``
    z = gen(0)._uniform((200_000,), 0.0, 1.0, dt).astype(np.float64)
    assert z.max() < 1.0
    y = gen(0)._uniform((200_000,), 0.0, 0.1, dt).astype(np.float64)
    assert (y < 0.1).all()


def test_uniform_low_equals_high():
    np.testing.assert_array_equal(gen()._uniform((3,), 1.0, 1.0, np.float32), [1, 1, 1])


def test_uniform_complex():
    x = gen()._uniform((10_000,), 1.0, 2.0, np.complex64)
    assert x.dtype == np.complex64
    for part in (x.real, x.imag):
        assert part.min() >= 1.0
        assert part.max() < 2.0
    assert not np.array_equal(x.real, x.imag)


def test_uniform_shapes():
    g = gen()
    assert g._uniform((), 0, 1, np.float32).shape == ()
    assert isinstance(g._uniform((), 0, 1, np.float32), np.ndarray)
    assert g._uniform((2, 0, 3), 0, 1, np.float32).shape == (2, 0, 3)
    assert g._uniform(4, 0, 1, np.float32).shape == (4,)


def test_normal_moments():
    x = gen(0)._normal((100_000,), 0.0, 1.0, np.float64)
    assert abs(x.mean()) < 0.01
    assert abs(x.std() - 1.0) < 0.01
    y = gen(1)._normal((100_000,), 3.0, 2.0, np.float32)
    assert y.dtype == np.float32
    assert abs(y.mean() - 3.0) < 0.02
    assert abs(y.std() - 2.0) < 0.02


@pytest.mark.parametrize("dt", [np.float16, BF16])
def test_normal_half_dtypes(dt):
    x = gen(0)._normal((100_000,), 0.0, 1.0, dt)
    assert x.dtype == np.dtype(dt)
    xf = x.astype(np.float64)
    assert abs(xf.mean()) < 0.02
    assert abs(xf.std() - 1.0) < 0.02


def test_normal_broadcast_params():
    mean = np.array([0.0, 10.0, -10.0])
    std = np.array([[1.0], [0.5]])
    g = gen(0)
    x = g._normal(None, mean, std, np.float64)
    assert x.shape == (2, 3)
    big = g._normal((50_000, 2, 3), mean, std, np.float64)
    np.testing.assert_allclose(big.mean(axis=0), np.broadcast_to(mean, (2, 3)), atol=0.03)
    np.testing.assert_allclose(big.std(axis=0), np.broadcast_to(std, (2, 3)), atol=0.03)
    assert (gen(0)._normal((4,), 1.5, 0.0, np.float32) == 1.5).all()


def test_normal_complex():
    z = gen(0)._normal((100_000,), 0.0, 1.0, np.complex64)
    assert z.dtype == np.complex64
    assert abs(z.real.var() - 0.5) < 0.01
    assert abs(z.imag.var() - 0.5) < 0.01
    assert abs(np.mean(np.abs(z) ** 2) - 1.0) < 0.02


# ---------------------------------------------------------------------------
# integers
# ---------------------------------------------------------------------------


def test_randint_range():
    x = gen(0)._randint(-3, 7, (100_000,), np.int64)
    assert x.dtype == np.int64
    assert set(np.unique(x).tolist()) == set(range(-3, 7))
    counts = np.bincount(x + 3)
    assert counts.min() > 9_000


@pytest.mark.parametrize(
    "dt", [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, BF16, np.float32, bool]
)
def test_randint_dtypes(dt):
    x = gen(1)._randint(0, 2, (1000,), dt)
    assert x.dtype == np.dtype(dt)
    assert set(x.astype(np.int64).tolist()) == {0, 1}


def test_randint_extreme_range():
    x = gen(1)._randint(-(2**63), 2**63 - 1, (1000,), np.int64)
    assert (x < 0).any()
    assert (x > 0).any()


def test_randint_errors():
    g = gen()
    with pytest.raises(
        RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=5"
    ):
        g._randint(5, 5, (3,), np.int64)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        g._randint(0, 300, (3,), np.uint8)
    with pytest.raises(RuntimeError, match="from is out of bounds for unsigned char"):
        g._randint(-1, 3, (3,), np.uint8)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for c10::Half"):
        g._randint(0, 2**40, (3,), np.float16)
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]"):
        g._randint(0, 2**40, (3,), np.float32)


def test_randperm_is_permutation():
    for n in (0, 1, 2, 10, 1000):
        p = gen(n)._randperm(n, np.int64)
        assert p.dtype == np.int64
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    assert not np.array_equal(gen(0)._randperm(1000, np.int64), np.arange(1000))
    f = gen(0)._randperm(2049, np.float16)
    assert f.dtype == np.float16
    np.testing.assert_array_equal(np.sort(f.astype(np.int64)), np.arange(2049))
    u = gen(0)._randperm(256, np.uint8)
    np.testing.assert_array_equal(np.sort(u), np.arange(256))


def test_randperm_errors():
    g = gen()
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[-1\]"):
        g._randperm(-1, np.int64)
    with pytest.raises(RuntimeError, match="n cannot be greater than 2049 for Half type."):
        g._randperm(2050, np.float16)
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t"):
        g._randperm(257, np.uint8)
    with pytest.raises(NotImplementedError, match="\"randperm\" not implemented for 'Bool'"):
        g._randperm(3, bool)


# ---------------------------------------------------------------------------
# bernoulli
# ---------------------------------------------------------------------------


def test_bernoulli_rate():
    for p in (0.0, 0.1, 0.5, 0.9, 1.0):
        x = gen(0)._bernoulli(p, (100_000,), np.float32)
        assert x.dtype == np.float32
        assert set(np.unique(x).tolist()) <= {0.0, 1.0}
        assert abs(x.mean() - p) < 0.01


def test_bernoulli_array_p():
    p = np.array([0.0, 0.25, 1.0])
    x = gen(0)._bernoulli(p, (50_000, 3), np.int64)
    np.testing.assert_allclose(x.mean(axis=0), p, atol=0.01)
    y = gen(0)._bernoulli(np.array([[0.0, 1.0]], dtype=np.float32), None, bool)
    assert y.dtype == np.bool_
    np.testing.assert_array_equal(y, [[False, True]])


def test_bernoulli_errors():
    g = gen()
    with pytest.raises(
        RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"
    ):
        g._bernoulli(1.5, (3,), np.float32)
    with pytest.raises(RuntimeError, match=r"Expected p_in >= 0 && p_in <= 1 to be true"):
        g._bernoulli(np.array([0.5, -0.1]), None, np.float32)


# ---------------------------------------------------------------------------
# multinomial
# ---------------------------------------------------------------------------


def test_multinomial_without_replacement_distinct():
    probs = gen(0)._uniform((200, 10), 0.0, 1.0, np.float64)
    idx = gen(1)._multinomial(probs, 10, False)
    assert idx.dtype == np.int64
    assert idx.shape == (200, 10)
    np.testing.assert_array_equal(np.sort(idx, axis=1), np.broadcast_to(np.arange(10), (200, 10)))
    idx4 = gen(1)._multinomial(probs, 4, False)
    assert all(len(set(row)) == 4 for row in idx4.tolist())


def test_multinomial_zero_prob_never_drawn():
    probs = np.array([[0.0, 1.0, 0.0, 2.0, 0.0, 1.0], [3.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    g = gen(0)
    for _ in range(200):
        a = g._multinomial(probs, 2, False)
        assert (probs[np.arange(2)[:, None], a] > 0).all()
    b = g._multinomial(probs, 100_000, True)
    assert (probs[np.arange(2)[:, None], b] > 0).all()
    # trailing / leading zero categories with many rows (offset search path)
    p = np.zeros((50, 5))
    p[:, 2] = 1.0
    c = g._multinomial(p, 1000, True)
    assert (c == 2).all()


def test_multinomial_frequencies():
    w = np.array([1.0, 2.0, 0.0, 7.0])
    g = gen(0)
    x = g._multinomial(w, 100_000, True)
    assert x.shape == (100_000,)
    np.testing.assert_allclose(np.bincount(x, minlength=4) / 1e5, w / w.sum(), atol=0.01)
    # without replacement: the first draw follows the weights
    first = g._multinomial(np.tile(w, (100_000, 1)), 2, False)[:, 0]
    np.testing.assert_allclose(np.bincount(first, minlength=4) / 1e5, w / w.sum(), atol=0.01)
    # second draw (given first) for weights [1, 2, 0, 7]: P(second = 0) = sum_j p_j * p_0/(1-p_j)
    second = g._multinomial(np.tile(w, (100_000, 1)), 2, False)[:, 1]
    p = w / w.sum()
    expect0 = sum(p[j] * p[0] / (1 - p[j]) for j in (1, 3))
    assert abs(np.mean(second == 0) - expect0) < 0.01
    # unnormalised float32 rows
    y = g._multinomial(np.array([[10.0, 30.0]], dtype=np.float32), 50_000, True)
    assert abs(y.mean() - 0.75) < 0.01


def test_multinomial_fills_with_zero_weight_categories_like_torch():
    # torch returns zero-weight categories once the nonzero ones are exhausted
    x = gen(0)._multinomial(np.array([[0.0, 1.0, 1.0]]), 3, False)
    assert sorted(x[0].tolist()) == [0, 1, 2]
    assert set(x[0, :2].tolist()) == {1, 2}
    assert x[0, 2] == 0


def test_multinomial_single_sample_and_shapes():
    g = gen(0)
    assert g._multinomial(np.ones(5), 1, True).shape == (1,)
    assert g._multinomial(np.ones((3, 5)), 1, False).shape == (3, 1)
    assert g._multinomial(np.ones((0, 5)), 2, False).shape == (0, 2)
    assert g._multinomial(np.ones((2, 5), dtype=BF16), 2, False).shape == (2, 2)


MULTINOMIAL_ERRORS = [
    (np.array([[0.0, 1.0, 1.0]]), 4, False, r"cannot sample n_sample > prob_dist\.size\(-1\)"),
    (np.array([[1.0, 1.0]]), 0, True, "cannot sample n_sample <= 0 samples"),
    (np.array([[1.0, 1.0]]), -1, False, "cannot sample n_sample <= 0 samples"),
    (np.array([[-1.0, 1.0]]), 1, False, "probability tensor contains either `inf`, `nan`"),
    (np.array([[np.inf, 1.0]]), 1, False, "probability tensor contains either `inf`, `nan`"),
    (np.array([[np.nan, 1.0]]), 2, False, "probability tensor contains either `inf`, `nan`"),
    (np.array([[0.0, 0.0]]), 1, False, r"invalid multinomial distribution \(sum of prob"),
    (np.array([[1.0, 1.0], [0.0, 0.0]]), 3, True, r"invalid multinomial distribution \(sum of"),
    (np.array([[-1.0, 1.0]]), 3, True, r"\(encountering probability entry < 0\)"),
    (np.array([[np.nan, 1.0]]), 3, True, r"\(encountering probability entry < 0\)"),
    (np.array([[np.inf, 1.0]]), 3, True, r"\(encountering probability entry = infinity or NaN\)"),
    (np.ones((2, 2, 2)), 1, True, "prob_dist must be 1 or 2 dim"),
    (np.ones(3, dtype=np.int64), 1, True, "multinomial only supports floating-point dtypes"),
]


@pytest.mark.parametrize(("probs", "n", "replacement", "match"), MULTINOMIAL_ERRORS)
def test_multinomial_errors(probs, n, replacement, match):
    with pytest.raises(RuntimeError, match=match):
        gen()._multinomial(probs, n, replacement)


@pytest.mark.parametrize(("probs", "n", "replacement", "match"), MULTINOMIAL_ERRORS)
def test_multinomial_errors_match_torch(probs, n, replacement, match):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as mine:
        gen()._multinomial(probs, n, replacement)
    with pytest.raises(RuntimeError) as theirs:
        torch.multinomial(torch.from_numpy(probs), n, replacement)
    assert str(mine.value) == str(theirs.value)


# ---------------------------------------------------------------------------
# exponential, geometric, cauchy, log-normal
# ---------------------------------------------------------------------------


def test_exponential():
    x = gen(0)._exponential((100_000,), 4.0, np.float32)
    assert x.dtype == np.float32
    assert (x >= 0).all()
    assert abs(x.mean() - 0.25) < 0.005
    assert gen(0)._exponential((10,), 1.0, BF16).dtype == BF16


def test_geometric():
    x = gen(0)._geometric((100_000,), 0.25, np.int64)
    assert x.dtype == np.int64
    assert x.min() == 1
    assert abs(x.mean() - 4.0) < 0.05
    assert gen(0)._geometric((10,), 0.5, np.float32).dtype == np.float32


def test_cauchy():
    x = gen(0)._cauchy((100_000,), 2.0, 3.0, np.float64)
    assert abs(np.median(x) - 2.0) < 0.05
    q1, q3 = np.percentile(x, [25, 75])
    assert abs((q3 - q1) / 2 - 3.0) < 0.1


def test_log_normal():
    x = gen(0)._log_normal((100_000,), 1.0, 0.5, np.float64)
    assert (x > 0).all()
    assert abs(np.log(x).mean() - 1.0) < 0.01
    assert abs(np.log(x).std() - 0.5) < 0.01


# (ember call, torch call) pairs whose errors must agree in type and text.
SAMPLER_ERRORS = [
    (lambda g: g._normal((3,), 0.0, -1.0, np.float32), lambda t: t.empty(3).normal_(0, -1)),
    (
        lambda g: g._normal(None, np.zeros(3), -np.ones(3), np.float32),
        lambda t: t.normal(t.zeros(3), -t.ones(3)),
    ),
    (lambda g: g._normal((3,), 0.0, 1.0, np.int64), lambda t: t.empty(3, dtype=t.int64).normal_()),
    (lambda g: g._uniform((3,), 2.0, 1.0, np.float32), lambda t: t.empty(3).uniform_(2, 1)),
    (
        lambda g: g._uniform((3,), -3e38, 3e38, np.float32),
        lambda t: t.empty(3).uniform_(-3e38, 3e38),
    ),
    (
        lambda g: g._uniform((3,), 0, 1e6, np.float16),
        lambda t: t.empty(3, dtype=t.float16).uniform_(0, 1e6),
    ),
    (
        lambda g: g._uniform((3,), -6e4, 6e4, np.float16),
        lambda t: t.empty(3, dtype=t.float16).uniform_(-6e4, 6e4),
    ),
    (
        lambda g: g._uniform((3,), np.nan, 1.0, np.float32),
        lambda t: t.empty(3).uniform_(float("nan"), 1),
    ),
    (
        lambda g: g._uniform((3,), 0, 1, np.int64),
        lambda t: t.empty(3, dtype=t.int64).uniform_(0, 1),
    ),
    (lambda g: g._randint(5, 3, (3,), np.int64), lambda t: t.randint(5, 3, (3,))),
    (
        lambda g: g._randint(0, 300, (3,), np.int8),
        lambda t: t.randint(0, 300, (3,), dtype=t.int8),
    ),
    (
        lambda g: g._randint(-1, 3, (3,), np.uint64),
        lambda t: t.randint(-1, 3, (3,), dtype=t.uint64),
    ),
    (
        lambda g: g._randint(0, 3, (3,), bool),
        lambda t: t.randint(0, 3, (3,), dtype=t.bool),
    ),
    (lambda g: g._randperm(-1, np.int64), lambda t: t.randperm(-1)),
    (lambda g: g._randperm(3000, np.float16), lambda t: t.randperm(3000, dtype=t.float16)),
    (
        lambda g: g._randperm(2**24 + 2, np.float32),
        lambda t: t.randperm(2**24 + 2, dtype=t.float32),
    ),
    (lambda g: g._randperm(129, np.int8), lambda t: t.randperm(129, dtype=t.int8)),
    (lambda g: g._randperm(3, bool), lambda t: t.randperm(3, dtype=t.bool)),
    (lambda g: g._bernoulli(1.5, (3,), np.float32), lambda t: t.empty(3).bernoulli_(1.5)),
    (
        lambda g: g._bernoulli(np.nan, (3,), np.float32),
        lambda t: t.empty(3).bernoulli_(float("nan")),
    ),
    (
        lambda g: g._bernoulli(np.array([1.5]), None, np.float32),
        lambda t: t.bernoulli(t.tensor([1.5])),
    ),
    (lambda g: g._exponential((3,), 0.0, np.float32), lambda t: t.empty(3).exponential_(0)),
    (
        lambda g: g._exponential((3,), 1.0, np.int64),
        lambda t: t.empty(3, dtype=t.int64).exponential_(1),
    ),
    (lambda g: g._geometric((3,), 1.0, np.float32), lambda t: t.empty(3).geometric_(1)),
    (lambda g: g._geometric((3,), 0.0, np.float32), lambda t: t.empty(3).geometric_(0)),
    (lambda g: g._cauchy((3,), 0.0, 0.0, np.float32), lambda t: t.empty(3).cauchy_(0, 0)),
    (
        lambda g: g._cauchy((3,), 0.0, 1.0, np.int64),
        lambda t: t.empty(3, dtype=t.int64).cauchy_(),
    ),
    (lambda g: g._log_normal((3,), 0.0, -1.0, np.float32), lambda t: t.empty(3).log_normal_(0, -1)),
    (
        lambda g: g._log_normal((3,), 0.0, 1.0, np.int64),
        lambda t: t.empty(3, dtype=t.int64).log_normal_(),
    ),
]


@pytest.mark.parametrize(("mine", "theirs"), SAMPLER_ERRORS)
def test_sampler_errors_match_torch(mine, theirs):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as e_mine:
        mine(gen())
    with pytest.raises(Exception) as e_theirs:
        theirs(torch)
    assert type(e_mine.value) is type(e_theirs.value)
    assert str(e_mine.value) == str(e_theirs.value)

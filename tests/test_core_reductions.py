"""``add_reduce``: trailing-axis sums as a BLAS product give NumPy's sums (shape, dtype, values)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember._core.reductions import add_reduce


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 40), min_size=1, max_size=4),
    data=st.data(),
    keepdims=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_matches_numpy(shape, data, keepdims, dtype):
    shape = [max(s, 1) for s in shape]
    shape[-1] = max(shape[-1], 16)  # rows long enough for the BLAS path to be possible
    a = np.random.default_rng(0).standard_normal([n * 4 for n in shape][:1] + shape[1:])
    a = a.astype(dtype)
    axes = data.draw(st.lists(st.integers(0, a.ndim - 1), min_size=1, unique=True))
    got = add_reduce(a, tuple(axes), keepdims)
    want = np.add.reduce(a.astype(np.float64), axis=tuple(axes), keepdims=keepdims)
    assert got.shape == want.shape and got.dtype == a.dtype
    # as NumPy's own float32 sums: error grows with the number of terms (cancellation)
    terms = int(np.prod([a.shape[i] for i in set(axes)]))
    eps = 1e-7 if dtype is np.float32 else 1e-15
    np.testing.assert_allclose(got, want, rtol=100 * eps, atol=4 * eps * terms)


@pytest.mark.parametrize("axis", [(0, 2, 3), (2, 3), 3, (1, 3)])
def test_conv_bias_gradient_shapes(axis):
    g = np.random.default_rng(1).standard_normal((8, 4, 12, 12)).astype(np.float32)
    np.testing.assert_allclose(add_reduce(g, axis), g.sum(axis), rtol=1e-5, atol=1e-5)
    assert add_reduce(g, axis, True).shape == g.sum(axis, keepdims=True).shape


def test_non_contiguous_and_other_dtypes_take_numpy():
    a = np.arange(64 * 70, dtype=np.float32).reshape(64, 70).T
    np.testing.assert_array_equal(add_reduce(a, 1), a.sum(1))
    b = np.arange(10000, dtype=np.int64).reshape(100, 100)
    assert add_reduce(b, 1).dtype == np.int64
    np.testing.assert_array_equal(add_reduce(b, 1), b.sum(1))

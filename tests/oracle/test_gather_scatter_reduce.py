"""Oracle tests: scatter_reduce (sum, prod, mean, amax, amin; include_self) and scatter_reduce_."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracle.helper import check, check_double_backward, check_raises, rand

pytestmark = pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")

REDUCES = ["sum", "prod", "mean", "amax", "amin"]
IDX = np.array([[1, 2, 0, 1], [2, 2, 2, 1], [1, 0, 0, 1]])  # repeats along dim 0


def _distinct(*shape, seed=0):
    # distinct values keep amax/amin free of ties (ties are tested separately)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.25 - n / 8 + 0.125).reshape(shape)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce(reduce, include_self):
    x, s = _distinct(3, 4), _distinct(3, 4, seed=1)
    fn = lambda lib, x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self)  # noqa
    check(fn, [x, IDX, s])
    check_double_backward(fn, [x, IDX, s])
    fn1 = (
        lambda lib, x, i, s: lib.scatter_reduce(  # noqa: E731
            x, -1, i[:2, :3], s[:2, :3], reduce=reduce, include_self=include_self
        )
    )
    check(fn1, [x, IDX, s])
    check_double_backward(fn1, [x, IDX, s])


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["amax", "amin", "prod"])
def test_ties_and_zeros(reduce, include_self):
    # amax/amin share the gradient among tied values; prod handles zeros in self and src
    x = np.array([[1.0, 0.0, 2.0, 2.0], [2.0, 1.0, 0.0, 3.0], [0.0, 2.0, 2.0, 1.0]])
    s = np.array([[2.0, 0.0, 2.0, 3.0], [0.0, 2.0, 1.0, 0.0], [2.0, 0.0, 0.0, 3.0]])
    fn = lambda lib, x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self)  # noqa
    check(fn, [x, IDX, s])


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float16"])
@pytest.mark.parametrize("reduce", REDUCES)
def test_dtypes(reduce, dtype):
    x, s = (_distinct(3, 4) * 4).astype(dtype), (_distinct(3, 4, seed=1) * 4).astype(dtype)
    for inc in (True, False):
        check(
            lambda lib, x, i, s, inc=inc: x.scatter_reduce(0, i, s, reduce, include_self=inc),
            [x, IDX, s],
            grad=False,
        )


@pytest.mark.parametrize("reduce", REDUCES)
def test_inplace(reduce):
    x, s = _distinct(3, 4), _distinct(3, 4, seed=1)
    check(lambda lib, x, i, s: (x * 1).scatter_reduce_(0, i, s, reduce), [x, IDX, s])
    check(
        lambda lib, x, i, s: x.scatter_reduce_(1, i, s, reduce, include_self=False),
        [x, IDX, s],
        grad=False,
    )


def test_max_min_aliases():
    x, s = _distinct(3, 4), _distinct(3, 4, seed=1)
    for r in ("max", "min"):
        check(lambda lib, x, i, s: x.scatter_reduce(0, i, s, r), [x, IDX, s], grad=False)  # noqa: B023


def test_empty_index():
    x, s = _distinct(3, 4), _distinct(3, 4, seed=1)
    check(lambda lib, x, i, s: x.scatter_reduce(0, i, s, "amax"), [x, IDX[:0], s[:0]])
    check(lambda lib, x, i, s: x.scatter_reduce(0, i, s, "mean"), [x, IDX[:0], s[:0]])


BAD = {
    "reduce": lambda lib, x, i, s: x.scatter_reduce(0, i, s, "foo"),
    "dtype": lambda lib, x, i, s: x.scatter_reduce(0, i, s.double(), "sum"),
    "oob": lambda lib, x, i, s: x.scatter_reduce(0, i + 3, s, "sum"),
    "dim": lambda lib, x, i, s: x.scatter_reduce(2, i, s, "sum"),
}


@pytest.mark.parametrize("name", BAD)
def test_errors(name):
    check_raises(BAD[name], [rand(3, 4), IDX, rand(3, 4)], match_message=name != "dim")


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    dim=st.integers(0, 2),
    reduce=st.sampled_from(REDUCES),
    include_self=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_hypothesis(shape, dim, reduce, include_self, seed):
    dim = dim % len(shape)
    rng = np.random.default_rng(seed)
    ishape = [int(rng.integers(1, n + 1)) for n in shape]
    ishape[dim] = int(rng.integers(0, 5))
    idx = rng.integers(0, shape[dim], ishape)
    x, s = _distinct(*shape, seed=seed), _distinct(*ishape, seed=seed + 1)
    check(
        lambda lib, x, i, s: lib.scatter_reduce(x, dim, i, s, reduce, include_self=include_self),
        [x, idx, s],
    )

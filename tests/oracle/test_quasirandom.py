"""Oracle tests: torch.quasirandom.SobolEngine (same points as torch, scrambled with a seed)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _same(e, t):
    e, t = e.numpy(), t.numpy()
    assert e.dtype == t.dtype and e.shape == t.shape
    assert np.array_equal(e, t)


@pytest.mark.parametrize("dim", [1, 2, 5, 40])
@pytest.mark.parametrize("scramble,seed", [(False, None), (True, 0), (True, 1234)])
def test_sobol_draws(dim, scramble, seed):
    e = ember.quasirandom.SobolEngine(dim, scramble=scramble, seed=seed)
    t = torch.quasirandom.SobolEngine(dim, scramble=scramble, seed=seed)
    _same(e.sobolstate, t.sobolstate)
    _same(e.shift, t.shift)
    _same(e.draw(), t.draw())
    _same(e.draw(7), t.draw(7))
    _same(e.draw(5, dtype=ember.float64), t.draw(5, dtype=torch.float64))
    e.fast_forward(16)
    t.fast_forward(16)
    _same(e.draw(3), t.draw(3))
    assert e.num_generated == t.num_generated
    _same(e.draw_base2(5), t.draw_base2(5))
    e.reset()
    t.reset()
    _same(e.draw(4, dtype=ember.float64), t.draw(4, dtype=torch.float64))
    assert repr(e) == repr(t)


def test_sobol_first_calls_and_out():
    e = ember.quasirandom.SobolEngine(3, scramble=True, seed=5)
    t = torch.quasirandom.SobolEngine(3, scramble=True, seed=5)
    # the first point is computed in the default dtype, then cast (torch's rounding)
    _same(e.draw(1, dtype=ember.float64), t.draw(1, dtype=torch.float64))
    e2 = ember.quasirandom.SobolEngine(3).fast_forward(4)
    t2 = torch.quasirandom.SobolEngine(3).fast_forward(4)
    _same(e2.draw(2), t2.draw(2))
    out_e, out_t = ember.empty(0), torch.empty(0)
    assert e.draw(3, out=out_e) is out_e
    t.draw(3, out=out_t)
    _same(out_e, out_t)
    _same(e.draw_base2(2), t.draw_base2(2))
    _same(
        ember.quasirandom.SobolEngine(4).draw_base2(0),
        torch.quasirandom.SobolEngine(4).draw_base2(0),
    )


def test_sobol_global_generator_and_max_dim():
    ember.manual_seed(3)
    torch.manual_seed(3)
    e = ember.quasirandom.SobolEngine(6, scramble=True)
    t = torch.quasirandom.SobolEngine(6, scramble=True)
    _same(e.draw(8), t.draw(8))
    e = ember.quasirandom.SobolEngine(21201)
    t = torch.quasirandom.SobolEngine(21201)
    _same(e.sobolstate, t.sobolstate)
    _same(e.draw(3), t.draw(3))


def test_sobol_errors():
    for dim in (0, 21202):
        with pytest.raises(ValueError) as te:
            torch.quasirandom.SobolEngine(dim)
        with pytest.raises(ValueError) as ee:
            ember.quasirandom.SobolEngine(dim)
        assert str(ee.value) == str(te.value)
    e, t = ember.quasirandom.SobolEngine(2), torch.quasirandom.SobolEngine(2)
    e.draw(3)
    t.draw(3)
    with pytest.raises(ValueError) as te:
        t.draw_base2(2)
    with pytest.raises(ValueError) as ee:
        e.draw_base2(2)
    assert str(ee.value) == str(te.value)


def test_sobol_zero_counts():
    # a fresh engine cannot draw 0 points (torch asks its kernel for n - 1 of them) but can
    # skip 0; after the first draw both are no-ops
    out = []
    for lib in (ember, torch):
        e = lib.quasirandom.SobolEngine(2, scramble=True, seed=7)
        with pytest.raises(RuntimeError) as info:
            e.draw(0)
        e.fast_forward(0)
        first = e.draw(1, dtype=lib.float64)
        none = e.draw(0)
        e.fast_forward(0)
        out.append((str(info.value), e.num_generated, first.numpy(), none.shape, e.draw(3).numpy()))
    assert out[0][:2] == out[1][:2] and tuple(out[0][3]) == tuple(out[1][3])
    np.testing.assert_array_equal(out[0][2], out[1][2])
    np.testing.assert_array_equal(out[0][4], out[1][4])

"""Oracle tests: torch.signal.windows."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle.helper import check, check_raises

torch = pytest.importorskip("torch")

_NAMES = ["bartlett", "blackman", "cosine", "hamming", "hann", "nuttall"]
_KW = {
    "exponential": [{}, {"tau": 2.5}, {"center": 1.5}],
    "gaussian": [{}, {"std": 0.3}],
    "kaiser": [{}, {"beta": 0.0}, {"beta": 4.5}],
    "general_cosine": [{"a": [0.5, 0.3, 0.2]}, {"a": (1.0,)}],
    "general_hamming": [{}, {"alpha": 0.6}],
}


def _cases():
    for n in _NAMES:
        yield n, {}
    for n, kws in _KW.items():
        for kw in kws:
            yield n, kw


@pytest.mark.parametrize("name,kw", list(_cases()))
@pytest.mark.parametrize("M", [0, 1, 2, 5, 8, 33])
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_window(name, kw, M, sym, dtype):
    if "center" in kw and sym:
        return

    def f(lib):
        dt = None if dtype is None else getattr(lib, dtype)
        return getattr(lib.signal.windows, name)(M, sym=sym, dtype=dt, **kw)

    check(f, [], grad=False, rtol=1e-6 if dtype is None else 1e-12, atol=1e-6)


def test_window_requires_grad_and_errors():
    w = ember.signal.windows.hann(5, requires_grad=True)
    assert w.requires_grad
    for f in (
        lambda lib: lib.signal.windows.hann(-1),
        lambda lib: lib.signal.windows.hann(4, dtype=lib.float16),
        lambda lib: lib.signal.windows.gaussian(4, std=0.0),
        lambda lib: lib.signal.windows.exponential(4, tau=-1.0),
        lambda lib: lib.signal.windows.exponential(4, center=1.0),
        lambda lib: lib.signal.windows.kaiser(4, beta=-1.0),
        lambda lib: lib.signal.windows.general_cosine(4, a=[]),
        lambda lib: lib.signal.windows.general_cosine(4, a=3),
        lambda lib: lib.signal.windows.cosine(4, layout=lib.sparse_coo),
    ):
        check_raises(f, [], match_message=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("M", [0, 1, 2, 7, 64])
@pytest.mark.parametrize(
    "name,signal_name,kw",
    [
        ("hann_window", "hann", {}),
        ("hamming_window", "hamming", {}),
        ("blackman_window", "blackman", {}),
        ("bartlett_window", "bartlett", {}),
        ("kaiser_window", "kaiser", {"beta": 5.0}),
    ],
)
def test_window_functions_share_the_signal_formulas(name, signal_name, kw, M, dtype):
    # torch.hann_window(M, periodic) and torch.signal.windows.hann(M, sym=not periodic) are one
    # window: both match torch, and ember computes both with _ops/windows.py's formulas
    for periodic in (True, False):
        e = getattr(ember, name)(M, periodic, dtype=getattr(ember, dtype), **kw)
        t = getattr(torch, name)(M, periodic, dtype=getattr(torch, dtype), **kw)
        es = getattr(ember.signal.windows, signal_name)(
            M, sym=not periodic, dtype=getattr(ember, dtype), **kw
        )
        tol = 2e-6 if dtype == "float32" else 1e-12  # (Kaiser's I0: a few ulp)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(es.numpy(), e.numpy(), rtol=tol, atol=tol)
    w = getattr(ember, name)(M, requires_grad=True)
    assert w.requires_grad and w.is_leaf  # (a *_window result is a leaf, as torch's)

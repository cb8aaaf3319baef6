"""User code: short-time Fourier transforms as audio code writes them (``torch.stft`` with a
Hann window and ``return_complex=True``, magnitude spectrograms, ``torch.istft`` round trips),
compared with torch in value and gradient; the warnings and errors users meet."""

from __future__ import annotations

import warnings

import pytest

import ember
from tests.oracle.helper import check, rand, torch


def _quiet(fn):
    def run(lib, *args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(lib, *args)

    return run


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: lib.stft(x, 16, window=lib.hann_window(16), return_complex=True).abs(),
        lambda lib, x: lib.view_as_real(
            lib.stft(x, 8, hop_length=2, window=lib.hann_window(8), return_complex=True)
        ),
        lambda lib, x: lib.stft(x, 8, return_complex=False),
        lambda lib, x: lib.stft(x, 8, center=False, return_complex=True).abs(),
        lambda lib, x: lib.stft(
            x, 8, win_length=4, window=lib.hamming_window(4), normalized=True, return_complex=True
        ).abs(),
        lambda lib, x: lib.view_as_real(lib.stft(x, 8, onesided=False, return_complex=True)),
        lambda lib, x: x.stft(8, pad_mode="constant", return_complex=True).abs().pow(2),
    ],
)
def test_stft(fn):
    check(_quiet(fn), [rand(64)], grad_fn=False, strides=False, atol=1e-4, grad_atol=1e-3)


def test_stft_batched_and_istft_round_trip():
    def fn(lib, x):
        w = lib.hann_window(16)
        spec = lib.stft(x, 16, hop_length=4, window=w, return_complex=True)
        return lib.istft(spec, 16, hop_length=4, window=w, length=x.shape[-1])

    out, _ = check(fn, [rand(3, 80)], grad_fn=False, strides=False, atol=1e-4, grad_atol=1e-3)
    assert out.shape == (3, 80)


def test_istft_of_a_spectrum():
    def fn(lib, re, im):
        spec = lib.complex(re, im)
        return lib.istft(spec, 8, window=lib.hann_window(8), center=True)

    check(fn, [rand(5, 9), rand(5, 9)], grad_fn=False, strides=False, atol=1e-4, grad_atol=1e-3)


def test_missing_return_complex_is_torchs_error():
    msgs = []
    for lib in (torch, ember):
        with pytest.raises(RuntimeError) as e:
            lib.stft(lib.ones(32), 8)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_warnings_are_torchs_and_given_once():
    from ember.nn import _spectral as spectral

    spectral._WARNED.clear()
    calls = [
        lambda: ember.stft(ember.ones(32), 8, return_complex=True),
        lambda: ember.stft(ember.ones(32), 8, window=ember.ones(8), return_complex=False),
        lambda: ember.istft(ember.ones(5, 3, dtype=ember.complex64), 8),
    ]
    for call in calls:
        for times in (1, 0):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                call()
            assert len(w) == times
    assert spectral._WARNED == {
        spectral._NO_WINDOW,
        spectral._NO_WINDOW_INVERSE,
        next(m for m in spectral._WARNED if m.startswith("stft with return_complex=False")),
    }
    assert "A window was not provided. A rectangular window will be applied," in spectral._NO_WINDOW


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: lib.stft(x, 0, return_complex=True),
        lambda lib, x: lib.stft(x, 8, hop_length=0, return_complex=True),
        lambda lib, x: lib.stft(x, 8, win_length=10, return_complex=True),
        lambda lib, x: lib.stft(x, 8, window=lib.ones(5), return_complex=True),
        lambda lib, x: lib.stft(x.view(2, 2, 8), 4, return_complex=True),
        lambda lib, x: lib.istft(lib.ones(5, 3), 8),
        lambda lib, x: lib.istft(lib.ones(5, 3, dtype=lib.complex64), 8, window=lib.zeros(8)),
    ],
)
def test_errors_are_runtime_errors(fn):
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError):
                fn(lib, lib.ones(32))

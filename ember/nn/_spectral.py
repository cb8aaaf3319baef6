"""Short-time Fourier transforms: ``stft`` and ``istft``, composed of ember ops (pad, unfold,
window product, FFT; inverse FFT, overlap-add with ``fold``), so they are differentiable.
``nn.functional``'s pad and fold put them above the op table: nn publishes them when imported."""

from __future__ import annotations

import warnings

from ember._core.tensor import Tensor
from ember._ops.complex_views import view_as_real
from ember._ops.registry import publish

_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied,which is known to cause "
    "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
    "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
    "window, explicitly set `window=torch.ones(n_fft, device=<device>)`."
)
_NO_WINDOW_INVERSE = (
    "A window was not provided. A rectangular window will be applied.Please provide the same "
    "window used by stft to make the inversion lossless.To suppress this warning and use a "
    "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`."
)


# torch warns about these once per process (TORCH_WARN_ONCE)
_WARNED: set = set()


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


def _modules():
    import ember
    from ember.nn import functional

    return ember, functional


def _full_window(ember, window, n_fft: int, win_length: int, dtype, who: str) -> Tensor:
    """Return the window centred in ``n_fft`` samples (ones when ``window`` is None)."""
    if window is None:
        window = ember.ones(win_length, dtype=dtype)
    elif window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(
            f"{who}: expected a 1D window tensor of size equal to win_length={win_length}, but "
            f"got window with size {list(window.shape)}"
        )
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = ember.cat(
            [
                ember.zeros(left, dtype=window.dtype),
                window,
                ember.zeros(n_fft - win_length - left, dtype=window.dtype),
            ]
        )
    return window


def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
) -> Tensor:
    """Return the short-time Fourier transform of ``input`` (1-D, or 2-D batched): frames of
    ``n_fft`` samples every ``hop_length``, windowed, FFT'd; shape ``(freq, frames)``."""
    ember, F = _modules()
    if return_complex is None and not input.is_complex():
        raise RuntimeError(
            "stft requires the return_complex parameter be given for real inputs, and will "
            "further require that return_complex=True in a future PyTorch release."
        )
    if input.dim() not in (1, 2):
        raise RuntimeError("stft: expected a 1D or 2D tensor")
    if window is None:
        _warn_once(_NO_WINDOW)
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win_length = n_fft if win_length is None else int(win_length)
    batched = input.dim() == 2
    x = input if batched else input.unsqueeze(0)
    if center:
        pad = n_fft // 2
        x = F.pad(x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(
            f"stft: expected 0 < win_length <= n_fft, but got win_length={win_length}"
        )
    frames = x.unfold(-1, n_fft, hop)  # (batch, frames, n_fft)
    if window is not None:
        frames = frames * _full_window(ember, window, n_fft, win_length, x.dtype, "stft")
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    onesided = not complex_in if onesided is None else onesided
    spec = ember.fft.rfft(frames, dim=-1) if onesided else ember.fft.fft(frames, dim=-1)
    if normalized:
        spec = spec * n_fft**-0.5
    spec = spec.transpose(-1, -2)
    if not batched:
        spec = spec.squeeze(0)
    if return_complex:
        return spec
    _warn_once(
        "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
        "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
        "Note: you can still call torch.view_as_real on the complex output to recover the old "
        "return format."
    )
    return view_as_real(spec)


def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """Return the signal whose short-time Fourier transform is ``input`` (the inverse of
    :func:`stft`: inverse FFT of each frame, windowed overlap-add, divided by the window's
    squared overlap-add envelope)."""
    ember, F = _modules()
    if not input.is_complex():
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            "return_complex=True."
        )
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions, got {input.dim()}")
    if window is None:
        _warn_once(_NO_WINDOW_INVERSE)
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win_length = n_fft if win_length is None else int(win_length)
    batched = input.dim() == 3
    spec = input if batched else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    onesided = n_freq != n_fft if onesided is None else onesided
    if normalized:
        spec = spec * n_fft**0.5
    frames = spec.transpose(-1, -2)  # (batch, frames, freq)
    if onesided:
        y = ember.fft.irfft(frames, n=n_fft, dim=-1)
    else:
        y = ember.fft.ifft(frames, n=n_fft, dim=-1)
        if not return_complex:
            y = y.real
    real_dtype = y.real.dtype if y.is_complex() else y.dtype
    win = _full_window(ember, window, n_fft, win_length, real_dtype, "istft")
    y = y * win
    expected = n_fft + hop * (n_frames - 1)

    def overlap_add(t: Tensor) -> Tensor:  # (batch, frames, n_fft) -> (batch, expected)
        out = F.fold(
            t.transpose(1, 2), output_size=(1, expected), kernel_size=(1, n_fft), stride=(1, hop)
        )
        return out.reshape(t.shape[0], expected)

    if y.is_complex():
        signal = ember.complex(overlap_add(y.real), overlap_add(y.imag))
    else:
        signal = overlap_add(y)
    envelope = overlap_add((win * win).expand(1, n_frames, n_fft))[0]
    start = n_fft // 2 if center else 0
    end = expected - (n_fft // 2 if center else 0) if length is None else start + length
    end = min(end, expected)
    signal, envelope = signal[:, start:end], envelope[start:end]
    if envelope.numel() and float(envelope.abs().min()) < 1e-11:
        raise RuntimeError("istft: window overlap add min: 1")
    signal = signal / envelope
    if length is not None and signal.shape[-1] < length:
        signal = F.pad(signal, (0, length - signal.shape[-1]))
    return signal if batched else signal.squeeze(0)


publish(None, stft)
publish(None, istft)

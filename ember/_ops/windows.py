"""Window functions: ``hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window`` (torch's formulas; ``periodic`` windows are the first
``N`` points of the symmetric window of length ``N + 1``)."""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.device import as_device
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import expose


def _check(name: str, window_length: int, dtype, requires_grad: bool, device):
    as_device(device)
    dt = D.get_default_dtype() if dtype is None else dtype
    if not dt.is_floating_point:
        rg = "true" if requires_grad else "false (default)"
        raise RuntimeError(
            f"{name} expects floating point dtypes, got: TensorOptions(dtype="
            f"{D.cpp_type_name(dt)}, device=cpu, layout=Strided (default), requires_grad={rg}, "
            "pinned_memory=false, memory_format=(nullopt))"
        )
    if window_length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={window_length}"
        )
    return dt


def _window(name, window_length, periodic, dtype, requires_grad, device, formula) -> Tensor:
    dt = _check(name, window_length, dtype, requires_grad, device)
    if window_length <= 1:
        values = np.ones(window_length)
    else:
        n = window_length + 1 if periodic else window_length
        values = formula(np.arange(n, dtype=np.float64), n)[:window_length]
    t = _wrap(np.ascontiguousarray(values, dtype=dt.np))
    return t.requires_grad_(True) if requires_grad else t


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return the Hamming window ``alpha - beta * cos(2 pi n / (N - 1))``."""
    return _window(
        "hamming_window", window_length, periodic, dtype, requires_grad, device,
        lambda k, n: alpha - beta * np.cos(k * (2 * np.pi / (n - 1))),
    )  # fmt: skip


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                device=None, requires_grad: bool = False,
                pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return the Hann window ``0.5 - 0.5 * cos(2 pi n / (N - 1))``."""
    return _window(
        "hann_window", window_length, periodic, dtype, requires_grad, device,
        lambda k, n: 0.5 - 0.5 * np.cos(k * (2 * np.pi / (n - 1))),
    )  # fmt: skip


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False,
                    pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return the Blackman window ``0.42 - 0.5 cos(2 pi n/(N-1)) + 0.08 cos(4 pi n/(N-1))``."""

    def formula(k, n):
        w = k * (np.pi / (n - 1))
        return 0.08 * np.cos(4 * w) - 0.5 * np.cos(2 * w) + 0.42

    return _window(
        "blackman_window", window_length, periodic, dtype, requires_grad, device, formula
    )


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False,
                    pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return the Bartlett (triangular) window ``1 - |2n/(N-1) - 1|``."""

    def formula(k, n):
        w = k * (2.0 / (n - 1))
        half = ((n - 1) >> 1) + 1
        w[half:] = 2 - w[half:]
        return w

    return _window(
        "bartlett_window", window_length, periodic, dtype, requires_grad, device, formula
    )


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None,
                  layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return the Kaiser window ``I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta)``,
    ``a = (N - 1) / 2``."""

    def formula(k, n):
        a = (n - 1) / 2.0
        return np.i0(beta * np.sqrt(np.clip(1 - ((k - a) / a) ** 2, 0, None))) / np.i0(beta)

    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, device, formula)


for _fn in (hamming_window, hann_window, blackman_window, bartlett_window, kaiser_window):
    expose(_fn, method=False)

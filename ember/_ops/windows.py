"""Window functions: one implementation for torch's two parameterisations of each window.

``torch.hann_window(N, periodic=True)`` and ``torch.signal.windows.hann(M, sym=True)`` are the
same window (``periodic`` is ``not sym``: a periodic window is the first ``N`` points of the
symmetric window of length ``N + 1``). The formulas live here, as ember ops on an evenly spaced
ramp (``linspace`` in the requested dtype, so that with ``requires_grad`` the signal windows
carry torch's graph): :func:`cosine_sum` (Hann, Hamming, Blackman, Nuttall, general cosine),
:func:`bartlett` and :func:`kaiser`. This module gives them torch's ``*_window`` signatures and
errors; ``ember/signal/windows`` gives them the ``signal.windows`` ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ember._core import dtype as D
from ember._core.device import as_device
from ember._core.layout import strided
from ember._core.tensor import Tensor
from ember._ops.registry import API, publish

# -- the formulas --------------------------------------------------------------------------------


def ramp(M: int, start, step, dtype, layout, device, requires_grad: bool) -> Tensor:
    """The ``M`` points ``start, start + step, ...`` (torch's windows start from this): by
    ``linspace`` for ``signal.windows``; ``step`` given as ``("arange", step)`` makes them
    ``arange(M) * step + start``, the ramp of torch's ``*_window`` functions."""
    if isinstance(step, tuple):
        n = API["arange"](M, dtype=dtype, layout=layout, device=device)
        return n.mul_(step[1]).add_(start) if start else n.mul_(step[1])
    return API["linspace"](
        start, start + (M - 1) * step, M, dtype=dtype, layout=layout, device=device,
        requires_grad=requires_grad,
    )  # fmt: skip


def _trivial(M: int, dtype, layout, device, requires_grad: bool) -> Tensor:
    # length 0 is empty, length 1 is [1.] (the formulas would divide by M - 1 = 0)
    make = API["empty"] if M == 0 else API["ones"]
    return make(
        (M,), dtype=dtype, layout=layout, device=device, requires_grad=requires_grad
    )  # fmt: skip


def span(M: int, sym: bool) -> int:
    """The denominator of the window's phase: ``M - 1`` symmetric, ``M`` periodic."""
    return M - 1 if sym else M


def cosine_sum(
    M: int,
    coefficients: Sequence[float],
    sym: bool,
    dtype,
    layout,
    device,
    requires_grad: bool,
    by: str = "linspace",
) -> Tensor:
    """``sum_i (-1)^i a[i] cos(2 pi i n / span)`` for ``n`` in ``0..M-1`` (``by``: the ramp)."""
    if M <= 1:
        return _trivial(M, dtype, layout, device, requires_grad)
    step = 2 * math.pi / span(M, sym)
    k = ramp(M, 0, (by, step) if by == "arange" else step, dtype, layout, device, requires_grad)
    coef = API["tensor"](
        [(-1) ** i * w for i, w in enumerate(coefficients)], dtype=dtype, device=device,
        requires_grad=requires_grad,
    )  # fmt: skip
    i = API["arange"](coef.shape[0], dtype=dtype, device=device, requires_grad=requires_grad)
    return (coef.unsqueeze(-1) * API["cos"](i.unsqueeze(-1) * k)).sum(0)


def bartlett(M: int, sym: bool, dtype, layout, device, requires_grad: bool) -> Tensor:
    """The triangle ``1 - |2 n / span - 1|``."""
    if M <= 1:
        return _trivial(M, dtype, layout, device, requires_grad)
    return 1 - API["abs"](ramp(M, -1, 2 / span(M, sym), dtype, layout, device, requires_grad))


def kaiser(M: int, beta: float, sym: bool, dtype, layout, device, requires_grad: bool) -> Tensor:
    """``I0(sqrt(beta^2 - x^2)) / I0(beta)`` for ``x`` from ``-beta`` in steps of
    ``2 beta / span``."""
    if M <= 1:
        return _trivial(M, dtype, layout, device, requires_grad)
    b = API["tensor"](beta, dtype=dtype, device=device)
    step = 2.0 * b / span(M, sym)
    k = API["linspace"](
        -b, API["minimum"](b, -b + (M - 1) * step), M, dtype=dtype, layout=layout,
        device=device, requires_grad=requires_grad,
    )  # fmt: skip
    return API["i0"](API["sqrt"](b * b - API["pow"](k, 2))) / API["i0"](b)


# -- torch's ``*_window`` parameterisation -------------------------------------------------------


def _window(name: str, N: int, dtype, layout, device, requires_grad: bool, make) -> Tensor:
    """Check the arguments as torch's ``*_window`` does, then build the window (a leaf, also
    with ``requires_grad``)."""
    as_device(device)
    dt = D.get_default_dtype() if dtype is None else dtype
    if not dt.is_floating_point:
        rg = "true" if requires_grad else "false (default)"
        raise RuntimeError(
            f"{name} expects floating point dtypes, got: TensorOptions(dtype="
            f"{D.cpp_type_name(dt)}, device=cpu, layout=Strided (default), requires_grad={rg}, "
            "pinned_memory=false, memory_format=(nullopt))"
        )
    if N < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={N}")
    w = make(dt, strided if layout is None else layout, device)
    return w.requires_grad_(True) if requires_grad else w


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return the Hamming window ``alpha - beta * cos(2 pi n / (N - 1))``."""
    return _window(
        "hamming_window", window_length, dtype, layout, device, requires_grad,
        lambda dt, lo, dev: cosine_sum(
            window_length, (alpha, beta), not periodic, dt, lo, dev, False, by="arange"
        ),
    )  # fmt: skip


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                device=None, requires_grad: bool = False,
                pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return the Hann window ``0.5 - 0.5 * cos(2 pi n / (N - 1))``."""
    return _window(
        "hann_window", window_length, dtype, layout, device, requires_grad,
        lambda dt, lo, dev: cosine_sum(
            window_length, (0.5, 0.5), not periodic, dt, lo, dev, False, by="arange"
        ),
    )  # fmt: skip


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False,
                    pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return the Blackman window ``0.42 - 0.5 cos(2 pi n/(N-1)) + 0.08 cos(4 pi n/(N-1))``."""
    coefficients = (0.42, 0.5, 0.08)
    return _window(
        "blackman_window", window_length, dtype, layout, device, requires_grad,
        lambda dt, lo, dev: cosine_sum(
            window_length, coefficients, not periodic, dt, lo, dev, False, by="arange"
        ),
    )  # fmt: skip


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False,
                    pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return the Bartlett (triangular) window ``1 - |2n/(N-1) - 1|``."""
    return _window(
        "bartlett_window", window_length, dtype, layout, device, requires_grad,
        lambda dt, lo, dev: bartlett(window_length, not periodic, dt, lo, dev, False),
    )  # fmt: skip


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None,
                  layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Return the Kaiser window ``I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta)``,
    ``a = (N - 1) / 2``."""
    return _window(
        "kaiser_window", window_length, dtype, layout, device, requires_grad,
        lambda dt, lo, dev: kaiser(window_length, beta, not periodic, dt, lo, dev, False),
    )  # fmt: skip


for _fn in (hamming_window, hann_window, blackman_window, bartlett_window, kaiser_window):
    publish(None, _fn, method=False)  # (composed of ops: linspace/arange, cos, sum...)

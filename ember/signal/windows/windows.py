"""``torch.signal.windows``: window functions, each a formula on an evenly spaced ramp.

Every window of length ``M`` is computed, as torch computes it, from the ``M`` points
``start, start + step, ..., start + (M - 1) * step`` of ``linspace`` in the requested dtype (so
the values, and the graph when ``requires_grad``, are torch's); ``_begin`` holds the argument
checks and the trivial windows (length 0, and length 1 where the formula would divide by 0).
``sym=False`` gives the periodic window (one point of a window of length ``M + 1`` dropped).
The cosine sums (Hann, Hamming, Blackman, Nuttall, general cosine), Bartlett and Kaiser are
``ember/_ops/windows.py``'s formulas, which ``torch.hann_window`` & co. run too (their
``periodic=True`` is ``sym=False``); this module adds the ``signal.windows`` checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import ember
from ember import Tensor
from ember._ops import windows as _formulas

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]


class _Spec:
    """The common keyword arguments of a window call."""

    __slots__ = ("M", "dtype", "layout", "device", "requires_grad")

    def __init__(self, M, dtype, layout, device, requires_grad):
        self.M, self.layout, self.device = M, layout, device
        self.dtype = ember.get_default_dtype() if dtype is None else dtype
        self.requires_grad = requires_grad

    def ramp(self, start, step) -> Tensor:
        return _formulas.ramp(self.M, start, step, *self.options())

    def options(self) -> tuple:
        return self.dtype, self.layout, self.device, self.requires_grad

    def filled(self, n: int) -> Tensor:
        make = ember.empty if n == 0 else ember.ones
        return make(
            (n,), dtype=self.dtype, layout=self.layout, device=self.device,
            requires_grad=self.requires_grad,
        )  # fmt: skip


def _begin(name: str, spec: _Spec, check: Callable[[], None] | None = None, trivial=(0,)):
    """torch's checks in its order (length, layout, dtype, then the window's own ``check``);
    return the window itself when ``spec.M`` is one of the ``trivial`` lengths, else None."""
    if spec.M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={spec.M}")
    if spec.layout is not ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {spec.layout}")
    if spec.dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {spec.dtype}")
    if check is not None:
        check()
    return spec.filled(spec.M) if spec.M in trivial else None


def exponential(
    M: int,
    *,
    center: float | None = None,
    tau: float = 1.0,
    sym: bool = True,
    dtype: ember.dtype | None = None,
    layout: ember.layout = ember.strided,
    device: ember.device | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return an exponential (Poisson) window of length ``M``: ``exp(-|n - center| / tau)``."""
    spec = _Spec(M, dtype, layout, device, requires_grad)

    def check():
        if tau <= 0:
            raise ValueError(f"Tau must be positive, got: {tau} instead.")
        if sym and center is not None:
            raise ValueError("Center must be None for symmetric windows")

    if (out := _begin("exponential", spec, check)) is not None:
        return out
    c = (M if not sym and M > 1 else M - 1) / 2.0 if center is None else center
    return ember.exp(-ember.abs(spec.ramp(-c / tau, 1 / tau)))


def cosine(
    M: int,
    *,
    sym: bool = True,
    dtype: ember.dtype | None = None,
    layout: ember.layout = ember.strided,
    device: ember.device | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return a cosine (sine) window of length ``M``: ``sin(pi * (n + 1/2) / M)``."""
    spec = _Spec(M, dtype, layout, device, requires_grad)
    if (out := _begin("cosine", spec)) is not None:
        return out
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return ember.sin(spec.ramp(0.5 * step, step))


def gaussian(
    M: int,
    *,
    std: float = 1.0,
    sym: bool = True,
    dtype: ember.dtype | None = None,
    layout: ember.layout = ember.strided,
    device: ember.device | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return a Gaussian window of length ``M``: ``exp(-(n - c)^2 / (2 std^2))``."""
    spec = _Spec(M, dtype, layout, device, requires_grad)

    def check():
        if std <= 0:
            raise ValueError(f"Standard deviation must be positive, got: {std} instead.")

    if (out := _begin("gaussian", spec, check)) is not None:
        return out
    step = 1 / (std * math.sqrt(2))
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    return ember.exp(-(spec.ramp(start * step, step) ** 2))


def kaiser(
    M: int,
    *,
    beta: float = 12.0,
    sym: bool = True,
    dtype: ember.dtype | None = None,
    layout: ember.layout = ember.strided,
    device: ember.device | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return a Kaiser window of length ``M``: ``I0(beta sqrt(1 - x^2)) / I0(beta)`` on
    ``x`` from -1 to 1."""
    spec = _Spec(M, dtype, layout, device, requires_grad)

    def check():
        if beta < 0:
            raise ValueError(f"beta must be non-negative, got: {beta} instead.")

    if (out := _begin("kaiser", spec, check, trivial=(0, 1))) is not None:
        return out
    return _formulas.kaiser(M, beta, sym, *spec.options())


def bartlett(
    M: int,
    *,
    sym: bool = True,
    dtype: ember.dtype | None = None,
    layout: ember.layout = ember.strided,
    device: ember.device | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return a Bartlett (triangular) window of length ``M``."""
    spec = _Spec(M, dtype, layout, device, requires_grad)
    if (out := _begin("bartlett", spec, trivial=(0, 1))) is not None:
        return out
    return _formulas.bartlett(M, sym, *spec.options())


def general_cosine(
    M,
    *,
    a: Iterable,
    sym: bool = True,
    dtype: ember.dtype | None = None,
    layout: ember.layout = ember.strided,
    device: ember.device | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the generalized cosine window ``sum_i (-1)^i a[i] cos(2 pi i n / (M - 1))`` of
    length ``M``."""
    spec = _Spec(M, dtype, layout, device, requires_grad)

    def check():
        if not isinstance(a, Iterable):
            raise TypeError("Coefficients must be a list/tuple")
        if not a:
            raise ValueError("Coefficients cannot be empty")

    # (torch checks the coefficients only for windows longer than 1)
    if (out := _begin("general_cosine", spec, trivial=(0, 1))) is not None:
        return out
    check()
    return _formulas.cosine_sum(M, a, sym, *spec.options())


def general_hamming(
    M,
    *,
    alpha: float = 0.54,
    sym: bool = True,
    dtype: ember.dtype | None = None,
    layout: ember.layout = ember.strided,
    device: ember.device | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the generalized Hamming window ``alpha - (1 - alpha) cos(2 pi n / (M - 1))``."""
    return general_cosine(
        M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
        requires_grad=requires_grad,
    )  # fmt: skip


def _cosine_sum(name: str, coefficients: list, doc: str):
    """A general_cosine window with fixed ``coefficients`` (the Hann, Hamming... family)."""

    def window(
        M: int,
        *,
        sym: bool = True,
        dtype: ember.dtype | None = None,
        layout: ember.layout = ember.strided,
        device: ember.device | None = None,
        requires_grad: bool = False,
    ) -> Tensor:
        if name == "blackman":  # (torch checks blackman's arguments under its own name)
            _begin(name, _Spec(M, dtype, layout, device, requires_grad), trivial=())
        return general_cosine(
            M, a=coefficients, sym=sym, dtype=dtype, layout=layout, device=device,
            requires_grad=requires_grad,
        )  # fmt: skip

    window.__name__ = window.__qualname__ = name
    window.__doc__ = doc
    return window


# (coefficients as torch forms them: general_hamming's [alpha, 1.0 - alpha])
hamming = _cosine_sum("hamming", [0.54, 1.0 - 0.54], "Return a Hamming window of length ``M``.")
hann = _cosine_sum("hann", [0.5, 1.0 - 0.5], "Return a Hann window of length ``M``.")
blackman = _cosine_sum("blackman", [0.42, 0.5, 0.08], "Return a Blackman window of length ``M``.")
nuttall = _cosine_sum(
    "nuttall",
    [0.3635819, 0.4891775, 0.1365995, 0.0106411],
    "Return a minimum 4-term Blackman-Harris (Nuttall) window of length ``M``.",
)

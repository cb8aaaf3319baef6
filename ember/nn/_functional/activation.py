"""Activations and the softmax family of ``ember.nn.functional``.

Each activation is one op from the table (forward on arrays, backward in ember ops, so double
backward works) with torch's grad_fn name; in-place forms (``inplace=True``) run the same op
through ``dispatch_inplace`` (torch names some of those nodes ``...Backward1``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import ember
from ember._core.tensor import Tensor
from ember._ops.pointwise import like
from ember._ops.registry import Op, dispatch, dispatch_inplace, op, publish
from ember._ops.special_math import erf as _np_erf

__all__ = [
    "celu",
    "celu_",
    "elu",
    "elu_",
    "gelu",
    "glu",
    "gumbel_softmax",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "leaky_relu_",
    "log_softmax",
    "logsigmoid",
    "mish",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "threshold_",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _need_tensor(name: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}"
        )


def _renamed(base: Op, grad_fn: str, save: tuple | None = None) -> Op:
    """Return ``base`` under another grad_fn name (torch's ``...Backward1`` in-place nodes);
    ``save`` the names shown, if not ``base``'s."""
    return base.variant(
        name=base.name + "_", grad_fn=grad_fn, save=base.save if save is None else save
    )


def _run(op_: Op, input: Tensor, params: dict, inplace: bool, iop: Op | None = None) -> Tensor:
    if inplace:
        return dispatch_inplace(iop or op_, input, (input,), params)
    return dispatch(op_, (input,), params)


# ------------------------------------------------------------------------------ relu family


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """Return ``max(0, input)`` element-wise."""
    _need_tensor("relu", input)
    return input.relu_() if inplace else ember.relu(input)


def relu_(input: Tensor) -> Tensor:
    """In-place version of :func:`relu`."""
    return input.relu_()


@op("hardtanh", grad_fn="HardtanhBackward0", save=("self",))
def _hardtanh(x, min_val=-1.0, max_val=1.0):
    return np.clip(x, like(x, min_val), like(x, max_val))


@_hardtanh.backward
def _(ctx, g, min_val=-1.0, max_val=1.0):
    (x,) = ctx.saved_tensors
    return ember.where((x > min_val) & (x < max_val), g, g.new_zeros(()))


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """Return ``input`` clamped to ``[min_val, max_val]``."""
    _need_tensor("hardtanh", input)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _run(_hardtanh, input, {"min_val": min_val, "max_val": max_val}, inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place version of :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """Return ``min(max(0, input), 6)`` element-wise."""
    return hardtanh(input, 0.0, 6.0, inplace)


@op("leaky_relu", grad_fn="LeakyReluBackward0", save=("self",))
def _leaky_relu(x, negative_slope=0.01):
    return np.where(x > 0, x, x * like(x, negative_slope))


@_leaky_relu.backward
def _(ctx, g, negative_slope=0.01):
    (x,) = ctx.saved_tensors
    return ember.where(x > 0, g, g * negative_slope)


_leaky_relu_ip = _renamed(_leaky_relu, "LeakyReluBackward1", save=("_self",))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """Return ``input`` where positive, else ``negative_slope * input``."""
    _need_tensor("leaky_relu", input)
    return _run(_leaky_relu, input, {"negative_slope": negative_slope}, inplace, _leaky_relu_ip)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place version of :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, True)


@op("elu", grad_fn="EluBackward0", save=("self",))
def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    neg = np.expm1(x * like(x, input_scale)) * like(x, alpha)
    return np.where(x > 0, x, neg) * like(x, scale)


@_elu.backward
def _(ctx, g, alpha=1.0, scale=1.0, input_scale=1.0):
    (x,) = ctx.saved_tensors
    neg = g * ((x * input_scale).exp() * (alpha * scale * input_scale))
    return ember.where(x > 0, g * scale, neg)


_elu_ip = _renamed(_elu, "EluBackward1", save=("_self",))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Return ``input`` where positive, else ``alpha * (exp(input) - 1)``."""
    _need_tensor("elu", input)
    return _run(_elu, input, {"alpha": alpha}, inplace, _elu_ip)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place version of :func:`elu`."""
    return elu(input, alpha, True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Return ``scale * elu(input, alpha)`` with the self-normalising constants."""
    _need_tensor("selu", input)
    params = {"alpha": _SELU_ALPHA, "scale": _SELU_SCALE}
    return _run(_elu, input, params, inplace, _elu_ip)


def selu_(input: Tensor) -> Tensor:
    """In-place version of :func:`selu`."""
    return selu(input, True)


_celu = op("celu", grad_fn="CeluBackward0", save=("self",))(_elu.forward)
_celu.backward(_elu.backward_fn)
_celu_ip = _renamed(_celu, "CeluBackward1", save=("_self",))


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Return ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    _need_tensor("celu", input)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _run(_celu, input, {"alpha": alpha, "input_scale": 1.0 / alpha}, inplace, _celu_ip)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place version of :func:`celu`."""
    return celu(input, alpha, True)


@op("threshold", grad_fn="ThresholdBackward0", save=("self",))
def _threshold(x, threshold=0.0, value=0.0):
    return np.where(x > like(x, threshold), x, like(x, value)).astype(x.dtype, copy=False)


@_threshold.backward
def _(ctx, g, threshold=0.0, value=0.0):
    (x,) = ctx.saved_tensors
    return ember.where(x > threshold, g, g.new_zeros(()))


_threshold_ip = _renamed(_threshold, "ThresholdBackward1")


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """Return ``input`` where it exceeds ``threshold``, else ``value``."""
    _need_tensor("threshold", input)
    params = {"threshold": threshold, "value": value}
    return _run(_threshold, input, params, inplace, _threshold_ip)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place version of :func:`threshold`."""
    return _run(_threshold_ip, input, {"threshold": threshold, "value": value}, True)


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Return a leaky ReLU whose negative slope is drawn from U(lower, upper) in training,
    ``(lower + upper) / 2`` in evaluation."""
    _need_tensor("rrelu", input)
    if training:
        # torch draws one float64 U(lower, upper) per non-positive element, in order, between
        # the bounds as the input's dtype holds them
        gen = ember.random.default_generator
        neg = input._data <= 0
        dt = input._data.dtype
        lo, hi = float(np.asarray(lower, dt)), float(np.asarray(upper, dt))
        noise = np.ones(input.shape, dt)
        noise[neg] = gen._uniform((int(neg.sum()),), lo, hi, np.float64)
    else:
        noise = np.full(input.shape, (lower + upper) / 2, input._data.dtype)
        noise = np.where(input._data > 0, like(noise, 1.0), noise)
    n = ember.from_numpy(noise)
    return _run(_rrelu, input, {"noise": n}, inplace)


@op("rrelu_with_noise", grad_fn="RreluWithNoiseBackward0", save=("self",))
def _rrelu(x, noise):
    return x * noise._data


@_rrelu.backward
def _(ctx, g, noise):
    return g * noise


def rrelu_(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False
) -> Tensor:
    """In-place version of :func:`rrelu`."""
    return rrelu(input, lower, upper, training, True)


@op(
    "_prelu_kernel",
    grad_fn="PreluKernelBackward0",
    args=("self", "weight"),
    save=("self", "weight"),
    promote="same",
)
def _prelu(x, w):
    return np.where(x > 0, x, x * w)


@_prelu.backward
def _(ctx, g, shape=None):
    x, w = ctx.saved_tensors
    pos = x > 0
    gx = ember.where(pos, g, g * w) if ctx.needs_input_grad[0] else None
    gw = ember.where(pos, g.new_zeros(()), g * x) if ctx.needs_input_grad[1] else None
    return gx, gw


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Return ``input`` where positive, else ``weight * input`` (``weight`` per channel)."""
    _need_tensor("prelu", input)
    n = weight.numel()
    if n != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if n != channels:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers "
                f"= {n} and channel size = {channels}."
            )
    if n == 1:
        w = weight.reshape(())
    else:
        w = weight.reshape((n,) + (1,) * (input.dim() - 2))
    return dispatch(_prelu, (input, w))


# ------------------------------------------------------------------------------ smooth ones


_ERF_ALPHA = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_BETA = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


def _np_erf_f(x):
    """Return erf(x): a float32 rational approximation (Eigen's, a few ulp) for float32 and
    narrower inputs, ember's float64 kernel for float64."""
    if x.dtype == np.float64:
        return _np_erf(x)
    x = np.clip(x.astype(np.float32, copy=False), np.float32(-4), np.float32(4))
    x2 = x * x
    p = np.full_like(x2, _ERF_ALPHA[0])
    for a in _ERF_ALPHA[1:]:
        p *= x2
        p += np.float32(a)
    p *= x
    q = np.full_like(x2, _ERF_BETA[0])
    for b in _ERF_BETA[1:]:
        q *= x2
        q += np.float32(b)
    return p / q


@op("gelu", grad_fn="GeluBackward0", save=("self",))
def _gelu(x, approximate="none"):
    if approximate == "tanh":
        k = like(x, math.sqrt(2.0 / math.pi))
        inner = k * (x + like(x, 0.044715) * x * x * x)
        return like(x, 0.5) * x * (1 + np.tanh(inner))
    cdf = _np_erf_f(x * like(x, 1 / math.sqrt(2.0)))
    cdf += 1
    cdf *= 0.5
    return (x * cdf).astype(x.dtype, copy=False)


@op("normal_cdf", grad_fn="MulBackward0", save=("self",))
def _normal_cdf(x):
    cdf = _np_erf_f(x * like(x, 1 / math.sqrt(2.0)))
    return (0.5 * (cdf + 1)).astype(x.dtype, copy=False)


@_normal_cdf.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return g * _normal_pdf(x)


def _normal_pdf(x: Tensor) -> Tensor:
    return (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))


@_gelu.backward
def _(ctx, g, approximate="none"):
    (x,) = ctx.saved_tensors
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        inner = (x + 0.044715 * x * x * x) * k
        t = inner.tanh()
        dinner = (1 + 3 * 0.044715 * x * x) * k
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dinner)
    return g * (dispatch(_normal_cdf, (x,)) + x * _normal_pdf(x))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Return ``x * Phi(x)`` (``approximate='tanh'``: the tanh approximation)."""
    _need_tensor("gelu", input)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return dispatch(_gelu, (input,), {} if approximate == "none" else {"approximate": "tanh"})


def _np_sigmoid(x):
    return (1 / (1 + np.exp(-x))).astype(x.dtype, copy=False)


@op("silu", grad_fn="SiluBackward0", save=("self",))
def _silu(x):
    return x * _np_sigmoid(x)


@_silu.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    s = x.sigmoid()
    return g * (s * (1 + x * (1 - s)))


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """Return ``x * sigmoid(x)``."""
    _need_tensor("silu", input)
    return _run(_silu, input, {}, inplace)


def _np_softplus(x, beta=1.0, threshold=20.0):
    bx = x * like(x, beta)
    soft = np.logaddexp(like(x, 0.0), bx) / like(x, beta)
    return np.where(bx > like(x, threshold), x, soft).astype(x.dtype, copy=False)


@op("mish", grad_fn="MishBackward0", save=("self",))
def _mish(x):
    return x * np.tanh(_np_softplus(x))


@_mish.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    t = softplus(x).tanh()
    return g * (t + x * x.sigmoid() * (1 - t * t))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """Return ``x * tanh(softplus(x))``."""
    _need_tensor("mish", input)
    return _run(_mish, input, {}, inplace)


@op("softplus", grad_fn="SoftplusBackward0", save=("self",))
def _softplus(x, beta=1.0, threshold=20.0):
    return _np_softplus(x, beta, threshold)


@_softplus.backward
def _(ctx, g, beta=1.0, threshold=20.0):
    (x,) = ctx.saved_tensors
    return ember.where(x * beta > threshold, g, g * (x * beta).sigmoid())


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Return ``log(1 + exp(beta * x)) / beta`` (linear above ``threshold``)."""
    _need_tensor("softplus", input)
    return dispatch(_softplus, (input,), {"beta": beta, "threshold": threshold})


@op("log_sigmoid", grad_fn="LogSigmoidBackward0", save=("self",))
def _logsigmoid(x):
    return -np.logaddexp(like(x, 0.0), -x)


@_logsigmoid.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return g * (-x).sigmoid()


def logsigmoid(input: Tensor) -> Tensor:
    """Return ``log(sigmoid(x))``, computed stably."""
    _need_tensor("logsigmoid", input)
    return dispatch(_logsigmoid, (input,))


def sigmoid(input: Tensor) -> Tensor:
    """Return the logistic sigmoid of ``input``."""
    return ember.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Return the hyperbolic tangent of ``input``."""
    return ember.tanh(input)


def tanhshrink(input: Tensor) -> Tensor:
    """Return ``x - tanh(x)``."""
    return input - input.tanh()


def softsign(input: Tensor) -> Tensor:
    """Return ``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


# ------------------------------------------------------------------------------ hard ones


@op("hardswish", grad_fn="HardswishBackward0", save=("self",))
def _hardswish(x):
    return x * np.clip(x + like(x, 3.0), like(x, 0.0), like(x, 6.0)) / like(x, 6.0)


@_hardswish.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    mid = g * (x / 3 + 0.5)
    z = g.new_zeros(())
    # the kinks belong to the flat sides, as torch's kernel: 0 at x = -3, g at x = 3
    return ember.where(x <= -3, z, ember.where(x < 3, mid, g))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """Return ``x * relu6(x + 3) / 6``."""
    _need_tensor("hardswish", input)
    return _run(_hardswish, input, {}, inplace)


@op("hardsigmoid", grad_fn="HardsigmoidBackward0", save=("self",))
def _hardsigmoid(x):
    return np.clip(x + like(x, 3.0), like(x, 0.0), like(x, 6.0)) / like(x, 6.0)


@_hardsigmoid.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return ember.where((x > -3) & (x < 3), g / 6, g.new_zeros(()))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """Return ``relu6(x + 3) / 6``."""
    _need_tensor("hardsigmoid", input)
    return _run(_hardsigmoid, input, {}, inplace)


@op("hardshrink", grad_fn="HardshrinkBackward0", save=("self",))
def _hardshrink(x, lambd=0.5):
    return np.where(np.abs(x) > like(x, lambd), x, like(x, 0.0)).astype(x.dtype, copy=False)


@_hardshrink.backward
def _(ctx, g, lambd=0.5):
    (x,) = ctx.saved_tensors
    return ember.where(x.abs() > lambd, g, g.new_zeros(()))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Return ``x`` where ``|x| > lambd``, else 0."""
    _need_tensor("hardshrink", input)
    return dispatch(_hardshrink, (input,), {"lambd": lambd})


@op("softshrink", grad_fn="SoftshrinkBackward0", save=("self",))
def _softshrink(x, lambd=0.5):
    lam = like(x, lambd)
    return np.where(x > lam, x - lam, np.where(x < -lam, x + lam, like(x, 0.0))).astype(x.dtype)


@_softshrink.backward
def _(ctx, g, lambd=0.5):
    (x,) = ctx.saved_tensors
    return ember.where(x.abs() > lambd, g, g.new_zeros(()))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Return ``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    _need_tensor("softshrink", input)
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {float(lambd)}.")
    return dispatch(_softshrink, (input,), {"lambd": lambd})


# ------------------------------------------------------------------------------ glu


@op("glu", grad_fn="GluBackward0", save=("self",))
def _glu(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a * _np_sigmoid(b)


@_glu.backward
def _(ctx, g, dim=-1):
    (x,) = ctx.saved_tensors
    a, b = x.chunk(2, dim)
    s = b.sigmoid()
    return ember.cat([g * s, g * a * s * (1 - s)], dim)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Return ``a * sigmoid(b)`` where ``a, b`` are the halves of ``input`` along ``dim``."""
    _need_tensor("glu", input)
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.dim()
    if input.shape[d] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}"
        )
    return dispatch(_glu, (input,), {"dim": d})


# ------------------------------------------------------------------------------ softmax family


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


@op("_softmax", grad_fn="SoftmaxBackward0", save=("result",))
def _softmax(x, dim):
    if x.ndim == 0:
        return np.ones_like(x)
    x = np.ascontiguousarray(x)  # torch's kernels: a contiguous result whatever the input's strides
    m = np.max(x, axis=dim, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(m), m, 0))
    e /= np.sum(e, axis=dim, keepdims=True)
    return e


@_softmax.backward
def _(ctx, g, dim):
    (y,) = ctx.saved_tensors
    if y.dim() == 0:
        return g * 0
    gy = g * y
    return gy - y * gy.sum(dim, keepdim=True)


@op("_log_softmax", grad_fn="LogSoftmaxBackward0", save=("result",))
def _log_softmax(x, dim):
    if x.ndim == 0:
        return np.zeros_like(x)
    x = np.ascontiguousarray(x)  # (as _softmax)
    m = np.max(x, axis=dim, keepdims=True)
    s = x - np.where(np.isfinite(m), m, 0)
    return s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))


@_log_softmax.backward
def _(ctx, g, dim):
    (y,) = ctx.saved_tensors
    if y.dim() == 0:
        return g * 0
    return g - y.exp() * g.sum(dim, keepdim=True)


@_log_softmax.array_backward
def _(ctx, g, dim):
    (y,) = ctx.saved_arrays
    if y.ndim == 0:
        return g * 0
    out = np.exp(y)
    out *= np.sum(g, axis=dim, keepdims=True)
    return np.subtract(g, out, out=out)


@_softmax.array_backward
def _(ctx, g, dim):
    (y,) = ctx.saved_arrays
    if y.ndim == 0:
        return g * 0
    gy = g * y
    out = y * np.sum(gy, axis=dim, keepdims=True)
    return np.subtract(gy, out, out=out)


def _softmax_prep(name, input, dim, dtype, stacklevel):
    _need_tensor(name, input)
    if dim is None:
        dim = _softmax_dim(name, input.dim(), stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    elif not input.dtype.is_floating_point:
        kernel = "log_softmax" if name == "log_softmax" else "softmax"
        raise NotImplementedError(
            f"\"{kernel}_lastdim_kernel_impl\" not implemented for '{_type_str(input)}'"
        )
    nd = max(input.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})"
        )
    return input, dim % nd if input.dim() else 0


def _type_str(t: Tensor) -> str:
    from ember._ops.registry import _type_name

    return _type_name(t.dtype)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Return ``exp(x) / sum(exp(x))`` along ``dim`` (computed in ``dtype`` if given)."""
    # ``_stacklevel`` counts frames as torch's does from its softmax (3: the caller); ours adds
    # _softmax_prep's frame and the composite wrapper's (registry.composite)
    input, dim = _softmax_prep("softmax", input, dim, dtype, _stacklevel + 2)
    return dispatch(_softmax, (input,), {"dim": dim})


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Return ``softmax(-input)`` along ``dim``."""
    input, dim = _softmax_prep("softmin", input, dim, dtype, _stacklevel + 1)  # (no wrapper)
    return dispatch(_softmax, (-input,), {"dim": dim})


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Return ``log(softmax(x))`` along ``dim``, computed stably."""
    input, dim = _softmax_prep("log_softmax", input, dim, dtype, _stacklevel + 2)
    return dispatch(_log_softmax, (input,), {"dim": dim})


def _softmax_method(input: Tensor, dim: int, dtype=None) -> Tensor:
    """Return ``exp(x) / sum(exp(x))`` along ``dim`` (``torch.softmax``, ``Tensor.softmax``)."""
    return softmax(input, dim, dtype=dtype)


def _log_softmax_method(input: Tensor, dim: int, dtype=None) -> Tensor:
    """Return ``log(softmax(x))`` along ``dim`` (``torch.log_softmax``, ``Tensor.log_softmax``)."""
    return log_softmax(input, dim, dtype=dtype)


publish(None, _softmax_method, name="softmax", function=False)
publish(None, _log_softmax_method, name="log_softmax", function=False)


def gumbel_softmax(
    logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """Return samples of the Gumbel-softmax distribution (one-hot with a straight-through
    gradient when ``hard``)."""
    gen = ember.random.default_generator
    e = gen._exponential(logits.shape, 1.0, logits._data.dtype)
    gumbels = (logits - ember.from_numpy(np.log(e))) / tau
    y = softmax(gumbels, dim)
    if not hard:
        return y
    d = dim % max(y.dim(), 1)
    idx = np.argmax(y._data, axis=d)
    onehot = np.zeros(y.shape, y._data.dtype)
    np.put_along_axis(onehot, np.expand_dims(idx, d), 1, axis=d)
    return ember.from_numpy(onehot) - y.detach() + y

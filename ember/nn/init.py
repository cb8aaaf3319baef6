"""``nn.init``: in-place initialisers with torch's formulas (all run under ``no_grad``)."""

from __future__ import annotations

import math
import warnings

import numpy as np

import ember
from ember._core.tensor import Tensor

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "sparse_",
]


# the gains of the nonlinearities whose gain is a constant; leaky_relu's depends on its slope
_CONSTANT_GAINS = {
    **dict.fromkeys(
        (
            "linear",
            "conv1d",
            "conv2d",
            "conv3d",
            "conv_transpose1d",
            "conv_transpose2d",
            "conv_transpose3d",
            "sigmoid",
        ),
        1,
    ),
    "tanh": 5.0 / 3,
    "relu": math.sqrt(2.0),
    "selu": 3.0 / 4,
}


def calculate_gain(nonlinearity: str, param=None) -> float:
    """Return the recommended gain for ``nonlinearity`` (torch's table)."""
    if nonlinearity in _CONSTANT_GAINS:
        return _CONSTANT_GAINS[nonlinearity]
    if nonlinearity != "leaky_relu":
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")
    if param is None:
        slope = 0.01
    elif isinstance(param, (int, float)) and not isinstance(param, bool):
        slope = param
    else:
        raise ValueError(f"negative_slope {param} not a valid number")
    # keeps the variance of a leaky ReLU's output equal to its input's
    return math.sqrt(2.0 / (1 + slope**2))


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    # weights are (out, in, *kernel): each input (output) unit sees prod(kernel) weights
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    kernel = math.prod(tensor.shape[2:])
    return tensor.size(1) * kernel, tensor.size(0) * kernel


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    # "fan_in" preserves the forward pass's variance, "fan_out" the backward pass's
    return _calculate_fan_in_and_fan_out(tensor)[valid_modes.index(mode)]


def _xavier_std(tensor: Tensor, gain: float) -> float:
    # Glorot & Bengio: Var = 2 / (fan_in + fan_out), scaled by the gain
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return gain * math.sqrt(2.0 / (fan_in + fan_out))


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    # He et al.: Var = gain^2 / fan; None for a zero-element tensor (a warned no-op)
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with values from U(a, b)."""
    with ember.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with values from N(mean, std^2)."""
    with ember.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator=None,
) -> Tensor:
    """Fill ``tensor`` with N(mean, std^2) values truncated to [a, b]: out-of-range normal
    draws are redrawn when most of the mass lies in [a, b] (p > 0.3), otherwise uniform
    candidates on [a, b] are accepted with the normal density (torch's two samplers, drawing
    the same random numbers in the same order)."""

    def mass_below(x: float) -> float:  # the standard normal CDF at (x - mean) / std
        return 0.5 * (1.0 + math.erf((x - mean) / (std * math.sqrt(2.0))))

    if not (a - 2 * std <= mean <= b + 2 * std):
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect.",
            stacklevel=2,
        )
    with ember.no_grad():
        if mass_below(b) - mass_below(a) > 0.3:
            # most draws land inside: draw normals, redraw the ones outside until none is
            # (the bounds as the tensor's dtype sees them)
            lo, hi = tensor.new_tensor(a).item(), tensor.new_tensor(b).item()
            values = tensor.normal_(mean, std, generator=generator)
            outside = (values < lo) | (values > hi)
            while outside.any():
                redraw = ember.empty_like(values).normal_(mean, std, generator=generator)
                values = ember.where(outside, redraw, values)
                outside = (values < lo) | (values > hi)
            if values is not tensor:
                tensor.copy_(values)
            return tensor
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2

        def log_density_excess(x):  # log pdf(x) - log pdf(mode), in place on ``x``
            return x.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)

        candidates = ember.empty_like(tensor)
        accept = ember.empty_like(tensor)
        tensor.uniform_(a, b, generator=generator)
        log_density_excess(candidates.copy_(tensor))
        pending = accept.uniform_(generator=generator).log_().gt(candidates)
        if pending.any():
            # rejected entries take fresh uniform candidates, accepted ones stay
            values = tensor
            while pending.any():
                fresh = candidates.uniform_(a, b, generator=generator)
                values = ember.where(pending, fresh, values)
                log_density_excess(candidates)
                rejected = accept.uniform_(generator=generator).log_().gt(candidates)
                pending = pending & rejected
            tensor.copy_(values)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``."""
    with ember.no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros."""
    with ember.no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fill the 2-D ``tensor`` with the identity matrix."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    n, m = tensor.shape
    with ember.no_grad():
        tensor.copy_(ember.from_numpy(np.eye(n, m, dtype=tensor._data.dtype)))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill the 3-, 4- or 5-D ``tensor`` with the Dirac delta (identity convolution)."""
    dimensions = tensor.ndimension()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    arr = np.zeros(tuple(sizes), dtype=tensor._data.dtype)
    centre = tuple(s // 2 for s in sizes[2:])
    d = np.arange(min_dim)
    for g in range(groups):
        arr[(g * out_chans_per_grp + d, d, *centre)] = 1
    with ember.no_grad():
        tensor.copy_(ember.from_numpy(arr))
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` from U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    # U(-a, a) has standard deviation a / sqrt(3)
    bound = math.sqrt(3.0) * _xavier_std(tensor, gain)
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` from N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    return normal_(tensor, 0.0, _xavier_std(tensor, gain), generator)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """Fill ``tensor`` from U(-bound, bound), bound = gain * sqrt(3 / fan) (He et al.)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """Fill ``tensor`` from N(0, std^2), std = gain / sqrt(fan) (He et al.)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else normal_(tensor, 0.0, std, generator)


def _layer_default_(weight: Tensor, bias: Tensor | None) -> None:
    # Linear's and the convolutions' reset_parameters: kaiming_uniform_ with a = sqrt(5),
    # i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight, the same range for the bias
    # (U(0, 0) when fan_in is 0: the bias still draws from the generator)
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in = _calculate_fan_in_and_fan_out(weight)[0]
        limit = 1 / math.sqrt(fan_in) if fan_in > 0 else 0  # (not fan_in**-0.5: last bits)
        uniform_(bias, -limit, limit)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with a (semi-)orthogonal matrix (QR of a Gaussian matrix)."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    # the Gaussian matrix in the tensor's dtype (torch's draws), its QR in that precision
    flat = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
    a = flat._data
    if rows < cols:
        a = a.T
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r)).astype(q.dtype)
    if rows < cols:
        q = q.T
    with ember.no_grad():
        tensor.view(rows, cols).copy_(ember.from_numpy(np.ascontiguousarray(q * gain)))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill the 2-D ``tensor`` from N(0, std^2) with a fraction ``sparsity`` of each column
    set to zero."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with ember.no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):  # torch: a permutation per column (from the default generator)
            tensor[ember.randperm(rows)[:num_zeros], col] = 0
    return tensor


# deprecated non-underscore aliases, as torch (with its warning)
def _deprecated(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
            FutureWarning,
            stacklevel=2,
        )
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"``{old_name}`` is deprecated; use ``{new_name}``."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)

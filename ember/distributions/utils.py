"""Helpers shared by the distributions (torch.distributions.utils)."""

from __future__ import annotations

from numbers import Number

import ember
import ember.nn.functional as F

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "euler_constant",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # Euler Mascheroni Constant


def broadcast_all(*values):
    """Return ``values`` as tensors broadcast together; numbers take the first tensor's dtype."""
    if not all(isinstance(v, (ember.Tensor, Number)) for v in values):
        raise ValueError(
            "Input arguments must all be instances of Number, "
            "torch.Tensor or objects implementing __torch_function__."
        )
    if not all(isinstance(v, ember.Tensor) for v in values):
        options = {"dtype": ember.get_default_dtype()}
        for value in values:
            if isinstance(value, ember.Tensor):
                options = {"dtype": value.dtype}
                break
        values = [v if isinstance(v, ember.Tensor) else ember.tensor(v, **options) for v in values]
    return ember.broadcast_tensors(*values)


def logits_to_probs(logits, is_binary: bool = False):
    """Return probabilities from logits (sigmoid if binary, else softmax over the last dim)."""
    if is_binary:
        return ember.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Return ``probs`` clamped to ``[eps, 1 - eps]`` with ``eps`` the dtype's epsilon."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Return logits from probabilities (log-odds if binary, else log)."""
    p = clamp_probs(probs)  # finite logits at 0 and 1
    return p.log() - (-p).log1p() if is_binary else p.log()


class lazy_property:  # noqa: N801 (torch's name)
    """A property computed once on first access and then stored on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        # computed with grad enabled (the value may be used under no_grad first), then stored
        # on the instance, where it shadows this non-data descriptor from now on
        with ember.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def _all_true(valid) -> bool:
    return bool(valid.all().item()) if isinstance(valid, ember.Tensor) else bool(valid)


def _standard_normal(shape, dtype, device=None):
    """Return standard normal draws of ``shape`` (torch's ``empty(shape).normal_()``)."""
    return ember.empty(shape, dtype=dtype).normal_()


def _sum_rightmost(value, dim: int):
    """Return ``value`` with its ``dim`` rightmost dimensions summed out."""
    if dim == 0:
        return value
    return value.reshape(value.shape[: value.dim() - dim] + (-1,)).sum(-1)


def _tril_mask(n: int, diag: int):
    arange = ember.arange(n)
    return arange < arange.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag: int = 0):
    """Return the lower triangular elements of (a batch of) ``D x D`` matrices, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag)]


def vec_to_tril_matrix(vec, diag: int = 0):
    """Return (a batch of) lower triangular ``D x D`` matrices filled from ``vec`` in row order."""
    m = vec.shape[-1]
    # the smallest D whose triangle (at offset ``diag``) holds at least m entries
    n = 0
    while int(_tril_mask(n, diag).sum()) < m if n else m > 0:
        n += 1
    if n and int(_tril_mask(n, diag).sum()) != m:
        raise ValueError(
            f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
            "the lower triangular part of a square D x D matrix."
        )
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tril_mask(n, diag)] = vec
    return mat


def _probs_xor_logits(probs, logits) -> bool:
    """Whether ``probs`` is the given parameterization; exactly one of the two must be."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return probs is not None


def _logits_with(dist, value):
    """The first step of ``log_prob`` in a family parameterized by ``logits``: ``value``
    validated (when ``dist`` validates) and broadcast with the logits, as ``(logits, value)``."""
    if dist._validate_args:
        dist._validate_sample(value)
    return broadcast_all(dist.logits, value)


class _BinaryOdds:
    """Mixin of the families with one success probability, given as ``probs`` or as log-odds
    ``logits``; the other is derived on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


def _log1p_exp(x):
    """log(1 + e^x) without overflow, with derivative sigmoid(x) everywhere (1/2 at 0)."""
    return ember.logaddexp(ember.zeros_like(x), x)


def _shape_of_params(given, broadcast) -> ember.Size:
    """The batch shape of a family built from ``given`` (the user's arguments) after
    ``broadcast_all``: () when every argument was a plain number."""
    if all(isinstance(g, Number) for g in given):
        return ember.Size()
    return broadcast[0].size()


def _store_broadcast(obj, **params) -> ember.Size:
    """Broadcast the keyword values together, set them on ``obj`` under their names, and return
    the batch shape (() when every value was a plain number)."""
    values = broadcast_all(*params.values())
    for name, value in zip(params, values):
        setattr(obj, name, value)
    return _shape_of_params(tuple(params.values()), values)

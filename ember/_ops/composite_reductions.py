"""Reductions composed of existing ops (their autograd comes for free): ``Tensor.sum_to_size``,
``dist``, ``renorm``/``renorm_``, ``cov`` and ``corrcoef``."""

from __future__ import annotations

import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor, wrap_dim
from ember._ops.complex_parts import imag, real
from ember._ops.registry import publish


def sum_to_size(self: Tensor, *size) -> Tensor:
    """Return ``self`` summed down to ``size`` (which ``self``'s shape must expand from)."""
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    shape = self._data.shape
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == n or s == 1 for s, n in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(
        lead + i for i, (s, n) in enumerate(zip(size, shape[lead:])) if s == 1 and n != 1
    )
    if not dims:
        return self
    out = self.sum(dims, keepdim=True)
    return out.view(size) if lead else out


def dist(input: Tensor, other: Tensor, p=2) -> Tensor:
    """Return the ``p``-norm of ``input - other``."""
    from ember._ops.linalg_norm import vector_norm

    return vector_norm(input - other, p)


def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Return ``input`` with each slice along ``dim`` rescaled to ``p``-norm at most
    ``maxnorm``."""
    from ember._ops.copying import where
    from ember._ops.linalg_norm import vector_norm

    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    others = tuple(i for i in range(nd) if i != d)
    norm = vector_norm(input, p, others, keepdim=True)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).to(input.dtype)
    return input * factor


def renorm_(self: Tensor, p, dim: int, maxnorm) -> Tensor:
    """In-place version of :meth:`Tensor.renorm`; return ``self``."""
    return self.copy_(
        renorm(self.clone() if self.requires_grad else self.detach(), p, dim, maxnorm)
    )


def _cov_weights(name: str, w, n: int):
    if w is None:
        return None
    if w._data.ndim > 1:
        raise RuntimeError(
            f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
            f"{w._data.ndim} dimensions"
        )
    if w._data.size != n:
        raise RuntimeError(
            f"cov(): expected {name} to have the same numel as there are observations in the "
            f"input but got {w._data.size} != {n}"
        )
    if name == "fweights" and (w.dtype.is_floating_point or w.dtype.is_complex):
        raise RuntimeError(
            "cov(): expected fweights to have integral dtype but got fweights with "
            f"{D.scalar_type_name(w.dtype)} dtype"
        )
    if name == "aweights" and not w.dtype.is_floating_point:
        raise RuntimeError(
            "cov(): expected aweights to have floating point dtype but got aweights with "
            f"{D.scalar_type_name(w.dtype)} dtype"
        )
    if w._data.size and (w._data < 0).any():
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


def cov(input: Tensor, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """Return the covariance matrix of the variables in the rows of ``input`` (observations
    in columns), optionally weighted by ``fweights`` (counts) and ``aweights``."""
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{nd} dimensions"
        )
    if input.dtype is D.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    X = input if nd == 2 else input.reshape(1, -1)
    if not (X.dtype.is_floating_point or X.dtype.is_complex):
        X = X.to(D.get_default_dtype())
    n = X._data.shape[1]
    fw = _cov_weights("fweights", fweights, n)
    aw = _cov_weights("aweights", aweights, n)
    w = fw if aw is None else (aw if fw is None else fw * aw)
    if w is None:
        w_sum = float(n)
        avg = X.sum(1) / w_sum
        norm = w_sum - correction
    else:
        w_sum = w.sum()
        if not bool(w_sum._data):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (X * w).sum(1) / w_sum
        if correction != 0 and aw is not None:
            norm = w_sum - correction * (w * aw).sum() / w_sum
        else:
            norm = w_sum - correction
    if bool(np.asarray(norm._data if isinstance(norm, Tensor) else norm) <= 0):
        warnings.warn(
            "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "number of observations.",
            UserWarning,
            stacklevel=2,
        )
        norm = norm * 0 + 0.0  # +0 as torch's zero_(), never -0 (the sign of the infs)
    Xc = X - avg.unsqueeze(1)
    c = Xc @ (Xc if w is None else Xc * w).t().conj()
    return (c / norm).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Return the Pearson correlation coefficients of the variables in the rows of
    ``input``."""
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(
            "corrcoef(): expected input to have two or fewer dimensions but got an input with "
            f"{nd} dimensions"
        )
    c = cov(input)
    if c._data.ndim == 0:
        return c / c
    d = c.diagonal()
    std = (real(d) if d.dtype.is_complex else d).sqrt()
    c = c / std.view(-1, 1)
    c = c / std.view(1, -1)
    if c.dtype.is_complex:
        return real(c).clip(-1, 1) + imag(c).clip(-1, 1) * 1j
    return c.clip(-1, 1)


publish(None, sum_to_size, function=False)
publish(None, renorm_, function=False)
for _f in (dist, renorm, cov, corrcoef):
    publish(None, _f)

"""``torch.cdist``: an op with its own backward, and ATen's ``compute_mode`` choices
(``torch.cosine_similarity``, ``pairwise_distance``, ``pdist`` are nn's: nn/_torch_aliases.py)."""

from __future__ import annotations

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Tensor
from ember._ops.registry import API, dispatch, op, publish

_CDIST_MODES = {
    "use_mm_for_euclid_dist_if_necessary": 0,
    "use_mm_for_euclid_dist": 1,
    "donot_use_mm_for_euclid_dist": 2,
}


def _pairwise_diff(x1, x2):
    # (..., P, M), (..., R, M) -> (..., P, R, M)
    return x1[..., :, None, :] - x2[..., None, :, :]


@op("cdist", grad_fn="CdistBackward0", args=("x1", "x2"), save=("x1", "x2", "result"))
def _cdist(x1, x2, p):
    d = np.abs(_pairwise_diff(x1, x2))
    if p == 0:
        out = np.count_nonzero(d, axis=-1).astype(x1.dtype)
    elif p == 1:
        out = d.sum(-1)
    elif p == 2:
        out = np.sqrt(np.einsum("...m,...m->...", d, d))
    elif p == np.inf:
        out = d.max(-1, initial=0)
    else:
        out = (d**p).sum(-1) ** (1.0 / p)
    return out.astype(x1.dtype, copy=False)


@_cdist.backward
def _(ctx, g, p):
    x1, x2, dist = ctx.saved_tensors
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    g, dist = g[..., None], dist[..., None]
    if p == 0 or diff.numel() == 0:
        gd = diff * 0
    elif p == 1:
        gd = g * diff.sign()
    elif p == 2:
        gd = (g * diff / dist).masked_fill(dist == 0, 0)
    elif p == np.inf:
        gd = g * diff.sign() * (diff.abs() == dist)
    else:
        gd = g * diff.sign() * diff.abs().pow(p - 1) / dist.pow(p - 1)
        gd = gd.masked_fill((dist == 0) | (diff == 0), 0)
    return (
        gd.sum(-2) if ctx.needs_input_grad[0] else None,
        -gd.sum(-3) if ctx.needs_input_grad[1] else None,
    )


def _euclidean_dist(x1: Tensor, x2: Tensor) -> Tensor:
    # ATen's _euclidean_dist: one matrix product of padded operands
    x1_norm = x1.pow(2).sum(-1, keepdim=True)
    x2_norm = x2.pow(2).sum(-1, keepdim=True)
    cat, ones_like = API["cat"], API["ones_like"]
    x1_ = cat([x1.mul(-2), x1_norm, ones_like(x1_norm)], -1)
    x2_ = cat([x2, ones_like(x2_norm), x2_norm], -1)
    return x1_.matmul(x2_.mT).clamp_min_(0).sqrt_()


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:  # fmt: skip
    """Return the ``p``-norm distances between the rows of ``x1`` and of ``x2``.

    ``x1`` is ``(B..., P, M)``, ``x2`` ``(B..., R, M)`` (batch dims broadcast); the result is
    ``(B..., P, R)``. For ``p=2`` the ``compute_mode`` picks torch's matrix-product formula
    (faster, less exact) when ``P > 25`` or ``R > 25``, always, or never.
    """
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _CDIST_MODES[compute_mode]
    for name, t in (("X1", x1), ("X2", x2)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.dim()}D")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(
                "cdist only supports floating-point dtypes, "
                f"{name} got: {D.scalar_type_name(t.dtype)}"
            )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    r1, r2 = x1.shape[-2], x2.shape[-2]
    if p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        batch = API["broadcast_shapes"](x1.shape[:-2], x2.shape[:-2])
        m = x1.shape[-1]
        a = x1.expand(*batch, r1, m).reshape(-1, r1, m)
        b = x2.expand(*batch, r2, m).reshape(-1, r2, m)
        return _euclidean_dist(a, b).view(*batch, r1, r2)
    return dispatch(_cdist, (x1, x2), {"p": float(p)})


publish(None, cdist, method=False)

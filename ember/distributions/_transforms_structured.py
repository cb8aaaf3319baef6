"""The structured transforms of torch.distributions.transforms: reinterpreting, reshaping,
stick-breaking, Cholesky factors, functors over slices (cat / stack) and CDFs. Re-exported by
``transforms.py``.

The two Cholesky-of-a-correlation and simplex maps are written from their Jacobians (the
derivations are beside each method); ``CatTransform`` and ``StackTransform`` share one
slice-wise driver, since they differ only in how a tensor is cut and glued back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import ember
import ember.nn.functional as F
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.transforms import (
    Transform,
    _clipped_sigmoid,
    _independent_real,
    _log_tanh_slope,
    _same_class_equality,
)
from ember.distributions.utils import (
    _sum_rightmost,
    lazy_property,
    tril_matrix_to_vec,
    vec_to_tril_matrix,
)

__all__ = [
    "CatTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "ReshapeTransform",
    "StackTransform",
    "StickBreakingTransform",
]


def _at_least(shape, n: int):
    if len(shape) < n:
        raise ValueError("Too few dimensions on input")
    return shape


def _from_base(name: str) -> property:
    # a member read from the wrapped ``base_transform`` (a method comes back bound to it)
    return property(lambda self: getattr(self.base_transform, name))


class IndependentTransform(Transform):
    """Wrapper around another transform to treat ``reinterpreted_batch_ndims``-many extra of the
    right most dimensions as dependent. This has no effect on the forward or backward transforms,
    but does sum out ``reinterpreted_batch_ndims``-many of the rightmost dimensions in
    ``log_abs_det_jacobian``."""

    def __init__(
        self,
        base_transform: Transform,
        reinterpreted_batch_ndims: int,
        cache_size: int = 0,
    ) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def _init_args(self):
        return (self.base_transform, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    # reinterpreting batch dims changes neither the map's shape rules nor its monotonicity:
    # these come from the base transform as they are
    bijective = _from_base("bijective")
    sign = _from_base("sign")
    forward_shape = _from_base("forward_shape")
    inverse_shape = _from_base("inverse_shape")

    def _call(self, x):
        _at_least(x.shape, self.domain.event_dim)
        return self.base_transform(x)

    def _inverse(self, y):
        _at_least(y.shape, self.codomain.event_dim)
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        inner = self.base_transform.log_abs_det_jacobian(x, y)
        return _sum_rightmost(inner, self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Unit Jacobian transform to reshape the rightmost part of a tensor."""

    bijective = True

    def __init__(
        self,
        in_shape: ember.Size,
        out_shape: ember.Size,
        cache_size: int = 0,
    ) -> None:
        self.in_shape, self.out_shape = ember.Size(in_shape), ember.Size(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    domain = constraints.dependent_property(lambda self: _independent_real(len(self.in_shape)))
    codomain = constraints.dependent_property(lambda self: _independent_real(len(self.out_shape)))

    def _init_args(self):
        return (self.in_shape, self.out_shape)

    @staticmethod
    def _swap_event(t, old, new):
        return t.reshape(t.shape[: t.dim() - len(old)] + new)

    def _call(self, x):
        return self._swap_event(x, self.in_shape, self.out_shape)

    def _inverse(self, y):
        return self._swap_event(y, self.out_shape, self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(x.shape[: x.dim() - len(self.in_shape)])  # a permutation of entries

    @staticmethod
    def _swap_shape(shape, old, new):
        _at_least(shape, len(old))
        batch, event = shape[: len(shape) - len(old)], shape[len(shape) - len(old) :]
        if event != old:
            raise ValueError(f"Shape mismatch: expected {event} but got {old}")
        return batch + new

    def forward_shape(self, shape):
        return self._swap_shape(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap_shape(shape, self.out_shape, self.in_shape)


def _shift_right(t, fill: float = 1.0):
    """``t`` moved one place right along the last dim, ``fill`` entering at the front."""
    return F.pad(t[..., :-1], [1, 0], value=fill)


class CorrCholeskyTransform(Transform):
    """Transform an unconstrained vector of length ``D*(D-1)/2`` into the Cholesky factor of a
    ``D x D`` correlation matrix (tanh, then stick-breaking on the rows).

    Row i of the factor has unit norm: with partial correlations r = tanh(x) placed below the
    diagonal, ``L[i, j] = r[i, j] * s[i, j]`` where ``s[i, j]^2 = 1 - sum_{k<j} L[i, k]^2`` is the
    squared length still left in the row, and the diagonal takes the rest (Stan's construction).
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = ember.finfo(x.dtype).eps
        r = vec_to_tril_matrix(ember.tanh(x).clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # s[i, j] = prod_{k<j} sqrt(1 - r[i, k]^2): what L[i, :j] leaves of the unit length
        left = _shift_right((1 - r * r).sqrt().cumprod(-1))
        eye = ember.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return (r + eye) * left

    @staticmethod
    def _left_sq(y):
        """``s[i, j]^2 = 1 - sum_{k<j} y[i, k]^2`` for every entry of the factor."""
        return _shift_right(1 - (y * y).cumsum(-1))

    def _inverse(self, y):
        r = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(self._left_sq(y), diag=-1).sqrt()
        return 0.5 * (r.log1p() - (-r).log1p())  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        # The map x -> vec(L) below the diagonal is triangular: dL[i, j] / dr[i, j] = s[i, j]
        # and dr / dx = 1 - tanh(x)^2, so log|J| = sum log s + sum log(1 - tanh(x)^2).
        # (The diagonal is determined by the rest; torch reports the same quantity.)
        rows = 0.5 * tril_matrix_to_vec(self._left_sq(y), diag=-1).log().sum(-1)
        tanh_part = _log_tanh_slope(x).sum(dim=-1)
        return rows + tanh_part

    def forward_shape(self, shape):
        # (..., N) -> (..., D, D) with N = D (D - 1) / 2
        _at_least(shape, 1)
        n = shape[-1]
        d = round(0.5 + math.sqrt(0.25 + 2 * n))
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return shape[:-1] + (d, d)

    def inverse_shape(self, shape):
        _at_least(shape, 2)
        if shape[-1] != shape[-2]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return shape[:-2] + (d * (d - 1) // 2,)


@_same_class_equality
class StickBreakingTransform(Transform):
    """Transform from unconstrained space to the simplex of one additional dimension via a stick-
    breaking process.

    Coordinate i (of K) breaks off the fraction ``z_i = sigmoid(x_i - log(K - i))`` (0-based) of
    the stick left, ``y_i = z_i * prod_{j<i} (1 - z_j)``; the last coordinate is the remainder.
    The shift makes ``x = 0`` map to the centre of the simplex.
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    @staticmethod
    def _log_pieces_left(t, k: int):
        """log(K - i) for i = 0 .. K-1: how many pieces remain to be cut."""
        return (k + 1 - t.new_ones(k).cumsum(-1)).log()

    def _call(self, x):
        z = _clipped_sigmoid(x - self._log_pieces_left(x, x.shape[-1]))
        left = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(left, [1, 0], value=1)

    def _inverse(self, y):
        head = y[..., :-1]
        # the stick left after each cut; clamped so that rounding (y[-1] ~ 0) keeps it positive
        left = ember.clamp(1 - head.cumsum(-1), min=ember.finfo(y.dtype).tiny)
        return head.log() - left.log() + self._log_pieces_left(y, head.shape[-1])

    def log_abs_det_jacobian(self, x, y):
        # Triangular in the first K coordinates: dy_i/dx_i = z_i (1 - z_i) prod_{j<i} (1 - z_j)
        # = y_i (1 - z_i), and log(1 - sigmoid(u)) = logsigmoid(u) - u.
        u = x - self._log_pieces_left(x, x.shape[-1])
        return (y[..., :-1].log() + F.logsigmoid(u) - u).sum(-1)

    def forward_shape(self, shape):
        _at_least(shape, 1)
        return shape[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        _at_least(shape, 1)
        return shape[:-1] + (shape[-1] - 1,)


def _map_diagonal(m, fn):
    """The strict lower triangle of ``m`` with ``fn`` applied to its diagonal."""
    return m.tril(-1) + fn(m.diagonal(dim1=-2, dim2=-1)).diag_embed()


@_same_class_equality
class LowerCholeskyTransform(Transform):
    """Transform from unconstrained matrices to lower-triangular matrices with nonnegative diagonal
    entries."""

    domain = _independent_real(2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return _map_diagonal(x, ember.exp)

    def _inverse(self, y):
        return _map_diagonal(y, ember.log)


@_same_class_equality
class PositiveDefiniteTransform(Transform):
    """Transform from unconstrained matrices to positive-definite matrices."""

    domain = _independent_real(2)
    codomain = constraints.positive_definite

    def _call(self, x):
        factor = _map_diagonal(x, ember.exp)
        return factor @ factor.mT

    def _inverse(self, y):
        return _map_diagonal(ember.linalg.cholesky(y), ember.log)


class _SliceFunctor(Transform):
    """Shared driver of CatTransform / StackTransform: cut the input along ``dim`` into one piece
    per part, run the part on it, glue the results back. Subclasses say how to cut and glue."""

    transforms: list[Transform]

    def _adopt(self, tseq, cache_size):
        if any(not isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)

    def _validate(self, t, name: str, what: str = "tensor"):
        if not -t.dim() <= self.dim < t.dim():
            raise AssertionError(
                f"dim {self.dim} out of range for {what} with {t.dim()} dimensions"
            )
        if t.size(self.dim) != self._expected:
            raise AssertionError(self._size_message(name, t))

    def _each(self, t, name, method):
        self._validate(t, name)
        return self._glue(
            [method(part, piece) for part, piece in zip(self.transforms, self._cut(t))]
        )

    def _call(self, x):
        return self._each(x, "x", lambda part, piece: part(piece))

    def _inverse(self, y):
        return self._each(y, "y", lambda part, piece: part.inv(piece))

    def _jacobians(self, x, y):
        self._validate(x, "x", "x")
        self._validate(y, "y", "y")
        return [
            part.log_abs_det_jacobian(a, b)
            for part, a, b in zip(self.transforms, self._cut(x), self._cut(y))
        ]

    def _parts(self, attr: str) -> list:
        # one member of every part, in order
        return [getattr(t, attr) for t in self.transforms]

    @property
    def bijective(self) -> bool:
        return all(self._parts("bijective"))

    # the constraint of the whole: the parts' constraints joined the way the tensor is
    domain = constraints.dependent_property(lambda self: self._joined("domain"))
    codomain = constraints.dependent_property(lambda self: self._joined("codomain"))


class CatTransform(_SliceFunctor):
    """Transform functor that applies a sequence of transforms ``tseq`` component-wise to each
    submatrix at ``dim``, of length ``lengths[dim]``, in a way compatible with ``torch.cat``."""

    def __init__(
        self,
        tseq: Sequence[Transform],
        dim: int = 0,
        lengths: Sequence[int] | None = None,
        cache_size: int = 0,
    ) -> None:
        self._adopt(tseq, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(
                f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})"
            )
        self.dim = dim

    @lazy_property
    def event_dim(self) -> int:
        return max(self._parts("event_dim"))

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    @property
    def _expected(self) -> int:
        return self.length

    def _size_message(self, name, t):
        return f"{name}.size({self.dim}) = {t.size(self.dim)} must equal length {self.length}"

    def _init_args(self):
        return (self.transforms, self.dim, self.lengths)

    def _cut(self, t):
        return t.split(self.lengths, dim=self.dim)

    def _glue(self, pieces):
        return ember.cat(pieces, dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        # bring every part's term to this transform's event dim; if ``dim`` falls inside the
        # event the terms add up, otherwise (a batch dim) they sit side by side
        terms = [
            _sum_rightmost(term, self.event_dim - part.event_dim)
            for part, term in zip(self.transforms, self._jacobians(x, y))
        ]
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return ember.cat(terms, dim=dim) if dim < 0 else sum(terms)

    def _joined(self, side):
        return constraints.cat(self._parts(side), self.dim, self.lengths)


class StackTransform(_SliceFunctor):
    """Transform functor that applies a sequence of transforms ``tseq`` component-wise to each
    submatrix at ``dim`` in a way compatible with ``torch.stack``."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        self._adopt(tseq, cache_size)
        self.dim = dim

    @property
    def _expected(self) -> int:
        return len(self.transforms)

    def _size_message(self, name, t):
        return (
            f"{name}.size({self.dim}) = {t.size(self.dim)} must equal "
            f"len(transforms) {len(self.transforms)}"
        )

    def _init_args(self):
        return (self.transforms, self.dim)

    def _cut(self, t):
        return t.unbind(self.dim)

    def _glue(self, pieces):
        return ember.stack(pieces, dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        return self._glue(self._jacobians(x, y))

    def _joined(self, side):
        return constraints.stack(self._parts(side), self.dim)


class CumulativeDistributionTransform(Transform):
    """Transform via the cumulative distribution function of a probability distribution."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint | None:
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)  # d cdf / dx is the density

    def _init_args(self):
        return (self.distribution,)

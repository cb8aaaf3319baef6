"""Invertible transforms with log-det-Jacobians (torch.distributions.transforms), used by
``TransformedDistribution`` and ``constraint_registry``.

This file holds the base class, its inverse view, composition and the elementwise maps; the
shape-changing and matrix-valued transforms are in ``_transforms_structured.py`` and re-exported
here. As torch's, transforms define ``__eq__`` and are therefore unhashable.
"""

from __future__ import annotations

import math
from numbers import Number

import ember
from ember.distributions import constraints
from ember.distributions.utils import _sum_rightmost
from ember.nn.functional import softplus

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]

_NO_PAIR = (None, None)


class Transform:
    """Abstract invertible transformation ``x => y`` with a computable ``log |dy/dx|``.

    Subclasses implement ``_call`` and/or ``_inverse`` (and ``log_abs_det_jacobian`` when
    bijective). ``cache_size=1`` remembers the latest ``(x, y)`` pair, so that ``t.inv(t(x))``
    returns ``x`` itself.
    """

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = _NO_PAIR
        self._inv: Transform | None = None
        super().__init__()

    def __getstate__(self):
        # the inverse is a back-reference; it is rebuilt on demand after unpickling
        return {**self.__dict__, "_inv": None}

    @property
    def event_dim(self) -> int:
        dims = {self.domain.event_dim, self.codomain.event_dim}
        if len(dims) > 1:
            raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")
        return dims.pop()

    @property
    def inv(self) -> Transform:
        """Return the inverse transform (``t.inv.inv is t``)."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self) -> int:
        """Return the sign of the Jacobian's determinant (bijective transforms)."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        """Return this transform with the given cache size."""
        if cache_size == self._cache_size:
            return self
        # a transform is rebuilt from the constructor arguments it reports (``_init_args``);
        # one without constructor arguments of its own needs none
        if hasattr(self, "_init_args"):
            return type(self)(*self._init_args(), cache_size=cache_size)
        if not _inherits_base_init(type(self)):
            raise NotImplementedError(f"{type(self)}.with_cache is not implemented")
        return type(self)(cache_size=cache_size)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self == other

    def _cached(self, value, compute, forward: bool):
        """Run ``compute(value)`` unless the cache holds ``value`` on the given side."""
        if not self._cache_size:
            return compute(value)
        x, y = self._cached_x_y
        if (x if forward else y) is value:
            return y if forward else x
        out = compute(value)
        self._cached_x_y = (value, out) if forward else (out, value)
        return out

    def __call__(self, x):
        return self._cached(x, self._call, forward=True)

    def _inv_call(self, y):
        return self._cached(y, self._inverse, forward=False)

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """Return ``log |dy/dx|`` given input and output."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def forward_shape(self, shape):
        """Return the output shape for an input of ``shape``."""
        return shape

    def inverse_shape(self, shape):
        """Return the input shape for an output of ``shape``."""
        return shape


def _independent_real(n: int):
    return constraints.independent(constraints.real, n)


def _inherits_base_init(cls) -> bool:
    return cls.__init__ is Transform.__init__


def _same_class_equality(cls):
    """Class decorator: instances of a parameterless transform compare equal to each other."""
    cls.__eq__ = lambda self, other: isinstance(other, cls)
    cls.__hash__ = None
    return cls


class _InverseTransform(Transform):
    """The inverse of a transform (``t.inv``): every method defers to the forward one."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self) -> bool:
        return self._inv.bijective

    @property
    def sign(self) -> int:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        # |d x / d y| = 1 / |d y / d x| at the same pair
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """Apply the transforms of ``parts`` in order."""

    def __init__(self, parts: list, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.parts = [p.with_cache(cache_size) for p in parts] if cache_size else parts

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    def _outer_event_dim(self, parts, start: int, into: str, outof: str) -> int:
        # walking the chain, an event dim can grow (a part consumes more dims than it gets) but
        # never shrink below what the part itself needs
        dim = start
        for part in parts:
            gained = getattr(part, into).event_dim - getattr(part, outof).event_dim
            dim = max(dim + gained, getattr(part, into).event_dim)
        return dim

    def _lifted(self, constraint, dim):
        if dim > constraint.event_dim:
            return constraints.independent(constraint, dim - constraint.event_dim)
        return constraint

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        start = self.parts[-1].codomain.event_dim
        dim = self._outer_event_dim(reversed(self.parts), start, "domain", "codomain")
        return self._lifted(self.parts[0].domain, dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        start = self.parts[0].domain.event_dim
        dim = self._outer_event_dim(self.parts, start, "codomain", "domain")
        return self._lifted(self.parts[-1].codomain, dim)

    @property
    def bijective(self) -> bool:
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> int:
        return math.prod((p.sign for p in self.parts), start=1)

    @property
    def inv(self) -> Transform:
        if self._inv is None:
            reverse = ComposeTransform([p.inv for p in self.parts[::-1]])
            reverse._inv = self
            self._inv = reverse
        return self._inv

    def _init_args(self):
        return (self.parts,)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        # the intermediate values: part i maps points[i] to points[i + 1]
        points = [x]
        for part in self.parts[:-1]:
            points.append(part(points[-1]))
        points.append(y)
        total = None
        dim = self.domain.event_dim
        for part, a, b in zip(self.parts, points, points[1:]):
            term = _sum_rightmost(part.log_abs_det_jacobian(a, b), dim - part.domain.event_dim)
            total = term if total is None else total + term
            dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in self.parts[::-1]:
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


def _clipped_sigmoid(x):
    """sigmoid(x) kept inside the open unit interval of ``x``'s dtype."""
    info = ember.finfo(x.dtype)
    return ember.clamp(ember.sigmoid(x), min=info.tiny, max=1.0 - info.eps)


@_same_class_equality
class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x  # d exp(x) / dx = exp(x)


class PowerTransform(Transform):
    """``y = x ** exponent``."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.exponent = exponent if isinstance(exponent, ember.Tensor) else ember.tensor(exponent)

    def _init_args(self):
        return (self.exponent,)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(
            (self.exponent == other.exponent).all().item()
        )

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        # d x^e / dx = e x^(e - 1) = e y / x
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return _broadcast_with(shape, self.exponent)

    inverse_shape = forward_shape


@_same_class_equality
class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        info = ember.finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - (-y).log1p()  # logit

    def log_abs_det_jacobian(self, x, y):
        # sigmoid' = sigmoid(x) sigmoid(-x), and log sigmoid(x) = -softplus(-x)
        return -softplus(-x) - softplus(x)


_LOG_2 = math.log(2.0)


def _log_tanh_slope(x):
    """log(1 - tanh(x)^2) = log(4 / (e^x + e^-x)^2), in a form that does not overflow."""
    return 2.0 * (_LOG_2 - x - softplus(-2.0 * x))


def _broadcast_with(shape, *params):
    """``shape`` broadcast with the shapes of the tensor parameters among ``params``."""
    return ember.broadcast_shapes(shape, *(p.shape for p in params if isinstance(p, ember.Tensor)))


@_same_class_equality
class TanhTransform(Transform):
    """``y = tanh(x)``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        return _log_tanh_slope(x)


@_same_class_equality
class AbsTransform(Transform):
    """``y = |x|`` (not bijective)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


def _same_value(a, b) -> bool:
    if isinstance(a, Number) and isinstance(b, Number):
        return a == b
    return bool((a == b).all().item())


class AffineTransform(Transform):
    """``y = loc + scale * x``, over ``event_dim`` rightmost dims."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    def _space(self):
        if self._event_dim:
            return _independent_real(self._event_dim)
        return constraints.real

    domain = constraints.dependent_property(_space, is_discrete=False)
    codomain = constraints.dependent_property(_space, is_discrete=False)

    def _init_args(self):
        return (self.loc, self.scale, self._event_dim)

    def __eq__(self, other):
        return (
            isinstance(other, AffineTransform)
            and _same_value(self.loc, other.loc)
            and _same_value(self.scale, other.scale)
        )

    @property
    def sign(self):
        if isinstance(self.scale, Number):
            return (self.scale > 0) - (self.scale < 0)
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        # a diagonal Jacobian: log|scale| per element, summed over the event dims
        if isinstance(self.scale, Number):
            per_element = ember.full_like(x, math.log(abs(self.scale)))
        else:
            per_element = ember.abs(self.scale).log()
        batch = x.shape
        if self._event_dim:
            per_element = _sum_rightmost(per_element, self._event_dim)
            batch = batch[: len(batch) - self._event_dim]
        return per_element.expand(batch)

    def forward_shape(self, shape):
        return _broadcast_with(shape, self.loc, self.scale)

    inverse_shape = forward_shape


def _needs_a_dim(shape):
    if not len(shape):
        raise ValueError("Too few dimensions on input")
    return shape


@_same_class_equality
class SoftmaxTransform(Transform):
    """``y = softmax(x)`` over the last dim (not bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        weights = (x - x.max(-1, True)[0]).exp()
        return weights / weights.sum(-1, True)

    def _inverse(self, y):
        return y.log()  # one of the preimages: softmax is invariant to shifts

    def forward_shape(self, shape):
        return _needs_a_dim(shape)

    def inverse_shape(self, shape):
        return _needs_a_dim(shape)


@_same_class_equality
class SoftplusTransform(Transform):
    """Transform via the mapping ``Softplus(x) = log(1 + exp(x))``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return softplus(x)

    def _inverse(self, y):
        # x = log(e^y - 1) = y + log(1 - e^-y)
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x)  # softplus' = sigmoid


# the structured transforms live beside, to keep this file readable
from ember.distributions._transforms_structured import (  # noqa: E402
    CatTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    ReshapeTransform,
    StackTransform,
    StickBreakingTransform,
)

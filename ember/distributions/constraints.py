"""Constraints on distribution parameters and supports (torch.distributions.constraints).

A constraint answers ``check(value)`` with a bool tensor over the batch: the trailing
``event_dim`` dims of ``value`` are one point and reduce to one answer. The class names (and
their hierarchy) are torch's, since ``repr`` shows them and the registries key on them.
"""

from __future__ import annotations

import itertools

import ember

__all__ = [
    "Constraint",
    "MixtureSameFamilyConstraint",
    "boolean",
    "cat",
    "corr_cholesky",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "stack",
    "symmetric",
    "unit_interval",
]


def _every(ok, n: int):
    """``ok`` with its ``n`` rightmost dims reduced by ``all``."""
    if n == 0:
        return ok
    return ok.reshape(ok.shape[: ok.dim() - n] + (-1,)).all(-1)


def _public_name(obj) -> str:
    return type(obj).__name__.lstrip("_")


class Constraint:
    """Abstract base class for constraints: a region over which a variable is valid."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """Return a bool tensor saying where ``value`` satisfies the constraint."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return _public_name(self) + "()"


class _Bounded(Constraint):
    """Shared repr of the constraints with bounds: ``Name(lower_bound=..., upper_bound=...)``."""

    _bound_names: tuple = ()

    def __repr__(self) -> str:
        shown = ", ".join(f"{b}={getattr(self, b)}" for b in self._bound_names)
        return f"{_public_name(self)}({shown})"


class _BetweenBounds(_Bounded):
    """Shared constructor of the constraints with a lower and an upper bound."""

    _bound_names = ("lower_bound", "upper_bound")

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        super().__init__()


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters (validation skips it);
    ``is_discrete`` / ``event_dim`` are known only when given."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    def _static(self, value, what):
        if value is NotImplemented:
            raise NotImplementedError(f".{what} cannot be determined statically")
        return value

    @property
    def is_discrete(self):
        return self._static(self._is_discrete, "is_discrete")

    @property
    def event_dim(self):
        return self._static(self._event_dim, "event_dim")

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        return _Dependent(
            is_discrete=self._is_discrete if is_discrete is NotImplemented else is_discrete,
            event_dim=self._event_dim if event_dim is NotImplemented else event_dim,
        )

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Return whether ``constraint`` is a dependent constraint."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is also a dependent constraint: a support computed per instance, whose
    static facts (``is_discrete``, ``event_dim``) the class can still be asked."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        # used as ``@dependent_property(is_discrete=..., event_dim=...)``
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """``base_constraint`` with ``reinterpreted_batch_ndims`` more dims taken as one event."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        ok = self.base_constraint.check(value)
        extra = self.reinterpreted_batch_ndims
        if ok.dim() < extra:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        return _every(ok, extra)

    def __repr__(self) -> str:
        return f"{_public_name(self)}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(Constraint):
    """The support of a ``MixtureSameFamily``: the components' constraint, checked with the
    mixture dimension added back to ``value`` and reduced away."""

    def __init__(self, base_constraint):
        if not isinstance(base_constraint, Constraint):
            raise AssertionError(
                f"base_constraint must be a Constraint, got {type(base_constraint).__name__}"
            )
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim

    def check(self, value):
        n = self.event_dim
        ok = self.base_constraint.check(value.unsqueeze(-1 - n))  # the component dim
        if value.dim() < n:
            raise ValueError(f"Expected value.dim() >= {n} but got {value.dim()}")
        return _every(ok, ok.dim() - (value.dim() - n))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_constraint!r})"


def _zero_or_one(value):
    return (value == 0) | (value == 1)


def _whole(value):
    return value % 1 == 0


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return _zero_or_one(value)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        return _zero_or_one(value).all(-1) & (value.sum(-1) == 1)


class _IntegerInterval(_BetweenBounds):
    is_discrete = True

    def check(self, value):
        return _whole(value) & (value >= self.lower_bound) & (value <= self.upper_bound)


class _IntegerGreaterThan(_Bounded):
    is_discrete = True
    _bound_names = ("lower_bound",)

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return _whole(value) & (value >= self.lower_bound)


class _Real(Constraint):
    def check(self, value):
        return value == value  # only NaN differs from itself


class _GreaterThan(_Bounded):
    _bound_names = ("lower_bound",)

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return value > self.lower_bound


class _GreaterThanEq(_Bounded):
    _bound_names = ("lower_bound",)

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return value >= self.lower_bound


class _LessThan(_Bounded):
    _bound_names = ("upper_bound",)

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return value < self.upper_bound


class _Interval(_BetweenBounds):
    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)


class _HalfOpenInterval(_BetweenBounds):
    def check(self, value):
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        # nonnegative, summing to one within 1e-6
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


def _is_lower_triangular(value):
    return _every(value.tril() == value, 2)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return _is_lower_triangular(value)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        diagonal_positive = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return _is_lower_triangular(value) & diagonal_positive


class _CorrCholesky(Constraint):
    """Lower Cholesky factors with unit-norm rows (of correlation matrices)."""

    event_dim = 2

    def check(self, value):
        # rows of unit length, to ten times the dtype's epsilon per column
        tol = ember.finfo(value.dtype).eps * value.size(-1) * 10
        norms = ember.linalg.norm(value.detach(), dim=-1)
        unit_rows = ((norms - 1.0).abs() <= tol).all(dim=-1)
        return _LowerCholesky().check(value) & unit_rows


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        n_rows, n_cols = value.shape[-2:]
        return ember.full(value.shape[:-2], n_rows == n_cols, dtype=ember.bool)


class _Symmetric(_Square):
    def check(self, value):
        # the refinements below only run when every matrix passed the coarser test
        square = super().check(value)
        if not square.all():
            return square
        return _every(ember.isclose(value, value.mT, atol=1e-6), 2)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        symmetric = super().check(value)
        if not symmetric.all():
            return symmetric
        return (ember.linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        symmetric = super().check(value)
        if not symmetric.all():
            return symmetric
        return ember.linalg.cholesky_ex(value).info == 0  # a Cholesky factor exists


class _Multinomial(Constraint):
    """Nonnegative integer vectors summing to at most ``upper_bound`` (torch's weak check)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        # only nonnegativity and the total are checked, not integrality
        within = x.sum(dim=-1) <= self.upper_bound
        return within & (x >= 0).all(dim=-1)


def _checked_parts(cseq):
    if any(not isinstance(c, Constraint) for c in cseq):
        raise AssertionError("All elements of cseq must be Constraint instances")
    return list(cseq)


class _PiecewiseConstraint(Constraint):
    """Shared part of cat / stack: one constraint per slice along ``dim``."""

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    def _slices_of(self, value):
        if not -value.dim() <= self.dim < value.dim():
            raise AssertionError(
                f"dim {self.dim} out of range for value with {value.dim()} dimensions"
            )
        return self._cut(value)

    def check(self, value):
        answers = [c.check(piece) for c, piece in zip(self.cseq, self._slices_of(value))]
        return self._glue(answers, self.dim)


class _Cat(_PiecewiseConstraint):
    """Apply the constraints ``cseq`` to consecutive slices of ``lengths`` along ``dim``."""

    _glue = staticmethod(ember.cat)

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = _checked_parts(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(
                f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})"
            )
        self.dim = dim
        super().__init__()

    @property
    def event_dim(self) -> int:
        return max(c.event_dim for c in self.cseq)

    def _cut(self, value):
        # narrow, not split: a value longer than sum(lengths) has its tail ignored, as torch's
        starts = itertools.accumulate([0, *self.lengths[:-1]])
        return [value.narrow(self.dim, at, n) for at, n in zip(starts, self.lengths)]


class _Stack(_PiecewiseConstraint):
    """Apply the constraints ``cseq`` to the slices of ``dim``, one each."""

    _glue = staticmethod(ember.stack)

    def __init__(self, cseq, dim=0):
        self.cseq = _checked_parts(cseq)
        self.dim = dim
        super().__init__()

    @property
    def event_dim(self) -> int:
        # a negative ``dim`` reaching into the parts' events adds the stacked dim to the event
        inner = max(c.event_dim for c in self.cseq)
        return inner + 1 if self.dim + inner < 0 else inner

    def _cut(self, value):
        return value.unbind(self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
multinomial = _Multinomial
lower_triangular = _LowerTriangular()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
cat = _Cat
stack = _Stack


# Parameter tables several families share; each call gives the class its own dict.
def _loc_scale_args() -> dict:
    return {"loc": real, "scale": positive}


def _binary_odds_args() -> dict:
    return {"probs": unit_interval, "logits": real}


def _categorical_odds_args() -> dict:
    return {"probs": simplex, "logits": real_vector}

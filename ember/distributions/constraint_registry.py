"""``biject_to`` and ``transform_to`` (torch.distributions.constraint_registry): registries that
map a constraint to a transform from unconstrained space onto it (bijective for ``biject_to``)."""

from __future__ import annotations

from ember.distributions import constraints, transforms
from ember.types import _Number

__all__ = [
    "ConstraintRegistry",
    "biject_to",
    "transform_to",
]


class ConstraintRegistry:
    """Registry to link constraints to transforms."""

    def __init__(self):
        self._registry = {}  # Constraint subclass -> factory(constraint) -> Transform
        super().__init__()

    def register(self, constraint, factory=None):
        """Register ``factory`` (constraint -> transform) for a ``Constraint`` subclass or instance;
        without ``factory``, return a decorator."""
        if factory is None:  # used as @registry.register(constraint)
            return lambda fn: self.register(constraint, fn)
        # an instance (``constraints.positive``) stands for its class
        key = type(constraint) if isinstance(constraint, constraints.Constraint) else constraint
        if not (isinstance(key, type) and issubclass(key, constraints.Constraint)):
            raise TypeError(
                "Expected constraint to be either a Constraint subclass or instance, "
                f"but got {constraint}"
            )
        self._registry[key] = factory
        return factory

    def __call__(self, constraint):
        """Return the transform to the space of ``constraint``."""
        # the exact class decides (no lookup through base classes), as torch's
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


# ----------------------------------------------------------------------------- the table
# Each entry builds the transform from R^n onto the constraint's set. Structured constraints
# recurse into the registry they are asked through, so biject_to stays bijective throughout.

C, T = constraints, transforms


def _onto_interval(c):
    low, high = c.lower_bound, c.upper_bound
    if isinstance(low, _Number) and isinstance(high, _Number) and (low, high) == (0, 1):
        return T.SigmoidTransform()  # the unit interval needs no affine step
    return T.ComposeTransform([T.SigmoidTransform(), T.AffineTransform(low, high - low)])


def _shifted_exp(offset, direction):
    return T.ComposeTransform([T.ExpTransform(), T.AffineTransform(offset, direction)])


_SHARED = [
    ([C.real], lambda c, reg: T.identity_transform),
    ([C.positive, C.nonnegative], lambda c, reg: T.ExpTransform()),
    ([C.greater_than, C.greater_than_eq], lambda c, reg: _shifted_exp(c.lower_bound, 1)),
    ([C.less_than], lambda c, reg: _shifted_exp(c.upper_bound, -1)),
    ([C.interval, C.half_open_interval], lambda c, reg: _onto_interval(c)),
    ([C.corr_cholesky], lambda c, reg: T.CorrCholeskyTransform()),
    (
        [C.independent],
        lambda c, reg: T.IndependentTransform(reg(c.base_constraint), c.reinterpreted_batch_ndims),
    ),
    (
        [C.cat],
        lambda c, reg: T.CatTransform([reg(part) for part in c.cseq], c.dim, c.lengths),
    ),
    ([C.stack], lambda c, reg: T.StackTransform([reg(part) for part in c.cseq], c.dim)),
]
_ONLY = {
    # a bijection onto the simplex needs one coordinate fewer; transform_to may overshoot
    biject_to: [([C.simplex], lambda c, reg: T.StickBreakingTransform())],
    transform_to: [
        ([C.simplex], lambda c, reg: T.SoftmaxTransform()),
        ([C.lower_cholesky], lambda c, reg: T.LowerCholeskyTransform()),
        (
            [C.positive_definite, C.positive_semidefinite],
            lambda c, reg: T.PositiveDefiniteTransform(),
        ),
    ],
}

for _registry in (biject_to, transform_to):
    for _targets, _build in _SHARED + _ONLY[_registry]:
        for _target in _targets:
            _registry.register(_target, lambda c, _b=_build, _r=_registry: _b(c, _r))

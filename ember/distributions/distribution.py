"""The ``Distribution`` base class (torch.distributions.Distribution)."""

from __future__ import annotations

import warnings

import ember
from ember.distributions import constraints
from ember.distributions.utils import _all_true, lazy_property

__all__ = ["Distribution"]


class Distribution:
    """Abstract base class for probability distributions."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Set whether validation is enabled by default."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(
        self,
        batch_shape=(),
        event_shape=(),
        validate_args: bool | None = None,
    ) -> None:
        self._batch_shape = ember.Size(batch_shape)
        self._event_shape = ember.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()
        super().__init__()

    def _check_parameters(self) -> None:
        """Raise ValueError for the first parameter outside its ``arg_constraints`` entry."""
        try:
            table = self.arg_constraints
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `arg_constraints`. "
                "Please set `arg_constraints = {}` or initialize the distribution "
                "with `validate_args=False` to turn off validation.",
                stacklevel=3,
            )
            return
        for name, constraint in table.items():
            # dependent constraints are checked elsewhere; a lazily derived parameter (logits
            # from probs, ...) is valid when its source is, so it is not computed just for this
            lazy = name not in self.__dict__ and isinstance(
                getattr(type(self), name, None), lazy_property
            )
            if constraints.is_dependent(constraint) or lazy:
                continue
            value = getattr(self, name)
            if not _all_true(constraint.check(value)):
                raise ValueError(
                    f"Expected parameter {name} "
                    f"({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} "
                    f"to satisfy the constraint {constraint!r}, "
                    f"but found invalid values:\n{value}"
                )

    def expand(self, batch_shape, _instance=None):
        """Return a new distribution with batch dimensions expanded to ``batch_shape``."""
        raise NotImplementedError

    def _expand_params(self, cls, batch_shape, _instance, names=(), event_shape=None, **extra):
        """The ``expand`` the families share: a new instance whose tensor parameters ``names``
        (those set on ``self``) are expanded to ``batch_shape`` plus their trailing event dims,
        ``extra`` attributes set as given, and the base initialised without validation."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = ember.Size(batch_shape)
        for name in names:
            if name in self.__dict__:
                value = self.__dict__[name]
                trailing = value.shape[len(self._batch_shape) :]
                setattr(new, name, value.expand(batch_shape + trailing))
        for name, value in extra.items():
            setattr(new, name, value)
        event = self._event_shape if event_shape is None else event_shape
        super(cls, new).__init__(batch_shape, event, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def batch_shape(self) -> ember.Size:
        """Return the shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> ember.Size:
        """Return the shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self):
        """Return the standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """Return a sample (or a batch of samples) of shape ``sample_shape`` without grad."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """Return a reparameterized sample (gradients flow to the parameters)."""
        raise NotImplementedError

    def sample_n(self, n: int):
        """Return ``n`` samples (deprecated in torch: use ``sample((n,))``)."""
        warnings.warn(
            "sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2
        )
        return self.sample(ember.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        """Return ``exp(entropy)``."""
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=()) -> ember.Size:
        return ember.Size(tuple(sample_shape)) + self._batch_shape + self._event_shape

    def _validate_sample(self, value) -> None:
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape, n_event = value.size(), len(self._event_shape)
        if shape[len(shape) - n_event :] != self._event_shape:
            raise ValueError(
                "The right-most size of value must match event_shape: "
                f"{value.size()} vs {self._event_shape}."
            )
        wanted = self._batch_shape + self._event_shape
        # broadcastable: right-aligned sizes agree or one of them is 1
        if any(a != b and 1 not in (a, b) for a, b in zip(shape[::-1], wanted[::-1])):
            raise ValueError(
                f"Value is not broadcastable with batch_shape+event_shape: {shape} vs {wanted}."
            )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable "
                "sample validation. Please initialize the distribution with "
                "`validate_args=False` to turn off validation.",
                stacklevel=2,
            )
            return
        if not _all_true(support.check(value)):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is not None:
            return _instance
        # a subclass with its own constructor cannot be expanded by its base's ``expand``
        if type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method."
            )
        return type(self).__new__(type(self))

    def __repr__(self) -> str:
        shown = []
        for name in self.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                shown.append(f"{name}: {value if value.numel() == 1 else value.size()}")
        return f"{type(self).__name__}({', '.join(shown)})"

"""``Fuzzer``: random benchmark inputs (parameters and tensors) from a seeded NumPy RandomState.

Reproducibility contract: for a seed, every draw from the ``RandomState`` happens in torch's
order and with torch's calls, so parameters, sizes, steps and memory orders come out identical
to torch's. The order is: one ``randint`` that seeds ember's generator, then per step the
parameters in declaration order (redrawn until a set passes every constraint), then per tensor
one ``rand`` deciding contiguity and, when it decides against, ``permutation`` until the order
is not the identity. Tensor *values* come from ember's own generator (its streams are not
torch's), so only their layout is comparable.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

import ember

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")
_MAX_ATTEMPTS = 1000  # parameter sets tried per step before giving up


def _clip(value, low, high):
    """``value`` limited to ``[low, high]``, either bound optional."""
    if low is not None and value < low:
        return low
    if high is not None and value > high:
        return high
    return value


def _log2_or_none(bound):
    return None if bound is None else np.log2(bound)


class FuzzedParameter:
    """A parameter drawn per step: ``distribution`` is "loguniform" or "uniform" between
    ``minval`` and ``maxval`` (integers if both are ints), or a dict {value: probability}."""

    def __init__(
        self,
        name: str,
        minval: int | float | None = None,
        maxval: int | float | None = None,
        distribution: str | dict[Any, float] | None = None,
        strict: bool = False,
    ) -> None:
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._validate(distribution)
        self._distribution = distribution
        self.strict = strict

    @property
    def name(self) -> str:
        return self._name

    def sample(self, state: np.random.RandomState):
        """Draw one value of this parameter from ``state``."""
        if isinstance(self._distribution, dict):
            values = list(self._distribution)
            pick = state.choice(np.arange(len(values)), p=tuple(self._distribution.values()))
            return values[pick]
        lo, hi = self._minval, self._maxval
        if self._distribution == "loguniform":
            # uniform in the exponent, truncated to an int, then held inside the bounds
            exponent = state.uniform(low=_log2_or_none(lo), high=_log2_or_none(hi))
            return _clip(int(2**exponent), lo, hi)
        if self._distribution == "uniform":
            if isinstance(lo, int) and isinstance(hi, int):
                return int(state.randint(low=lo, high=hi + 1))  # both ends included
            return state.uniform(low=lo, high=hi)
        return None

    def _validate(self, distribution) -> None:
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return
        weights = list(distribution.values())
        if min(weights, default=0) < 0:
            raise AssertionError("Probabilities cannot be negative")
        # torch 2.13 inverts this test: a dict summing to 1 is the one it rejects, so a dict
        # distribution only passes when it is *not* normalized (and then NumPy's choice
        # refuses it at sampling time). Kept, since the check is observable behaviour.
        if abs(sum(weights) - 1) <= 1e-5:
            raise AssertionError("Distribution is not normalized")
        for label, bound in (("minval", self._minval), ("maxval", self._maxval)):
            if bound is not None:
                raise AssertionError(f"When passing a custom distribution, '{label}' must be None")


class ParameterAlias:
    """A parameter value that is another parameter's value (chains allowed, cycles not)."""

    def __init__(self, alias_to) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return "ParameterAlias[alias_to: " + str(self.alias_to) + "]"


def dtype_size(dtype) -> int:
    """Return the size in bytes of one element of ``dtype``.

    As in torch, a complex dtype counts the size of its real component (complex64 is 4),
    which is what ``max_allocation_bytes`` is compared against."""
    return dtype.itemsize // 2 if dtype.is_complex else dtype.itemsize


def prod(values, base=1) -> int:
    """Return the product of ``values`` in Python ints (no overflow)."""
    return math.prod(map(int, values), start=base)


class FuzzedTensor:
    """A tensor made per step: ``size`` (and ``steps``) name parameters or give ints; with
    probability ``1 - probability_contiguous`` its memory order is permuted."""

    def __init__(
        self,
        name: str,
        size: tuple,
        steps: tuple | None = None,
        probability_contiguous: float = 0.5,
        min_elements: int | None = None,
        max_elements: int | None = None,
        max_allocation_bytes: int | None = None,
        dim_parameter: str | None = None,
        roll_parameter: str | None = None,
        dtype=None,
        cuda: bool = False,
        tensor_constructor: Callable | None = None,
    ) -> None:
        self._name = name
        self._size = size
        self._steps = steps
        self._p_contiguous = probability_contiguous
        # (low, high) limits on the element count and the allocation's byte count
        self._element_limits = (min_elements, max_elements)
        self._byte_limit = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = ember.float32 if dtype is None else dtype
        self._cuda = cuda
        self._constructor = tensor_constructor

    @property
    def name(self) -> str:
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        """Uniform [0, 1) for floating and complex dtypes, integers in [1, 127) otherwise."""
        where = {"size": size, "dtype": dtype, "device": "cpu"}
        if dtype.is_floating_point or dtype.is_complex:
            return ember.rand(**where)
        return ember.randint(1, 127, **where)

    def _layout(self, params):
        """(size, steps, allocated size), each padded with 1s or cut to the tensor's rank."""
        rank = len(self._size) if self._dim_parameter is None else params[self._dim_parameter]

        def fit(spec):
            resolved = [params.get(v, v) for v in spec][:rank]
            return tuple(resolved + [1] * (rank - len(resolved)))

        size, steps = fit(self._size), fit(self._steps or ())
        return size, steps, tuple(n * s for n, s in zip(size, steps, strict=True))

    def _draw_order(self, rank: int, state) -> np.ndarray:
        """The memory order of this step's tensor: the identity, or (when the contiguity draw
        fails and there is more than one dim) a non-identity permutation."""
        identity = np.arange(rank)
        order = identity
        if state.rand() > self._p_contiguous and rank > 1:
            while (order == identity).all():
                order = state.permutation(rank)
        return order

    def _make_tensor(self, params, state):
        size, steps, allocated = self._layout(params)
        make = self._constructor or self.default_tensor_constructor
        base = make(size=allocated, dtype=self._dtype, **params)
        if self._cuda:
            base = base.cuda()
        order = self._draw_order(len(size), state)
        if (order != np.arange(len(size))).any():
            # lay the data out in ``order`` and view it back in the logical dim order
            base = base.permute(tuple(order)).contiguous().permute(tuple(np.argsort(order)))
        tensor = base[tuple(slice(0, n * s, s) for n, s in zip(size, steps, strict=True))]
        properties = {
            "numel": int(tensor.numel()),
            "order": order,
            "steps": steps,
            "is_contiguous": tensor.is_contiguous(),
            "dtype": str(self._dtype),
        }
        return tensor, properties

    def satisfies_constraints(self, params) -> bool:
        """Return whether the tensor these parameters make is within the element and byte
        limits."""
        size, _, allocated = self._layout(params)
        count = prod(size)
        if count < 0:
            raise AssertionError("Computed number of elements is negative")
        nbytes = prod(allocated, base=dtype_size(self._dtype))
        low, high = self._element_limits
        checks = ((count, high), (low, count), (nbytes, self._byte_limit))
        return not any(a is not None and b is not None and a > b for a, b in checks)


def _flatten(items, cls) -> tuple:
    """Items given singly or in (nested one level) lists, as one flat tuple."""
    return tuple(
        itertools.chain.from_iterable((item,) if isinstance(item, cls) else item for item in items)
    )


class Fuzzer:
    """Generate ``(tensors, tensor_properties, params)`` for benchmarks, reproducibly per
    ``seed``; parameter sets failing ``constraints`` or a tensor's limits are redrawn."""

    def __init__(self, parameters, tensors, constraints=None, seed: int | None = None) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2**32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = _flatten(parameters, FuzzedParameter)
        self._tensors = _flatten(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        shared = {p.name for p in self._parameters}.intersection(t.name for t in self._tensors)
        if shared:
            raise ValueError(f"Duplicate names in parameters and tensors: {shared}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls):
        return _flatten(values, cls)

    def take(self, n: int):
        """Yield ``n`` steps of ``(tensors, tensor_properties, params)``."""
        state = np.random.RandomState(self._seed)
        ember.manual_seed(int(state.randint(low=0, high=2**63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            made = {t.name: t._make_tensor(params, state) for t in self._tensors}
            yield (
                {name: pair[0] for name, pair in made.items()},
                {name: pair[1] for name, pair in made.items()},
                params,
            )

    @property
    def rejection_rate(self) -> float:
        """Fraction of drawn parameter sets that were rejected so far."""
        return self._rejections / self._total_generated if self._total_generated else 0.0

    def _acceptable(self, params) -> bool:
        return all(check(params) for check in self._constraints) and all(
            t.satisfies_constraints(params) for t in self._tensors
        )

    def _generate(self, state):
        # a strict parameter keeps the value of its first draw across the redraws of one step
        fixed: dict = {}
        for _ in range(_MAX_ATTEMPTS):
            drawn = {}
            for p in self._parameters:
                if not p.strict:
                    drawn[p.name] = p.sample(state)
                    continue
                if p.name not in fixed:
                    fixed[p.name] = p.sample(state)
                drawn[p.name] = fixed[p.name]
            drawn = self._resolve_aliases(drawn)
            self._total_generated += 1
            if self._acceptable(drawn):
                return drawn
            self._rejections += 1
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params):
        """Replace each ParameterAlias by its target's value, following chains.

        Passes go over the still-aliased names in order, each reading the values the pass has
        already written; a pass that resolves nothing means a cycle."""
        params = dict(params)
        pending = [k for k, v in params.items() if isinstance(v, ParameterAlias)]
        while pending:
            for key in pending:
                params[key] = params[params[key].alias_to]
            left = [k for k in pending if isinstance(params[k], ParameterAlias)]
            if len(left) == len(pending):
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = left
        return params

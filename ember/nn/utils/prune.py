"""``nn.utils.prune``: mask-based pruning.

Pruning the tensor ``name`` of a module reparametrizes it: the Parameter moves to
``<name>_orig``, a ``<name>_mask`` buffer holds the 0/1 mask, and the method object itself is
registered as a forward pre-hook that writes ``module.<name> = <name>_orig * <name>_mask``
before every call.  Pruning the same tensor again folds the methods into a
:class:`PruningContainer`, whose new mask only looks at the part the earlier masks kept.

How ember organises it:

* every method is "score the candidates, zero the ``k`` worst"; the amount bookkeeping
  (``int`` = a count, ``float`` = a fraction) lives in :func:`_count_to_prune` and the zeroing
  in :func:`_zero_k` (unstructured) and :func:`_channel_mask` (structured), so the concrete
  classes are a few lines each;
* :class:`PruningContainer` finds "the still-unpruned part" through a small table keyed by
  ``PRUNING_TYPE`` (:data:`_REGION_OF`);
* re-pruning builds the new method *before* touching the module, and only swaps the hooks
  once the new mask has been computed: a bad argument leaves the module pruned as it was
  (torch drops the old hook first, so a failed re-prune leaves a stale ``<name>`` behind).

Tie-breaking: L1/Ln pruning select entries with ``topk`` as torch does; among exactly equal
magnitudes ember's ``topk`` may pick different (equally valid) entries than torch's kernel.
The random methods draw from ember's generator in the same order and amount as torch, so a
seeded run gives torch's masks.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

import ember
from ember._core.tensor import Tensor
from ember.nn.modules.module import Module
from ember.nn.utils._reparam_hooks import hook_keys
from ember.nn.utils.convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "PruningContainer",
    "Identity",
    "RandomUnstructured",
    "L1Unstructured",
    "RandomStructured",
    "LnStructured",
    "CustomFromMask",
    "identity",
    "random_unstructured",
    "l1_unstructured",
    "random_structured",
    "ln_structured",
    "global_unstructured",
    "custom_from_mask",
    "remove",
    "is_pruned",
]


# ---------------------------------------------------------------------------------------------
# amounts


def _check_amount(amount) -> None:
    """Validate an ``amount`` at construction (before the tensor's size is known)."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    as_count = isinstance(amount, numbers.Integral)
    if (as_count and amount < 0) or (not as_count and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(
            f"amount={amount} should either be a float in the range [0, 1] or a non-negative "
            "integer"
        )


def _count_to_prune(amount, size: int) -> int:
    """How many of ``size`` candidates ``amount`` removes: an int is a count (at most
    ``size``), a float a fraction rounded half-to-even (Python's ``round``, as torch)."""
    if not isinstance(amount, numbers.Integral):
        return round(amount * size)
    if amount > size:
        raise ValueError(
            f"amount={amount} should be smaller than the number of parameters to prune={size}"
        )
    return amount


# ---------------------------------------------------------------------------------------------
# masks


def _zero_k(default_mask: Tensor, scores: Tensor, k: int, largest: bool) -> Tensor:
    """A copy of ``default_mask`` with the ``k`` entries of highest (``largest``) or lowest
    score set to 0; ``scores`` has the mask's shape."""
    # work on a flat private copy; the view back gives a contiguous mask of the same shape
    flat = default_mask.reshape(-1).clone()
    if k:
        flat[ember.topk(scores.reshape(-1), k=k, largest=largest).indices] = 0
    return flat.view(default_mask.shape)


def _check_structured(t: Tensor, dim: int) -> int:
    """Validate ``dim`` for channel pruning of ``t``; return the number of channels."""
    if t.dim() <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor "
            f"of shape {t.shape} with {t.dim()} dims"
        )
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
    return t.shape[dim]


def _channel_mask(t: Tensor, dim: int, kept: Tensor, default_mask: Tensor) -> Tensor:
    """The mask keeping the channels ``kept`` (a 0/1 vector along ``dim``) of ``t``, in
    ``t``'s dtype, intersected with ``default_mask``.  The vector is broadcast along the other
    dimensions rather than scattered through an index."""
    along = [1] * t.dim()
    along[dim] = -1
    channels = kept.to(dtype=t.dtype).reshape(along)
    return channels.expand_as(t) * default_mask.to(dtype=t.dtype)


def _other_dims(t: Tensor, dim: int) -> list[int]:
    keep = dim % t.dim()
    return [d for d in range(t.dim()) if d != keep]


# ---------------------------------------------------------------------------------------------
# the hook bookkeeping on a module


def _pruning_hook_keys(module: Module, name: str) -> list:
    """The keys of ``module``'s forward pre-hooks that prune ``name``."""
    return hook_keys(module._forward_pre_hooks, BasePruningMethod, name, _pruned_name)


def _pruned_name(method: BasePruningMethod) -> str:
    return method._tensor_name


class BasePruningMethod(ABC):
    """Abstract base of pruning methods: ``compute_mask`` decides the mask, ``apply`` installs
    the reparametrization and the forward pre-hook on a module."""

    _tensor_name: str

    def __call__(self, module: Module, inputs: Any) -> None:
        # the forward pre-hook: recompute the masked tensor from the current orig and mask
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """Return the mask for ``t`` given the mask from previous pruning iterations."""

    def apply_mask(self, module: Module) -> Tensor:
        """Return ``<name>_orig * <name>_mask`` for ``module``."""
        base = self._tensor_name
        weights = getattr(module, f"{base}_orig")
        return getattr(module, f"{base}_mask").to(dtype=weights.dtype) * weights

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores=None, **kwargs):
        """Add the pruning reparametrization of ``module.<name>`` and return the method
        (a :class:`PruningContainer` when the tensor was already pruned)."""
        fresh = cls(*args, **kwargs)
        fresh._tensor_name = name
        keys = _pruning_hook_keys(module, name)
        if len(keys) > 1:
            raise AssertionError(
                f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                f"{module}. Use a PruningContainer."
            )
        earlier = module._forward_pre_hooks[keys[0]] if keys else None
        if earlier is None:
            method = fresh
        elif isinstance(earlier, PruningContainer):
            earlier.add_pruning_method(fresh)
            method = earlier
        else:
            method = PruningContainer(earlier)
            method.add_pruning_method(fresh)

        current = getattr(module, name)
        if importance_scores is None:
            importance_scores = current
        elif importance_scores.shape != current.shape:
            raise AssertionError(
                f"importance_scores should have the same shape as parameter {name} of "
                f"{module}, got {importance_scores.shape} vs {current.shape}"
            )

        first_time = earlier is None
        if first_time:
            # move the Parameter aside; `name` becomes a plain attribute the hook rewrites
            module.register_parameter(f"{name}_orig", current)
            del module._parameters[name]
            previous_mask = ember.ones_like(current)
        else:
            previous_mask = getattr(module, f"{name}_mask").detach()
            previous_mask = previous_mask.clone(memory_format=ember.contiguous_format)
        try:
            new_mask = method.compute_mask(importance_scores, default_mask=previous_mask)
            module.register_buffer(f"{name}_mask", new_mask)
            method(module, ())  # the hook's work, once now: module.<name> is the masked tensor
        except Exception:
            if first_time:
                module.register_parameter(name, module._parameters.pop(f"{name}_orig"))
            elif method is earlier:
                earlier._pruning_methods = earlier._pruning_methods[:-1]
            raise
        for key in keys:
            del module._forward_pre_hooks[key]
        module.register_forward_pre_hook(method)
        return method

    def prune(
        self, t: Tensor, default_mask: Tensor | None = None, importance_scores=None
    ) -> Tensor:
        """Return ``t`` times the mask computed from ``importance_scores`` (default ``t``)."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError(
                "importance_scores should have the same shape as tensor t, got "
                f"{importance_scores.shape} vs {t.shape}"
            )
        if default_mask is None:
            default_mask = ember.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``module.<name>`` becomes the pruned Parameter and
        ``<name>_orig`` / ``<name>_mask`` are deleted."""
        base = self._tensor_name
        pruned = self.apply_mask(module)
        if hasattr(module, base):
            delattr(module, base)
        param = module._parameters.pop(f"{base}_orig")
        param.data = pruned.data
        module._buffers.pop(f"{base}_mask")
        setattr(module, base, param)


# ---------------------------------------------------------------------------------------------
# the container: where the newest method may still prune


def _unstructured_region(method, t: Tensor, default_mask: Tensor):
    # the entries no earlier mask zeroed, as a boolean index (the subset comes out flat)
    return default_mask == 1


def _structured_region(method, t: Tensor, default_mask: Tensor):
    # the channels along method.dim that still have a nonzero entry
    if not hasattr(method, "dim"):
        raise AttributeError(
            'Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` defined.'
        )
    ndim = t.dim()
    dim = method.dim + ndim if method.dim < 0 else method.dim
    if dim < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {ndim}")
    alive = default_mask.sum(dim=_other_dims(t, dim)) != 0
    return (slice(None),) * dim + (alive,)


def _global_region(method, t: Tensor, default_mask: Tensor):
    # the whole tensor
    return (slice(None),) * t.dim()


_REGION_OF = {
    "unstructured": _unstructured_region,
    "structured": _structured_region,
    "global": _global_region,
}


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods applied iteratively to the same tensor."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1:
            # a container wrapping one method prunes that method's tensor
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method`` (acting on the same tensor name)."""
        if method is not None:
            if not isinstance(method, BasePruningMethod):
                raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
            if method._tensor_name != self._tensor_name:
                raise ValueError(
                    "Can only add pruning methods acting on the parameter named "
                    f"'{self._tensor_name}' to PruningContainer {self}. "
                    f"Found '{method._tensor_name}'"
                )
        self._pruning_methods = (*self._pruning_methods, method)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """Return the mask of the last method applied to the still-unpruned part of ``t``
        (entries, channels or all of it by ``PRUNING_TYPE``), combined with ``default_mask``."""
        newest = self._pruning_methods[-1]
        region_of = _REGION_OF.get(newest.PRUNING_TYPE)
        if region_of is None:
            raise ValueError(f"Unrecognized PRUNING_TYPE {newest.PRUNING_TYPE}")
        region = region_of(newest, t, default_mask)
        combined = default_mask.to(dtype=t.dtype)
        sub = newest.compute_mask(t[region], default_mask=default_mask[region])
        combined[region] = sub.to(dtype=combined.dtype)
        return combined


# ---------------------------------------------------------------------------------------------
# the methods


class Identity(BasePruningMethod):
    """Prune nothing: the mask is all ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prune ``amount`` entries chosen uniformly at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        k = _count_to_prune(self.amount, t.numel())
        # draw only when something is pruned: torch's generator advances the same way
        scores = ember.rand_like(t) if k else t
        return _zero_k(default_mask, scores, k, largest=True)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prune the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        k = _count_to_prune(self.amount, t.numel())
        return _zero_k(default_mask, t.abs(), k, largest=False)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prune ``amount`` random channels along ``dim``."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        channels = _check_structured(t, self.dim)
        k = _count_to_prune(self.amount, channels)
        if k == 0:
            return default_mask
        # one uniform draw per channel; the k smallest draws go (the k-th value is the cut)
        draws = ember.rand(channels)
        cut = ember.kthvalue(draws, k=k).values
        return _channel_mask(t, self.dim, draws > cut, default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, dim: int = -1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prune the ``amount`` channels along ``dim`` of smallest ``L_n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        channels = _check_structured(t, self.dim)
        k = _count_to_prune(self.amount, channels)
        norms = ember.norm(t, p=self.n, dim=_other_dims(t, self.dim))
        if k == 0:
            return default_mask
        survivors = ember.topk(norms, k=channels - k, largest=True).indices
        kept = ember.zeros(channels, dtype=t.dtype)
        kept[survivors] = 1
        return _channel_mask(t, self.dim, kept, default_mask)

    @classmethod
    def apply(
        cls, module: Module, name: str, amount: int | float, n, dim: int, importance_scores=None
    ):
        return super().apply(
            module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores
        )


class CustomFromMask(BasePruningMethod):
    """Prune with a user-given mask."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if self.mask.shape != default_mask.shape:
            raise AssertionError(
                f"default_mask shape {default_mask.shape} must match self.mask shape "
                f"{self.mask.shape}"
            )
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor):
        return super().apply(module, name, mask=mask)


# ---------------------------------------------------------------------------------------------
# the functional interface


def _pruned(method: type[BasePruningMethod], module: Module, name: str, **options) -> Module:
    # every functional form: install ``method`` on ``module.<name>`` and hand the module back
    method.apply(module, name, **options)
    return module


def identity(module: Module, name: str) -> Module:
    """Apply an all-ones mask to ``module.<name>``; return ``module``."""
    return _pruned(Identity, module, name)


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune ``amount`` random entries of ``module.<name>``; return ``module``."""
    return _pruned(RandomUnstructured, module, name, amount=amount)


def l1_unstructured(
    module: Module, name: str, amount: int | float, importance_scores: Tensor | None = None
) -> Module:
    """Prune the ``amount`` smallest-magnitude entries of ``module.<name>``."""
    return _pruned(L1Unstructured, module, name, amount=amount, importance_scores=importance_scores)


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
    return _pruned(RandomStructured, module, name, amount=amount, dim=dim)


def ln_structured(
    module: Module,
    name: str,
    amount: int | float,
    n,
    dim: int,
    importance_scores: Tensor | None = None,
) -> Module:
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of lowest L``n`` norm."""
    return _pruned(
        LnStructured, module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores
    )


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` with ``mask``; return ``module``."""
    return _pruned(CustomFromMask, module, name, mask=mask)


def global_unstructured(
    parameters: Iterable, pruning_method, importance_scores: dict | None = None, **kwargs
) -> None:
    """Prune the ``(module, name)`` pairs in ``parameters`` together, as one flattened tensor,
    with the unstructured ``pruning_method(**kwargs)``."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    if importance_scores is None:
        importance_scores = {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    # read the pairs once: a generator is walked three times below
    pairs = list(parameters)
    tensors = [getattr(module, name) for module, name in pairs]
    scores = [importance_scores.get(pair, t) for pair, t in zip(pairs, tensors)]
    # a pair not pruned yet contributes an all-ones mask
    masks = [getattr(module, f"{name}_mask", None) for module, name in pairs]
    masks = [ember.ones_like(t) if m is None else m for m, t in zip(masks, tensors)]

    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
            f"{pruning_method} of type {method.PRUNING_TYPE}"
        )
    # one container over the concatenation: the new method only sees entries still alive
    method._tensor_name = "temp"
    container = PruningContainer(method)
    flat_mask = container.compute_mask(parameters_to_vector(scores), parameters_to_vector(masks))
    start = 0
    for (module, name), t in zip(pairs, tensors):
        stop = start + t.numel()
        custom_from_mask(module, name, mask=flat_mask[start:stop].view_as(t))
        start = stop


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent and drop the hook; return ``module``."""
    keys = _pruning_hook_keys(module, name)
    if not keys:
        raise ValueError(
            f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
        )
    module._forward_pre_hooks.pop(keys[0]).remove(module)
    return module


def is_pruned(module: Module) -> bool:
    """Return whether ``module`` or any submodule has a pruning pre-hook."""
    return any(
        isinstance(hook, BasePruningMethod)
        for sub in module.modules()
        for hook in sub._forward_pre_hooks.values()
    )

"""The hook-based ``nn.utils.spectral_norm`` (parameter ``<name>_orig``, buffers ``<name>_u``
and ``<name>_v``; a forward pre-hook recomputes ``<name>`` and runs the power iteration in
training mode), distinct from ``nn.utils.parametrizations.spectral_norm``."""

from __future__ import annotations

from typing import Any, TypeVar

import ember
import ember.linalg
from ember._core.tensor import Tensor
from ember.nn._functional.normalization import normalize
from ember.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils._reparam_hooks import check_materialized, check_unclaimed, hook_key

__all__ = [
    "SpectralNorm",
    "SpectralNormLoadStateDictPreHook",
    "SpectralNormStateDictHook",
    "spectral_norm",
    "remove_spectral_norm",
]


def _as_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` viewed as a matrix whose rows run along ``dim`` (moved to the front) and
    whose columns are all the other dimensions flattened."""
    if dim != 0:
        weight = ember.movedim(weight, dim, 0)
    return weight.reshape(weight.size(0), -1)


class SpectralNorm:
    """The forward pre-hook that sets ``module.<name> = <name>_orig / sigma``.

    ``sigma`` estimates the largest singular value of the weight matrix by power iteration:
    the buffers ``u`` and ``v`` hold the current left and right singular vector estimates,
    refined ``n_power_iterations`` times per training forward, and
    ``sigma = u . (W v)``.
    """

    _version: int = 1
    name: str
    dim: int
    n_power_iterations: int
    eps: float

    def __init__(
        self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.name, self.dim, self.eps = name, dim, eps
        self.n_power_iterations = n_power_iterations

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """Return ``weight`` as a matrix with ``dim`` first and the other dims flattened."""
        return _as_matrix(weight, self.dim)

    def _unit(self, vector: Tensor) -> Tensor:
        return normalize(vector, dim=0, eps=self.eps)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """Return ``<name>_orig / sigma``; with ``do_power_iteration`` first update the ``u``
        and ``v`` buffers in place."""
        base = self.name
        weight = getattr(module, f"{base}_orig")
        u, v = getattr(module, f"{base}_u"), getattr(module, f"{base}_v")
        mat = _as_matrix(weight, self.dim)
        if do_power_iteration:
            with ember.no_grad():
                for _ in range(self.n_power_iterations):
                    # the buffers are updated in place, so DataParallel replicas share them
                    v.copy_(self._unit(mat.t() @ u))
                    u.copy_(self._unit(mat @ v))
            # sigma must not see later in-place updates of the buffers through autograd
            u, v = u.clone(), v.clone()
        sigma = ember.dot(u, mat @ v)
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Replace the reparametrization by a plain Parameter ``<name>``."""
        with ember.no_grad():
            final = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(final.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        # forward pre-hook: iterate only while training; eval reuses the stored vectors
        fresh = self.compute_weight(module, do_power_iteration=module.training)
        setattr(module, self.name, fresh)

    def _solve_v_and_rescale(self, weight_mat: Tensor, u: Tensor, target_sigma) -> Tensor:
        # the least-squares v with W v = u (through the pseudo-inverse of W^T W), scaled so
        # that u . (W v) equals target_sigma
        gram_inverse = ember.linalg.pinv(weight_mat.t() @ weight_mat)
        v = gram_inverse @ (weight_mat.t() @ u)
        return v * (target_sigma / ember.dot(u, weight_mat @ v))

    @staticmethod
    def apply(
        module: Module, name: str, n_power_iterations: int, dim: int, eps: float
    ) -> SpectralNorm:
        """Install the reparametrization of ``module.<name>`` and its hooks."""
        check_unclaimed(module, SpectralNorm, name, "spectral_norm")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        check_materialized(weight, SpectralNorm, "spectral_norm")
        rows, cols = _as_matrix(weight, dim).shape
        with ember.no_grad():
            # random unit starting vectors, u drawn before v (torch's generator order)
            u = fn._unit(weight.new_empty(rows).normal_(0, 1))
            v = fn._unit(weight.new_empty(cols).normal_(0, 1))
        delattr(module, name)
        module.register_parameter(f"{name}_orig", weight)
        # a plain tensor until the first forward recomputes it; keeps ``module.<name>``
        # readable (and deepcopy-able) in between
        setattr(module, name, weight.data)
        module.register_buffer(f"{name}_u", u)
        module.register_buffer(f"{name}_v", v)
        module.register_forward_pre_hook(fn)
        for register, hook_class, _ in _state_dict_hooks(module):
            register(hook_class(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Load pre-hook converting version-0 state dicts (which stored ``<name>`` and no
    ``<name>_v``) by solving for ``v``."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ) -> None:
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(f"{fn.name}.version")
        if version is not None and version >= 1:
            return  # written by the current layout: nothing to convert
        base = prefix + fn.name
        current_layout = [base + s for s in ("_orig", "_u", "_v")]
        if (
            version is None
            and base not in state_dict
            and all(k in state_dict for k in current_layout)
        ):
            return  # no metadata, but the keys already have the current layout
        # version 0 stored the normalised weight itself and no v
        needed = [base + s for s in ("_orig", "", "_u")]
        absent = [k for k in needed if k not in state_dict]
        if absent:
            if strict:
                missing_keys.extend(absent)
            return
        with ember.no_grad():
            orig = state_dict[base + "_orig"]
            sigma = (orig / state_dict.pop(base)).mean()
            mat = _as_matrix(orig, fn.dim)
            state_dict[base + "_v"] = fn._solve_v_and_rescale(mat, state_dict[base + "_u"], sigma)


class SpectralNormStateDictHook:
    """State-dict hook recording ``metadata['spectral_norm']['<name>.version']``."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module: Module, state_dict, prefix: str, local_metadata: dict) -> None:
        versions = local_metadata.setdefault("spectral_norm", {})
        key = f"{self.fn.name}.version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def _state_dict_hooks(module: Module) -> tuple:
    """The two state-dict hooks that travel with the forward pre-hook, as ``(registration,
    hook class, the table it lands in)``: the version record on saving, and the version-0
    conversion on loading (registered without the module argument, as torch does)."""
    return (
        (module._register_state_dict_hook, SpectralNormStateDictHook, module._state_dict_hooks),
        (
            module._register_load_state_dict_pre_hook,
            SpectralNormLoadStateDictPreHook,
            module._load_state_dict_pre_hooks,
        ),
    )


T_module = TypeVar("T_module", bound=Module)

_TRANSPOSED = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)


def spectral_norm(
    module: T_module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> T_module:
    """Apply spectral normalization to ``module.<name>`` (``dim`` defaults to 1 for transposed
    convolutions, else 0); return ``module``."""
    if dim is None:
        # a transposed convolution keeps its output channels in dimension 1
        dim = 1 if isinstance(module, _TRANSPOSED) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Remove the spectral normalization of ``module.<name>``; return ``module``."""
    key = hook_key(module._forward_pre_hooks, SpectralNorm, name)
    if key is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    module._forward_pre_hooks.pop(key).remove(module)
    # the two state-dict hooks that came with it
    for _, kind, table in _state_dict_hooks(module):
        key = hook_key(table, kind, name, name_of=lambda hook: hook.fn.name)
        if key is not None:
            del table[key]
    return module

"""Lazy modules (torch.nn.modules.lazy and the Lazy* layers): parameters whose shapes come from
the first input. Until the first forward they hold ``UninitializedParameter``/``Buffer``s; the
first call materialises them, runs ``reset_parameters`` and turns the module into its eager
class (``cls_to_become``: ``LazyLinear`` -> ``Linear``)."""

from __future__ import annotations

import itertools

import ember
from ember._core.tensor import Tensor
from ember.nn.modules.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase
from ember.nn.modules.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from ember.nn.modules.instancenorm import (
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _InstanceNorm,
)
from ember.nn.modules.linear import Linear
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from ember.utils.hooks import RemovableHandle

# LazyModuleMixin stays in this module (torch.nn.modules.lazy), as in torch
__all__ = [
    "LazyLinear",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
]


def _lazy_load_hook(module, state_dict, prefix, *args) -> None:
    # materialise uninitialised tensors that the state dict gives values for
    for name, param in itertools.chain(module._parameters.items(), module._buffers.items()):
        key = prefix + name
        if key in state_dict and param is not None and is_lazy(param):
            value = state_dict[key]
            if not is_lazy(value):
                with ember.no_grad():
                    param.materialize(value.shape)


def _infer_parameters(module, args, kwargs=None):
    kwargs = kwargs if kwargs else {}
    module.initialize_parameters(*args, **kwargs)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    # remove the hooks by id from this module's own dicts: a deep copy's handles still point at
    # the original's dicts
    init_id, load_id = module._initialize_hook.id, module._load_hook.id
    module._forward_pre_hooks.pop(init_id, None)
    module._forward_pre_hooks_with_kwargs.pop(init_id, None)
    module._load_state_dict_pre_hooks.pop(load_id, None)
    delattr(module, "_initialize_hook")
    delattr(module, "_load_hook")
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class _HandleId:
    """A pickled stand-in for a hook handle of a lazy module."""

    def __init__(self, id: int) -> None:
        self.id = id


class LazyModuleMixin:
    """A mixin for modules that infer their parameters' shapes from the first input."""

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self.register_load_state_dict_pre_hook(_lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters, with_kwargs=True)

    def __getstate__(self):
        # the hook handles hold weak references (not picklable): keep their ids only
        state = super().__getstate__()
        for name in ("_initialize_hook", "_load_hook"):
            if name in state:
                state[name] = _HandleId(state[name].id)
        return state

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        d = self.__dict__
        for name, table in (
            ("_initialize_hook", "_forward_pre_hooks"),
            ("_load_hook", "_load_state_dict_pre_hooks"),
        ):
            if isinstance(d.get(name), _HandleId):
                handle = RemovableHandle(d[table])
                handle.id = d[name].id
                d[name] = handle

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        # as Module's, except that uninitialised tensors are saved as they are (not detached)
        transient = self._non_persistent_buffers_set
        buffers = ((n, b) for n, b in self._buffers.items() if n not in transient)
        for name, value in itertools.chain(self._parameters.items(), buffers):
            if value is None:
                continue
            keep = keep_vars or is_lazy(value)
            destination[prefix + name] = value if keep else value.detach()

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Initialise the parameters from the first input (each lazy layer defines it)."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}"
        )

    def _materialize(self, weight_shape: tuple, outputs: int) -> None:
        # the weight takes the inferred shape and the bias (when there is one) one entry per
        # output; then the layer's usual initialisation runs on them
        self.weight.materialize(weight_shape)
        if self.bias is not None:
            self.bias.materialize((outputs,))
        self.reset_parameters()

    def _sized(self, size: int) -> bool:
        # a lazy layer initialises its parameters once they exist and their inferred size is
        # known (a state dict may materialise them before the first forward)
        return not self.has_uninitialized_params() and size != 0

    def has_uninitialized_params(self) -> bool:
        """Return True if a parameter or buffer is still uninitialised."""
        return any(
            is_lazy(p) for p in itertools.chain(self._parameters.values(), self._buffers.values())
        )

    def _replicate_for_data_parallel(self):
        raise RuntimeError(
            "Modules with uninitialized parameters can't be used with `DataParallel`. "
            "Run a dummy forward pass to correctly initialize the modules"
        )


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is inferred from the first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        # bias False: no tensor that would be overwritten at once
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if self._sized(self.in_features):
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            with ember.no_grad():
                self.in_features = input.shape[-1]
                self._materialize((self.out_features, self.in_features), self.out_features)
        if self.in_features == 0:  # loaded from a state dict before the first forward
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(
                    f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                    f"in_features from self.weight: {self.weight.shape[-1]}"
                )
            self.in_features = input.shape[-1]


class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self) -> None:
        if self._sized(self.in_channels):
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._channels_of(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self._materialize(shape + tuple(self.kernel_size), self.out_channels)

    def _channels_of(self, input: Tensor) -> int:
        # the channel dim stands just before the spatial ones, with or without a batch dim
        unbatched = self._nd + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(
                f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                f"{self.__class__.__name__}, but got input of size: {input.shape}"
            )
        return input.shape[-unbatched]

    def _lazy_weights(self, bias: bool, out_channels: int, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class _LazyConv(_LazyConvXdMixin):
    def __init__(
        self,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        # in_channels 0 and bias False: no tensors that would be overwritten at once
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._lazy_weights(bias, out_channels, device, dtype)


class _LazyConvTranspose(_LazyConvXdMixin):
    def __init__(
        self,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            0,
            0,
            kernel_size,
            stride,
            padding,
            output_padding,
            groups,
            False,
            dilation,
            padding_mode,
        )
        self._lazy_weights(bias, out_channels, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose3d


class _LazyNormBase(LazyModuleMixin, _NormBase):
    def __init__(
        self,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        # affine and track_running_stats False: no tensors that would be overwritten at once
        super().__init__(0, eps, momentum, False, False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.long)

    def reset_parameters(self) -> None:
        if self._sized(self.num_features):
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            per_feature = {
                "weight": self.affine,
                "bias": self.affine,
                "running_mean": self.track_running_stats,
                "running_var": self.track_running_stats,
            }
            for name, present in per_feature.items():
                if present:
                    getattr(self, name).materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm1d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm2d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm3d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """An ``InstanceNorm1d`` whose ``num_features`` is inferred from the first input (affine
    and tracking running stats by default, as torch's lazy instance norms)."""

    cls_to_become = InstanceNorm1d
    _no_batch_dim = 2


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """An ``InstanceNorm2d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = InstanceNorm2d
    _no_batch_dim = 3


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """An ``InstanceNorm3d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = InstanceNorm3d
    _no_batch_dim = 4

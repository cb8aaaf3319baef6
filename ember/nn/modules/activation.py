"""Activation layers (torch.nn.modules.activation), thin Modules over ``ember.nn.functional``."""

from __future__ import annotations

import warnings

import ember
from ember._core.tensor import Tensor
from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _fields, _functional
from ember.nn.parameter import Parameter

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "ReLU",
    "ReLU6",
    "RReLU",
    "SELU",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
]


# ---------------------------------------------------------------------------------------------
# Every activation layer is "keep the constructor arguments, call one function of
# nn.functional with them".  Layers with the same arguments share a base (_InplaceOnly,
# _AlongDim, _Shrink, _ExponentialUnit) that stores them, calls the layer's function
# (``_fn = _functional("elu")``, looked up in nn.functional at each call) and lists them in the
# repr (``_shown``); a layer of the family only names its function.  Each layer's call passes
# its hyper-parameters in the form a __torch_function__ mode sees torch's layer make (keywords,
# except where torch's function is a builtin taking them positionally: shrink, softplus);
# ember.jit.script compiles ``self._fn(...)`` as the call of that function.


class _Activation(Module):
    _shown: tuple[str, ...] = ()  # attributes the repr lists as name=value
    _shows_inplace = False  # whether the repr ends with "inplace=True" when set

    def extra_repr(self) -> str:
        shown = _fields(self, *self._shown)
        if self._shows_inplace and self.inplace:
            return f"{shown}, inplace=True" if shown else "inplace=True"
        return shown


class _InplaceOnly(_Activation):
    # the layers whose only argument is ``inplace``
    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, inplace=self.inplace)


class _AlongDim(_Activation):
    # softmax and relatives: one ``dim``; a pickle from before ``dim`` existed loads as None
    __constants__ = ["dim"]
    _shown = ("dim",)

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("dim", None)

    def forward(self, input: Tensor) -> Tensor:
        # _stacklevel as torch's layers pass it (a __torch_function__ mode sees it; ember's
        # softmax functions do not read it: their missing-dim warning has its own level)
        return self._fn(input, dim=self.dim, _stacklevel=5)


class _Shrink(_Activation):
    # the shrinkage functions: one ``lambd``, shown bare
    __constants__ = ["lambd"]

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return str(self.lambd)

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, self.lambd)


class _ExponentialUnit(_Activation):
    # ELU and CELU: a scale ``alpha`` for the negative side
    __constants__ = ["alpha", "inplace"]
    _shown = ("alpha",)
    _shows_inplace = True

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, alpha=self.alpha, inplace=self.inplace)


class _Stateless(_Activation):
    # no arguments at all
    pass


# ---------------------------------------------------------------------------------------------
# the layers


class Threshold(_Activation):
    """Thresholds each element: ``x`` if ``x > threshold`` else ``value``."""

    __constants__ = ["threshold", "value", "inplace"]
    _shown = ("threshold", "value")
    _shows_inplace = True

    def __init__(
        self,
        threshold: float,
        value: float,
        inplace: bool = False,
    ) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, inplace=self.inplace)


class ReLU(_InplaceOnly):
    """Applies ``max(0, x)`` element-wise."""

    _shows_inplace = True

    _fn = _functional("relu")


class RReLU(_Activation):
    """Randomized leaky ReLU: negative slope drawn from U(lower, upper) in training."""

    __constants__ = ["lower", "upper", "inplace"]
    _shown = ("lower", "upper")
    _shows_inplace = True

    def __init__(
        self,
        lower: float = 1.0 / 8,
        upper: float = 1.0 / 3,
        inplace: bool = False,
    ) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(
            input, lower=self.lower, upper=self.upper, training=self.training, inplace=self.inplace
        )


class Hardtanh(_Activation):
    """Clamps each element to ``[min_val, max_val]``."""

    __constants__ = ["min_val", "max_val", "inplace"]
    _shown = ("min_val", "max_val")
    _shows_inplace = True

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ) -> None:
        super().__init__()
        # the old spellings still work, each with its own warning
        renamed = {"min_value": (min_value, "min_val"), "max_value": (max_value, "max_val")}
        for old, (given, new) in renamed.items():
            if given is not None:
                warnings.warn(
                    f"keyword argument `{old}` is deprecated and renamed to `{new}`",
                    FutureWarning,
                    stacklevel=2,
                )
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        assert self.max_val > self.min_val

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, min_val=self.min_val, max_val=self.max_val, inplace=self.inplace)


class ReLU6(Hardtanh):
    """Applies ``min(max(0, x), 6)`` element-wise."""

    _shown = ()

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)


class Sigmoid(_Stateless):
    """Applies the logistic sigmoid element-wise."""

    def forward(self, input: Tensor) -> Tensor:
        return ember.sigmoid(input)


class Hardsigmoid(_InplaceOnly):
    """Applies ``relu6(x + 3) / 6`` element-wise."""

    _fn = _functional("hardsigmoid")


class Tanh(_Stateless):
    """Applies the hyperbolic tangent element-wise."""

    def forward(self, input: Tensor) -> Tensor:
        return ember.tanh(input)


class SiLU(_InplaceOnly):
    """Applies ``x * sigmoid(x)`` element-wise."""

    _shows_inplace = True

    _fn = _functional("silu")


class Mish(_InplaceOnly):
    """Applies ``x * tanh(softplus(x))`` element-wise."""

    _shows_inplace = True

    _fn = _functional("mish")


class Hardswish(_InplaceOnly):
    """Applies ``x * relu6(x + 3) / 6`` element-wise."""

    _fn = _functional("hardswish")


class ELU(_ExponentialUnit):
    """Applies the exponential linear unit element-wise."""

    _fn = _functional("elu")


class CELU(_ExponentialUnit):
    """Applies the continuously differentiable exponential linear unit element-wise."""

    _fn = _functional("celu")


class SELU(_InplaceOnly):
    """Applies the scaled exponential linear unit element-wise."""

    _shows_inplace = True

    _fn = _functional("selu")


class GLU(_Activation):
    """Applies the gated linear unit along ``dim``."""

    __constants__ = ["dim"]
    _shown = ("dim",)

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, dim=self.dim)


class GELU(_Activation):
    """Applies the Gaussian error linear unit element-wise."""

    __constants__ = ["approximate"]

    def __init__(
        self,
        approximate: str = "none",
    ) -> None:
        super().__init__()
        self.approximate = approximate

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)


class Hardshrink(_Shrink):
    """Applies the hard shrinkage function element-wise."""

    _fn = _functional("hardshrink")


class LeakyReLU(_Activation):
    """Applies ``max(0, x) + negative_slope * min(0, x)`` element-wise."""

    __constants__ = ["inplace", "negative_slope"]
    _shown = ("negative_slope",)
    _shows_inplace = True

    def __init__(
        self,
        negative_slope: float = 1e-2,
        inplace: bool = False,
    ) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, negative_slope=self.negative_slope, inplace=self.inplace)


class LogSigmoid(_Stateless):
    """Applies ``log(sigmoid(x))`` element-wise."""

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softplus(_Activation):
    """Applies ``log(1 + exp(beta * x)) / beta`` element-wise."""

    __constants__ = ["beta", "threshold"]
    _shown = ("beta", "threshold")

    def __init__(
        self,
        beta: float = 1.0,
        threshold: float = 20.0,
    ) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)


class Softshrink(_Shrink):
    """Applies the soft shrinkage function element-wise."""

    _fn = _functional("softshrink")


class PReLU(_Activation):
    """Applies ``max(0, x) + a * min(0, x)`` with a learnable ``a`` (one or per channel)."""

    __constants__ = ["num_parameters"]
    _shown = ("num_parameters",)

    def __init__(
        self,
        num_parameters: int = 1,
        init: float = 0.25,
        device=None,
        dtype=None,
    ) -> None:
        # set before Module.__init__, as torch does: it is a plain attribute either way
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(ember.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Reset the slopes to ``init``."""
        with ember.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)


class Softsign(_Stateless):
    """Applies ``x / (1 + |x|)`` element-wise."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(_Stateless):
    """Applies ``x - tanh(x)`` element-wise."""

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class Softmin(_AlongDim):
    """Applies softmin along ``dim``."""

    _fn = _functional("softmin")


class Softmax(_AlongDim):
    """Applies softmax along ``dim``."""

    _fn = _functional("softmax")


class Softmax2d(_Stateless):
    """Applies softmax over the channels of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        # (two comparisons rather than `not in`: ember's jit.script has no `not in`)
        if input.dim() != 3 and input.dim() != 4:
            raise ValueError(
                f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead"
            )
        # the channel axis counted from the end serves both layouts
        return F.softmax(input, -3, _stacklevel=5)


class LogSoftmax(_AlongDim):
    """Applies log-softmax along ``dim``."""

    _fn = _functional("log_softmax")


def __getattr__(name: str):
    # torch defines MultiheadAttention in this module; ember in attention.py (imported lazily:
    # attention.py imports the layers defined here)
    if name == "MultiheadAttention":
        from ember.nn.modules.attention import MultiheadAttention

        return MultiheadAttention
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

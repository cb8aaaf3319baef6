"""``torch.ao.quantization``: not available in ember.

ember computes in floating point with NumPy and has no quantized tensors or int8 kernels, so
there is nothing to quantize to. Each entry point raises ``NotImplementedError`` saying so,
instead of an ``AttributeError`` that would look like a bug; a quantization tutorial's float
model runs unchanged.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = [
    "QConfig",
    "convert",
    "fuse_modules",
    "get_default_qat_qconfig",
    "get_default_qconfig",
    "prepare",
    "prepare_qat",
    "quantize",
    "quantize_dynamic",
    "quantize_qat",
]


def _unavailable(name: str) -> NoReturn:
    raise NotImplementedError(
        f"torch.ao.quantization.{name}: ember has no quantized tensors or int8 kernels (it "
        "computes in floating point with NumPy); run the float model instead"
    )


def quantize_dynamic(model, qconfig_spec=None, dtype=None, mapping=None, inplace=False) -> Any:
    """Not available in ember: raises ``NotImplementedError``."""
    _unavailable("quantize_dynamic")


def quantize(model, run_fn, run_args, mapping=None, inplace=False) -> Any:
    """Not available in ember: raises ``NotImplementedError``."""
    _unavailable("quantize")


def quantize_qat(model, run_fn, run_args, inplace=False) -> Any:
    """Not available in ember: raises ``NotImplementedError``."""
    _unavailable("quantize_qat")


def prepare(model, inplace=False, *args, **kwargs) -> Any:
    """Not available in ember: raises ``NotImplementedError``."""
    _unavailable("prepare")


def prepare_qat(model, mapping=None, inplace=False) -> Any:
    """Not available in ember: raises ``NotImplementedError``."""
    _unavailable("prepare_qat")


def convert(module, mapping=None, inplace=False, *args, **kwargs) -> Any:
    """Not available in ember: raises ``NotImplementedError``."""
    _unavailable("convert")


def fuse_modules(model, modules_to_fuse, inplace=False, *args, **kwargs) -> Any:
    """Not available in ember: raises ``NotImplementedError``."""
    _unavailable("fuse_modules")


def get_default_qconfig(backend: str = "x86", version: int = 0) -> Any:
    """Not available in ember: raises ``NotImplementedError``."""
    _unavailable("get_default_qconfig")


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> Any:
    """Not available in ember: raises ``NotImplementedError``."""
    _unavailable("get_default_qat_qconfig")


class QConfig:
    """Not available in ember: making one raises ``NotImplementedError``."""

    def __init__(self, *args, **kwargs) -> None:
        _unavailable("QConfig")


# the other names a quantization program reaches for: the same clear error
_MORE = frozenset(
    """QuantStub DeQuantStub QuantWrapper QConfigMapping QConfigDynamic FakeQuantize
    MinMaxObserver HistogramObserver PerChannelMinMaxObserver MovingAverageMinMaxObserver
    default_qconfig default_dynamic_qconfig default_per_channel_qconfig default_qat_qconfig
    float16_dynamic_qconfig per_channel_dynamic_qconfig get_default_qconfig_mapping
    get_default_qat_qconfig_mapping fuse_modules_qat prepare_jit convert_jit quantize_jit
    observer fake_quantize qconfig""".split()
)


def __getattr__(name: str) -> NoReturn:
    if name in _MORE:
        _unavailable(name)
    raise AttributeError(f"module 'ember.ao.quantization' has no attribute '{name}'")

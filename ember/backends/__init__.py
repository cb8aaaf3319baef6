"""``ember.backends``: torch's backend switches, answering as torch does on a CPU-only machine.

Scripts set ``torch.backends.cudnn.deterministic = True`` or ``benchmark = False`` and ask
``torch.backends.mps.is_available()``; the flags are kept (and read back) but change nothing:
ember's CPU kernels are NumPy's and are deterministic.
"""

from __future__ import annotations

import contextlib
import sys
import types
import warnings


class _Flags(types.ModuleType):
    """A backend namespace: settable flags plus a few queries."""

    def __init__(self, name: str, doc: str, **flags) -> None:
        super().__init__(f"ember.backends.{name}", doc)
        for key, value in flags.items():
            setattr(self, key, value)
        sys.modules[self.__name__] = self  # ``import torch.backends.cudnn as cudnn``


def _false(*args, **kwargs) -> bool:
    """Return False: this backend is not available in ember."""
    return False


def _none(*args, **kwargs):
    """Return None: this backend is not available in ember."""
    return None


cudnn = _Flags(
    "cudnn",
    "cuDNN switches (no cuDNN in ember: recorded only).",
    enabled=True,
    benchmark=False,
    deterministic=False,
    allow_tf32=True,
    benchmark_limit=10,
    is_available=_false,
    version=_none,
)
mps = _Flags("mps", "Apple MPS (not available in ember).", is_available=_false, is_built=_false)
mkldnn = _Flags("mkldnn", "oneDNN (not used by ember).", enabled=True, is_available=_false)
openmp = _Flags("openmp", "OpenMP (ember's threads are BLAS's).", is_available=_false)
mkl = _Flags("mkl", "Intel MKL (ember's BLAS is NumPy's).", is_available=_false)
# torch reports opt_einsum unavailable unless the package is installed; ember's einsum always
# plans its contraction order with NumPy's optimizer
opt_einsum = _Flags(
    "opt_einsum", "opt_einsum contraction planning.", enabled=False, strategy=None,
    is_available=_false, get_opt_einsum=_none,
)  # fmt: skip


def _sdp_switches() -> dict:
    """Return torch.backends.cuda's scaled-dot-product-attention switches, which read and set
    the backend flags of ``ember.nn.attention`` (recorded only: ember has one kernel)."""

    def flag(name):
        def enabled() -> bool:
            from ember.nn.attention import ENABLED, SDPBackend

            return ENABLED[SDPBackend[name]]

        def enable(enabled: bool) -> None:
            from ember.nn.attention import ENABLED, SDPBackend

            ENABLED[SDPBackend[name]] = bool(enabled)

        return enabled, enable

    out = {}
    for short, name in (
        ("flash", "FLASH_ATTENTION"),
        ("math", "MATH"),
        ("mem_efficient", "EFFICIENT_ATTENTION"),
        ("cudnn", "CUDNN_ATTENTION"),
    ):
        out[f"{short}_sdp_enabled"], out[f"enable_{short}_sdp"] = flag(name)

    @contextlib.contextmanager
    def sdp_kernel(
        enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True
    ):
        """Deprecated context manager: enable only the chosen attention backends."""
        warnings.warn(
            "`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context "
            "manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new "
            "context manager, with updated signature.",
            FutureWarning,
            stacklevel=3,
        )
        from ember.nn.attention import SDPBackend, sdpa_kernel

        # as torch: the backends chosen, handed to sdpa_kernel (which turns the rest off)
        flags = (
            (SDPBackend.FLASH_ATTENTION, enable_flash),
            (SDPBackend.EFFICIENT_ATTENTION, enable_mem_efficient),
            (SDPBackend.MATH, enable_math),
            (SDPBackend.CUDNN_ATTENTION, enable_cudnn),
        )
        with sdpa_kernel([b for b, on in flags if on]) as context:
            yield context

    out["sdp_kernel"] = sdp_kernel
    return out


cuda = _Flags(
    "cuda",
    "CUDA switches (no CUDA in ember: recorded only).",
    matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True),
    is_built=_false,
    **_sdp_switches(),
)

__all__ = ["cudnn", "cuda", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]

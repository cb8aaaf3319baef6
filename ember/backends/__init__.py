"""``ember.backends``: torch's backend switches, answering as torch does on a CPU-only machine.

Scripts set ``torch.backends.cudnn.deterministic = True`` or ``benchmark = False`` and ask
``torch.backends.mps.is_available()``; the flags are kept (and read back) but change nothing:
ember's CPU kernels are NumPy's and are deterministic.
"""

from __future__ import annotations

import types


class _Flags(types.ModuleType):
    """A backend namespace: settable flags plus a few queries."""

    def __init__(self, name: str, doc: str, **flags) -> None:
        super().__init__(f"ember.backends.{name}", doc)
        for key, value in flags.items():
            setattr(self, key, value)


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
cuda = _Flags(
    "cuda",
    "CUDA switches (no CUDA in ember: recorded only).",
    matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True),
    is_built=_false,
)

__all__ = ["cudnn", "cuda", "mkldnn", "mps", "openmp"]

"""``torch.quantization``: torch's older name of ``torch.ao.quantization`` (not available in
ember; see there)."""

from ember.ao.quantization import *  # noqa: F403
from ember.ao.quantization import __all__, __getattr__  # noqa: F401

"""``torch.signal.windows``: window functions for signal processing."""

from ember.signal.windows import windows
from ember.signal.windows.windows import *  # noqa: F403

__all__ = list(windows.__all__)

"""``torch.signal``: signal processing (``windows``)."""

from ember.signal import windows

__all__ = ["windows"]

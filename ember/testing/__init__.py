"""Testing utilities, as ``torch.testing``: ``assert_close`` and ``make_tensor``."""

from ember.testing._comparison import assert_allclose, assert_close
from ember.testing._creation import make_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

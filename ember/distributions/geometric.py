"""torch.distributions.geometric: Geometric lives in ``binomial.py``."""

from ember.distributions.binomial import Geometric

__all__ = ["Geometric"]

"""torch.distributions.cauchy: Cauchy lives in ``gumbel.py``."""

from ember.distributions.gumbel import Cauchy

__all__ = ["Cauchy"]

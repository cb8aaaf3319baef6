"""torch.distributions.half_normal: HalfNormal lives in ``gumbel.py``."""

from ember.distributions.gumbel import HalfNormal

__all__ = ["HalfNormal"]

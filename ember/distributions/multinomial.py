"""torch.distributions.multinomial: Multinomial lives in ``binomial.py``."""

from ember.distributions.binomial import Multinomial

__all__ = ["Multinomial"]

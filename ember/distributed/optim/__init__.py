"""``ember.distributed.optim``: optimizers for data-parallel training, as
``torch.distributed.optim`` (:class:`ZeroRedundancyOptimizer`)."""

from __future__ import annotations

from ember.distributed.optim.zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]

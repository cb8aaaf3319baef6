"""``ember.nn.parallel``: ``DistributedDataParallel`` (gradients averaged across the processes
of a group, see :mod:`.distributed`) and ``DataParallel`` (no GPUs: runs the module as is)."""

from ember.nn.parallel.data_parallel import DataParallel, data_parallel
from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]

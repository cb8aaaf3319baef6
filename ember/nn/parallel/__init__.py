"""``ember.nn.parallel``: ``DistributedDataParallel`` (gradients averaged across the processes
of a group, see :mod:`.distributed`) and ``DataParallel`` (no GPUs: runs the module as is).

``DistributedDataParallel`` (and with it ``ember.distributed``) is imported on first access."""

import importlib

from ember.nn.parallel.data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


def __getattr__(name: str):
    if name in ("DistributedDataParallel", "distributed"):
        # (import_module: ``from ember.nn.parallel import distributed`` would ask this hook)
        distributed = importlib.import_module(f"{__name__}.distributed")
        return distributed if name == "distributed" else distributed.DistributedDataParallel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
